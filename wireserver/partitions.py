"""Where each partition lives and what state it is in, as this broker reports it.

Every API that tells a client about partition placement or per-partition state (Metadata,
DescribeTopicPartitions, DescribeLogDirs, DescribeProducers) answers from here, so that no two
of them can disagree about a partition's leader, replicas or ISR.

One node: this broker is the only replica, the ISR and the leader of every partition, at leader
epoch 0. Cluster mode (``broker.cluster``): a topic that ZooKeeper knows is described from this
broker's view of ZooKeeper (the assignment and each partition's state znode); its leader is -1
while the state names no live broker, and a replica whose broker is not registered is offline
(Kafka's ZooKeeper-era ``MetadataCache``). An internal topic this broker has a log for before
ZooKeeper knows it keeps the one-node answer (as Metadata always answered it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wireserver.topics import INTERNAL_TOPICS

if TYPE_CHECKING:
    from wireserver.broker import Broker
    from wireserver.storage.manager import TopicInfo

NO_LEADER = -1


@dataclass(frozen=True)
class PartitionView:
    partition: int
    leader: int  # NO_LEADER while no live broker leads it
    leader_epoch: int  # -1 before the controller wrote the partition's first state
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]


def is_reported(broker: Broker, info: TopicInfo | None) -> bool:
    """Whether the topic is part of what this broker reports: in cluster mode only once its
    creation has gone through ZooKeeper (an auto-created topic is not yet); internal topics
    always."""
    cluster = broker.cluster
    return info is not None and (
        cluster is None or info.name in cluster.topics or info.name in INTERNAL_TOPICS
    )


def partition_views(broker: Broker, info: TopicInfo) -> list[PartitionView]:
    """Every partition of the topic, by index."""
    cluster = broker.cluster
    if cluster is None or info.name not in cluster.topics:
        indexes: Iterable[int] = range(info.num_partitions)
    else:
        indexes = sorted(cluster.topics[info.name].replicas)
    return [
        view for view in (partition_view(broker, info.name, p) for p in indexes) if view is not None
    ]


def partition_view(broker: Broker, topic: str, partition: int) -> PartitionView | None:
    """One partition, or None when this broker knows no such partition."""
    cluster = broker.cluster
    if cluster is None or topic not in cluster.topics:
        info = broker.logs.topics.get(topic)
        if info is None or not 0 <= partition < info.num_partitions:
            return None
        node = broker.node_id
        return PartitionView(partition, node, 0, [node], [node], [])
    replicas = cluster.topics[topic].replicas.get(partition)
    if replicas is None:
        return None
    offline = [r for r in replicas if r not in cluster.brokers]
    state = cluster.partition(topic, partition)
    if state is None:
        return PartitionView(partition, NO_LEADER, -1, list(replicas), [], offline)
    leader = state.leader if state.leader in cluster.brokers else NO_LEADER
    return PartitionView(
        partition, leader, state.leader_epoch, list(replicas), list(state.isr), offline
    )


def hosts_replica(broker: Broker, topic: str, partition: int) -> bool:
    """Whether this broker holds a replica of the partition (leader or follower). In cluster
    mode every broker opens logs for every partition of every topic, but only the assigned
    replicas hold data; the others are no replica in Kafka's sense."""
    cluster = broker.cluster
    if cluster is None or topic not in cluster.topics:
        return broker.logs.get_log(topic, partition) is not None
    return broker.node_id in cluster.topics[topic].replicas.get(partition, [])
