"""Command line for the reference Kafka, for people (tests use the Python API).

python -m compat_tests.reference [resolve]      fill the jar cache, print where
python -m compat_tests.reference run [-n N]     run an N-node cluster until Ctrl-C
python -m compat_tests.reference tool NAME ARG...   run a Kafka CLI tool, e.g.
    python -m compat_tests.reference tool kafka-topics --bootstrap-server 127.0.0.1:9092 --list
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time

from .launcher import TOOLS, KafkaCluster, tool_command
from .resolve import main as resolve_main


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] == "resolve":
        resolve_main()
        return 0
    if argv[0] == "tool":
        if len(argv) < 2:
            print("tools: " + ", ".join(sorted(TOOLS)), file=sys.stderr)
            return 2
        return subprocess.call(tool_command(argv[1], argv[2:]))
    parser = argparse.ArgumentParser(prog="python -m compat_tests.reference run")
    parser.add_argument("command", choices=["run"])
    parser.add_argument("-n", "--nodes", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    cluster = KafkaCluster(args.nodes, keep_workdir=args.keep)
    cluster.start()
    print(
        f"Kafka x{args.nodes} ready in {cluster.startup_seconds:.1f}s; "
        f"bootstrap {cluster.bootstrap_servers}; work dir {cluster.workdir}",
        flush=True,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while cluster.running_nodes():
            time.sleep(1)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
