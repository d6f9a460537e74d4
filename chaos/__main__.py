"""``python -m chaos`` (``scripts/chaos``): run a fault campaign and print its table.

scripts/chaos --minutes 5 --seed 7                # wireserver, then the same against Kafka
scripts/chaos --minutes 2 --targets wireserver --unclean
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile

from chaos.campaign import FAULTS, Campaign, format_table
from chaos.netns import Network, missing_prerequisites


def make_target(name: str, network: Network, unclean: bool):
    if name == "wireserver":
        from chaos.cluster import WireserverCluster

        return WireserverCluster(network, unclean=unclean)
    if name == "kafka":
        from chaos.kafka_cluster import KafkaKRaftCluster

        return KafkaKRaftCluster(network, unclean=unclean)
    raise SystemExit(f"unknown target {name!r} (wireserver, kafka)")


def run_one(name: str, args) -> object:
    with Network(args.prefix, args.subnet) as network:
        target = make_target(name, network, args.unclean)
        try:
            target.start()
            campaign = Campaign(
                target,
                seed=args.seed,
                duration=args.minutes * 60,
                workdir=os.path.join(args.workdir, name),
                unclean=args.unclean,
                faults=args.faults.split(",") if args.faults else None,
                rate=args.rate,
            )
            return campaign.run()
        finally:
            save_logs = getattr(target, "save_logs", None)
            if save_logs is not None:
                save_logs(os.path.join(args.workdir, name, "logs"))
            target.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/chaos", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--targets", default="wireserver,kafka")
    parser.add_argument(
        "--unclean",
        action="store_true",
        help="unclean.leader.election.enable=true (loss allowed, and reported)",
    )
    parser.add_argument("--faults", default="", help=f"comma-separated of: {', '.join(FAULTS)}")
    parser.add_argument("--rate", type=float, default=100.0, help="records a second per producer")
    parser.add_argument(
        "--workdir", default=os.path.join(tempfile.gettempdir(), "wireserver-chaos")
    )
    parser.add_argument("--prefix", default="wsc", help="namespace and interface name prefix")
    parser.add_argument("--subnet", default="10.91.0", help="first three octets of the /24")
    args = parser.parse_args(argv)
    missing = missing_prerequisites()
    if missing:
        parser.error("this machine lacks: " + ", ".join(missing))
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # kafka-python's connection chatter (the Kafka target's readiness probe): not the campaign's
    logging.getLogger("kafka").setLevel(logging.WARNING)
    results = [run_one(name, args) for name in args.targets.split(",")]
    print(format_table(results))
    failed = False
    for result in results:
        for problem in result.problems:
            print(f"{result.target}: {problem}")
            failed = True
    print(f"histories in {args.workdir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
