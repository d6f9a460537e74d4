"""A development cluster: a ZooKeeper server and N broker processes on free ports of
127.0.0.1, one line per broker printed once all are ready, until Ctrl-C.

    wireserver cluster --brokers 3
    python -m wireserver.testing.dev_cluster --brokers 3
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--brokers",
        type=int,
        default=3,
        metavar="N",
        help="number of brokers (default %(default)s)",
    )
    parser.add_argument(
        "--zookeeper",
        metavar="HOST:PORT[/CHROOT]",
        help="use this ZooKeeper instead of starting one",
    )
    parser.add_argument(
        "--override",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a config key for every broker (repeatable)",
    )
    parser.add_argument("--log-level", default="INFO", type=str.upper)


def run(args: argparse.Namespace) -> int:
    from wireserver.cluster.zookeeper import ZooKeeperError, ZooKeeperServer
    from wireserver.testing.cluster import LocalCluster

    if args.brokers < 1:
        print("wireserver cluster: --brokers must be at least 1", file=sys.stderr)
        return 2
    zookeeper = None
    connect = args.zookeeper
    if connect is None:
        try:
            zookeeper = ZooKeeperServer().start()
        except ZooKeeperError as exc:
            print(f"wireserver cluster: {exc}", file=sys.stderr)
            return 1
        connect = zookeeper.connect + "/wireserver"
    print(f"zookeeper {connect}", flush=True)
    overrides = {
        "default.replication.factor": str(min(3, args.brokers)),
        "min.insync.replicas": "1" if args.brokers < 3 else "2",
        # Each broker's status page, /metrics and /api/ on a free loopback port.
        "metrics.listeners": "HTTP://127.0.0.1:0",
    }
    overrides.update(item.split("=", 1) for item in args.override)
    cluster = LocalCluster(connect, args.brokers, overrides, log_level=args.log_level)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        for broker_id, broker in cluster.brokers.items():
            broker.start()
            status = f" status {broker.ops_urls[0]}/" if broker.ops_urls else ""
            print(
                f"broker {broker_id} {broker.bootstrap_servers} log {broker.log_path}{status}",
                flush=True,
            )
        print("bootstrap.servers=" + cluster.bootstrap, flush=True)
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        return 0
    finally:
        cluster.close()
        if zookeeper is not None:
            zookeeper.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wireserver cluster", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
