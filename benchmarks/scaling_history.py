"""The history dimension of ``benchmarks.scaling``: what a long log costs a broker.

For each size (MiB of log, growing one topic cumulatively from the previous size) it

1. fills topic ``scale-history`` (8 partitions, default ``segment.bytes``) with 1 KiB records,
   acks=1, from a librdkafka producer (``benchmarks.rdkafka_load produce``) in batches of at
   most 16 KiB, the Java producer's default ``batch.size``, until the topic's segment files
   hold the size: "fill rate (MiB/s)";
2. restarts the broker after a clean stop and after ``kill -9``: "start-up after clean stop
   (s)", "start-up after kill -9 (s)", each checked against the partitions' end offsets from
   before (the note says ``no loss`` or ``lost N records (...)``);
3. reads the whole topic from the beginning with the page cache dropped, then again at once:
   "cold fetch throughput (MiB/s)" and "warm fetch throughput (MiB/s)" (MiB of payload).

The size is counted in the topic's ``.log`` files rather than with ``dir_bytes`` of the data
dir: Kafka preallocates each active segment's two index files at 10 MiB (sparse files, but
their length is what ``dir_bytes`` adds up), and once ``__consumer_offsets`` exists that is
over a GiB of nothing, while wireserver writes index entries as it makes them. The data dir's
``dir_bytes`` is in the fill note.

A step that fails gives ``None`` with the error in the note and the next step still runs.
These are figures, never assertions (DESIGN.md, "Benchmarks live in benchmarks/").
"""

from __future__ import annotations

import math
import os
import re
import shutil
import time
from pathlib import Path

from benchmarks.compare import run_rdkafka
from benchmarks.scaling_targets import Figure, Target, dir_bytes

MIB = 1024 * 1024
GIB = 1024 * MIB
TOPIC = "scale-history"
PARTITIONS = 8
VALUE_BYTES = 1024
#: The Java producer's default ``batch.size``. librdkafka's (1 MB, which the comparison's
#: workloads keep) would leave 64 times fewer batches and index entries, so a start-up's or a
#: recovery's cost per batch would hardly show; a log written by Java clients looks like this.
BATCH_BYTES = 16384
#: A size is skipped if filling it would leave less than this free on the data dir's disk.
MIN_FREE_BYTES = 10 * GIB
#: Records per producer process: one chunk is about a GiB, so a large fill is several runs with
#: the size looked at in between.
MAX_CHUNK_RECORDS = 1_000_000
#: A 1 KiB value takes about this much segment file (record header, batch header shared by
#: about fifteen records); the fill corrects it from what the first chunk wrote.
DISK_BYTES_PER_RECORD_GUESS = 1040
#: Chunks a fill may take before it gives up short of its size.
MAX_CHUNKS = 64
#: Slowest read (MiB/s) the consume deadline allows for, so a large topic is not cut off at
#: rdkafka_load's default of 300 s.
SLOWEST_READ_MIB_S = 20

FILL = "fill rate (MiB/s)"
CLEAN_START = "start-up after clean stop (s)"
KILL_START = "start-up after kill -9 (s)"
COLD_FETCH = "cold fetch throughput (MiB/s)"
WARM_FETCH = "warm fetch throughput (MiB/s)"
METRICS = (FILL, CLEAN_START, KILL_START, COLD_FETCH, WARM_FETCH)

#: Under the history table: what its figures are made of (the run of 2026-12-07 01:01 UTC).
READING = "\n".join(
    [
        "Reading the history figures: since 2026-12-07 the topic is filled in batches of at "
        "most 16 KiB (the Java producer's default `batch.size`), not librdkafka's 1 MB: 64 "
        "times the batches and index entries, so what a broker does per batch shows. The runs "
        "before (the last on 2026-12-05 20:25 UTC, Intel Xeon) filled at 148-501 MiB/s and "
        "started after kill -9 in 0.70-1.59 s.",
        "",
        "- **Filling is the broker's limit, on both** (each on its one pinned core): 1,000,000 "
        "records into a fresh broker of each, measured apart, took wireserver 16.5 s of CPU in "
        "16.9 s (58.6 MiB/s) and Kafka 27.3 s in 27.5 s (35.9 MiB/s). That is about 240 µs of "
        "wireserver's CPU per 15.5 KB batch, the cost of a Produce request carrying one or two "
        "of them: py-spy puts 15 % in the segment's pwrite, 11 % in the socket's recv and send, "
        "and the rest spread over decoding, validation (with the CRC), the append and the "
        "answer, no line above 2 %. Kafka's rate climbs as its JIT warms (35 to 80 MiB/s from "
        "1 to 30 GiB), wireserver's stays at 52-72, so the rows at 10 and 30 GiB read 0.84x "
        "and 0.90x. The Java producer's rows of the comparison are the same per-request cost.",
        "- **A start-up after kill -9 re-reads each partition's active segment**, as Kafka's "
        "does (its `LogLoader` recovers from the recovery point, which lies in the active "
        "segment). With 8 partitions and 1 GiB segments that is 0.13 GiB a partition at 1 GiB "
        "of history, 0.28 at 10 GiB and 0.84 at 30 GiB: the row follows where the history ends "
        "in a segment, not how long it is (at 32 GiB there would be almost nothing to read), so "
        "its growth of 1.15 from 10 to 30 GiB is the active segments' 3x. wireserver re-reads "
        "them at about 0.7 s a GiB (6.7 GiB: 4.6 s over its clean start), batch by batch in "
        "Python: in py-spy of such a restart the CRC-32C takes 20 %, the pread of 1 MiB blocks "
        "19 %, rebuilding the indexes 18 % and unpacking headers 9 %. Kafka starts 7.5-8.5 s later "
        "after kill -9 than after a clean stop at every size, so its recovery hides in that "
        "wait. Commit 7050548 took the RecordBatch view out of the CRC check (one partition, "
        "1.9 GB, in process: 1.03-1.67 s before, 0.90-1.16 s after); the run before it "
        "(2026-12-06 23:59 UTC) had 1.34, 2.14 and 5.61 s at 1, 10 and 30 GiB, this one 1.32, "
        "1.59 and 5.63.",
        "- **Start-ups begin from bytecode compiled beforehand** (`benchmarks.compare."
        "compile_sources`, as `pip install` leaves a package). This machine sets "
        "PYTHONDONTWRITEBYTECODE, so before 2026-12-07 every start compiled the sources again: "
        "`benchmarks.startup` gives 631 ms to the first Metadata answer without bytecode and "
        "495 ms with it. The start-up rows of the other tables include that compile.",
        "- **Reads**: cold 0.93-1.80x Kafka's, warm 0.81-1.15x. A warm read of 1 GiB by "
        "librdkafka, measured apart, took the wireserver broker 1.2-1.3 s of CPU and the client "
        "2.6-3.0 s in 3.3-3.6 s (Kafka's broker 1.6-3.5 s, the client 2.6-2.9 s): the reads are "
        "the client's limit, and single runs here move by 20 % either way.",
    ]
)


def topic_log_bytes(data_dir: Path, topic: str = TOPIC) -> int:
    """Bytes in the segment files (``*.log``) of ``topic``'s partition directories."""
    partition_dir = re.compile(re.escape(topic) + r"-\d+")
    total = 0
    for root, dirs, files in os.walk(data_dir):
        if partition_dir.fullmatch(os.path.basename(root)):
            dirs.clear()
            for name in files:
                if name.endswith(".log"):
                    try:
                        total += os.path.getsize(os.path.join(root, name))
                    except OSError:  # a segment deleted or renamed under us
                        pass
    return total


def create_topic(bootstrap: str) -> None:
    """Create the topic with confluent's AdminClient (an existing one is fine: sizes grow it)."""
    from benchmarks.rdkafka_load import ensure_topic

    try:
        ensure_topic(bootstrap, TOPIC, PARTITIONS)
    except SystemExit as exc:  # ensure_topic's "no leaders" ends a load process; not this one
        raise RuntimeError(str(exc)) from None


def end_offsets(bootstrap: str, timeout: float = 60.0) -> dict[int, int]:
    """Each partition's high watermark. Retried until ``timeout``: right after a start the
    broker may answer Metadata before every partition has its leader back."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "scale-history-probe",
            "enable.auto.commit": False,
        }
    )
    deadline = time.monotonic() + timeout
    offsets: dict[int, int] = {}
    try:
        for partition in range(PARTITIONS):
            while True:
                try:
                    _, high = consumer.get_watermark_offsets(
                        confluent_kafka.TopicPartition(TOPIC, partition), timeout=10
                    )
                    offsets[partition] = high
                    break
                except confluent_kafka.KafkaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
    finally:
        consumer.close()
    return offsets


def loss_note(before: dict[int, int], after: dict[int, int]) -> str:
    """``""`` when every partition ends where it did; otherwise ``lost N records (...)``."""
    changed = {p: (before[p], after.get(p)) for p in before if after.get(p) != before[p]}
    if not changed:
        return ""
    lost = sum(old - (new or 0) for old, new in changed.values())
    detail = ", ".join(f"p{p} {old}->{new}" for p, (old, new) in sorted(changed.items()))
    return f"lost {lost} records ({detail})"


def fill(target: Target, size_bytes: int) -> tuple[float | None, str]:
    """Produce until the topic's segments hold ``size_bytes``; returns MiB/s of payload over
    the producers' own timing (from first send to the last acknowledgement, per chunk) and a
    note."""
    bytes_per_record = float(DISK_BYTES_PER_RECORD_GUESS)
    seconds = 0.0
    records = 0
    for _ in range(MAX_CHUNKS):
        before = topic_log_bytes(target.data_dir)
        if before >= size_bytes:
            break
        chunk = min(MAX_CHUNK_RECORDS, max(1, math.ceil((size_bytes - before) / bytes_per_record)))
        result = run_rdkafka(
            target.pinning,
            "produce",
            "--bootstrap",
            target.bootstrap,
            "--topic",
            TOPIC,
            "--partitions",
            PARTITIONS,
            "--size",
            VALUE_BYTES,
            "--acks",
            "1",
            "--batch-size",
            BATCH_BYTES,
            "--records",
            chunk,
            "--reps",
            1,
        )
        if "error" in result:
            raise RuntimeError(result["error"])
        seconds += sum(rep["seconds"] for rep in result["reps"])
        records += chunk
        grown = topic_log_bytes(target.data_dir) - before
        if grown > 0:
            bytes_per_record = grown / chunk
    else:
        raise RuntimeError(f"{MAX_CHUNKS} chunks did not fill {size_bytes // MIB} MiB")
    if not records:
        return None, "the topic was already that size"
    note = f"{records} records, data dir {dir_bytes(target.data_dir) / MIB:.0f} MiB"
    return records * VALUE_BYTES / MIB / seconds, note


def restart_checked(target: Target, kill: bool) -> tuple[float, str]:
    """Restart (clean or ``kill -9``); the seconds to the first Metadata answer and a note
    naming any partition whose end offset moved."""
    try:
        before = end_offsets(target.bootstrap)
    except Exception as exc:  # the start-up is still worth timing
        before, note = None, f"end offsets before unknown ({type(exc).__name__}: {exc})"
    took = target.restart(kill=kill)
    if before is not None:
        try:
            after = end_offsets(target.bootstrap)
            note = loss_note(before, after) or "no loss"
        except Exception as exc:
            note = f"end offsets after unknown ({type(exc).__name__}: {exc})"
    return took, note


def drop_page_cache() -> str:
    """Write dirty pages out and drop the page cache (needs root); ``""`` or why not."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as drop:
            drop.write("3\n")
    except OSError as exc:
        return f"page cache not dropped ({exc.strerror})"
    return ""


def read_all(target: Target, size_bytes: int) -> tuple[float, str]:
    """Read the whole topic from offset 0 once; MiB/s of payload."""
    deadline = max(300.0, size_bytes / MIB / SLOWEST_READ_MIB_S)
    result = run_rdkafka(
        target.pinning,
        "consume",
        "--bootstrap",
        target.bootstrap,
        "--topic",
        TOPIC,
        "--reps",
        1,
        "--deadline",
        deadline,
        timeout=deadline + 120,
    )
    if "error" in result:
        raise RuntimeError(result["error"])
    (rep,) = result["reps"]
    mib_s = rep["bytes"] / MIB / rep["seconds"]
    return mib_s, f"{rep['records']} records"


def measure_history(target: Target, sizes: list[int], quick: bool) -> list[Figure]:
    """Figures for each size in ``sizes`` (MiB), growing one topic from size to size.
    ``target`` is started and is left running. ``quick`` changes nothing here: the sizes are
    what the run costs."""
    figures: list[Figure] = []

    def record(size: int, metric: str, step, *args) -> None:
        try:
            value, note = step(*args)
        except Exception as exc:  # a failed step is a figure too; the next one still runs
            value, note = None, f"{type(exc).__name__}: {exc}"
        figures.append(Figure("history", size, metric, value, note))

    try:
        create_topic(target.bootstrap)
    except Exception as exc:
        error = f"creating {TOPIC}: {type(exc).__name__}: {exc}"
        return [Figure("history", size, m, None, error) for size in sizes for m in METRICS]
    for size in sizes:
        size_bytes = size * MIB
        to_write = max(0, size_bytes - topic_log_bytes(target.data_dir))
        free = shutil.disk_usage(target.data_dir).free
        if free - to_write < MIN_FREE_BYTES:
            figures += [Figure("history", size, m, None, "disk") for m in METRICS]
            continue
        record(size, FILL, fill, target, size_bytes)
        record(size, CLEAN_START, restart_checked, target, False)
        record(size, KILL_START, restart_checked, target, True)
        dropped = drop_page_cache()
        record(size, COLD_FETCH, read_all, target, size_bytes)
        if dropped:
            figures[-1].note = f"{dropped}; {figures[-1].note}"
        record(size, WARM_FETCH, read_all, target, size_bytes)
    return figures


measure = measure_history
