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

Timers, configs and persistence as the consumer groups' (``modern_coordinator``), with the
``streams.*`` group configs and ``group.streams.*`` broker keys. Of the group only its epoch is
written to ``__consumer_offsets`` (Kafka's StreamsGroupMetadata record), beside its committed
offsets: after a restart it comes back Empty at that epoch, its members get UNKNOWN_MEMBER_ID,
rejoin with epoch 0 and the topology is taken again from the first of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wireserver.groups import streams_assignor
from wireserver.groups.modern_coordinator import (
    HeartbeatError,
    ModernGroupCoordinator,
    check_ids,
    invalid,
)
from wireserver.groups.modern_group import JOIN_EPOCH, STATIC_LEAVE_EPOCH
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
    partition_counts,
)
from wireserver.protocol.errors import ErrorCode

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

    @property
    def owned(self) -> Tasks | None:
        """The active tasks it reports: what it holds exclusively."""
        return self.active


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


class StreamsGroupCoordinator(ModernGroupCoordinator):
    """The Streams group's own: its validation, the topology (configured against the
    topics, internal topics to create, statuses), the task assignor and the endpoints."""

    kind = "streams"
    group_class = StreamsGroup
    member_class = StreamsGroupMember
    dead_state = S.DEAD
    not_found = "Streams group {} not found."

    # -- StreamsGroupHeartbeat --------------------------------------------------------------

    def _validate(self, req: StreamsHeartbeat) -> None:
        _validate_request(req)

    def _failed(self, req: StreamsHeartbeat, exc: HeartbeatError) -> StreamsHeartbeatResult:
        return StreamsHeartbeatResult(exc.error, exc.message)

    def _check_join(self, group: StreamsGroup, req: StreamsHeartbeat) -> None:
        known = group.topology
        if known is not None and req.topology is not None and req.topology.epoch > known.epoch:
            raise HeartbeatError(
                ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet."
            )

    def _heartbeat(self, req: StreamsHeartbeat) -> StreamsHeartbeatResult:
        group, member, send = self._beat(req, self.now_ms())
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
        endpoints = None
        if req.endpoint_information_epoch != group.endpoint_epoch:
            endpoints = self._endpoints(group)
        return StreamsHeartbeatResult(
            ErrorCode.NONE,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self._heartbeat_interval_ms(req.group_id),
            statuses=statuses,
            assignment=member.assignment() if send else None,
            endpoint_epoch=group.endpoint_epoch,
            endpoints=endpoints,
            to_create=dict(group.configured.to_create),
        )

    def _held(self, member: StreamsGroupMember) -> tuple[Tasks, Tasks, Tasks]:
        return member.assignment()

    def _reported(self, req: StreamsHeartbeat) -> tuple[Tasks, Tasks, Tasks] | None:
        if req.active is None:
            return None
        return req.active, req.standby or {}, req.warmup or {}

    def _may_be_behind(self, member: StreamsGroupMember, req: StreamsHeartbeat) -> bool:
        return req.active is not None

    def _update_member(
        self, group: StreamsGroup, member: StreamsGroupMember, req: StreamsHeartbeat, now: int
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

    def _refresh(self, group: StreamsGroup) -> bool:
        """Configure the topology against the topics; True if the tasks changed."""
        if group.topology is None:
            return False
        configured = configure(group.topology, partition_counts(group.topology, self.logs.topics))
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

    def _left(self, req: StreamsHeartbeat) -> StreamsHeartbeatResult:
        return StreamsHeartbeatResult(
            ErrorCode.NONE, member_id=req.member_id, member_epoch=req.member_epoch, left=True
        )

    # -- persistence ----------------------------------------------------------------------

    def metadata_key(self, group_id: str) -> StreamsGroupKey:
        return StreamsGroupKey(group_id)

    def metadata_value(self, epoch: int) -> bytes:
        return encode_streams_group_value(StreamsGroupValue(epoch))


_EMPTY = streams_assignor.TargetAssignment()


def _validate_request(req: StreamsHeartbeat) -> None:
    """Kafka's ``throwIfStreamsGroupHeartbeatRequestIsInvalid``."""
    if not req.member_id:
        raise invalid("MemberId can't be empty.")
    check_ids(req)
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
