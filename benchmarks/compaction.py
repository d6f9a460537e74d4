"""Log compaction, wireserver beside Apache Kafka: how fast the cleaner cleans, what it does for
the broker's restart, and what it costs produce latency while it runs.

Run: ``python -m benchmarks.compaction [--quick] [--no-pin] [--targets kafka,wireserver]
[--skip-restart] [--build pure|compiled] [--output benchmarks/results.md]``. With ``--build
compiled`` every wireserver broker runs the checkout compiled with mypyc, as
``benchmarks.compare --build compiled`` does; the section names its build.

Brokers are started and pinned as ``benchmarks.compare`` does (its helpers: the broker on the
first CPU, this harness and every client process on the others; Kafka is the reference Apache
Kafka from ``compat_tests.reference``, one KRaft node; wireserver a ``wireserver serve``
subprocess). Both run with ``log.cleaner.backoff.ms=200`` (Kafka's default, 15 s, would add up
to 15 s to every figure) and their other cleaner defaults (one thread, a 128 MiB dedupe buffer,
no io limit). For each broker in turn:

1. **Cleaner throughput.** A 1-partition topic with ``segment.bytes`` 8 MiB,
   ``min.cleanable.dirty.ratio`` 0.01, no retention, is filled by a librdkafka producer
   (``benchmarks.rdkafka_load produce --keys``) with 1 KB records whose keys cycle over 10,000
   keys: about 1 GiB (``--quick``: 150 MiB). It is filled while its ``cleanup.policy`` is
   ``delete``, so nothing is cleaned during the fill; then IncrementalAlterConfigs sets
   ``cleanup.policy=compact`` and the harness polls the partition's size (DescribeLogDirs,
   every 50 ms) until it has dropped and stayed put for 3 s. The figure is the partition's
   size before ÷ the time from the config change to the last size change: the same external
   measure on both brokers (it includes the cleaner noticing the log, up to the 200 ms
   backoff). Kafka's cleaner also logs its own stats ("Log cleaner thread 0 cleaned log ...
   MB of log processed in ... seconds"; parsed from the node's ``server.log``, see
   ``compat_tests/reference/log4j2-broker.xml``), shown beside; wireserver logs what each
   cleaning kept ("cleaned <topic>-<p> up to offset ...", at INFO) but no timing.
2. **Produce latency while the cleaner runs.** A second topic like the first is filled the same
   way (policy ``delete``). Produce latency at 5,000 records/s of 1 KB, acks=all
   (``rdkafka_load latency``, as ``benchmarks.compare``'s fixed-rate workload, into a third,
   ordinary topic; after an untimed 3 s run that warms Kafka's JIT up) is measured once with
   the cleaner idle (nothing to clean), then again
   right after that second topic is switched to ``compact``, so the cleaner cleans it during
   the run. The run is sized from step 1's cleaning time so that its timed part falls inside
   the cleaning where it can (at least 2 s); the note says which share of the timed part the
   cleaning covered.
3. **Restart with an offset-commit history** (wireserver only: the history is written
   straight into a stopped wireserver's log). A data dir is made by a broker with
   ``offsets.topic.segment.bytes`` 1 MiB (Kafka's default is 100 MiB) in which 4 groups commit
   offsets of an 8-partition topic once; then, broker stopped, the commit history is appended
   straight into the groups' ``__consumer_offsets`` partitions with the coordinator's own
   record encoders (``wireserver.groups.records``): one batch of 8 records a commit, ~1 GiB
   in all (``--quick``: 100 MiB). Start-up is timed over 2 starts (``--quick``: 3) with the
   cleaner off, to two points: spawn → first Metadata (as ``benchmarks.compare``) and spawn →
   the groups' committed offsets readable (an OffsetFetch of every group answered without
   COORDINATOR_LOAD_IN_PROGRESS, asked every 50 ms on one connection: the coordinator loads
   the partitions in the background, as Kafka's does); then a broker runs with the cleaner on
   until each of those partitions has shrunk and none changes for 3 s, is stopped, and as
   many starts are timed again. The committed offsets are read back after the last start as a check.

Figures, never assertions. The table is printed and written as the "## Compaction" section
of ``benchmarks/results.md`` (only that section is replaced; ``benchmarks.compare`` keeps it).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka

from benchmarks import compare
from benchmarks.compare import (
    LATENCY_RATE,
    MIB,
    RESULTS,
    Broker,
    Pinning,
    Results,
    Run,
    add_build_option,
    build_description,
    machine_lines,
    render_table,
    run_rdkafka,
    start_kafka,
    start_wireserver,
    use_build,
    write_section,
)

SECTION = "## Compaction"
RECORD_SIZE = 1024
KEYS = 10_000
SEGMENT_BYTES = 8 * MIB
CLEANER_BACKOFF_MS = 200
POLL_S = 0.05  # DescribeLogDirs polling while waiting for a cleaning
SETTLE_S = 3.0  # a size unchanged this long means the cleaning is over
MIN_LATENCY_S = 2.0
WARMUP_LATENCY_S = 3.0  # an untimed latency run first (a fresh JVM's JIT, the topic)
#: The compacted topics are filled with the policy ``delete`` (nothing cleaned during the fill)
#: and switched to ``compact`` when the measure starts.
FILL_CONFIG = {
    "cleanup.policy": "delete",
    "segment.bytes": str(SEGMENT_BYTES),
    "min.cleanable.dirty.ratio": "0.01",
    "retention.ms": "-1",
    "retention.bytes": "-1",
}
#: The commit history of the restart workload: these groups commit the offsets of every
#: partition of this topic, one batch per commit.
GROUPS = [f"bench-group-{i}" for i in range(4)]
COMMITTED_TOPIC = "bench-orders"
COMMITTED_PARTITIONS = 8
COMMITS_PER_APPEND = 1000
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, its default
WIRESERVER_CLEANER = {"log.cleaner.backoff.ms": str(CLEANER_BACKOFF_MS)}
#: Small segments, so that most of the history is in inactive segments the cleaner may clean
#: (Kafka's default is 100 MiB; the active segment of each partition is never cleaned).
OFFSETS_SEGMENT_BYTES = 1 * MIB
OFFSETS_LAYOUT = {"offsets.topic.segment.bytes": str(OFFSETS_SEGMENT_BYTES)}
NOT_KAFKA = "n/a (history written for wireserver only)"


@dataclass(frozen=True)
class Sizes:
    fill_mib: int  # each compacted topic of steps 1 and 2
    offsets_mib: int  # commit history of step 3
    starts: int  # timed starts before and after compaction
    max_latency_s: float  # timed part of a latency run, at most
    timeout_s: float  # longest wait for one cleaning


DEFAULT = Sizes(fill_mib=1024, offsets_mib=1024, starts=2, max_latency_s=10.0, timeout_s=1800)
QUICK = Sizes(fill_mib=150, offsets_mib=100, starts=3, max_latency_s=5.0, timeout_s=600)


# ------------------------------------------------------------------------------ admin


def create_topic(bootstrap: str, topic: str, configs: dict[str, str], partitions: int = 1) -> None:
    """Create ``topic`` with ``configs`` and wait for its leaders."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from benchmarks.rdkafka_load import ensure_topic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config=configs)
    admin.create_topics([new], operation_timeout=30)[topic].result(60)
    ensure_topic(bootstrap, topic, partitions)  # exists already: waits for the leaders


def set_cleanup_policy(bootstrap: str, topic: str, policy: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    entry = ConfigEntry("cleanup.policy", policy, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.incremental_alter_configs([resource])[resource].result(30)


class LogDirs:
    """Partition sizes from DescribeLogDirs (kafka-python's admin client)."""

    def __init__(self, bootstrap: str):
        from kafka.admin import KafkaAdminClient

        self.admin = KafkaAdminClient(
            bootstrap_servers=bootstrap, client_id="wireserver-bench-logdirs"
        )

    def size(self, topic: str, partitions: list[int] | None = None) -> int:
        """Bytes of ``topic``'s ``partitions`` (default: partition 0) over every log dir."""
        partitions = [0] if partitions is None else partitions
        total = 0
        for entry in self.admin.describe_log_dirs({topic: partitions}):
            for log_dir in entry["log_dirs"]:
                for t in log_dir["topics"]:
                    if t["name"] == topic:
                        total += sum(p["partition_size"] for p in t["partitions"])
        return total

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.admin.close()


def wait_cleaned(
    sizes: Callable[[], list[int]], before: list[int], started: float, timeout: float
) -> tuple[float, int]:
    """Poll ``sizes()`` (of some partitions) until each is below its ``before`` and none
    changed for ``SETTLE_S`` (a cleaner thread cleans one partition after the other); returns
    (seconds from ``started`` to the last change seen, their total size then)."""
    last, changed_at = before, None
    while True:
        now = time.perf_counter()
        current = sizes()
        if current != last:
            last, changed_at = current, now
        smaller = all(c < b for c, b in zip(current, before))
        if changed_at is not None and smaller and now - changed_at >= SETTLE_S:
            return changed_at - started, sum(current)
        if now - started > timeout:
            raise TimeoutError(f"sizes {current} (from {before}) after {timeout:.0f} s")
        time.sleep(POLL_S)


def fill(broker: Broker, pinning: Pinning, topic: str, mib: int) -> dict:
    """``mib`` MiB of 1 KB records whose keys cycle over ``KEYS`` keys, acks=1."""
    records = mib * MIB // RECORD_SIZE
    return run_rdkafka(
        pinning,
        "produce",
        "--bootstrap",
        broker.bootstrap,
        "--topic",
        topic,
        "--size",
        RECORD_SIZE,
        "--acks",
        "1",
        "--records",
        records,
        "--reps",
        1,
        "--keys",
        KEYS,
    )


def compact_and_wait(broker: Broker, topic: str, timeout: float) -> tuple[int, float, int]:
    """Switch ``topic`` to ``compact``; (size before, seconds to the last size drop, size
    after)."""
    dirs = LogDirs(broker.bootstrap)
    try:
        before = dirs.size(topic)
        started = time.perf_counter()
        set_cleanup_policy(broker.bootstrap, topic, "compact")
        seconds, after = wait_cleaned(lambda: [dirs.size(topic)], [before], started, timeout)
    finally:
        dirs.close()
    return before, seconds, after


# ------------------------------------------------------------------------------ broker logs

_KAFKA_STATS = re.compile(
    r"cleaned log (?P<log>\S+) \(dirty section = \[\d+, \d+\]\)\s+"
    r"(?P<mb>[\d,.]+) MB of log processed in (?P<s>[\d,.]+) seconds \((?P<rate>[\d,.]+) MB/sec\)"
)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def broker_cleanings(broker: Broker, topic: str) -> list[dict]:
    """The cleanings of ``topic``'s partitions its broker logged: the MB and seconds of Kafka's
    per-cleaning stats, which wireserver writes line for line too (``cleaning_summary`` in
    wireserver/log_cleaner.py, since 7cdfa9c; the run of 2026-12-07 18:45 UTC still looked for
    wireserver's earlier line and noted "no cleaning logged")."""
    if broker.log_file is None or not broker.log_file.exists():
        return []
    text = broker.log_file.read_text(errors="replace")
    return [
        {"mib": _number(m["mb"]), "seconds": _number(m["s"])}
        for m in _KAFKA_STATS.finditer(text)
        if m["log"].rsplit("-", 1)[0] == topic
    ]


def cleanings_note(broker: Broker, topic: str) -> str:
    runs = broker_cleanings(broker, topic)
    if not runs:
        return "no cleaning logged"
    mib = sum(r["mib"] for r in runs)
    seconds = sum(r["seconds"] for r in runs)
    return f"its log: {mib:.0f} MB in {seconds:.1f} s = {mib / seconds:.0f} MB/s"


# ------------------------------------------------------------------------------ steps 1 and 2


class Session(compare.Session):
    """Steps 1 and 2 against one running broker (``compare.Session`` files the figures)."""

    def __init__(
        self,
        broker: Broker,
        sizes: Sizes,
        pinning: Pinning,
        results: Results,
        log: Callable[[str], None],
    ):
        super().__init__(broker, sizes, pinning, results, False, log)
        self.clean_s: float | None = None

    def filled_topic(self, topic: str) -> str | None:
        """Create and fill a compacted-to-be topic; an error message, or None."""
        create_topic(self.b.bootstrap, topic, FILL_CONFIG)
        out = fill(self.b, self.pinning, topic, self.sizes.fill_mib)
        if "error" in out:
            return out["error"]
        seconds = out["reps"][0]["seconds"]
        self.log(f"  filled {topic}: {self.sizes.fill_mib} MiB in {seconds:.1f} s")
        return None

    def cleaner_throughput(self) -> None:
        topic = "bench-compact"
        workload = (
            f"cleaner throughput: {self.sizes.fill_mib} MB of 1 KB records over {KEYS:,} keys, "
            "compact switched on → size settled (DescribeLogDirs)"
        )
        key = "clean"
        error = self.filled_topic(topic)
        if error:
            self.failed(key, workload, "MB/s", True, error)
            return
        try:
            before, seconds, after = compact_and_wait(self.b, topic, self.sizes.timeout_s)
        except Exception as exc:  # a cleaning that never ends: report it, go on
            self.failed(key, workload, "MB/s", True, f"{type(exc).__name__}: {exc}")
            return
        self.clean_s = seconds
        mib_s = before / MIB / seconds
        note = cleanings_note(self.b, topic)
        self.put(
            key,
            workload,
            "MB/s",
            True,
            mib_s,
            f" ({seconds:.1f} s, {before / MIB:.0f} → {after / MIB:.1f} MB; {note})",
        )
        self.log(
            f"  {workload}: {mib_s:.1f} MB/s ({before / MIB:.0f} MB in {seconds:.1f} s → "
            f"{after / MIB:.1f} MB); {note}"
        )

    def latency(self, topic: str, seconds: float) -> dict:
        return run_rdkafka(
            self.pinning,
            "latency",
            "--bootstrap",
            self.b.bootstrap,
            "--topic",
            topic,
            "--rate",
            LATENCY_RATE,
            "--seconds",
            seconds,
            "--acks",
            "all",
        )

    def put_latency(self, key: str, base: str, out: dict, extra: str = "") -> None:
        for q in ("p50", "p99"):
            workload = f"{base}, {q}"
            if "error" in out:
                self.failed(f"{key}-{q}", workload, "ms", False, out["error"])
            else:
                self.put(f"{key}-{q}", workload, "ms", False, out[q], extra)
        if "error" not in out:
            self.log(f"  {base}: p50 {out['p50']:.2f} ms, p99 {out['p99']:.2f} ms{extra}")

    def latency_while_cleaning(self) -> None:
        base = f"produce latency @ {LATENCY_RATE:,} rec/s, 1 KB, acks=all (librdkafka)"
        seconds = MIN_LATENCY_S
        if self.clean_s is not None:  # the timed part starts ~2 s in (client start, warm-up)
            seconds = round(min(self.sizes.max_latency_s, max(MIN_LATENCY_S, self.clean_s - 3)), 1)
        topic = "bench-dirty"
        error = self.filled_topic(topic)
        if error:
            self.failed("lat-busy", f"{base}, while cleaning", "ms", False, error)
            return
        self.latency("bench-latency-idle", WARMUP_LATENCY_S)  # JIT (Kafka), topic, client
        idle = self.latency("bench-latency-idle", seconds)
        self.put_latency("lat-idle", f"{base}, cleaner idle", idle, f" ({seconds:g} s)")
        dirs = LogDirs(self.b.bootstrap)
        try:
            before = dirs.size(topic)
            started = time.perf_counter()
            set_cleanup_policy(self.b.bootstrap, topic, "compact")
            # Watched from a thread, so the end of the cleaning is seen during the run too.
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                cleaned = pool.submit(
                    wait_cleaned,
                    lambda: [dirs.size(topic)],
                    [before],
                    started,
                    self.sizes.timeout_s,
                )
                busy = self.latency("bench-latency-busy", seconds)
                run_s = time.perf_counter() - started
                cleaned_s, _ = cleaned.result()
        except Exception as exc:
            self.failed("lat-busy", f"{base}, while cleaning", "ms", False, repr(exc))
            return
        finally:
            dirs.close()
        # The timed part is about the last ``seconds`` of the run.
        covered = min(1.0, max(0.0, (cleaned_s - (run_s - seconds)) / seconds))
        extra = (
            f" ({seconds:g} s; cleaning {self.sizes.fill_mib} MB took {cleaned_s:.1f} s from "
            f"the switch, ~{covered:.0%} of the timed part)"
        )
        self.put_latency("lat-busy", f"{base}, while the cleaner cleans", busy, extra)


def run_target(
    name: str, sizes: Sizes, pinning: Pinning, results: Results, log: Callable[[str], None]
) -> None:
    log(f"== {name}: starting")
    if name == "kafka":
        broker = start_kafka(pinning, {"log.cleaner.backoff.ms": str(CLEANER_BACKOFF_MS)})
    else:
        broker = start_wireserver(pinning, overrides=WIRESERVER_CLEANER, log_level="INFO")
    try:
        log(f"  {broker.name} {broker.version} ready at {broker.bootstrap} (pid {broker.pid})")
        session = Session(broker, sizes, pinning, results, log)
        session.cleaner_throughput()
        session.latency_while_cleaning()
    finally:
        broker.stop()


# ------------------------------------------------------------------------------ step 3


def seed_groups(pinning: Pinning, data_dir: str) -> None:
    """A broker that creates the committed topic and ``__consumer_offsets``: each group commits
    once."""
    from confluent_kafka import Consumer, TopicPartition

    broker = start_wireserver(
        pinning, overrides={**OFFSETS_LAYOUT, "log.cleaner.enable": "false"}, data_dir=data_dir
    )
    try:
        create_topic(broker.bootstrap, COMMITTED_TOPIC, {}, COMMITTED_PARTITIONS)
        for group in GROUPS:
            consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
            offsets = [TopicPartition(COMMITTED_TOPIC, p, 1) for p in range(COMMITTED_PARTITIONS)]
            consumer.commit(offsets=offsets, asynchronous=False)
            consumer.close()
    finally:
        broker.stop()


def last_committed(commit: int, partition: int) -> int:
    """The offset the history's ``commit``-th commit (of each append) gives ``partition``."""
    return 1000 + commit * COMMITTED_PARTITIONS + partition


def write_commit_history(data_dir: str, nbytes: int) -> int:
    """Append ``nbytes`` of offset commits (split over ``GROUPS``) to the stopped broker's
    ``__consumer_offsets``, as its coordinator writes them; returns the records written."""
    from wireserver.config import BrokerConfig
    from wireserver.groups.records import (
        OFFSETS_TOPIC,
        OffsetKey,
        OffsetValue,
        encode_key,
        encode_offset_value,
        partition_for,
    )
    from wireserver.protocol.records import RecordBatchBuilder
    from wireserver.storage.manager import LogManager
    from wireserver.testing import TEST_DEFAULTS

    config = BrokerConfig({**TEST_DEFAULTS, **OFFSETS_LAYOUT, "log.dirs": data_dir})
    logs = LogManager(
        config.log_dirs,
        config.topic_defaults(),
        lambda: int(time.time() * 1000),
        config["producer.id.expiration.ms"],
    )
    logs.load()
    records = 0
    try:
        count = logs.topics[OFFSETS_TOPIC].num_partitions
        for group in GROUPS:
            partition_log = logs.get_log(OFFSETS_TOPIC, partition_for(group, count))
            epoch = partition_log.latest_epoch or 0
            keys = [
                encode_key(OffsetKey(group, COMMITTED_TOPIC, p))
                for p in range(COMMITTED_PARTITIONS)
            ]
            now = int(time.time() * 1000)
            chunk = bytearray()
            for commit in range(COMMITS_PER_APPEND):
                builder = RecordBatchBuilder()
                for p, key in enumerate(keys):
                    value = OffsetValue(last_committed(commit, p), 0, "", now)
                    builder.append(now, key, encode_offset_value(value))
                chunk += builder.build()
            written = 0
            while written < nbytes // len(GROUPS):
                partition_log.append(bytearray(chunk), leader_epoch=epoch, now_ms=now)
                written += len(chunk)
                records += COMMITS_PER_APPEND * COMMITTED_PARTITIONS
            partition_log.high_watermark = partition_log.log_end_offset
    finally:
        logs.close()
    return records


def offsets_bytes(data_dir: str, partition: int | str = "*") -> int:
    """Bytes of ``__consumer_offsets`` segment files (``.log``) in the data dir."""
    found = Path(data_dir).glob(f"__consumer_offsets-{partition}/*.log")
    return sum(f.stat().st_size for f in found if f.is_file())


def history_partitions() -> list[int]:
    """The partitions of ``__consumer_offsets`` that hold ``GROUPS``."""
    from wireserver.groups.records import partition_for

    return sorted({partition_for(group, OFFSETS_PARTITIONS) for group in GROUPS})


def wait_groups_loaded(bootstrap: str) -> None:
    """Return once an OffsetFetch of ``GROUPS`` is answered without
    COORDINATOR_LOAD_IN_PROGRESS (their partitions of ``__consumer_offsets`` are loaded),
    asking every 50 ms on one connection."""
    from kafka.protocol.consumer.group import OffsetFetchRequest

    from wireserver.protocol.errors import ErrorCode
    from wireserver.testing import KafkaWire

    group = OffsetFetchRequest.OffsetFetchRequestGroup
    request = OffsetFetchRequest(
        version=8, groups=[group(group_id=g, topics=None) for g in GROUPS], require_stable=False
    )
    loading = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    with KafkaWire(bootstrap) as wire:
        while any(a.error_code == loading for a in wire.request(request).groups):
            time.sleep(0.05)


def timed_starts(pinning: Pinning, data_dir: str, count: int) -> list[tuple[float, float]]:
    """``count`` starts: (spawn → first Metadata, spawn → the groups' offsets readable) of
    each. The groups load in the background, as Kafka's: the second is polled every 50 ms."""
    starts = []
    for _ in range(count):
        spawned = time.perf_counter()
        broker = start_wireserver(
            pinning,
            overrides={**OFFSETS_LAYOUT, "log.cleaner.enable": "false"},
            data_dir=data_dir,
            startup_timeout=900,
        )
        try:
            wait_groups_loaded(broker.bootstrap)
            loaded = time.perf_counter() - spawned
        finally:
            broker.stop()
        starts.append((broker.startup_s, loaded))
    return starts


def check_committed(pinning: Pinning, data_dir: str) -> str:
    """Start once more and read every group's committed offsets: "ok" or what differs."""
    from confluent_kafka import Consumer, TopicPartition

    broker = start_wireserver(
        pinning,
        overrides={**OFFSETS_LAYOUT, "log.cleaner.enable": "false"},
        data_dir=data_dir,
        startup_timeout=900,
    )
    try:
        wrong = []
        for group in GROUPS:
            consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
            asked = [TopicPartition(COMMITTED_TOPIC, p) for p in range(COMMITTED_PARTITIONS)]
            for tp in consumer.committed(asked, timeout=30):
                expected = last_committed(COMMITS_PER_APPEND - 1, tp.partition)
                if tp.offset != expected:
                    wrong.append(f"{group} p{tp.partition}: {tp.offset} (expected {expected})")
            consumer.close()
    finally:
        broker.stop()
    return "ok" if not wrong else "; ".join(wrong[:4])


def compact_offsets(pinning: Pinning, data_dir: str, timeout: float) -> float:
    """Run a broker with the cleaner on until each partition of ``__consumer_offsets`` that
    holds the history has shrunk and none changes; seconds from its start-up to the last size
    drop."""
    from wireserver.groups.records import OFFSETS_TOPIC

    partitions = history_partitions()
    before = [offsets_bytes(data_dir, p) for p in partitions]

    broker = start_wireserver(
        pinning,
        overrides={**OFFSETS_LAYOUT, **WIRESERVER_CLEANER},
        data_dir=data_dir,
        startup_timeout=900,
    )
    dirs = LogDirs(broker.bootstrap)
    try:
        started = time.perf_counter()
        seconds, _ = wait_cleaned(
            lambda: [dirs.size(OFFSETS_TOPIC, [p]) for p in partitions], before, started, timeout
        )
    finally:
        dirs.close()
        broker.stop()
    return seconds


def _ms(starts: list[float]) -> str:
    return ", ".join(f"{s * 1000:.0f}" for s in starts)


def _starts_ms(starts: list[tuple[float, float]]) -> str:
    return ", ".join(f"{served * 1000:.0f}/{loaded * 1000:.0f}" for served, loaded in starts)


def restart_figures(
    sizes: Sizes, pinning: Pinning, results: Results, log: Callable[[str], None]
) -> None:
    log("== wireserver: restart with an offset-commit history")
    data_dir = tempfile.mkdtemp(prefix="wireserver-bench-offsets-")
    try:
        seed_groups(pinning, data_dir)
        started = time.perf_counter()
        records = write_commit_history(data_dir, sizes.offsets_mib * MIB)
        size_before = offsets_bytes(data_dir)
        log(
            f"  wrote {records:,} offset-commit records ({size_before / MIB:.0f} MB of "
            f"__consumer_offsets) in {time.perf_counter() - started:.1f} s"
        )
        before = timed_starts(pinning, data_dir, sizes.starts)
        log(f"  start-up before compaction (served/loaded): {_starts_ms(before)} ms")
        cleaned_s = compact_offsets(pinning, data_dir, sizes.timeout_s)
        size_after = offsets_bytes(data_dir)
        log(
            f"  compacted in {cleaned_s:.1f} s after start-up: {size_before / MIB:.0f} → "
            f"{size_after / MIB:.1f} MB"
        )
        after = timed_starts(pinning, data_dir, sizes.starts)
        log(f"  start-up after compaction (served/loaded): {_starts_ms(after)} ms")
        check = check_committed(pinning, data_dir)
        log(f"  committed offsets read back: {check}")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    for key, label, starts, size in (
        ("start-before", "before compaction", before, size_before),
        ("start-after", "after the cleaner compacted it", after, size_after),
    ):
        for index, suffix, end in ((0, "", "first Metadata"), (1, "-loaded", "offsets readable")):
            times = [start[index] for start in starts]
            results.put(
                "wireserver",
                key + suffix,
                f"start-up with {sizes.offsets_mib} MB of offset commits in "
                f"__consumer_offsets, {label}: spawn → {end}",
                "ms",
                False,
                statistics.median(times) * 1000,
                f" (n={len(times)}: {_ms(times)}; {size / MIB:.1f} MB on disk)",
            )
            results.put("Kafka", key + suffix, "", "ms", False, NOT_KAFKA)
    results.put(
        "wireserver",
        "compact-offsets",
        "compacting that __consumer_offsets: broker ready → size settled",
        "s",
        False,
        cleaned_s,
        f" (committed offsets read back after: {check})",
    )
    results.put("Kafka", "compact-offsets", "", "s", False, "n/a")


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compaction", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="150 MB topics, 100 MB of commits")
    parser.add_argument("--no-pin", action="store_true", help="do not pin broker and clients")
    parser.add_argument(
        "--targets", default="kafka,wireserver", help="comma-separated subset of: kafka, wireserver"
    )
    parser.add_argument(
        "--skip-restart", action="store_true", help="skip the restart workload (step 3)"
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    add_build_option(parser)
    args = parser.parse_args(argv)
    use_build(args.build)
    sizes = QUICK if args.quick else DEFAULT
    run = Run.begin(not args.no_pin)
    results = Results()

    def log(message: str) -> None:
        print(message, flush=True)

    log(
        f"compaction benchmark ({'quick' if args.quick else 'default'} sizes); "
        f"{run.pinning.describe()}; load average {run.load}"
    )
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    for name in targets:
        with results.noting_failure(name, log):
            run_target(name, sizes, run.pinning, results, log)
    if "wireserver" in targets and not args.skip_restart:
        with results.noting_failure("restart workload", log):
            restart_figures(sizes, run.pinning, results, log)
    elapsed = time.monotonic() - run.t0
    table = render_table(results)
    log("")
    for line in table:
        log(line)
    command = "python -m benchmarks.compaction" + ("" if not argv else " " + " ".join(argv))

    write_section(
        args.output,
        SECTION,
        [
            f"Written by `{command}` on {run.started.isoformat(timespec='seconds')} (run took "
            f"{elapsed / 60:.1f} min); replaced on every run. Method: see the module docstring "
            "of `benchmarks/compaction.py`. Figures, not assertions; MB = MiB.",
            "",
            f"- sizes ({'--quick' if args.quick else 'default'}): {sizes.fill_mib} MB per "
            f"compacted topic (1 KB records, {KEYS:,} keys, segment.bytes "
            f"{SEGMENT_BYTES // MIB} MiB, min.cleanable.dirty.ratio 0.01), {sizes.offsets_mib} MB "
            f"of offset commits ({len(GROUPS)} groups × {COMMITTED_PARTITIONS} partitions, "
            f"offsets.topic.segment.bytes {OFFSETS_SEGMENT_BYTES // MIB} MiB), {sizes.starts} "
            "starts "
            "before and after compaction",
            f"- both brokers: log.cleaner.backoff.ms={CLEANER_BACKOFF_MS}, other cleaner "
            "settings at their defaults (1 thread, 128 MiB dedupe buffer, no io limit); "
            "wireserver logs at INFO here (for its cleaning lines)",
            f"- CPU pinning: {run.pinning.describe()}; the cleaner thread shares the broker's CPU",
            f"- wireserver: {build_description()}",
            f"- load average at the start: {run.load}",
            *machine_lines()[:-1],  # its last line names compare's clients; ours:
            f"- client: confluent-kafka {confluent_kafka.__version__} (librdkafka "
            f"{confluent_kafka.libversion()[0]}), kafka-python for DescribeLogDirs",
            "",
            *table,
            "",
            "Reading the figures: cleaner throughput is the partition's size before the "
            "switch to compact over the time until its size stopped dropping (DescribeLogDirs "
            "polled every 50 ms), for both brokers; Kafka's own figure, from its cleaner's "
            "stats line, counts only the cleaning itself. The latency rows compare the "
            "same fixed-rate workload with the cleaner idle and while it cleans another topic "
            "on the same CPU (the harness polls DescribeLogDirs 20 times a second during the "
            "second); the share of the timed part that the cleaning covered is in the note. "
            "Runs on a shared machine vary (see the load average): compare a figure with a "
            "second run before reading much into it. The restart rows are wireserver's only "
            "(the history is written straight into its stopped log); like Kafka, it answers "
            "Metadata at once and loads `__consumer_offsets` in the background, answering "
            "the groups COORDINATOR_LOAD_IN_PROGRESS until their partition is loaded.",
            *(["", "Failures:", "", *(f"- {e}" for e in results.errors)] if results.errors else []),
        ],
    )
    log(f"\nwritten to {args.output} ({elapsed / 60:.1f} min)")
    return 1 if results.errors and not results.rows else 0


if __name__ == "__main__":
    sys.exit(main())
