"""Share groups (KIP-932) beside Kafka: consume throughput and acknowledgement latency of
Kafka's own ``KafkaShareConsumer`` with 1 and with 4 members of one share group on one
partition (issue #22).

Run: ``scripts/bench share`` or ``python -m benchmarks.share [--quick] [--no-pin]
[--targets kafka,wireserver] [--output benchmarks/results.md]``.

For each broker in turn (the reference Apache Kafka, one KRaft node, as ``benchmarks.compare``
starts it: a freshly formatted 4.2+ node has ``share.version=1`` finalized, so share groups need
no setting; then ``wireserver serve``) it

1. fills one partition with N records of 1 KB (200,000; ``--quick`` 20,000) with a
   confluent-kafka producer (``benchmarks.rdkafka_load produce``, acks=1);
2. reads it all once with one member (a warm-up, not measured), then, for 1 and then 4
   members, in a new share group whose ``share.auto.offset.reset`` is set to
   ``earliest`` (``kafka-configs --entity-type groups``): starts that many JVMs of
   ``ShareBenchConsumer.java`` (beside this file, compiled once against the reference jars),
   waits until each has subscribed, then lets them all poll at once. Each accepts every record
   explicitly (``acknowledge(record, ACCEPT)``, ``share.acknowledgement.mode=explicit``) and
   commits each poll's acknowledgements with ``commitSync``, timed. When the members together
   have seen N records the harness stops them;
3. reports the records/s and MB/s of all members together from the first record any member got
   to the last, the p50 and p99 of every ``commitSync`` (one per poll that returned
   records, with that poll's acknowledgements), and the broker's CPU time (its process
   tree) and the members' JVMs' CPU time per 100 MB read, both from "go" until the last
   acknowledgement was committed. Every offset must have been seen exactly once,
   with no redelivery and no failed acknowledgement; otherwise the row says what went wrong.

The table goes into ``benchmarks/results.md`` as its own section (``benchmarks.compare``
keeps it). Figures, never assertions; see DESIGN.md ("Benchmarks live in benchmarks/").
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.compare import (
    MIB,
    RESULTS,
    Broker,
    Pinning,
    Results,
    Run,
    cpu_seconds,
    machine_lines,
    rdkafka_produce,
    render_table,
    settle_writeback,
    start_kafka,
    start_wireserver,
    tree_cpu_seconds,
    write_section,
)

SECTION = "## Share groups"
SOURCE = Path(__file__).with_name("ShareBenchConsumer.java")
RECORD_SIZE = 1024
RECORDS = 200_000
QUICK_RECORDS = 20_000
MEMBER_COUNTS = (1, 4)
#: A member leaves after this long without a record (it is told to stop sooner once the
#: members together have seen every record).
IDLE_EXIT_MS = 10_000
JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC")


def compile_consumer(out_dir: Path) -> str:
    """``javac`` ShareBenchConsumer.java against the reference jars; the classpath to run it."""
    from compat_tests import reference as kafka_reference

    kafka_reference.require_tools()
    lib = kafka_reference.resolve()
    subprocess.run(
        ["javac", "-cp", f"{lib}/*", "-d", str(out_dir), str(SOURCE)],
        check=True,
        capture_output=True,
        timeout=180,
    )
    return f"{lib}/*:{out_dir}"


class Member:
    """One ShareBenchConsumer JVM (client-pinned); its stdout lines are kept as they come."""

    def __init__(self, pinning: Pinning, classpath: str, bootstrap: str, topic: str, group: str):
        from compat_tests.applications import app_command

        self.lines: list[str] = []
        self.progress = 0
        self.ready = threading.Event()
        self.process = subprocess.Popen(
            app_command(
                classpath,
                "ShareBenchConsumer",
                bootstrap,
                topic,
                group,
                str(IDLE_EXIT_MS),
                jvm_options=JVM_OPTIONS,
            ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=pinning.client_preexec(),
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            line = line.rstrip("\n")
            if line.startswith("progress "):
                self.progress = int(line.split()[1])
                continue
            if line == "ready":
                self.ready.set()
            self.lines.append(line)

    def say(self, line: str) -> None:
        """A line to its stdin ("go", "stop"); a member that has exited is left alone."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def finish(self, timeout: float) -> None:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        self._reader.join(10)

    def tail(self) -> str:
        return " | ".join(self.lines[-8:])


@dataclass
class MemberReport:
    """What one member printed before it closed."""

    records: int
    first_us: int
    last_us: int
    seen_twice: int
    redelivered: int
    ack_errors: int
    offsets: list[tuple[int, int]]  # runs of offsets, first and last included
    commit_us: list[int]


def member_report(lines: list[str]) -> MemberReport | None:
    """The report in a member's output, or None if it did not get to close."""
    by_word = {line.split(" ", 1)[0]: line.split()[1:] for line in lines if line}
    if "closed" not in by_word or "summary" not in by_word:
        return None
    records, first, last, twice, redelivered, errors = map(int, by_word["summary"])
    runs = [run.split("-") for run in by_word.get("offsets", [])]
    return MemberReport(
        records,
        first,
        last,
        twice,
        redelivered,
        errors,
        [(int(first), int(last)) for first, last in runs],
        [int(us) for us in by_word.get("commits", [])],
    )


@dataclass
class GroupRun:
    """The figures of one share group reading the whole partition, or why there are none."""

    seconds: float = 0.0  # first record to last
    records_per_s: float = 0.0
    mib_per_s: float = 0.0
    ack_p50_ms: float = 0.0
    ack_p99_ms: float = 0.0
    commits: int = 0
    per_member: tuple[int, ...] = ()  # records each member got
    broker_cpu_ms_per_100mb: float = 0.0
    clients_cpu_ms_per_100mb: float = 0.0  # the members' JVMs together
    error: str = ""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def exactly_once_problem(reports: list[MemberReport], records: int) -> str:
    """What breaks "every offset of 0..records-1 seen once, accepted first time", or ""."""
    seen = bytearray(records)
    twice = sum(r.seen_twice for r in reports)
    outside = 0
    for report in reports:
        for first, last in report.offsets:
            for offset in range(first, last + 1):
                if offset >= records:
                    outside += 1
                elif seen[offset]:
                    twice += 1
                else:
                    seen[offset] = 1
    missing = records - sum(seen)
    redelivered = sum(r.redelivered for r in reports)
    ack_errors = sum(r.ack_errors for r in reports)
    problems = [
        f"{count} {what}"
        for count, what in (
            (missing, "offsets never seen"),
            (twice, "offsets seen twice"),
            (outside, "offsets past the end"),
            (redelivered, "records redelivered"),
            (ack_errors, "failed commitSync partitions"),
        )
        if count
    ]
    return ", ".join(problems)


def consume_in_group(
    pinning: Pinning,
    classpath: str,
    broker: Broker,
    topic: str,
    members: int,
    records: int,
    timeout: float,
) -> GroupRun:
    """``members`` ShareBenchConsumers in a new share group read ``topic`` from its start."""
    from compat_tests.reference import run_tool

    group = f"share-bench-{members}-{uuid.uuid4().hex[:6]}"
    configured = run_tool(
        "kafka-configs",
        [
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            group,
            "--add-config",
            "share.auto.offset.reset=earliest",
        ],
        bootstrap=broker.bootstrap,
    )
    if configured.returncode != 0:
        return GroupRun(error=f"kafka-configs: {configured.stderr.strip()[-300:]}")
    started = [Member(pinning, classpath, broker.bootstrap, topic, group) for _ in range(members)]
    try:
        deadline = time.monotonic() + timeout
        for member in started:
            if not member.ready.wait(max(0.0, deadline - time.monotonic())):
                return GroupRun(error=f"a member did not subscribe: {member.tail()}")
        broker_cpu = tree_cpu_seconds(broker.pid)
        clients_cpu = sum(cpu_seconds(m.process.pid) for m in started)
        for member in started:
            member.say("go")
        while sum(m.progress for m in started) < records:
            if time.monotonic() > deadline or all(m.process.poll() is not None for m in started):
                break
            time.sleep(0.02)
        # A member prints its progress after its commitSync: every acknowledgement is in.
        broker_cpu = tree_cpu_seconds(broker.pid) - broker_cpu
        clients_cpu = sum(cpu_seconds(m.process.pid) for m in started) - clients_cpu
        for member in started:
            member.say("stop")
        for member in started:
            member.finish(max(30.0, deadline - time.monotonic()))
    finally:
        for member in started:
            if member.process.poll() is None:
                member.process.kill()
                member.process.wait(30)
    reports = [member_report(m.lines) for m in started]
    if any(r is None for r in reports):
        broken = next(m for m, r in zip(started, reports) if r is None)
        return GroupRun(error=f"a member did not close: {broken.tail()}")
    done = [r for r in reports if r is not None]
    problem = exactly_once_problem(done, records)
    got = [r for r in done if r.records]
    if problem or not got:
        return GroupRun(error=problem or "no records")
    seconds = (max(r.last_us for r in got) - min(r.first_us for r in got)) / 1e6
    commits_ms = [us / 1000 for r in done for us in r.commit_us]
    nbytes = records * RECORD_SIZE
    return GroupRun(
        seconds=seconds,
        records_per_s=records / seconds,
        mib_per_s=nbytes / MIB / seconds,
        ack_p50_ms=statistics.median(commits_ms),
        ack_p99_ms=percentile(commits_ms, 0.99),
        commits=len(commits_ms),
        per_member=tuple(r.records for r in done),
        broker_cpu_ms_per_100mb=broker_cpu * 1000 * 100 * MIB / nbytes,
        clients_cpu_ms_per_100mb=clients_cpu * 1000 * 100 * MIB / nbytes,
    )


def run_target(
    name: str,
    pinning: Pinning,
    classpath: str,
    records: int,
    results: Results,
    log: Callable[[str], None],
) -> None:
    """Start broker ``name``, fill a partition, read it with 1 and 4 members; rows into
    ``results`` under the broker's name."""
    broker = start_kafka(pinning) if name == "kafka" else start_wireserver(pinning)
    log(f"== {broker.name} {broker.version} at {broker.bootstrap}")
    try:
        topic = f"share-bench-{uuid.uuid4().hex[:6]}"
        settle_writeback()
        filled = rdkafka_produce(
            pinning, broker.bootstrap, topic, RECORD_SIZE, 1, "1", records, 1, 0
        )
        if "error" in filled:
            results.errors.append(f"{broker.name}: filling the partition: {filled['error']}")
            return
        timeout = 120 + records / 500
        # Warm-up: one member reads it all in a group of its own, so that the broker's share
        # paths (a JVM's JIT above all) are warm before the first measured group.
        warm = consume_in_group(pinning, classpath, broker, topic, 1, records, timeout)
        log(f"  warm-up: {warm}")
        if warm.error:
            results.errors.append(f"{broker.name}, warm-up: {warm.error}")
        for members in MEMBER_COUNTS:
            settle_writeback()
            run = consume_in_group(pinning, classpath, broker, topic, members, records, timeout)
            put_rows(results, broker.name, members, run)
            log(f"  {members} member(s): {run}")
    finally:
        broker.stop()


def put_rows(results: Results, target: str, members: int, run: GroupRun) -> None:
    who = f"{members} consumer{'s' if members > 1 else ''}"
    rows = (
        ("rps", f"share consume, {who}: throughput", "records/s", True, run.records_per_s),
        ("mib", f"share consume, {who}: throughput", "MB/s", True, run.mib_per_s),
        ("p50", f"share consume, {who}: commitSync of a poll's acks, p50", "ms", False,
         run.ack_p50_ms),
        ("p99", f"share consume, {who}: commitSync of a poll's acks, p99", "ms", False,
         run.ack_p99_ms),
        ("cpu", f"share consume, {who}: broker CPU", "ms/100 MB", False,
         run.broker_cpu_ms_per_100mb),
        ("clients", f"share consume, {who}: consumer JVMs' CPU", "ms/100 MB", False,
         run.clients_cpu_ms_per_100mb),
    )  # fmt: skip
    for key, workload, unit, higher_better, value in rows:
        figure: float | str = f"failed: {run.error}" if run.error else value
        extra = ""
        if key == "p50" and not run.error:
            extra = f" ({run.commits} commits)"
        if key == "rps" and not run.error:
            split = " / ".join(f"{n:,}" for n in run.per_member)
            extra = f" (in {run.seconds:.1f} s" + (
                f"; records per member: {split})" if members > 1 else ")"
            )
        results.put(target, f"{members}-{key}", workload, unit, higher_better, figure, extra)
    if run.error:
        results.errors.append(f"{target}, {who}: {run.error}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.share", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_RECORDS:,} records instead of {RECORDS:,}"
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin broker and clients")
    parser.add_argument("--targets", default="kafka,wireserver", help="kafka, wireserver or both")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = set(targets) - {"kafka", "wireserver"}
    if unknown:
        parser.error(f"unknown target(s): {', '.join(sorted(unknown))}")
    records = QUICK_RECORDS if args.quick else RECORDS
    run = Run.begin(not args.no_pin)
    results = Results()

    def log(message: str) -> None:
        print(message, flush=True)

    log(f"share groups, {records:,} × 1 KB; {run.pinning.describe()}; load {run.load}")
    with tempfile.TemporaryDirectory(prefix="share-bench-") as classes:
        classpath = compile_consumer(Path(classes))
        for name in targets:
            with results.noting_failure(name, log):
                run_target(name, run.pinning, classpath, records, results, log)
    table = render_table(results)
    for line in table:
        log(line)
    command = "python -m benchmarks.share" + ("" if not argv else " " + " ".join(argv))
    write_section(
        args.output,
        SECTION,
        [
            f"Written by `{command}` on {run.started.isoformat(timespec='seconds')} "
            f"({(time.monotonic() - run.t0) / 60:.1f} min); replaced on every run "
            "(issue #22).",
            "",
            f"Method: each broker alone, one after the other. One partition is filled with "
            f"{records:,} records of 1 KB (confluent-kafka, acks=1). Then a new share group "
            "with `share.auto.offset.reset=earliest` reads it with 1 member (a warm-up, not "
            "measured), then a second group with 1, then a third with 4 "
            "KafkaShareConsumer JVMs (`benchmarks/ShareBenchConsumer.java`, "
            f"{' '.join(JVM_OPTIONS)}), started and subscribed before they all poll at once. "
            "Each accepts every record explicitly (`share.acknowledgement.mode=explicit`, "
            "`acknowledge(record, ACCEPT)`) and commits each poll's acknowledgements with "
            "`commitSync`; the harness stops them once their commits cover every record. "
            "Throughput: all records over the time from the first record any "
            "member got to the last (MB = MiB of record values); every offset was checked to "
            "be seen exactly once, first delivery, no failed acknowledgement. commitSync: "
            "p50/p99 of every call of every member (one per poll that returned records). Broker "
            "CPU: user + system time of its process tree from the start of polling until the "
            "last record's acknowledgement was committed, per 100 MB read; the consumer JVMs' "
            "CPU likewise, all members together (their join and JIT warm-up included). The "
            "consumer JVMs share the client CPU(s), so with 4 members the throughput is partly "
            "theirs: compare their CPU with the broker's.",
            "",
            f"- CPU pinning: {run.pinning.describe()}; load average at the start: {run.load}",
            *machine_lines(),
            "",
            *table,
            *(["", "Failures:", "", *(f"- {e}" for e in results.errors)] if results.errors else []),
        ],
    )
    log(f"\nwritten to {args.output}")
    return 1 if results.errors else 0


if __name__ == "__main__":
    sys.exit(main())
