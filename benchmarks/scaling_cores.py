"""The cores dimension of ``benchmarks.scaling`` (issue #20): the same workloads from several
client processes at once on an unpinned machine, where a multi-threaded Kafka can use every
core and one Python process uses one; and what wireserver can do about it.

Size = K, the number of librdkafka client processes (``benchmarks.rdkafka_load``) running at
once. Records are 100 B, acks=1, one topic of 8 partitions (RF 1) per size:

- **produce**: K producers share ``RECORDS`` records (each sends its share after an untimed
  warm-up of a quarter of it, so that Kafka's JIT has compiled its produce path). Every process
  waits for one wall-clock start time and reports when its timed part started and ended;
  throughput is the records of all K over the wall time from the first start to the last end
  (not a sum of per-process rates, which would count processes that did not overlap).
- **consume**: K consumers read back everything that topic holds, each assigned every K-th
  partition (a disjoint share; no group), timed the same way.
- **broker CPU**: CPU time of the broker's whole process tree (for the cluster: both brokers
  and ZooKeeper) from the common start until every client process has exited, over the
  wall time of the timed window, in % of one core; the note gives CPU µs per record.

Not pinned: ``benchmarks.scaling`` starts this dimension's brokers with ``PINNING`` (every
CPU, set explicitly: the harness pins itself to the client CPU when the rest of the run is
pinned, and a child would inherit that mask; the JVM also sizes its GC from the CPUs it sees at
start, so a Kafka started pinned and unpinned later would not be the same Kafka).

**wireserver as 2 brokers.** The scaling tables have two columns, so the wireserver target's
measure function also starts ZooKeeper and 2 ``wireserver serve`` processes
(``wireserver.testing.cluster.LocalCluster``, as the replication benchmark does), runs the same
workloads against them with the topic's 8 leaders spread 4 + 4, and returns them as their own
rows ("..., wireserver as 2 brokers"). Kafka's measure function returns its one-node figures
under those names too, so the ratio column compares 2 wireserver processes with one Kafka.
That keeps ``scaling.main``'s loop over two targets as it is, rather than a third target with a
third column that every other dimension would leave empty.

The other options, measured on this machine (2 cores), 2026-12-03:

- **Free-threaded CPython** is not installable here: Debian 12 has no ``python3.13t`` (nor a
  ``python3.13-nogil`` package), ``/root/.pyenv/versions/3.13.0`` is a GIL build
  (``Py_GIL_DISABLED`` = 0), and ``pyenv install 3.13.0t`` fails because it downloads the
  source from python.org, which this machine cannot reach. It would not help as things are:
  wireserver serves every connection on one Twisted reactor thread, so without the GIL it
  still runs one thread's worth of Python. It pays only once work moves to other threads, and
  then only for Python work (the CRC-32C and lz4/zstd below are C calls already), and most of
  the dependencies' native modules would need free-threaded wheels first.
- **CRC and compression off the reactor thread**: ``python -m benchmarks.scaling_cores
  profile`` samples one unpinned broker (test controls off) with py-spy (1,000/s, only while
  it runs) during a single-producer produce of 100 B records to 8 partitions, acks=1, with the
  producer's compression none, lz4 and zstd, and counts the samples with a CRC frame
  (``compute_crc``/``verify_crc``) or a ``protocol/compression.py`` frame on the stack: CRC
  0.2 %, 0.8 % and 0.0 % of the samples (none, lz4, zstd; 2,974, 2,069 and 2,991 samples; an
  earlier run with the test controls on gave 0.7 %, 0.5 % and 0.1 %), (de)compression 0.0 %
  in every run. The produce path reads batch headers only (``storage/validation.py``): it
  never decompresses a client's batch, and the CRC-32C is one C call over each whole batch.
  So moving CRC and compression to threads has under 1 % of the broker's CPU to gain on this
  path; the rest is Twisted's reactor, request decoding and the log append. (Records are
  decompressed only where they are read: a compacted topic's keyless check, the log cleaner.)
- **Several brokers per machine**: the "wireserver as 2 brokers" rows. A full run of this
  dimension (2 min 21 s for both targets; load average 3.9 from other work) gave, for K = 1, 2,
  4 processes, in thousands of records/s: produce, one wireserver 296 / 428 / 268, 2 brokers
  270 / 277 / 139, Kafka 216 / 121 / 204; consume, one wireserver 388 / 490 / 668, 2 brokers
  352 / 377 / 309, Kafka 510 / 610 / 437. One wireserver used 19-28 % of a core producing
  (0.6-1.0 µs of CPU per record) and 2-3 % consuming; 2 brokers and ZooKeeper 25-35 % and
  3 % (0.9-2.5 µs per record producing); Kafka 36-95 % (1.8-4.4 µs) and 13-18 %. On this
  machine the broker is not what limits these workloads: the K Python client processes
  are, and they share the same two cores. A second broker process adds CPU per record
  (ZooKeeper, a second reactor, the clients' connections to both) and took nothing off a
  reactor thread that was not busy, so it did not raise throughput; nor would the other two
  options. What would show a gain is a machine with more cores than clients need, where one
  process's reactor thread saturates first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.compare import (
    NO_CONTROLS,
    Pinning,
    produce_args,
    run_rdkafka,
    spawning_build,
    start_wireserver,
    tree_cpu_seconds,
)
from benchmarks.profile import record as profile_record
from benchmarks.rdkafka_load import ensure_topic
from benchmarks.scaling_targets import Figure, Target, WireserverTarget, median_of_rounds

PARTITIONS = 8
VALUE_BYTES = 100
#: Records per workload, shared by the K processes (quick, full).
RECORDS = {True: 300_000, False: 800_000}
#: Seconds from spawning the client processes to their common start: enough for a Python
#: process to import confluent_kafka, connect and send its warm-up (4 processes on 2 cores:
#: all had started within 0.01 s of a 2 s delay). A later start is in the throughput's note.
START_DELAY = 2.5
#: Seconds a process may start after the common start before the note says so.
LATE = 0.2
CLUSTER_BROKERS = 2

PRODUCE = "produce throughput (records/s)"
PRODUCE_CPU = "produce: broker CPU (% of a core)"
CONSUME = "consume throughput (records/s)"
CONSUME_CPU = "consume: broker CPU (% of a core)"
CLUSTER = {
    PRODUCE: "produce throughput, wireserver as 2 brokers (records/s)",
    PRODUCE_CPU: "produce: CPU of 2 brokers + ZooKeeper (% of a core)",
    CONSUME: "consume throughput, wireserver as 2 brokers (records/s)",
    CONSUME_CPU: "consume: CPU of 2 brokers + ZooKeeper (% of a core)",
}

READING = (
    "Reading the cores figures: this dimension is not pinned (brokers, ZooKeeper and the K "
    "client processes share both cores), so a client process takes CPU from the broker and "
    "the figures are what the machine does, not what a broker does alone. Kafka's CPU can "
    "pass 100 % (its network, request-handler, GC and JIT threads run on both cores); one "
    "wireserver process cannot go much past 100 %, and its reactor thread less. The "
    '"wireserver as 2 brokers" rows are a cluster of 2 `wireserver serve` processes and '
    "ZooKeeper with the topic's leaders spread over both, beside Kafka's one-node figure. "
    "With 2 cores and up to 4 client processes the clients compete for the same cores, so "
    "throughput that falls with K is the machine running out of CPU, not the broker. The "
    "other options (figures in `benchmarks/scaling_cores.py`): free-threaded CPython is not "
    "installable on this machine, and would not help while one reactor thread serves every "
    "connection; CRC-32C and (de)compression are under 1 % of wireserver's CPU while it takes "
    "100 B records (py-spy, producer compression none, lz4 and zstd: the produce path reads "
    "batch headers and never decompresses), so moving them off the reactor thread has "
    "nothing measurable to gain."
)


def every_cpu() -> Pinning:
    """A pinning that sets every CPU as the mask of the brokers and the clients."""
    cpus = set(range(os.cpu_count() or 1))
    return Pinning(cpus, cpus)


#: What ``benchmarks.scaling`` starts this dimension's targets with.
PINNING = every_cpu()


def cpu_of(pids: list[int]) -> float:
    return sum(tree_cpu_seconds(pid) for pid in pids)


def together(pinning: Pinning, pids: list[int], commands: list[list[object]]) -> tuple:
    """Run ``benchmarks.rdkafka_load`` ``commands`` as processes at once, all timed from one
    start. Returns (records/s over the first start to the last end, broker CPU % of a core,
    CPU µs per record, a note on late starts, the processes' results)."""
    start_at = time.time() + START_DELAY
    with ThreadPoolExecutor(len(commands)) as pool:
        running = [
            pool.submit(run_rdkafka, pinning, *command, "--start-at", start_at)
            for command in commands
        ]
        time.sleep(max(0.0, start_at - time.time()))
        cpu_before = cpu_of(pids)
        results = [future.result() for future in running]
    cpu = cpu_of(pids) - cpu_before
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        raise RuntimeError(f"{len(errors)} of {len(commands)} processes failed: {errors[0]}")
    reps = [rep for r in results for rep in r["reps"]]
    records = sum(rep["records"] for rep in reps)
    window = max(rep["ended"] for rep in reps) - min(rep["started"] for rep in reps)
    late = max(rep["started"] for rep in reps) - start_at
    note = f", last process started {late:.1f} s late" if late > LATE else ""
    return records / window, cpu / window * 100, cpu / records * 1e6, note, results


def workloads(
    pinning: Pinning, bootstrap: str, pids: list[int], processes: int, quick: bool, round_: int = 0
) -> dict[str, tuple[float, str]]:
    """Produce, then consume, with ``processes`` clients: {metric: (value, note)}. Each round
    writes and reads a topic of its own (``topic_of``)."""
    topic = topic_of(processes, round_)
    ensure_topic(bootstrap, topic, PARTITIONS)
    share = RECORDS[quick] // processes
    produce = produce_args(bootstrap, topic, VALUE_BYTES, PARTITIONS, "1", share, 1, share // 4)
    out: dict[str, tuple[float, str]] = {}
    rate, cpu, per_record, late, _ = together(pinning, pids, [produce] * processes)
    out[PRODUCE] = (rate, f"{processes} × {share:,} records{late}")
    out[PRODUCE_CPU] = (cpu, f"{per_record:.1f} µs/record")
    consume = [
        [
            "consume",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--reps",
            1,
            "--share",
            f"{i}/{processes}",
        ]
        for i in range(processes)
    ]
    rate, cpu, per_record, late, results = together(pinning, pids, consume)
    read = sum(rep["records"] for r in results for rep in r["reps"])
    out[CONSUME] = (rate, f"{read:,} records{late}")
    out[CONSUME_CPU] = (cpu, f"{per_record:.1f} µs/record")
    return out


def topic_of(processes: int, round_: int) -> str:
    return f"scale-cores-{processes}" + (f"-r{round_}" if round_ else "")


def median_rounds(size: int, rounds: list[dict[str, tuple[float, str]]]) -> list[Figure]:
    """``workloads``' answers of each round as figures: each metric's median over the rounds,
    every round's value kept (``benchmarks.scaling`` shows their spread), and the note of the
    round whose value is the median (the lower of the middle two for an even count). A single
    run of these workloads moves by 30 % (the consume of K=1: 0.69x Kafka's at 17:07 UTC on
    2026-12-07, 1.11x at 17:37, the same code)."""
    out: list[Figure] = []
    for metric in rounds[0]:
        values = [found[metric][0] for found in rounds]
        middle = sorted(range(len(values)), key=values.__getitem__)[(len(values) - 1) // 2]
        out.append(median_of_rounds("cores", size, metric, values, rounds[middle][metric][1]))
    return out


def leaders_note(bootstrap: str, topic: str) -> str:
    """How the topic's partition leaders are spread over the brokers, e.g. ``leaders 4 + 4``."""
    from confluent_kafka.admin import AdminClient

    listed = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    leaders = [p.leader for p in listed.topics[topic].partitions.values()]
    return "leaders " + " + ".join(str(leaders.count(b)) for b in sorted(set(leaders)))


def cluster_figures(sizes: list[int], quick: bool, rounds: int = 1) -> list[Figure]:
    """The workloads against ZooKeeper and ``CLUSTER_BROKERS`` wireserver processes."""
    from wireserver.cluster.zookeeper import ZooKeeperServer
    from wireserver.testing.cluster import LocalCluster

    out: list[Figure] = []
    with PINNING.as_broker(), ZooKeeperServer() as zookeeper:
        cluster = LocalCluster(
            zookeeper.connect + "/cores", CLUSTER_BROKERS, NO_CONTROLS, log_level="WARNING"
        )
        try:
            with spawning_build():
                cluster.start()
            pids = [zookeeper.process.pid, *(b.pid for b in cluster.brokers.values())]
            for size in sizes:
                try:
                    found = [
                        workloads(PINNING, cluster.bootstrap, pids, size, quick, r)
                        for r in range(rounds)
                    ]
                    spread = leaders_note(cluster.bootstrap, topic_of(size, 0))
                except Exception as exc:  # noqa: BLE001 - recorded, the next size goes on
                    out += [
                        Figure("cores", size, m, None, str(exc)[:200]) for m in CLUSTER.values()
                    ]
                    continue
                for figure in median_rounds(size, found):
                    figure.metric = CLUSTER[figure.metric]
                    if figure.metric == CLUSTER[PRODUCE]:
                        figure.note = f"{figure.note}, {spread}"
                    out.append(figure)
        finally:
            cluster.close()
    return out


def measure_cores(
    target: Target, sizes: list[int], quick: bool, *, rounds: int = 1
) -> list[Figure]:
    """Figures for each K in ``sizes``, the median of ``rounds`` runs of the workloads; for
    wireserver also the 2-broker cluster's, for Kafka its own figures again under the
    cluster's metric names (the module docstring says why)."""
    out: list[Figure] = []
    for size in sizes:
        try:
            found = [
                workloads(target.pinning, target.bootstrap, [target.pid], size, quick, r)
                for r in range(rounds)
            ]
        except Exception as exc:  # noqa: BLE001 - recorded, the next size goes on
            out += [Figure("cores", size, m, None, str(exc)[:200]) for m in CLUSTER]
            continue
        out += median_rounds(size, found)
    if isinstance(target, WireserverTarget):
        try:
            out += cluster_figures(sizes, quick, rounds)
        except Exception as exc:  # noqa: BLE001 - ZooKeeper missing, say
            error = f"{type(exc).__name__}: {exc}"[:200]
            out += [Figure("cores", s, m, None, error) for s in sizes for m in CLUSTER.values()]
    else:
        out += [
            Figure("cores", f.size, CLUSTER[f.metric], f.value, f"1 node; {f.note}", f.rounds)
            for f in list(out)
        ]
    return out


# ------------------------------------------------------------------------------ py-spy shares

#: Frames that are CRC-32C work, and frames that are (de)compression work.
CRC_FRAMES = ("compute_crc (", "verify_crc (")
COMPRESSION_FRAMES = ("protocol/compression.py",)
PROFILE_RECORDS = 1_000_000


def stack_shares(raw: str) -> tuple[int, float, float]:
    """Samples in a py-spy raw profile, and the share with a CRC frame and with a compression
    frame anywhere on the stack."""
    total = crc = compression = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        total += int(count)
        crc += int(count) * any(word in stack for word in CRC_FRAMES)
        compression += int(count) * any(word in stack for word in COMPRESSION_FRAMES)
    return total, crc / max(total, 1), compression / max(total, 1)


def profile_shares(records: int) -> list[str]:
    """Produce ``records`` 100 B records (8 partitions, acks=1, one librdkafka process) to an
    unpinned wireserver under py-spy, with each producer compression; a line of shares each."""
    broker = start_wireserver(PINNING)
    scratch = Path(tempfile.mkdtemp(prefix="scaling-cores-profile-"))
    lines = []
    try:
        for codec in ("none", "lz4", "zstd"):
            out = scratch / f"{codec}.txt"
            result = profile_record(
                broker.pid,
                out,
                PINNING,
                *produce_args(
                    broker.bootstrap,
                    f"cores-profile-{codec}",
                    VALUE_BYTES,
                    PARTITIONS,
                    "1",
                    records,
                    1,
                ),
                "--compression",
                codec,
            )
            if "error" in result:
                lines.append(f"compression {codec}: failed: {result['error']}")
                continue
            total, crc, compression = stack_shares(out.read_text())
            (rep,) = result["reps"]
            lines.append(
                f"compression {codec}: {total} samples, CRC {crc:.1%}, (de)compression "
                f"{compression:.1%} of the broker's on-CPU samples "
                f"({records / rep['seconds']:,.0f} records/s under py-spy)"
            )
            print(lines[-1], flush=True)
    finally:
        broker.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.scaling_cores",
        description="The py-spy shares of CRC and compression in the module docstring; the "
        "dimension itself runs from python -m benchmarks.scaling --dimensions cores.",
    )
    parser.add_argument("command", choices=["profile"])
    parser.add_argument("--records", type=int, default=PROFILE_RECORDS)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    profile_shares(args.records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
