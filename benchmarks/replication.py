"""Replication on a 3-broker cluster: what replicating costs in produce throughput, and how
long a partition is unwritable when its leader dies.

Run: ``scripts/bench replication`` or ``python -m benchmarks.replication [--quick]
[--targets wireserver,kafka] [--session-timeout-ms 9000] [--output benchmarks/results.md]``.

For each cluster in turn (wireserver: a ZooKeeper server and 3 broker processes, the
``LocalCluster`` of the cluster tests; Kafka: 3 combined KRaft nodes from
``compat_tests.reference``, with ``--targets`` naming it) it

1. runs confluent-kafka (librdkafka) producers in their own process
   (``benchmarks.rdkafka_load produce``, 1 KB records, a warm-up and then the median of
   3 timed repetitions) on topics with 1 and 3 partitions at replication factor 1 with acks=1,
   and replication factor 3 with acks=1 and with acks=all;
2. measures failover: a producer (librdkafka, acks=all, idempotent) sends a record every 5 ms
   to an RF 3 partition (min.insync.replicas=2); its leader is killed with SIGKILL; the figures
   are the time from the kill to the first Metadata answer (polled every 20 ms from a
   surviving node) naming a new leader, and to the first acknowledgement of a record sent
   after the kill. The killed broker is started again and back in the ISR before the next
   repetition; the median of the repetitions is reported.

How soon a dead broker is noticed is configuration: Kafka's ``broker.session.timeout.ms``
(KRaft, default 9000) and wireserver's ``zookeeper.session.timeout.ms`` (Kafka's ZooKeeper-era
setting, default 18000). Both are set to the same value here (``--session-timeout-ms``, default
9000, Kafka's KRaft default), so the failover figures compare like with like.

No CPU pinning: the cluster (3 brokers, and ZooKeeper or the KRaft controllers) and the clients
share the machine. Figures, never assertions; the table goes into ``benchmarks/results.md`` as
its own section (``benchmarks.compare`` keeps it when it rewrites the file).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks.compare import (
    MIB,
    RESULTS,
    Pinning,
    Results,
    _fmt_rate,
    machine_lines,
    render_table,
    run_rdkafka,
    write_section,
)

SECTION = "## Replication on a 3-broker cluster"
RECORD_SIZE = 1024
PRODUCE_SHAPES = ((1, "1"), (3, "1"), (3, "all"))  # (replication factor, acks)
NO_PINNING = Pinning(None, None)
READING = (
    "Reading the figures: both failover figures are mostly the dead-broker detection time "
    "(the session timeout above); the rest is the election and the client finding the new "
    "leader. Kafka's spread may come partly from whether the killed node was also the active "
    "KRaft controller (a controller election comes first then; not recorded). The RF 3 "
    "throughput includes the followers' replication fetches, which here run on the same two "
    "cores as the leader and the client: it is what replicating costs on this machine, not "
    "on three machines. Runs on a shared machine vary a lot (other work runs alongside; see "
    "the load average): compare a figure with a second run before reading much into it."
)


@contextlib.contextmanager
def start_cluster(name: str, session_timeout_ms: int) -> Iterator:
    """A started 3-node cluster of ``name`` as a ``compat_tests.cluster_targets`` target."""
    from compat_tests.cluster_targets import kafka_cluster, wireserver_cluster

    if name == "kafka":
        with kafka_cluster(broker_props={"broker.session.timeout.ms": session_timeout_ms}) as k:
            yield k
        return
    from wireserver.cluster.zookeeper import ZooKeeperServer

    with ZooKeeperServer() as zookeeper:
        with wireserver_cluster(
            zookeeper.connect + "/bench",
            {"zookeeper.session.timeout.ms": session_timeout_ms},
            log_level="WARNING",
        ) as target:
            yield target


def produce_figures(
    target, label: str, records: int, results: Results, log: Callable[[str], None]
) -> None:
    for partitions in (1, 3):
        for rf, acks in PRODUCE_SHAPES:
            workload = (
                f"produce 1 KB, {partitions} partition{'s' if partitions > 1 else ''}, "
                f"RF {rf}, acks={acks} (librdkafka)"
            )
            key = f"produce-{partitions}-{rf}-{acks}"
            out = run_rdkafka(
                NO_PINNING,
                "produce",
                "--bootstrap",
                target.bootstrap,
                "--topic",
                f"bench-rf{rf}-p{partitions}-acks{acks}",
                "--partitions",
                partitions,
                "--replication-factor",
                rf,
                "--size",
                RECORD_SIZE,
                "--acks",
                acks,
                "--records",
                records,
                "--reps",
                3,
                "--warmup",
                records // 5,
            )
            if "error" in out:
                log(f"  {workload}: FAILED: {out['error']}")
                results.put(label, key, workload, "MB/s", True, "failed")
                results.errors.append(f"{label}, {workload}: {out['error']}")
                continue
            seconds = statistics.median(r["seconds"] for r in out["reps"])
            mib_s = records * RECORD_SIZE / MIB / seconds
            results.put(
                label, key, workload, "MB/s", True, mib_s, f" ({_fmt_rate(records / seconds)})"
            )
            log(f"  {workload}: {mib_s:.1f} MB/s")


def failover_once(target) -> tuple[float, float]:
    """(seconds from the kill to a new leader in Metadata, to the first acknowledgement of a
    record sent after the kill)."""
    from compat_tests.scenarios_cluster import Stream, isr_size, leader_and_followers, new_topic
    from wireserver.testing import wait_for
    from wireserver.testing.cluster import cluster_metadata

    topic = new_topic(target, "failover", configs={"min.insync.replicas": 2})
    old_leader, followers, _ = leader_and_followers(target, topic)
    survivor = target.address(followers[0])
    with Stream("confluent-kafka", target.bootstrap, topic) as stream:
        stream.wait_acked(200, "records before the kill")
        killed_at = time.perf_counter()
        target.kill(old_leader)
        wait_for(
            lambda: cluster_metadata(survivor, topic)[2][0][0] not in (-1, old_leader),
            120,
            0.02,
            what="a new leader",
        )
        elected = time.perf_counter() - killed_at
        acked = wait_for(
            lambda: stream.first_acked_after(killed_at),
            120,
            0.01,
            what="an acknowledgement from the new leader",
        )
    if stream.failed:
        raise RuntimeError(f"delivery failures: {sorted(set(stream.failed))}")
    target.start(old_leader)
    isr_size(target, topic, 3)
    return elected, acked - killed_at


def failover_figures(
    target, label: str, reps: int, results: Results, log: Callable[[str], None]
) -> None:
    elected, produced = [], []
    for _ in range(reps):
        e, p = failover_once(target)
        elected.append(e)
        produced.append(p)
        log(f"  failover: new leader after {e * 1000:.0f} ms, first ack after {p * 1000:.0f} ms")
    for key, workload, values in (
        ("elected", "leader kill -9 → new leader in Metadata", elected),
        ("first-ack", "leader kill -9 → first acks=all produce acknowledged", produced),
    ):
        results.put(
            label,
            key,
            workload,
            "ms",
            False,
            statistics.median(values) * 1000,
            f" (n={len(values)}: {', '.join(f'{v * 1000:.0f}' for v in values)})",
        )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.replication", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="fewer records and failovers")
    parser.add_argument(
        "--targets", default="wireserver", help="comma-separated subset of: wireserver, kafka"
    )
    parser.add_argument("--session-timeout-ms", type=int, default=9000)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    records = 40_000 if args.quick else 150_000
    reps = 2 if args.quick else 3
    started = datetime.datetime.now().astimezone()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    results = Results()

    def log(message: str) -> None:
        print(message, flush=True)

    for name in [t.strip() for t in args.targets.split(",") if t.strip()]:
        label = "Kafka" if name == "kafka" else "wireserver"
        log(f"== {name}: starting a 3-node cluster")
        with results.noting_failure(name, log):
            with start_cluster(name, args.session_timeout_ms) as target:
                produce_figures(target, label, records, results, log)
                failover_figures(target, label, reps, results, log)
    table = render_table(results)
    for line in table:
        log(line)
    command = "python -m benchmarks.replication" + ("" if not argv else " " + " ".join(argv))
    write_section(
        args.output,
        SECTION,
        [
            f"Written by `{command}` on {started.isoformat(timespec='seconds')}; replaced on "
            "every run (see the module docstring for the method).",
            "",
            f"- {records:,} × 1 KB records per repetition, 3 repetitions after a warm-up of a "
            f"fifth; {reps} leader kills per cluster; dead-broker detection after "
            f"{args.session_timeout_ms} ms on both (Kafka `broker.session.timeout.ms`, wireserver "
            "`zookeeper.session.timeout.ms`)",
            "- wireserver: 3 `wireserver serve` processes and a ZooKeeper server; Kafka: 3 "
            "combined broker+controller KRaft nodes",
            f"- not pinned: the machine's {os.cpu_count()} cores are shared by the 3 brokers, "
            "ZooKeeper and the client processes, so every figure here is lower than on "
            "separate machines; load average at the start: " + load,
            *machine_lines()[:1],
            "",
            *table,
            "",
            READING,
            *(["", "Failures:", "", *(f"- {e}" for e in results.errors)] if results.errors else []),
        ],
    )
    log(f"\nwritten to {args.output}")
    return 1 if results.errors and not results.rows else 0


if __name__ == "__main__":
    sys.exit(main())
