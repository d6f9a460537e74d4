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

from benchmarks.compare import run_pair

SECTION = "## Event loop: Twisted's default (epoll) reactor vs asyncio on uvloop"


def main(argv: list[str] | None = None) -> int:
    def other_loop(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--other",
            choices=("uvloop", "asyncio"),
            default="uvloop",
            help="the loop compared with the default reactor (default uvloop)",
        )

    def pair(args: argparse.Namespace) -> tuple[str, str, str]:
        return "wireserver", f"wireserver/{args.other}", f"{args.other} ÷ default"

    return run_pair(
        sys.argv[1:] if argv is None else argv,
        "python -m benchmarks.reactors",
        __doc__.splitlines()[0],
        SECTION,
        ("wireserver", "wireserver/uvloop"),
        "uvloop ÷ default",
        "Columns: `wireserver serve` on Twisted's default reactor (epoll) and with `--reactor` "
        "set to the other loop; the workloads and method are those of the table above "
        "(librdkafka only).",
        extra_args=other_loop,
        choose_pair=pair,
    )


if __name__ == "__main__":
    sys.exit(main())
