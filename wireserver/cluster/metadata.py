"""The cluster's answer to what ``wireserver.metadata.LocalMetadata`` answers on one node.

A topic that ZooKeeper knows is described from this broker's view of ZooKeeper (the
assignment and each partition's state znode): its leader is -1 while the state names no live
broker, and a replica whose broker is not registered, or that is in a failed log dir
(``ClusterNode.offline_replicas``), is offline (Kafka's ZooKeeper-era
``MetadataCache``). A topic this broker has a log for before ZooKeeper knows it keeps the
one-node answer; an auto-created one is not reported until its creation has gone through
ZooKeeper. Changes are written to ZooKeeper (``wireserver.cluster.topic_admin``) and reach
every broker, this one included, through the watches: admin requests wait for them
(``propagates``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wireserver.cluster import topic_admin
from wireserver.cluster.placement import PlacementError, assign_replicas
from wireserver.coordinator_runtime import INTERNAL_TOPICS
from wireserver.metadata import (
    NO_LEADER,
    TP,
    BrokerEndpoint,
    LocalMetadata,
    NewPartitions,
    PartitionsCheck,
    PartitionView,
    Reassignment,
    TopicError,
    unknown_topic,
)
from wireserver.protocol.errors import ErrorCode
from wireserver.storage.log_config import LogConfig
from wireserver.storage.manager import TopicInfo, TopicTable

if TYPE_CHECKING:
    from wireserver.cluster.node import ClusterNode


class TopicNames(Mapping[uuid.UUID, str]):
    """Topic id -> name over ZooKeeper's topics and this broker's logs: ZooKeeper's id for a
    name first; a log's id is found only while ZooKeeper has no other id for its name (a
    topic deleted and created again keeps its old log until the watch drops it)."""

    def __init__(self, zookeeper: TopicTable[Any], logs_by_id: Mapping[uuid.UUID, str]):
        self.zookeeper = zookeeper
        self.logs_by_id = logs_by_id

    def __getitem__(self, topic_id: uuid.UUID) -> str:
        name = self.zookeeper.by_id.get(topic_id)
        if name is not None:
            return name
        name = self.logs_by_id[topic_id]
        current = self.zookeeper.get(name)
        if current is not None and current.topic_id != topic_id:
            raise KeyError(topic_id)
        return name

    def __iter__(self) -> Iterator[uuid.UUID]:
        yield from self.zookeeper.by_id
        for topic_id in self.logs_by_id:
            if topic_id not in self.zookeeper.by_id and topic_id in self:
                yield topic_id

    def __len__(self) -> int:
        return sum(1 for _ in self)


class ZkMetadata(LocalMetadata):
    """This broker's ZooKeeper view (``ClusterNode``) as the metadata every caller asks."""

    propagates = True

    def __init__(self, node: ClusterNode, *local: Any):
        """``local``: what ``LocalMetadata`` is made of, for topics ZooKeeper does not know."""
        super().__init__(*local)
        self.node = node

    # -- brokers ------------------------------------------------------------------------------

    def controller_id(self) -> int:
        return self.node.controller_id

    def live_broker_ids(self) -> list[int]:
        return sorted(self.node.brokers)

    def live_racks(self) -> dict[int, str | None]:
        return self.node.live_racks()

    def registrations(self) -> dict[int, Any]:
        """Each live broker's registration (``zkdata.BrokerInfo``: its endpoints by listener),
        as inter-broker connections need it."""
        return self.node.brokers

    def broker_endpoints(self, listener_name: str) -> list[BrokerEndpoint]:
        endpoints = []
        for node_id, info in sorted(self.node.brokers.items()):
            host, port = self.node.endpoint_for(info, listener_name)
            endpoints.append(BrokerEndpoint(node_id, host, port, info.rack))
        return endpoints

    # -- topics and partitions ----------------------------------------------------------------

    def registered(self, name: str) -> bool:
        return name in self.node.topics

    def topic_ids(self) -> dict[str, uuid.UUID]:
        ids = super().topic_ids()
        ids.update({name: a.topic_id for name, a in self.node.topics.items()})
        return ids

    def topic_id(self, name: str) -> uuid.UUID | None:
        assignment = self.node.topics.get(name)
        return assignment.topic_id if assignment is not None else super().topic_id(name)

    def topic_names(self) -> Mapping[uuid.UUID, str]:
        """The logs' topics and ZooKeeper's (a topic can be in one before the other), looked
        up in both id indexes rather than merged into a dict on every request."""
        return TopicNames(self.node.topics, self.logs.topic_names_by_id)

    def is_reported(self, info: TopicInfo | None) -> bool:
        return info is not None and (info.name in self.node.topics or info.name in INTERNAL_TOPICS)

    def partition_views(self, info: TopicInfo) -> Sequence[PartitionView]:
        """Made on every call: leaders, epochs and ISRs change with ZooKeeper's view."""
        views = (self.partition_view(info.name, p) for p in self.partition_indexes(info))
        return [view for view in views if view is not None]

    def partition_indexes(self, info: TopicInfo) -> Iterable[int]:
        assignment = self.node.topics.get(info.name)
        if assignment is None:
            return super().partition_indexes(info)
        return sorted(assignment.replicas)

    def partition_view(self, topic: str, partition: int) -> PartitionView | None:
        assignment = self.node.topics.get(topic)
        if assignment is None:
            return super().partition_view(topic, partition)
        replicas = assignment.replicas.get(partition)
        if replicas is None:
            return None
        brokers = self.node.brokers
        # on a dead broker, or in a failed log dir of a live one (Kafka's controller sends
        # both as offline replicas in UpdateMetadata)
        tp = (topic, partition)
        offline = [r for r in replicas if not self.node.is_live_replica(r, tp)]
        state = self.node.partition(topic, partition)
        if state is None:
            return PartitionView(partition, NO_LEADER, -1, list(replicas), [], offline)
        leader = state.leader if state.leader in brokers else NO_LEADER
        return PartitionView(
            partition, leader, state.leader_epoch, list(replicas), list(state.isr), offline
        )

    def hosts_replica(self, topic: str, partition: int) -> bool:
        """Whether ZooKeeper's assignment names this broker among the partition's replicas
        (which have logs here; a replica just assigned may not have one yet)."""
        assignment = self.node.topics.get(topic)
        if assignment is None:
            return super().hosts_replica(topic, partition)
        return self.node_id in assignment.replicas.get(partition, [])

    def has_leaders(self, name: str, partitions: int = 1) -> bool:
        assignment = self.node.topics.get(name)
        if assignment is None or len(assignment.replicas) < partitions:
            return False
        return all(
            (s := self.node.partition(name, p)) is not None and s.leader >= 0
            for p in assignment.replicas
        )

    def all_partitions(self) -> list[TP]:
        return [(name, p) for name, a in self.node.topics.items() for p in sorted(a.replicas)]

    def leader(self, topic: str, partition: int) -> int:
        """The leader the partition's state names, if that broker is alive (a topic ZooKeeper
        does not know yet has none)."""
        state = self.node.partition(topic, partition)
        if state is None or state.leader not in self.node.brokers:
            return NO_LEADER
        return state.leader

    # -- changes ------------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        overrides: dict[str, str],
        assignments: Mapping[int, list[int]] | None,
    ) -> TopicInfo:
        """Write the topic to ZooKeeper with its replicas placed on the live brokers by
        Kafka's round robin (rack-aware when racks are set); every broker then opens its logs
        from the watch, and the controller elects leaders."""
        from kazoo.exceptions import NodeExistsError

        if assignments:
            replicas = {p: list(r) for p, r in assignments.items()}
        else:
            try:
                replicas = assign_replicas(partitions, replication_factor, self.live_racks())
            except PlacementError as exc:
                raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None
        topic_id = uuid.uuid4()
        try:
            self.node.create_topic(name, topic_id, replicas, overrides)
        except NodeExistsError:
            raise TopicError(
                ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
            ) from None
        return TopicInfo(
            name,
            topic_id,
            partitions,
            overrides,
            LogConfig.from_values(self.logs.broker_defaults, overrides),
        )

    def delete_topic(self, name: str) -> None:
        """Ask the controller to delete a topic ZooKeeper knows; every broker drops its logs
        when the assignment disappears."""
        if name in self.node.topics:
            topic_admin.mark_for_deletion(self.node, name)
        else:
            self.delete_local(name)

    def add_partitions(
        self, topic: NewPartitions, validate_only: bool, check: PartitionsCheck
    ) -> None:
        """Check against the assignment ZooKeeper holds now and write the extended one."""
        if topic.name not in self.node.topics:
            super().add_partitions(topic, validate_only, check)
            return
        existing, zk_version = topic_admin.read_assignment(self.node, topic.name)
        if existing is None:
            raise unknown_topic(topic.name)
        replication_factor = len(topic_admin.first_partition_replicas(existing))
        check(topic, len(existing.replicas), set(self.node.brokers), replication_factor)
        if topic.assignments is None:
            added = topic_admin.new_partitions_assignment(self.live_racks(), existing, topic.count)
        else:
            added = {
                len(existing.replicas) + i: list(a.broker_ids)
                for i, a in enumerate(topic.assignments)
            }
        if not validate_only:
            topic_admin.add_partitions(self.node, existing, zk_version, added)

    def topic_overrides(self, name: str) -> dict[str, str]:
        """What ZooKeeper holds: this broker may not have applied the latest change yet."""
        if name in self.node.topics:
            return topic_admin.read_topic_config(self.node, name)
        return super().topic_overrides(name)

    def set_topic_overrides(self, name: str, overrides: Mapping[str, str]) -> None:
        """``/config/topics/<t>`` with a change notification, which every broker follows
        (``wireserver.cluster.config_changes``); this one applies it now."""
        if name in self.node.topics:
            topic_admin.write_topic_config(self.node, name, overrides)
        super().set_topic_overrides(name, overrides)

    def elect(self, tp: TP, election_type: int) -> ErrorCode:
        controller = self.node.controller
        if controller is None:
            return ErrorCode.NOT_CONTROLLER
        return controller.elect(tp, election_type)

    def reassign(self, topic: str, partition: int, target: list[int] | None) -> bool:
        """Written to the topic's znode here; the controller completes it."""
        if topic not in self.node.topics:
            return super().reassign(topic, partition, target)
        return topic_admin.reassign(self.node, topic, partition, target)

    def reassignments(self, topics: list[str] | None) -> list[Reassignment]:
        """Read from ZooKeeper now: a reassignment just written through another broker is
        listed at once."""
        found = []
        for name, assignment in topic_admin.reassignments(self.node, topics).items():
            for partition in sorted(assignment.replicas):
                if assignment.reassigning(partition):
                    found.append(
                        Reassignment(
                            name,
                            partition,
                            list(assignment.replicas[partition]),
                            list(assignment.adding.get(partition, [])),
                            list(assignment.removing.get(partition, [])),
                        )
                    )
        return found
