"""A Streams group (KIP-1071) and its members: the topology, the tasks it makes of the topics,
and reconciliation; no timers or I/O (those are in ``streams_coordinator``).

A *task* is (subtopology id, partition). A subtopology has as many tasks as the most
partitions among its source and repartition-source topics; the broker learns the topology
from the first member that joins (``StreamsTopology``) and *configures* it against the topics
that exist (``configure``): a missing source topic makes the group NOT_READY
(``MISSING_SOURCE_TOPICS``); a missing repartition or changelog topic is created by the
broker with the partition count it derives (``MISSING_INTERNAL_TOPICS`` until it exists).

Epochs and reconciliation are those of the consumer group (``consumer_group``), with tasks in
place of partitions (Kafka's ``streams.CurrentAssignmentBuilder``): a member first revokes
the active tasks its new target lacks (``UNREVOKED_TASKS``, its epoch stays), then moves to the
assignment epoch taking every target active task no other member still owns
(``UNRELEASED_TASKS`` while some are held elsewhere). Standby and warm-up tasks are not
exclusive and are handed over at once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from wireserver.groups.group import CommittedOffset
from wireserver.groups.state import IllegalStateTransition

#: subtopology id -> partitions
Tasks = dict[str, set[int]]

JOIN_EPOCH = 0
LEAVE_EPOCH = -1

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
_LIVE = frozenset({S.EMPTY, S.NOT_READY, S.ASSIGNING, S.RECONCILING, S.STABLE})


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_TASKS = "unrevoked_tasks"
    UNRELEASED_TASKS = "unreleased_tasks"


def copy_tasks(tasks: Tasks) -> Tasks:
    return {s: set(ps) for s, ps in tasks.items() if ps}


def count_tasks(tasks: Tasks) -> int:
    return sum(len(ps) for ps in tasks.values())


def minus(a: Tasks, b: Tasks) -> Tasks:
    return {s: ps - b.get(s, set()) for s, ps in a.items() if ps - b.get(s, set())}


def intersect(a: Tasks, b: Tasks) -> Tasks:
    return {s: ps & b.get(s, set()) for s, ps in a.items() if ps & b.get(s, set())}


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


def configure(topology: StreamsTopology, topic_partitions: dict[str, int]) -> ConfiguredTopology:
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


class StreamsGroupMember:
    __slots__ = (
        "member_id",
        "instance_id",
        "rack_id",
        "client_id",
        "client_host",
        "rebalance_timeout_ms",
        "topology_epoch",
        "process_id",
        "user_endpoint",
        "client_tags",
        "task_offsets",
        "task_end_offsets",
        "member_epoch",
        "previous_member_epoch",
        "state",
        "active",
        "standby",
        "warmup",
        "pending_revocation",
        "session_timer",
        "revocation_timer",
    )

    def __init__(self, member_id: str, client_id: str = "", client_host: str = ""):
        self.member_id = member_id
        self.instance_id: str | None = None
        self.rack_id: str | None = None
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = 300000
        self.topology_epoch = 0
        self.process_id = ""
        self.user_endpoint: tuple[str, int] | None = None
        self.client_tags: dict[str, str] = {}
        self.task_offsets: list[tuple[str, int, int]] = []
        self.task_end_offsets: list[tuple[str, int, int]] = []
        self.member_epoch = 0
        self.previous_member_epoch = 0
        self.state = MemberState.STABLE
        self.active: Tasks = {}
        self.standby: Tasks = {}
        self.warmup: Tasks = {}
        self.pending_revocation: Tasks = {}
        self.session_timer = None
        self.revocation_timer = None

    def assignment(self) -> tuple[Tasks, Tasks, Tasks]:
        return self.active, self.standby, self.warmup


@dataclass
class TargetAssignment:
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)


class StreamsGroup:
    """Group type "streams". ``offsets`` has the shape of the other groups', so the offset
    code serves it too."""

    protocol_type = "streams"

    def __init__(self, group_id: str, now_ms: int):
        self.group_id = group_id
        self._state = S.EMPTY
        self.current_state_timestamp = now_ms
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.topology: StreamsTopology | None = None
        self.configured = ConfiguredTopology()
        self.members: dict[str, StreamsGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, TargetAssignment] = {}
        #: (subtopology, partition) -> epoch of the member owning or revoking the active task
        self.active_owners: dict[tuple[str, int], int] = {}
        self.endpoint_epoch = 0
        #: the member that asked every instance to shut down (ShutdownApplication), if any
        self.shutdown_requested: str | None = None
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}

    # -- state ------------------------------------------------------------------------------

    @property
    def state(self) -> StreamsGroupState:
        return self._state

    def is_in(self, *states: StreamsGroupState) -> bool:
        return self._state in states

    def transition_to(self, target: StreamsGroupState, now_ms: int) -> None:
        if target is self._state and target is not S.DEAD:
            return
        if self._state is S.DEAD:
            raise IllegalStateTransition(f"streams group {self.group_id!r} is dead")
        self._state = target
        self.current_state_timestamp = now_ms

    def derived_state(self) -> StreamsGroupState:
        """Kafka's ``StreamsGroup.maybeUpdateGroupState``."""
        if not self.members:
            return S.EMPTY
        if self.topology is None or not self.configured.ready:
            return S.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return S.ASSIGNING
        for member in self.members.values():
            if (
                member.state is not MemberState.STABLE
                or member.member_epoch != self.assignment_epoch
            ):
                return S.RECONCILING
        return S.STABLE

    def update_state(self, now_ms: int) -> None:
        if self._state in _LIVE:
            self.transition_to(self.derived_state(), now_ms)

    # -- members ----------------------------------------------------------------------------

    def add(self, member: StreamsGroupMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> StreamsGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if self.static_members.get(member.instance_id or "") == member_id:
            del self.static_members[member.instance_id or ""]
        self.release(member)
        self.target.pop(member_id, None)
        if not self.members:
            self.shutdown_requested = None
        return member

    # -- task ownership ---------------------------------------------------------------------

    def release(self, member: StreamsGroupMember) -> None:
        for tasks in (member.active, member.pending_revocation):
            for s, ps in tasks.items():
                for p in ps:
                    self.active_owners.pop((s, p), None)

    def claim(self, member: StreamsGroupMember) -> None:
        for tasks in (member.active, member.pending_revocation):
            for s, ps in tasks.items():
                for p in ps:
                    self.active_owners[(s, p)] = member.member_epoch

    def reconcile(self, member: StreamsGroupMember, owned_active: Tasks | None) -> None:
        """Move ``member`` one step towards its target (see the module docstring).
        ``owned_active`` is what the member reported owning (None: unchanged, not sent)."""
        self.release(member)
        target = self.target.get(member.member_id, TargetAssignment())
        if member.state is MemberState.UNREVOKED_TASKS:
            still = owned_active is None or intersect(member.pending_revocation, owned_active)
            if still:
                self.claim(member)
                return
            member.pending_revocation = {}
        keep = intersect(member.active, target.active)
        revoke = minus(member.active, target.active)
        member.standby = copy_tasks(target.standby)
        member.warmup = copy_tasks(target.warmup)
        if revoke and (owned_active is None or intersect(revoke, owned_active)):
            member.active = keep
            member.pending_revocation = revoke
            member.state = MemberState.UNREVOKED_TASKS
            self.claim(member)
            return
        active = copy_tasks(keep)
        unreleased = False
        for s, ps in target.active.items():
            for p in ps:
                if p in active.get(s, ()):
                    continue
                if (s, p) in self.active_owners:
                    unreleased = True
                else:
                    active.setdefault(s, set()).add(p)
        if member.member_epoch != self.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = self.assignment_epoch
        member.active = active
        member.pending_revocation = {}
        member.state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
        self.claim(member)

    def reset_member_assignment(self, member: StreamsGroupMember) -> None:
        """The member (re)joins with epoch 0: it gave up every task it had."""
        self.release(member)
        member.active, member.standby, member.warmup = {}, {}, {}
        member.pending_revocation = {}
        member.state = MemberState.STABLE
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = 0
