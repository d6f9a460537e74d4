"""The Streams group protocol (KIP-1071): StreamsGroupHeartbeat, StreamsGroupDescribe,
StreamsGroupTopologyDescriptionUpdate, and the member-epoch checks of the offset APIs for
groups of type "streams".

One heartbeat does, in order (Kafka's ``GroupMetadataManager.streamsGroupHeartbeat``):
validate the request; find or create the group and the member (epoch 0 joins with the
topology, -1 leaves, -2 is a static member's temporary leave, any other epoch must be the
member's, or its previous one while it reports only tasks it still holds); take the topology
from the first member (a newer topology epoch is INVALID_REQUEST, "Topology updates are not
supported yet.", as in Kafka 4.4; an older one gets ``STALE_TOPOLOGY``); record what the assignment depends on (members, processes, the topology
and the partitions of its topics) and bump the group epoch if it changed; configure the
topology against the topics (statuses, internal topics to create: the handler creates them,
as Kafka's ``KafkaApis`` does); compute a new target assignment (``streams_assignor``) when
the group epoch is ahead; move the member one reconciliation step; re-arm its session timer;
answer with its epoch and, when they changed or it joined, its tasks.

Timers, configs and persistence as the consumer groups' (``consumer_coordinator``), with the
``streams.*`` group configs and ``group.streams.*`` broker keys. Of the group only its epoch is
written to ``__consumer_offsets`` (Kafka's StreamsGroupMetadata record), beside its committed
offsets: after a restart it comes back Empty at that epoch, its members get UNKNOWN_MEMBER_ID,
rejoin with epoch 0 and the topology is taken again from the first of them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from wireserver.groups import streams_assignor
from wireserver.groups.configs import GroupConfigs
from wireserver.groups.consumer_coordinator import (
    ClassicCoordinator,
    HeartbeatError,
    take_over_classic_group,
)
from wireserver.groups.epoch_store import EpochStore
from wireserver.groups.member_timers import STATIC_LEAVE_EPOCH, MemberTimers
from wireserver.groups.modern_group import JOIN_EPOCH, LEAVE_EPOCH, MemberState
from wireserver.groups.records import (
    StreamsGroupKey,
    StreamsGroupValue,
    encode_streams_group_value,
)
from wireserver.groups.streams_group import (
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    StreamsGroup,
    StreamsGroupMember,
    StreamsGroupState,
    StreamsTopology,
    Tasks,
    TopicInfo,
    configure,
)
from wireserver.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

S = StreamsGroupState


@dataclass
class StreamsHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: StreamsTopology | None = None
    active: Tasks | None = None
    standby: Tasks | None = None
    warmup: Tasks | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] | None = None
    task_offsets: list[tuple[str, int, int]] | None = None
    task_end_offsets: list[tuple[str, int, int]] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""


@dataclass
class StreamsHeartbeatResult:
    error: int
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    statuses: list[tuple[int, str]] | None = None
    #: (active, standby, warmup), None when unchanged
    assignment: tuple[Tasks, Tasks, Tasks] | None = None
    endpoint_epoch: int = 0
    #: endpoint -> (active topic partitions, standby ones), None when the member is up to date
    endpoints: list[tuple[tuple[str, int], dict[str, set[int]], dict[str, set[int]]]] | None = None
    #: the member left (epoch -1 or -2): the answer carries no settings
    left: bool = False
    #: internal topics the handler is to create
    to_create: dict[str, TopicInfo] = field(default_factory=dict)


class StreamsGroupCoordinator(MemberTimers, EpochStore):
    """``logs``: the broker's ``LogManager`` (its ``topics``); ``group_configs``: the groups'
    ``streams.*`` settings."""

    kind = "streams"
    group_class = StreamsGroup
    dead_state = S.DEAD

    def __init__(self, coordinator: ClassicCoordinator, logs: Any, group_configs: GroupConfigs):
        self.coordinator = coordinator
        self.logs = logs
        self.group_configs = group_configs
        self.reactor = coordinator.reactor
        self.config = coordinator.config
        self.groups: dict[str, StreamsGroup] = {}

    def now_ms(self) -> int:
        return self.coordinator.now_ms()

    def setting(self, group_id: str, name: str) -> Any:
        """A ``streams.*`` group config, else its broker default."""
        return self.group_configs.value(group_id, name)

    # -- StreamsGroupHeartbeat --------------------------------------------------------------

    def heartbeat(self, req: StreamsHeartbeat) -> StreamsHeartbeatResult:
        try:
            _validate(req)
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(req)
            return self._heartbeat(req)
        except HeartbeatError as exc:
            return StreamsHeartbeatResult(exc.error, exc.message)

    def _group_for_join(self, group_id: str) -> StreamsGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = StreamsGroup(group_id, self.now_ms())
            take_over_classic_group(self.coordinator, group, "streams")
            self.groups[group_id] = group
        return group

    def _heartbeat(self, req: StreamsHeartbeat) -> StreamsHeartbeatResult:
        now = self.now_ms()
        if req.member_epoch == JOIN_EPOCH:
            group = self._group_for_join(req.group_id)
            known = group.topology
            if known is not None and req.topology is not None and req.topology.epoch > known.epoch:
                raise HeartbeatError(
                    ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet."
                )
            member = self._join(group, req)
        else:
            group = self.groups.get(req.group_id)
            if group is None:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {req.group_id} not found."
                )
            member = self._known_member(group, req)
        before = (member.member_epoch, member.assignment())
        bump = self._update_member(group, member, req)
        if self._refresh_topology(group):
            bump = True
        if bump:
            group.group_epoch += 1
            self._store(group)
        self._maybe_assign(group)
        group.reconcile(member, req.active)
        self._arm_revocation_timer(group, member)
        group.update_state(now)
        self._arm_session_timer(group, member)
        if req.shutdown_application:
            group.shutdown_requested = member.member_id
        statuses = list(group.configured.statuses)
        if group.topology is not None and member.topology_epoch != group.topology.epoch:
            statuses.append(
                (
                    STALE_TOPOLOGY,
                    f"The member's topology epoch {member.topology_epoch} is behind the "
                    f"group's topology epoch {group.topology.epoch}.",
                )
            )
        if group.shutdown_requested:
            statuses.append(
                (
                    SHUTDOWN_APPLICATION,
                    f"Streams group member {group.shutdown_requested} encountered a fatal "
                    "error and requested a shutdown for the entire application.",
                )
            )
        owned = (req.active or {}, req.standby or {}, req.warmup or {})
        current = member.assignment()
        send = (
            req.member_epoch == JOIN_EPOCH
            or before != (member.member_epoch, current)
            or (req.active is not None and owned != current)
        )
        endpoints = None
        if req.endpoint_information_epoch != group.endpoint_epoch:
            endpoints = self._endpoints(group)
        return StreamsHeartbeatResult(
            ErrorCode.NONE,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.setting(req.group_id, "streams.heartbeat.interval.ms"),
            statuses=statuses,
            assignment=current if send else None,
            endpoint_epoch=group.endpoint_epoch,
            endpoints=endpoints,
            to_create=dict(group.configured.to_create),
        )

    def _join(self, group: StreamsGroup, req: StreamsHeartbeat) -> StreamsGroupMember:
        if req.instance_id is not None:
            current_id = group.static_members.get(req.instance_id)
            if current_id is not None and current_id != req.member_id:
                old = group.members[current_id]
                if old.member_epoch != STATIC_LEAVE_EPOCH:
                    raise HeartbeatError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {current_id} with instance id "
                        f"{req.instance_id} is not released yet.",
                    )
                return self._replace_static_member(group, old, req.member_id)
        member = group.members.get(req.member_id)
        if member is not None:
            group.reset_member_assignment(member)
            return member
        limit = self.config["group.streams.max.size"]
        if len(group.members) >= limit:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The streams group has reached its maximum capacity of {limit} members.",
            )
        member = StreamsGroupMember(req.member_id, req.client_id, req.client_host)
        member.instance_id = req.instance_id
        group.add(member)
        return member

    def _replace_static_member(
        self, group: StreamsGroup, old: StreamsGroupMember, new_id: str
    ) -> StreamsGroupMember:
        """A static member back from a temporary leave under a new member id: it takes over
        the old member's tasks and target, and the group epoch does not move."""
        self._cancel_timers(old)
        group.release(old)
        del group.members[old.member_id]
        new = old.renamed(new_id)
        new.member_epoch = old.previous_member_epoch
        group.add(new)
        if old.member_id in group.target:
            group.target[new_id] = group.target.pop(old.member_id)
        group.claim(new)
        return new

    def _known_member(self, group: StreamsGroup, req: StreamsHeartbeat) -> StreamsGroupMember:
        member = group.members.get(req.member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        if req.member_epoch > member.member_epoch or (
            req.member_epoch < member.member_epoch
            and (req.member_epoch != member.previous_member_epoch or req.active is None)
        ):
            relation = "greater" if req.member_epoch > member.member_epoch else "smaller"
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The streams group member has a {relation} member epoch "
                f"({req.member_epoch}) than the one known by the group coordinator "
                f"({member.member_epoch}). The member must abandon all its partitions "
                f"and rejoin.",
            )
        return member

    def _update_member(
        self, group: StreamsGroup, member: StreamsGroupMember, req: StreamsHeartbeat
    ) -> bool:
        """Apply the fields the request carries; True if the assignment depends on a change."""
        changed = member.member_id not in group.target
        if req.topology is not None:
            member.topology_epoch = req.topology.epoch
            if group.topology is None:
                group.topology = req.topology
                changed = True
        for attr in ("rack_id", "process_id", "user_endpoint", "client_tags"):
            value = getattr(req, attr)
            if value is not None and value != getattr(member, attr):
                setattr(member, attr, value)
                changed = True
                if attr == "user_endpoint":
                    group.endpoint_epoch += 1
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.task_offsets is not None:
            member.task_offsets = req.task_offsets
        if req.task_end_offsets is not None:
            member.task_end_offsets = req.task_end_offsets
        member.client_id = req.client_id or member.client_id
        member.client_host = req.client_host or member.client_host
        return changed

    def _refresh_topology(self, group: StreamsGroup) -> bool:
        """Configure the topology against the topics; True if the tasks changed."""
        if group.topology is None:
            return False
        topics = {name: info.num_partitions for name, info in self.logs.topics.items()}
        configured = configure(group.topology, topics)
        changed = (configured.partitions, configured.statuses) != (
            group.configured.partitions,
            group.configured.statuses,
        )
        group.configured = configured
        return changed

    def _maybe_assign(self, group: StreamsGroup) -> None:
        if group.group_epoch <= group.assignment_epoch:
            return
        tasks = group.configured.all_tasks() if group.configured.ready else {}
        specs = [
            streams_assignor.MemberSpec(
                m.member_id,
                m.process_id,
                m.assigned or group.target.get(m.member_id, _EMPTY).active,
                m.standby,
            )
            for m in group.members.values()
        ]
        standby = self.setting(group.group_id, "streams.num.standby.replicas")
        group.target = streams_assignor.assign(specs, tasks, standby)
        group.assignment_epoch = group.group_epoch
        group.endpoint_epoch += 1

    def _endpoints(
        self, group: StreamsGroup
    ) -> list[tuple[tuple[str, int], dict[str, set[int]], dict[str, set[int]]]]:
        """Per member with a user endpoint: the source partitions of its active tasks and of
        its standby and warm-up tasks (Kafka's ``EndpointToPartitionsManager``)."""
        if group.topology is None:
            return []
        sources = {
            s.subtopology_id: s.source_topics + [i.name for i in s.repartition_source_topics]
            for s in group.topology.subtopologies
        }

        def partitions(*task_sets: Tasks) -> dict[str, set[int]]:
            out: dict[str, set[int]] = {}
            for tasks in task_sets:
                for sub, ps in tasks.items():
                    for topic in sources.get(sub, []):
                        out.setdefault(topic, set()).update(ps)
            return out

        return [
            (m.user_endpoint, partitions(m.assigned), partitions(m.standby, m.warmup))
            for m in group.members.values()
            if m.user_endpoint is not None
        ]

    # -- leaving ----------------------------------------------------------------------------

    def _leave(self, req: StreamsHeartbeat) -> StreamsHeartbeatResult:
        group = self.groups.get(req.group_id)
        if group is None:
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {req.group_id} not found."
            )
        member = group.members.get(req.member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        self._member_leaves(group, member, req.member_epoch)
        return StreamsHeartbeatResult(
            ErrorCode.NONE, member_id=req.member_id, member_epoch=req.member_epoch, left=True
        )

    def remove_member(self, group: StreamsGroup, member: StreamsGroupMember, reason: str) -> None:
        log.info(
            "streams group %s: removing member %s (%s)", group.group_id, member.member_id, reason
        )
        self._cancel_timers(member)
        group.remove(member.member_id)
        group.group_epoch += 1
        self._store(group)
        self._refresh_topology(group)
        self._maybe_assign(group)
        group.update_state(self.now_ms())

    def _session_timeout_ms(self, group_id: str) -> int:
        return self.setting(group_id, "streams.session.timeout.ms")

    def _revoking(self, member: StreamsGroupMember) -> bool:
        return member.state is MemberState.UNREVOKED

    # -- persistence ----------------------------------------------------------------------

    def metadata_key(self, group_id: str) -> StreamsGroupKey:
        return StreamsGroupKey(group_id)

    def metadata_value(self, epoch: int) -> bytes:
        return encode_streams_group_value(StreamsGroupValue(epoch))


_EMPTY = streams_assignor.TargetAssignment()


def _validate(req: StreamsHeartbeat) -> None:
    """Kafka's ``throwIfStreamsGroupHeartbeatRequestIsInvalid``."""

    def invalid(message: str) -> HeartbeatError:
        return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

    if not req.member_id:
        raise invalid("MemberId can't be empty.")
    if not req.group_id:
        raise invalid("GroupId can't be empty.")
    if req.instance_id == "":
        raise invalid("InstanceId can't be empty.")
    if req.rack_id == "":
        raise invalid("RackId can't be empty.")
    if req.member_epoch < STATIC_LEAVE_EPOCH:
        raise invalid(
            f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2."
        )
    if req.member_epoch == JOIN_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        for name, tasks in (
            ("ActiveTasks", req.active),
            ("StandbyTasks", req.standby),
            ("WarmupTasks", req.warmup),
        ):
            if tasks:
                raise invalid(f"{name} must be empty when (re-)joining.")
        if req.topology is None:
            raise invalid("Topology must be non-null when (re-)joining.")
    elif req.topology is not None:
        raise invalid("Topology can only be provided when (re-)joining.")
    if req.member_epoch == STATIC_LEAVE_EPOCH and req.instance_id is None:
        raise invalid("InstanceId can't be null.")
    sent = [t is not None for t in (req.active, req.standby, req.warmup)]
    if any(sent) and not all(sent):
        raise invalid("If one task-type is non-null, all must be non-null.")
