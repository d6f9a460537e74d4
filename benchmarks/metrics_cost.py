"""What Kafka's meters and ``/metrics`` cost wireserver on the produce and fetch paths: two
brokers side by side, one keeping no meters (``metrics.enable=false``) and one keeping them
with its metrics listener scraped every second (Prometheus scrapes every 15 s to 1 min by
default: this is the heavy case), the same librdkafka workloads run on each in turn.

Run: ``scripts/bench metrics`` or ``python -m benchmarks.metrics_cost [--rounds N] [--quick]
[--no-pin] [--output benchmarks/results.md]``.

Throughput on a shared machine drifts by more than the few per cent this measures, so the two
brokers run at once (both pinned to the broker CPU, idle but for the one under load) and every
workload alternates between them, round after round (off, on; then on, off; ...). Each row
gives the median over rounds of each broker's throughput and of the broker's CPU time per
100 MB moved (the cost itself, which the client's own limits do not hide), and the median of
the per-round ratios. The table goes into ``benchmarks/results.md`` as its own section
(``benchmarks.compare`` keeps it). Issue #18's budget: produce and fetch throughput within 3 %.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from benchmarks.compare import (
    MIB,
    RESULTS,
    Run,
    machine_lines,
    rdkafka_produce,
    run_rdkafka,
    start_wireserver,
    tree_cpu_seconds,
    write_section,
)

SECTION = "## What metrics cost: meters off vs on and scraped every second"
#: (label, size, partitions, acks) of the produce workloads; each is then read back.
PRODUCE = (
    ("produce 1 KB, 1 partition, acks=1", 1024, 1, "1"),
    ("produce 100 B, 1 partition, acks=1", 100, 1, "1"),
    ("produce 100 B, 8 partitions, acks=all", 100, 8, "all"),
)


def consume(pinning, bootstrap: str, topic: str):
    return run_rdkafka(pinning, "consume", "--bootstrap", bootstrap, "--topic", topic, "--reps", 1)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.metrics_cost", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=6, help="rounds per workload (default 6)")
    parser.add_argument("--quick", action="store_true", help="fewer records per run")
    parser.add_argument("--no-pin", action="store_true", help="do not pin broker and clients")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    run = Run.begin(not args.no_pin)
    pinning = run.pinning
    records_100 = 150_000 if args.quick else 600_000
    records_1k = 30_000 if args.quick else 120_000

    def log(message: str) -> None:
        print(message, flush=True)

    log(f"metrics off vs on, {args.rounds} rounds; {pinning.describe()}; load {run.load}")
    off = start_wireserver(pinning, name="metrics off", overrides={"metrics.enable": "false"})
    on = start_wireserver(pinning, name="metrics on, scraped every 1 s", scrape_every_s=1.0)
    brokers = (off, on)
    # figures[workload][broker name] -> [(MB/s, CPU ms per 100 MB)] over rounds
    figures: dict[str, dict[str, list[tuple[float, float]]]] = {}
    failures: list[str] = []
    try:
        for round_index in range(args.rounds):
            order = brokers if round_index % 2 == 0 else brokers[::-1]
            for label, size, partitions, acks in PRODUCE:
                records = records_1k if size == 1024 else records_100
                topic = f"cost-{size}-p{partitions}-acks{acks}"
                for broker in order:
                    before = tree_cpu_seconds(broker.pid)
                    out = rdkafka_produce(
                        pinning,
                        broker.bootstrap,
                        topic,
                        size,
                        partitions,
                        acks,
                        records,
                        1,
                        records // 10,
                    )
                    cpu = tree_cpu_seconds(broker.pid) - before
                    if "error" in out:
                        failures.append(f"{broker.name}, {label}: {out['error']}")
                        continue
                    seconds = out["reps"][0]["seconds"]
                    moved = records * 1.1 * size
                    figures.setdefault(label, {}).setdefault(broker.name, []).append(
                        (records * size / MIB / seconds, cpu * 1000 * 100 * MIB / moved)
                    )
                read_label = (
                    f"consume {'1 KB' if size == 1024 else '100 B'}, {partitions} "
                    f"partition{'s' if partitions > 1 else ''} (the log so far)"
                )
                for broker in order:
                    before = tree_cpu_seconds(broker.pid)
                    out = consume(pinning, broker.bootstrap, topic)
                    cpu = tree_cpu_seconds(broker.pid) - before
                    if "error" in out:
                        failures.append(f"{broker.name}, {read_label}: {out['error']}")
                        continue
                    rep = out["reps"][0]
                    figures.setdefault(read_label, {}).setdefault(broker.name, []).append(
                        (
                            rep["bytes"] / MIB / rep["seconds"],
                            cpu * 1000 * 100 * MIB / max(1, rep["bytes"]),
                        )
                    )
            log(f"  round {round_index + 1}/{args.rounds} done")
    finally:
        for broker in brokers:
            broker.stop()
    table = [
        f"| workload (librdkafka) | {off.name}: MB/s | {on.name}: MB/s | on ÷ off "
        "(median of rounds) | broker CPU ms/100 MB, off → on |",
        "|---|---|---|---|---|",
    ]
    for label, by_broker in figures.items():
        a, b = by_broker.get(off.name, []), by_broker.get(on.name, [])
        if not a or not b:
            continue
        ratios = [y[0] / x[0] for x, y in zip(a, b)]
        table.append(
            f"| {label} | {statistics.median(x[0] for x in a):.1f} | "
            f"{statistics.median(y[0] for y in b):.1f} | {statistics.median(ratios):.3f} "
            f"(min {min(ratios):.2f}, max {max(ratios):.2f}) | "
            f"{statistics.median(x[1] for x in a):.0f} → {statistics.median(y[1] for y in b):.0f} |"
        )
    for line in table:
        log(line)
    command = "python -m benchmarks.metrics_cost" + ("" if not argv else " " + " ".join(argv))
    write_section(
        args.output,
        SECTION,
        [
            f"Written by `{command}` on {run.started.isoformat(timespec='seconds')} "
            f"({(time.monotonic() - run.t0) / 60:.1f} min); replaced on every run. Two "
            "`wireserver serve` processes at once, one with `metrics.enable=false`, one with "
            "its meters on and `/metrics` fetched every second; each workload alternates "
            f"between them for {args.rounds} rounds ({records_100:,} records of 100 B or "
            f"{records_1k:,} of 1 KB per produce run; a consume run reads the topic's whole "
            "log so far). Ratios below 0.97 break issue #18's budget.",
            "",
            f"- CPU pinning: {pinning.describe()}; load average at the start: {run.load}",
            *machine_lines()[:1],
            "",
            *table,
            *(["", "Failures:", "", *(f"- {e}" for e in failures)] if failures else []),
        ],
    )
    log(f"\nwritten to {args.output}")
    return 1 if failures and not figures else 0


if __name__ == "__main__":
    sys.exit(main())
