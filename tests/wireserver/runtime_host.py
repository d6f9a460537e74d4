"""A host for a coordinator runtime over real logs in a temporary dir, and what a Deferred fired
with."""

from __future__ import annotations

from typing import Any

from twisted.internet.task import Clock

from wireserver.cluster.metadata import ZkMetadata
from wireserver.config import BrokerConfig
from wireserver.metadata import LocalMetadata
from wireserver.purgatory import Purgatory
from wireserver.replica.manager import ReplicaManager
from wireserver.storage.manager import LogManager


class FakeCluster:
    """What the cluster metadata (``ZkMetadata``) reads of the ZooKeeper view: the topics
    ZooKeeper knows and the live brokers."""

    def __init__(self, brokers: int):
        self.topics: dict[str, Any] = {}
        self.brokers = {i: None for i in range(1, brokers + 1)}

    def partition(self, topic: str, index: int) -> None:
        """No partition's state is known: none has a leader."""
        return None


class Host:
    """A broker's parts the runtime uses: config, logs, replica manager, metadata, clock."""

    def __init__(self, tmp_path, clustered: bool, partitions: int = 3, **config: str):
        self.clock = Clock()
        values = {
            "log.dirs": str(tmp_path),
            "node.id": "1",
            "offsets.topic.num.partitions": str(partitions),
            "offsets.topic.replication.factor": "1",
            "offsets.commit.timeout.ms": "500",
        }
        if clustered:
            values["zookeeper.connect"] = "zk.invalid:2181"
        values.update(config)
        self.config = BrokerConfig.load(None, values)
        self.logs = LogManager([str(tmp_path)], self.config.topic_defaults(), self.now_ms)
        self.logs.load()
        self.purgatory = Purgatory(self.clock)
        self.replicas = ReplicaManager(
            1,
            self.logs,
            self.purgatory,
            self.now_ms,
            lambda logs: None,
            local_leadership=not clustered,
        )
        parts = (1, self.logs, self.replicas, self.purgatory, None, None)
        self.cluster = FakeCluster(1)
        self.metadata = ZkMetadata(self.cluster, *parts) if clustered else LocalMetadata(*parts)

    def now_ms(self) -> int:
        return int(self.clock.seconds() * 1000)


def fired(d) -> list:
    box: list = []
    d.addCallback(box.append)
    return box
