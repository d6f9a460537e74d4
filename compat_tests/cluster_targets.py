"""The two 3-node clusters the cluster scenarios run against, behind one small interface.

- Kafka: :class:`compat_tests.reference.KafkaCluster` with 3 combined broker+controller KRaft
  nodes (ids 0, 1, 2), started through ``reference_kafka(nodes=3, controllable=True)``.
- wireserver: a real ZooKeeper and 3 broker processes (ids 1, 2, 3), the
  :class:`wireserver.testing.cluster.LocalCluster` the cluster tests use, with Kafka's launcher
  settings for the internal topics and fast failure detection (``FAST_FAILOVER``).

Node ids differ between the two, so scenarios speak of roles (the leader, a follower) and
never record an id. ``bootstrap`` lists the nodes that are running now: a client started
while a node is down is given the live ones, as an operator would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from wireserver.testing.cluster import FAST_FAILOVER, LocalCluster

KAFKA = "kafka"
WIRESERVER = "wireserver"
NODES = 3
#: what KafkaCluster sets for a 3-node cluster (compat_tests/reference/launcher.py)
INTERNAL_TOPICS = {
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
}
REJOIN_TIMEOUT = 90.0  # a restarted node is listed by every running node by then


class ClusterTarget:
    """What a scenario may do to a cluster: address its nodes, stop one cleanly, start it."""

    name = "?"

    def node_ids(self) -> list[int]:
        raise NotImplementedError

    def address(self, node: int) -> str:
        raise NotImplementedError

    def running(self, node: int) -> bool:
        raise NotImplementedError

    def stop(self, node: int) -> None:
        """A clean shutdown (SIGTERM), as an operator stops a broker."""
        raise NotImplementedError

    def kill(self, node: int) -> None:
        """SIGKILL: no clean shutdown, the cluster finds out by a session timeout."""
        raise NotImplementedError

    def start(self, node: int) -> None:
        """Start a stopped node again and return once every running node lists it."""
        raise NotImplementedError

    @property
    def bootstrap(self) -> str:
        return ",".join(self.address(n) for n in self.node_ids() if self.running(n))

    def live(self) -> list[int]:
        return [n for n in self.node_ids() if self.running(n)]

    def restore(self) -> None:
        """Start every stopped node (a scenario's cleanup), all at once for Kafka's quorum."""
        for node in self.node_ids():
            if not self.running(node):
                self.start(node)


class KafkaTarget(ClusterTarget):
    name = KAFKA

    def __init__(self, cluster) -> None:
        self.cluster = cluster

    def node_ids(self) -> list[int]:
        return [n.node_id for n in self.cluster.nodes]

    def address(self, node: int) -> str:
        return self.cluster.node_bootstrap(node)

    def running(self, node: int) -> bool:
        return self.cluster.nodes[node].running()

    def stop(self, node: int) -> None:
        self.cluster.stop_node(node)

    def kill(self, node: int) -> None:
        self.cluster.kill(node)

    def start(self, node: int) -> None:
        self.cluster.start_node(node, wait=True, timeout=REJOIN_TIMEOUT)

    def restore(self) -> None:
        # With two of three KRaft voters down there is no quorum until both are back: start
        # them together, then wait.
        stopped = [n for n in self.node_ids() if not self.running(n)]
        for node in stopped:
            self.cluster.start_node(node, wait=False)
        if stopped:
            self.cluster.wait_ready(timeout=REJOIN_TIMEOUT)


class WireserverTarget(ClusterTarget):
    name = WIRESERVER

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    def node_ids(self) -> list[int]:
        return sorted(self.cluster.brokers)

    def address(self, node: int) -> str:
        return self.cluster.brokers[node].bootstrap_servers

    def running(self, node: int) -> bool:
        return self.cluster.brokers[node].running

    def stop(self, node: int) -> None:
        self.cluster.brokers[node].stop()

    def kill(self, node: int) -> None:
        self.cluster.brokers[node].kill()

    def start(self, node: int) -> None:
        self.cluster.brokers[node].start()
        self.cluster.wait_ready(REJOIN_TIMEOUT)


@contextlib.contextmanager
def kafka_cluster(**kwargs) -> Iterator[KafkaTarget]:
    """``kwargs`` go to ``reference_kafka`` (``broker_props=...``, say)."""
    from compat_tests.reference import reference_kafka

    with reference_kafka(nodes=NODES, controllable=True, **kwargs) as ref:
        yield KafkaTarget(ref.cluster)


@contextlib.contextmanager
def wireserver_cluster(
    zookeeper_connect: str, overrides: dict | None = None, log_level: str = "INFO"
) -> Iterator[WireserverTarget]:
    """``overrides`` go over ``FAST_FAILOVER`` and Kafka's internal-topic settings."""
    cluster = LocalCluster(
        zookeeper_connect,
        NODES,
        {**FAST_FAILOVER, **INTERNAL_TOPICS, **(overrides or {})},
        log_level,
    )
    try:
        yield WireserverTarget(cluster.start())
    finally:
        cluster.close()
