"""What this broker knows of the cluster it belongs to, and how a topic is made, changed or
removed in it: one object (``Broker.metadata``) that every handler and service asks, so that no
caller needs to know whether it runs on one node or in a ZooKeeper cluster.

``LocalMetadata`` is the one-node answer: this broker is the only broker, the controller, and
the only replica, ISR and leader of every partition at leader epoch 0; a topic is made or
removed in this broker's logs at once. ``wireserver.cluster.metadata.ZkMetadata`` answers from
the ZooKeeper view for the topics ZooKeeper knows and falls back to these answers for a topic
this broker has a log for before ZooKeeper knows it (an internal topic being created).

Every API that tells a client about placement or partition state (Metadata,
DescribeTopicPartitions, DescribeLogDirs, DescribeProducers, FindCoordinator, leader hints)
answers from here, so that no two of them can disagree about a leader, replicas or an ISR.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wireserver.coordinator_runtime import INTERNAL_TOPICS
from wireserver.protocol.errors import ErrorCode
from wireserver.storage.errors import (
    InvalidPartitionsError,
    InvalidTopicError,
    KafkaStorageError,
    TopicExistsError,
)

if TYPE_CHECKING:
    from wireserver.config import Listener
    from wireserver.purgatory import Purgatory
    from wireserver.replica.manager import ReplicaManager
    from wireserver.storage.manager import LogManager, TopicInfo

NO_LEADER = -1
TP = tuple[str, int]


class TopicError(Exception):
    """A topic operation refused with a Kafka error code and Kafka's message."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def unknown_topic(name: str) -> TopicError:
    return TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")


@dataclass(frozen=True)
class PartitionView:
    partition: int
    leader: int  # NO_LEADER while no live broker leads it
    leader_epoch: int  # -1 before the controller wrote the partition's first state
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]


@dataclass(frozen=True)
class BrokerEndpoint:
    """A live broker as a client reaches it through one listener."""

    node_id: int
    host: str
    port: int
    rack: str | None


#: A CreatePartitions request entry for one topic (``name``, the new total ``count``, and
#: ``assignments``: each added partition's ``broker_ids`` when the client chose them).
NewPartitions = Any

#: What a topic's partition count and replica sets are checked against before more partitions
#: are added: (request entry, current count, live broker ids, replication factor). Raises
#: TopicError.
PartitionsCheck = Callable[[NewPartitions, int, set[int], int], None]


class LocalMetadata:
    """One node (see the module docstring)."""

    #: Whether a change made here reaches this broker's metadata later (through ZooKeeper's
    #: watches), so that admin requests wait for it (Kafka's DelayedCreateTopics and kin).
    propagates = False

    def __init__(
        self,
        node_id: int,
        logs: LogManager,
        replicas: ReplicaManager,
        purgatory: Purgatory,
        advertised_listener: Callable[[str], Listener],
        rack: str | None,
    ):
        self.node_id = node_id
        self.logs = logs
        self.replicas = replicas
        self.purgatory = purgatory
        self.advertised_listener = advertised_listener
        self.rack = rack
        #: Called with the name of each deleted topic other than an internal one (the group
        #: coordinator forgets its offsets of it).
        self.topic_deleted: list[Callable[[str], object]] = []
        self._views: dict[str, tuple[TopicInfo, tuple[PartitionView, ...]]] = {}

    # -- brokers ------------------------------------------------------------------------------

    def controller_id(self) -> int:
        return self.node_id

    def live_broker_ids(self) -> list[int]:
        return [self.node_id]

    def live_racks(self) -> dict[int, str | None]:
        return {self.node_id: self.rack}

    def broker_endpoints(self, listener_name: str) -> list[BrokerEndpoint]:
        """Every live broker, by id, as the listener ``listener_name`` advertises it."""
        listener = self.advertised_listener(listener_name)
        return [BrokerEndpoint(self.node_id, listener.host, listener.port, self.rack)]

    def broker_endpoint(self, node_id: int, listener_name: str) -> BrokerEndpoint | None:
        return next((e for e in self.broker_endpoints(listener_name) if e.node_id == node_id), None)

    # -- topics and partitions ----------------------------------------------------------------

    def registered(self, name: str) -> bool:
        """Whether the topic exists where every broker looks for topics: this broker's logs on
        one node, ZooKeeper in a cluster."""
        return name in self.logs.topics

    def shared(self, name: str) -> bool:
        """Whether a change to the topic reaches this broker later, through the cluster's
        metadata store: then an admin request waits for it."""
        return self.propagates and self.registered(name)

    def topic_ids(self) -> dict[str, uuid.UUID]:
        """Every topic this broker knows, by name: its own logs' and the cluster's."""
        return {name: info.topic_id for name, info in self.logs.topics.items()}

    def topic_id(self, name: str) -> uuid.UUID | None:
        """The topic's id, or None when this broker knows no such topic (one lookup, where
        ``topic_ids`` makes a dict of every topic)."""
        info = self.logs.topics.get(name)
        return info.topic_id if info is not None else None

    def topic_names(self) -> Mapping[uuid.UUID, str]:
        """Topic id -> name, for the requests that name topics by id (UNKNOWN_TOPIC_ID when an
        id is not here): the logs' live index on one node."""
        return self.logs.topic_names_by_id

    def is_reported(self, info: TopicInfo | None) -> bool:
        """Whether the topic is part of what this broker reports to clients."""
        return info is not None

    def partition_indexes(self, info: TopicInfo) -> Iterable[int]:
        return range(info.num_partitions)

    def partition_views(self, info: TopicInfo) -> Sequence[PartitionView]:
        """Every partition of the topic, by index. On one node they follow from the topic
        alone, so they are made once per ``TopicInfo`` (every change to a topic replaces its
        info): an all-topics Metadata request of thousands of partitions reads them instead of
        making them again. Callers only read them."""
        cached = self._views.get(info.name)
        if cached is not None and cached[0] is info:
            return cached[1]
        node = self.node_id
        views = tuple(
            PartitionView(p, node, 0, [node], [node], []) for p in range(info.num_partitions)
        )
        self._views[info.name] = (info, views)
        return views

    def partition_view(self, topic: str, partition: int) -> PartitionView | None:
        """One partition, or None when this broker knows no such partition."""
        info = self.logs.topics.get(topic)
        if info is None or not 0 <= partition < info.num_partitions:
            return None
        node = self.node_id
        return PartitionView(partition, node, 0, [node], [node], [])

    def hosts_replica(self, topic: str, partition: int) -> bool:
        """Whether this broker holds a replica of the partition (leader or follower)."""
        return self.logs.get_log(topic, partition) is not None

    def has_leaders(self, name: str, partitions: int = 1) -> bool:
        """The topic has at least ``partitions`` partitions and each has a leader."""
        info = self.logs.topics.get(name)
        return info is not None and info.num_partitions >= partitions

    def all_partitions(self) -> list[TP]:
        return [
            (name, p) for name, info in self.logs.topics.items() for p in range(info.num_partitions)
        ]

    def leader(self, topic: str, partition: int) -> int:
        """The live leader of the partition, NO_LEADER when none."""
        view = self.partition_view(topic, partition)
        return view.leader if view is not None else NO_LEADER

    # -- changes ------------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        overrides: dict[str, str],
        assignments: Mapping[int, list[int]] | None,
    ) -> TopicInfo:
        """Make a topic already checked (``wireserver.topics.resolve_creation``)."""
        try:
            return self.logs.create_topic(name, partitions, overrides)
        except TopicExistsError as exc:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, str(exc)) from None
        except InvalidTopicError as exc:
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)) from None
        except InvalidPartitionsError as exc:
            raise TopicError(ErrorCode.INVALID_PARTITIONS, str(exc)) from None
        except KafkaStorageError as exc:  # the log dir failed; nothing of the topic is left
            raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from None

    def delete_topic(self, name: str) -> None:
        """DeleteTopics for one topic this broker knows."""
        self.delete_local(name)

    def delete_local(self, name: str) -> None:
        """Delete a topic's logs on this broker; fetches parked on its partitions wake, re-read
        and answer UNKNOWN_TOPIC_OR_PARTITION."""
        info = self.logs.topics[name]
        self.replicas.remove_topic(name)
        self.logs.delete_topic(name)
        for partition in range(info.num_partitions):
            self.purgatory.notify(("append", name, partition))
        if name not in INTERNAL_TOPICS:
            for listener in self.topic_deleted:
                listener(name)

    def add_partitions(
        self, topic: NewPartitions, validate_only: bool, check: PartitionsCheck
    ) -> None:
        info = self.logs.topics.get(topic.name)
        if info is None:
            raise unknown_topic(topic.name)
        check(topic, info.num_partitions, {self.node_id}, 1)
        if not validate_only:
            try:
                self.logs.add_partitions(topic.name, topic.count)
            except InvalidPartitionsError as exc:
                raise TopicError(ErrorCode.INVALID_PARTITIONS, str(exc)) from None
            except KafkaStorageError as exc:
                raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from None

    def topic_overrides(self, name: str) -> dict[str, str]:
        """The config overrides a change to the topic starts from."""
        return dict(self.logs.topics[name].overrides)

    def set_topic_overrides(self, name: str, overrides: Mapping[str, str]) -> None:
        """Replace the topic's override set (checked already); this broker applies it now."""
        self.logs.alter_topic_config(name, dict(overrides))

    def elect(self, tp: TP, election_type: int) -> ErrorCode:
        """ElectLeaders for one partition: one node leads everything already."""
        if self.partition_view(*tp) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.ELECTION_NOT_NEEDED

    def reassign(self, topic: str, partition: int, target: list[int] | None) -> bool:
        """AlterPartitionReassignments for one partition (checked already): on one node the
        only valid target is the current replica, nothing moves, and a cancel (None) finds no
        reassignment in progress (False)."""
        return target is not None

    def reassignments(self, topics: list[str] | None) -> list[Reassignment]:
        """ListPartitionReassignments: those in progress (never any on one node)."""
        return []


@dataclass(frozen=True)
class Reassignment:
    """One partition's reassignment in progress: RS, AR and RR (KIP-455)."""

    topic: str
    partition: int
    replicas: list[int]
    adding: list[int]
    removing: list[int]
