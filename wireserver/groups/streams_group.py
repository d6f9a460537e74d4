"""A Streams group (KIP-1071) and its members: the topology, the tasks it makes of the topics,
and reconciliation; no timers or I/O (those are in ``streams_coordinator``).

A *task* is (subtopology id, partition). A subtopology has as many tasks as the most
partitions among its source and repartition-source topics; the broker learns the topology
from the first member that joins (``StreamsTopology``) and *configures* it against the topics
that exist (``configure``): a missing source topic makes the group NOT_READY
(``MISSING_SOURCE_TOPICS``); a missing repartition or changelog topic is created by the
broker with the partition count it derives (``MISSING_INTERNAL_TOPICS`` until it exists).

Epochs and reconciliation are those of every modern group (``modern_group``), with active
tasks in place of partitions (Kafka's ``streams.CurrentAssignmentBuilder``): a member first
revokes the active tasks its new target lacks, then takes every target active task no other
member still owns. Standby and warm-up tasks are not exclusive and are handed over at once.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wireserver.groups.modern_group import ModernGroup, ModernGroupMember, copy_assignment
from wireserver.groups.state import IllegalStateTransition

#: subtopology id -> partitions
Tasks = dict[str, set[int]]

# StreamsGroupHeartbeatResponse.Status codes (Kafka's StreamsGroupHeartbeatResponse.Status).
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4


class StreamsGroupState(enum.Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


S = StreamsGroupState


@dataclass
class TopicInfo:
    """An internal topic as the topology declares it (0 partitions: derived)."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: dict[str, str] = field(default_factory=dict)


@dataclass
class Subtopology:
    subtopology_id: str
    source_topics: list[str]
    source_topic_regex: list[str]
    state_changelog_topics: list[TopicInfo]
    repartition_sink_topics: list[str]
    repartition_source_topics: list[TopicInfo]
    copartition_groups: list[tuple[list[int], list[int], list[int]]]


@dataclass
class StreamsTopology:
    epoch: int
    subtopologies: list[Subtopology]


@dataclass
class ConfiguredTopology:
    """The topology against the topics that exist: tasks per subtopology, the internal
    topics still to create (name -> (partitions, replication factor, configs)) and the
    statuses a heartbeat reports ((code, detail))."""

    partitions: dict[str, int] = field(default_factory=dict)
    to_create: dict[str, TopicInfo] = field(default_factory=dict)
    statuses: list[tuple[int, str]] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.statuses

    def all_tasks(self) -> Tasks:
        return {s: set(range(n)) for s, n in self.partitions.items() if n}


def topology_topics(topology: StreamsTopology) -> set[str]:
    """Every topic the topology names: sources, repartition and changelog topics."""
    names: set[str] = set()
    for s in topology.subtopologies:
        names.update(s.source_topics, s.repartition_sink_topics)
        names.update(i.name for i in s.state_changelog_topics + s.repartition_source_topics)
    return names


def partition_counts(topology: StreamsTopology, topics: Mapping[str, Any]) -> dict[str, int]:
    """The partition counts of the topology's topics that exist, from the broker's topics by
    name (anything with ``num_partitions``): what ``configure`` reads, without a pass over
    every topic of the broker on each heartbeat."""
    return {n: topics[n].num_partitions for n in topology_topics(topology) if n in topics}


def configure(topology: StreamsTopology, topic_partitions: Mapping[str, int]) -> ConfiguredTopology:
    """Kafka's ``InternalTopicManager.configureTopics``: every source topic must exist; a
    repartition topic without a partition count gets the most partitions of the subtopology
    writing into it; a changelog topic gets its subtopology's task count."""
    out = ConfiguredTopology()
    missing = sorted(
        {t for s in topology.subtopologies for t in s.source_topics if t not in topic_partitions}
    )
    if missing:
        out.statuses.append(
            (MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are missing.")
        )
        return out
    repartition: dict[str, int] = {}
    for s in topology.subtopologies:
        for info in s.repartition_source_topics:
            if info.partitions > 0:
                repartition[info.name] = info.partitions
            elif info.name in topic_partitions:
                repartition[info.name] = topic_partitions[info.name]
    # Derive the rest from the subtopologies that write into them, until nothing changes.
    changed = True
    while changed:
        changed = False
        for s in topology.subtopologies:
            counts = [topic_partitions[t] for t in s.source_topics]
            counts += [
                repartition[i.name] for i in s.repartition_source_topics if i.name in repartition
            ]
            if not counts:
                continue
            for sink in s.repartition_sink_topics:
                if sink not in repartition:
                    repartition[sink] = max(counts)
                    changed = True
    for s in topology.subtopologies:
        counts = [topic_partitions[t] for t in s.source_topics]
        counts += [repartition.get(i.name, 0) for i in s.repartition_source_topics]
        out.partitions[s.subtopology_id] = max(counts, default=0)
        for info in s.repartition_source_topics:
            if info.name not in topic_partitions:
                out.to_create[info.name] = TopicInfo(
                    info.name, repartition.get(info.name, 0), info.replication_factor, info.configs
                )
        for info in s.state_changelog_topics:
            if info.name not in topic_partitions:
                out.to_create[info.name] = TopicInfo(
                    info.name,
                    out.partitions[s.subtopology_id],
                    info.replication_factor,
                    info.configs,
                )
    if out.to_create:
        out.statuses.append(
            (
                MISSING_INTERNAL_TOPICS,
                f"Internal topics are missing: [{', '.join(sorted(out.to_create))}]",
            )
        )
    return out


class StreamsGroupMember(ModernGroupMember):
    """``assigned``: its active tasks."""

    __slots__ = (
        "topology_epoch",
        "process_id",
        "user_endpoint",
        "client_tags",
        "task_offsets",
        "task_end_offsets",
        "standby",
        "warmup",
    )

    def __init__(self, member_id: str, client_id: str = "", client_host: str = ""):
        super().__init__(member_id, client_id, client_host)
        self.topology_epoch = 0
        self.process_id = ""
        self.user_endpoint: tuple[str, int] | None = None
        self.client_tags: dict[str, str] = {}
        self.task_offsets: list[tuple[str, int, int]] = []
        self.task_end_offsets: list[tuple[str, int, int]] = []
        self.standby: Tasks = {}
        self.warmup: Tasks = {}

    def assignment(self) -> tuple[Tasks, Tasks, Tasks]:
        return self.assigned, self.standby, self.warmup

    def clear_assignment(self) -> None:
        super().clear_assignment()
        self.standby, self.warmup = {}, {}


@dataclass
class TargetAssignment:
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)


class StreamsGroup(ModernGroup):
    """Group type "streams"."""

    State = StreamsGroupState
    protocol_type = "streams"

    def __init__(self, group_id: str, now_ms: int):
        super().__init__(group_id, now_ms)
        self.topology: StreamsTopology | None = None
        self.configured = ConfiguredTopology()
        self.target: dict[str, TargetAssignment] = {}
        self.endpoint_epoch = 0
        #: the member that asked every instance to shut down (ShutdownApplication), if any
        self.shutdown_requested: str | None = None

    def _check_transition(self, target: StreamsGroupState) -> None:
        if self._state is S.DEAD:
            raise IllegalStateTransition(f"streams group {self.group_id!r} is dead")

    def derived_state(self) -> StreamsGroupState:
        """Kafka's ``StreamsGroup.maybeUpdateGroupState``: NOT_READY while the topology is
        unknown or some of its topics are missing."""
        if self.members and (self.topology is None or not self.configured.ready):
            return S.NOT_READY
        return super().derived_state()

    def remove(self, member_id: str) -> StreamsGroupMember | None:
        member = super().remove(member_id)
        if not self.members:
            self.shutdown_requested = None
        return member

    def exclusive_target(self, member_id: str) -> Tasks:
        return self.target.get(member_id, TargetAssignment()).active

    def take_shared(self, member: StreamsGroupMember) -> None:
        target = self.target.get(member.member_id, TargetAssignment())
        member.standby = copy_assignment(target.standby)
        member.warmup = copy_assignment(target.warmup)
