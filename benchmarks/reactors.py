"""Which event loop wireserver should run on: Twisted's default reactor (epoll on Linux)
against Twisted's asyncio reactor on uvloop, with the same workloads as ``benchmarks.compare``.

Run: ``scripts/bench reactors`` or ``python -m benchmarks.reactors [--quick] [--no-pin]
[--other uvloop|asyncio] [--output benchmarks/results.md]``.

Both brokers are ``wireserver serve`` processes, one after the other, differing only in
``--reactor``; each runs every librdkafka workload of ``benchmarks.compare`` (produce, consume,
latency, group join, start-up, memory) with the same CPU pinning. The Java tools are left out:
they add nothing about the broker's loop that librdkafka does not show. The table goes into
``benchmarks/results.md`` as its own section (``benchmarks.compare`` keeps it), and the
default of ``serve --reactor`` follows it: the default reactor stays unless the other loop is
clearly faster.
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

SECTION = "## Event loop: Twisted's default (epoll) reactor vs asyncio on uvloop"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.reactors", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="the smaller sizes of --quick")
    parser.add_argument("--no-pin", action="store_true", help="do not pin broker and clients")
    parser.add_argument(
        "--other",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="the loop compared with the default reactor (default uvloop)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else DEFAULT
    run = Run.begin(not args.no_pin)
    pinning, started, t0, load = run.pinning, run.started, run.t0, run.load
    other = f"wireserver/{args.other}"
    results = Results()

    def log(message: str) -> None:
        print(message, flush=True)

    log(f"wireserver: default reactor vs {args.other}; {pinning.describe()}; load {load}")
    for name in ("wireserver", other):
        try:
            run_target(name, sizes, pinning, results, False, log)
        except Exception as exc:  # report, go on with the other
            log(f"== {name}: FAILED: {type(exc).__name__}: {exc}")
            results.errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:500]}")
    table = render_table(
        results, base="wireserver", ours=other, ratio_title=f"{args.other} ÷ default"
    )
    for line in table:
        log(line)
    command = "python -m benchmarks.reactors" + ("" if not argv else " " + " ".join(argv))
    write_section(
        args.output,
        SECTION,
        [
            f"Written by `{command}` on {started.isoformat(timespec='seconds')} "
            f"({(time.monotonic() - t0) / 60:.1f} min); replaced on every run. Columns: "
            f"`wireserver serve` on Twisted's default reactor (epoll) and with `--reactor "
            f"{args.other}`; the workloads and method are those of the table above (librdkafka "
            "only).",
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
