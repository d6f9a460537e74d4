"""What Kafka's meters and ``/metrics`` cost wireserver: the same workloads as
``benchmarks.compare`` on a broker that keeps no meters (``metrics.enable=false``) and on one
that keeps them with its metrics listener scraped every second (Prometheus scrapes every 15 s
to 1 min by default: this is the heavy case).

Run: ``scripts/bench metrics`` or ``python -m benchmarks.metrics_cost [--quick] [--no-pin]
[--output benchmarks/results.md]``.

Both are ``wireserver serve`` processes, one after the other, with the same CPU pinning; each
runs every librdkafka workload of ``benchmarks.compare``. The table goes into
``benchmarks/results.md`` as its own section (``benchmarks.compare`` keeps it). Issue #18's
budget: produce and fetch throughput within 3 % of the broker without meters.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmarks.compare import (
    DEFAULT,
    QUICK,
    RESULTS,
    Results,
    Run,
    machine_lines,
    render_table,
    run_target,
    write_section,
)

SECTION = "## What metrics cost: meters off vs on and scraped every second"
OFF = "wireserver/metrics-off"
ON = "wireserver/metrics-scraped"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.metrics_cost", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="the smaller sizes of --quick")
    parser.add_argument("--no-pin", action="store_true", help="do not pin broker and clients")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else DEFAULT
    run = Run.begin(not args.no_pin)
    pinning, started, t0, load = run.pinning, run.started, run.t0, run.load
    results = Results()

    def log(message: str) -> None:
        print(message, flush=True)

    log(f"wireserver: metrics off vs on (scraped every 1 s); {pinning.describe()}; load {load}")
    for name in (OFF, ON):
        try:
            run_target(name, sizes, pinning, results, False, log)
        except Exception as exc:  # report, go on with the other
            log(f"== {name}: FAILED: {type(exc).__name__}: {exc}")
            results.errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:500]}")
    table = render_table(results, base=OFF, ours=ON, ratio_title="on ÷ off")
    for line in table:
        log(line)
    command = "python -m benchmarks.metrics_cost" + ("" if not argv else " " + " ".join(argv))
    write_section(
        args.output,
        SECTION,
        [
            f"Written by `{command}` on {started.isoformat(timespec='seconds')} "
            f"({(time.monotonic() - t0) / 60:.1f} min); replaced on every run. Columns: "
            "`wireserver serve` with `metrics.enable=false`, and with the meters on and "
            "`/metrics` fetched every second; the workloads and method are those of the "
            "table above (librdkafka only). Throughput ratios below 0.97 break issue #18's "
            "budget.",
            "",
            f"- CPU pinning: {pinning.describe()}; load average at the start: {load}",
            *machine_lines()[:1],
            "",
            *table,
            *(["", "Failures:", "", *(f"- {e}" for e in results.errors)] if results.errors else []),
        ],
    )
    log(f"\nwritten to {args.output}")
    return 1 if results.errors and not results.rows else 0


if __name__ == "__main__":
    sys.exit(main())
