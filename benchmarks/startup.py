"""Start-up benchmark for the test broker.

subprocess: from spawning ``python -m wireserver.cli serve`` (port 0, fresh temp data dir) to
    the first successful Metadata response over a socket; also the time to the ready line,
    and the idle RSS of the broker process (VmRSS in /proc/<pid>/status, read once it answered).
thread: ``EmbeddedBroker("thread").start()`` in this process to the first Metadata response;
    the first start pays for the imports and the reactor thread, so it is shown apart.

Run: python -m benchmarks.startup [--runs 10]
Prints median and max of each figure. A figure to report, never an assertion in a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.compare import compile_sources
from wireserver.testing import READY_RE, EmbeddedBroker, KafkaWire, parse_endpoints


def first_metadata(bootstrap: str) -> None:
    from kafka.protocol.metadata.metadata import MetadataRequest

    with KafkaWire(bootstrap, negotiate=False) as wire:
        response = wire.request(
            MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)
        )
        assert response.brokers, response


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def subprocess_run() -> tuple[float, float, int]:
    """(seconds to ready line, seconds to first Metadata response, idle RSS in KiB)."""
    root = tempfile.mkdtemp(prefix="wireserver-bench-")
    command = [
        sys.executable,
        "-m",
        "wireserver.cli",
        "serve",
        "--log-level",
        "WARNING",
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:0",
        "--override",
        f"log.dirs={root}",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        ready = time.perf_counter() - started
        match = READY_RE.match(line.strip())
        if match is None:
            raise RuntimeError(f"no ready line: {line!r}")
        _, host, port = parse_endpoints(match.group("endpoints"))[0]
        first_metadata(f"{host}:{port}")
        answered = time.perf_counter() - started
        time.sleep(0.2)  # idle
        return ready, answered, rss_kib(process.pid)
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(root, ignore_errors=True)


def thread_run() -> float:
    started = time.perf_counter()
    broker = EmbeddedBroker("thread").start()
    try:
        first_metadata(broker.bootstrap_servers)
        return time.perf_counter() - started
    finally:
        broker.close()


def summary(name: str, values: list[float], unit: str, scale: float = 1.0) -> str:
    return (
        f"{name:<44} median {statistics.median(values) * scale:8.1f} {unit}"
        f"   max {max(values) * scale:8.1f} {unit}   (n={len(values)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    compile_sources()
    runs = [subprocess_run() for _ in range(args.runs)]
    print(
        f"wireserver start-up, {args.runs} runs, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs"
    )
    print(summary("subprocess: spawn -> ready line", [r[0] for r in runs], "ms", 1000))
    print(summary("subprocess: spawn -> first Metadata response", [r[1] for r in runs], "ms", 1000))
    print(summary("subprocess: idle RSS", [r[2] / 1024 for r in runs], "MiB"))
    cold = thread_run()
    warm = [thread_run() for _ in range(args.runs)]
    print(f"{'thread: first start (imports, reactor thread)':<44} {cold * 1000:8.1f} ms")
    print(summary("thread: start -> first Metadata response", warm, "ms", 1000))


if __name__ == "__main__":
    main()
