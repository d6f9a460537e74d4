"""Consumer-group settle times, wireserver vs Apache Kafka, with the same client.

Client: confluent-kafka (librdkafka), classic group protocol, default assignor
(range,roundrobin), ``heartbeat.interval.ms`` from ``--heartbeat-ms`` on both targets; both
brokers run with ``group.initial.rebalance.delay.ms=0`` (Kafka: ``KafkaCluster(nodes=1)``;
wireserver: ``EmbeddedBroker("subprocess")``, whose test defaults set it).

join: one member subscribes to a fresh group on a 6-partition topic; the time from
    ``subscribe()`` to its assignment callback (all 6 partitions).
leave: ten members share a 20-partition topic and are settled; one closes (LeaveGroup);
    the time from ``close()`` until the nine others together own every partition exactly
    once, each owning some.

Each figure is the median of ``--runs`` runs (fresh topic and group each). Figures to
report, never an assertion. Run: python -m benchmarks.group_settle [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
import uuid

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

TIMEOUT = 60.0


def create_topic(bootstrap: str, partitions: int) -> str:
    name = f"settle-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # Kafka lists a new topic's leaders a little later
        found = admin.list_topics(name, timeout=10).topics.get(name)
        if (
            found
            and len(found.partitions) == partitions
            and all(p.leader >= 0 for p in found.partitions.values())
        ):
            break
        time.sleep(0.05)
    return name


class Member:
    def __init__(self, bootstrap: str, group: str, topic: str, heartbeat_ms: int):
        self.owned: set[int] = set()
        self.assigned_at: float | None = None
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "heartbeat.interval.ms": heartbeat_ms,
                "session.timeout.ms": 10000,
            }
        )
        self.topic = topic

    def subscribe(self) -> None:
        self.consumer.subscribe([self.topic], on_assign=self._assign, on_revoke=self._revoke)

    def _assign(self, consumer, partitions) -> None:
        self.owned |= {p.partition for p in partitions}
        self.assigned_at = time.perf_counter()

    def _revoke(self, consumer, partitions) -> None:
        self.owned -= {p.partition for p in partitions}

    def poll(self) -> None:
        self.consumer.poll(0.002)


def settled(members: list[Member], partitions: int) -> bool:
    owned = [p for m in members for p in m.owned]
    return all(m.owned for m in members) and len(owned) == len(set(owned)) == partitions


def wait(members: list[Member], condition) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(
                "the group did not settle: " + "; ".join(str(sorted(m.owned)) for m in members)
            )
        for m in members:
            m.poll()


def join_once(bootstrap: str, heartbeat_ms: int) -> float:
    topic = create_topic(bootstrap, 6)
    member = Member(bootstrap, f"join-{uuid.uuid4().hex[:8]}", topic, heartbeat_ms)
    try:
        started = time.perf_counter()
        member.subscribe()
        wait([member], lambda: len(member.owned) == 6)
        return member.assigned_at - started
    finally:
        member.consumer.close()


def leave_once(bootstrap: str, heartbeat_ms: int, size: int = 10, partitions: int = 20) -> float:
    topic = create_topic(bootstrap, partitions)
    group = f"leave-{uuid.uuid4().hex[:8]}"
    members = [Member(bootstrap, group, topic, heartbeat_ms) for _ in range(size)]
    try:
        for m in members:
            m.subscribe()
        wait(members, lambda: settled(members, partitions))
        leaving = members.pop()
        started = time.perf_counter()
        leaving.consumer.close()
        wait(members, lambda: settled(members, partitions))
        return time.perf_counter() - started
    finally:
        for m in members:
            m.consumer.close()


@contextlib.contextmanager
def target(name: str):
    if name == "kafka":
        from compat_tests.reference import KafkaCluster

        with KafkaCluster(nodes=1) as cluster:
            yield cluster.bootstrap_servers
    else:
        from wireserver.testing import EmbeddedBroker

        with EmbeddedBroker("subprocess") as broker:
            yield broker.bootstrap_servers


def measure(name: str, runs: int, heartbeat_ms: int) -> dict[str, list[float]]:
    with target(name) as bootstrap:
        join_once(bootstrap, heartbeat_ms)  # warm-up: the group coordinator's first load
        return {
            "join": [join_once(bootstrap, heartbeat_ms) for _ in range(runs)],
            "leave": [leave_once(bootstrap, heartbeat_ms) for _ in range(runs)],
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    args = parser.parse_args(argv)
    figures = {
        name: measure(name, args.runs, args.heartbeat_ms) for name in ("kafka", "wireserver")
    }
    labels = {
        "join": "1 member joins, gets 6 partitions",
        "leave": "10 members, 1 leaves: 9 settle on 20 partitions",
    }
    print(
        f"confluent-kafka classic protocol, heartbeat.interval.ms={args.heartbeat_ms}, "
        f"group.initial.rebalance.delay.ms=0; median of {args.runs} (ms)"
    )
    print(f"| {'measure':<48} | {'Kafka':>8} | {'wireserver':>10} | {'ours ÷ Kafka':>12} |")
    print(f"|{'-' * 50}|{'-' * 10}|{'-' * 12}|{'-' * 14}|")
    for key, label in labels.items():
        kafka = statistics.median(figures["kafka"][key]) * 1000
        ours = statistics.median(figures["wireserver"][key]) * 1000
        print(f"| {label:<48} | {kafka:>8.0f} | {ours:>10.0f} | {ours / kafka:>11.2f}× |")
    for name, values in figures.items():
        print(
            f"  {name}: "
            + ", ".join(
                f"{key} " + " ".join(f"{v * 1000:.0f}" for v in vs) for key, vs in values.items()
            )
        )


if __name__ == "__main__":
    main()
