"""Where a serving broker spends its CPU: py-spy samples of ``wireserver serve`` under the
produce and consume workloads of ``benchmarks.compare``.

Run: ``scripts/bench profile`` or ``python -m benchmarks.profile [--quick] [--no-pin]
[--output benchmarks/results.md]``.

One broker (the default reactor, the same pinning as ``benchmarks.compare``) serves four
librdkafka workloads in turn: produce 1 KB records to 1 partition, produce 100 B records to 8
partitions (both acks=all), then read each of those topics back from offset 0. During each
workload ``py-spy record --pid`` samples the broker (only while it is running, not while it
waits in epoll: py-spy leaves idle samples out), and the samples are summed two ways:

- *self*: the function on top of the stack, i.e. where the CPU actually was;
- *total*: every function on the stack, for our own code only (``wireserver/``,
  ``protocol/``, ``storage/``): how much of the time each request path accounts for.

The tables go into ``benchmarks/results.md`` as their own section. They explain figures, they
are not figures themselves: sampling slows the broker a little, so throughput is not reported.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.compare import (
    RESULTS,
    Pinning,
    Run,
    machine_lines,
    run_rdkafka,
    start_wireserver,
    write_section,
)

SECTION = "## Where the broker's CPU goes (py-spy)"
OUR_CODE = ("wireserver/", "protocol/", "storage/")
#: Frames under every sample (the process's entry point), left out of the "total" table.
ENTRY_FILES = ("wireserver/cli.py", "wireserver/broker.py")
ENTRY_FUNCTIONS = ("<module>", "main", "serve", "serve_forever")
SAMPLE_RATE = 1000  # per second
TOP = 12
#: A raw py-spy line: ``frame;frame;...;frame COUNT``; a frame is ``function (file:line)``.
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^():]*)(?::\d+)?\)$")


def py_spy() -> str:
    found = shutil.which(
        "py-spy", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    )
    if found is None:
        raise SystemExit("py-spy is not installed: pip install py-spy (scripts/bench does)")
    return found


def frame_name(frame: str) -> str:
    """``function (file)`` without the line number, so one function is one entry."""
    match = FRAME.match(frame.strip())
    if match is None:
        return frame.strip()
    return f"{match['function']} ({match['file']})"


def is_entry(name: str) -> bool:
    function, _, where = name.partition(" (")
    return function in ENTRY_FUNCTIONS and where.rstrip(")") in ENTRY_FILES


def summarise(raw: str) -> tuple[int, collections.Counter, collections.Counter]:
    """Total samples, samples per top-of-stack function, samples per function of ours
    anywhere on the stack (counted once per sample)."""
    total = 0
    self_time: collections.Counter = collections.Counter()
    inclusive: collections.Counter = collections.Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [frame_name(f) for f in stack.split(";")]
        total += n
        self_time[frames[-1]] += n
        for name in set(frames):
            if any(part in name for part in OUR_CODE) and not is_entry(name):
                inclusive[name] += n
    return total, self_time, inclusive


def record(pid: int, out: Path, pinning: Pinning, *load_args: object) -> dict:
    """Sample ``pid`` with py-spy while one ``benchmarks.rdkafka_load`` command runs."""
    spy = subprocess.Popen(
        [
            py_spy(),
            "record",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--rate",
            str(SAMPLE_RATE),
            "--nonblocking",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=pinning.client_preexec(),
    )
    time.sleep(0.5)  # attached before the load starts
    try:
        result = run_rdkafka(pinning, *load_args)
    finally:
        spy.send_signal(signal.SIGINT)
        _, err = spy.communicate(timeout=60)
    if not out.exists():
        raise RuntimeError(f"py-spy wrote nothing: {err.decode(errors='replace')[-500:]}")
    return result


def table(title: str, counts: collections.Counter, total: int) -> list[str]:
    lines = [f"| {title} | samples | share |", "|---|---|---|"]
    for name, n in counts.most_common(TOP):
        lines.append(f"| `{name}` | {n} | {n / total:.1%} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.profile", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="fewer records")
    parser.add_argument("--no-pin", action="store_true", help="do not pin broker and clients")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    records_1k, records_100 = (100_000, 600_000) if args.quick else (500_000, 3_000_000)
    run = Run.begin(not args.no_pin)
    pinning, started, load = run.pinning, run.started, run.load
    workloads = [
        (
            "produce 1 KB × 1 partition, acks=all",
            "produce",
            "--topic",
            "profile-1024",
            "--partitions",
            1,
            "--size",
            1024,
            "--acks",
            "all",
            "--records",
            records_1k,
            "--reps",
            2,
        ),
        (
            "produce 100 B × 8 partitions, acks=all",
            "produce",
            "--topic",
            "profile-100",
            "--partitions",
            8,
            "--size",
            100,
            "--acks",
            "all",
            "--records",
            records_100,
            "--reps",
            2,
        ),
        ("consume 1 KB × 1 partition", "consume", "--topic", "profile-1024", "--reps", 2),
        ("consume 100 B × 8 partitions", "consume", "--topic", "profile-100", "--reps", 2),
    ]
    body: list[str] = []
    broker = start_wireserver(pinning)
    scratch = Path(tempfile.mkdtemp(prefix="wireserver-profile-"))
    try:
        for i, (title, command, *rest) in enumerate(workloads):
            out = scratch / f"{i}.txt"
            result = record(
                broker.pid, out, pinning, command, "--bootstrap", broker.bootstrap, *rest
            )
            if "error" in result:
                body += [f"### {title}", "", f"failed: {result['error']}", ""]
                continue
            total, self_time, inclusive = summarise(out.read_text())
            print(f"== {title}: {total} samples", flush=True)
            for name, n in self_time.most_common(5):
                print(f"   {n / total:6.1%}  {name}", flush=True)
            body += [
                f"### {title}",
                "",
                f"{total} samples at {SAMPLE_RATE}/s while the broker was on the CPU.",
                "",
                *table("on the CPU (self)", self_time, total),
                "",
                *table("our code on the stack (total)", inclusive, total),
                "",
            ]
    finally:
        broker.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    command = "python -m benchmarks.profile" + ("" if not argv else " " + " ".join(argv))
    write_section(
        args.output,
        SECTION,
        [
            f"Written by `{command}` on {started.isoformat(timespec='seconds')}; replaced on every "
            f"run (method: the module docstring). {records_1k:,} × 1 KB and {records_100:,} × "
            "100 B records per repetition, 2 repetitions per workload.",
            "",
            f"- CPU pinning: {pinning.describe()}; load average at the start: {load}",
            *machine_lines()[:1],
            "",
            *body,
        ],
    )
    print(f"\nwritten to {args.output}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
