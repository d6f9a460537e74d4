"""The classic group coordinator: membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup),
static membership (KIP-345), rebalance timers, and the persistence of groups (and, on loading,
their offsets) in ``__consumer_offsets``. Committed offsets are ``wireserver.groups.offsets``
(``OffsetManager``, reached as ``self.offsets``; this class keeps the method names handlers
call on ``broker.groups``), consumer-protocol (KIP-848) groups
``wireserver.groups.consumer_coordinator``.
The topic's machinery (key -> partition, creating the topic, who coordinates a group, appending
as leader, loading, following leadership) is the shared ``wireserver.coordinator_runtime``.

One node leads every partition of ``__consumer_offsets``, so this broker coordinates every group.
A group's records go to partition ``abs(hash(group_id)) % N`` as in Kafka.

In cluster mode (``zookeeper.connect``) ``__consumer_offsets`` is a replicated topic like any
other (``offsets.topic.replication.factor`` replicas, refused while fewer brokers are alive), and
this broker coordinates the groups of the partitions it leads, as Kafka's ``GroupCoordinator``
``onElection``/``onResignation``: the runtime calls ``load_partition(p, to_log_end=True)`` when
this broker becomes leader of partition ``p`` (its groups and offsets are replayed from the log,
up to the log end) and ``unload_partition(p)`` when it stops leading it (its groups are dropped
from memory; waiting JoinGroup/SyncGroup calls get NOT_COORDINATOR). Requests for a group of another
partition get NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS while its partition loads. Records
are appended to the leader's log with its leader epoch; OffsetCommit and TxnOffsetCommit answer
once the high watermark has passed them (``replicated``), as Kafka commits offsets with
acks=-1 (timeouts and too small an ISR become COORDINATOR_NOT_AVAILABLE, lost leadership
NOT_COORDINATOR).

Time and waiting (one mechanism per concept, all on the injected reactor):

- JoinGroup and SyncGroup responses that must wait are plain Deferreds held on the member
  (``join_deferred``, ``sync_deferred``) and fired when the rebalance step completes.
- The rebalance deadline (Kafka's DelayedJoin / InitialDelayedJoin), the pending-sync deadline,
  member session timeouts and pending-member timeouts are ``reactor.callLater`` timers, so unit
  tests drive them with ``twisted.internet.task.Clock``.
- Offset expiry runs every ``offsets.retention.check.interval.ms`` on a ``LoopingCall`` bound to
  the same reactor (``wireserver.groups.offsets``).

Writes to ``__consumer_offsets`` are synchronous local appends (one node: appended means
committed), so a commit's response goes out after its record is in the log. In cluster mode
the SyncGroup leader's assignment and a static member's replacement are answered once their
group record is replicated (``_store_group_replicated``), the group staying in
CompletingRebalance meanwhile; a timeout or too small an ISR answers
COORDINATOR_NOT_AVAILABLE, lost leadership NOT_COORDINATOR, the errors of an offset commit
(Kafka's ``storeGroup`` answers a timeout with REBALANCE_IN_PROGRESS).
State is loaded back in the background, as in Kafka: the broker serves at once, and a group
whose partition is still loading is answered COORDINATOR_LOAD_IN_PROGRESS (ListGroups too,
while any partition loads), which clients retry. A start-up with a long history of commits
then costs the groups of each partition its load, not the broker its start.

Transactional offsets (TxnOffsetCommit) are pending until their producer's marker (see
``wireserver.groups.offsets``); loading replays them the same way: a transactional batch is
pending until the marker that commits or aborts it.

Deliberate differences from Kafka: a group created by a JoinGroup that fails at once is not
kept; ties in protocol selection go to the leader's preference order (Kafka's order is
unspecified).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer

from wireserver.coordinator_runtime import (
    OFFSETS_TOPIC,
    CoordinatorHost,
    CoordinatorRuntime,
    InternalTopic,
    Load,
    TopicCreator,
)
from wireserver.groups.configs import GroupConfigs
from wireserver.groups.consumer_coordinator import ConsumerGroupCoordinator
from wireserver.groups.group import CommittedOffset, Group, Member
from wireserver.groups.offsets import OffsetCommit, OffsetManager, PendingOffsets
from wireserver.groups.records import (
    OFFSET_KEY_PREFIX,
    OFFSET_KEY_PREFIXES,
    ConsumerGroupKey,
    ConsumerGroupValue,
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    RecordFormatError,
    ShareGroupKey,
    ShareGroupValue,
    StreamsGroupKey,
    StreamsGroupValue,
    decode_consumer_group_value,
    decode_group_value,
    decode_key,
    decode_offset_value,
    decode_share_group_value,
    decode_streams_group_value,
    encode_group_value,
    encode_key,
)
from wireserver.groups.share_coordinator import ShareGroupCoordinator
from wireserver.groups.state import GroupState
from wireserver.groups.streams_coordinator import StreamsGroupCoordinator
from wireserver.protocol.errors import DecodeError, ErrorCode
from wireserver.protocol.records import ControlRecordType, RecordBatch, decode_control_record

log = logging.getLogger(__name__)

S = GroupState
#: How long a new member's JoinGroup may wait before it is dropped (Kafka's
#: ``NewMemberJoinTimeoutMs``).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

__all__ = ["GroupCoordinator", "JoinRequest", "JoinResult", "OffsetCommit", "SyncResult"]


def _topic_configs(config: Any) -> dict[str, str]:
    """``__consumer_offsets``'s topic configs, as Kafka creates it: compacted (a group's and
    an offset's latest record is all a load needs), the producer's compression."""
    return {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": str(config["offsets.topic.segment.bytes"]),
    }


CONSUMER_OFFSETS = InternalTopic(
    OFFSETS_TOPIC,
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    _topic_configs,
    commit_timeout_config="offsets.commit.timeout.ms",
    keys="group(s)",
)


@dataclass
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    require_known_member_id: bool
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    api_version: int = 9
    reason: str | None = None


@dataclass
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class GroupCoordinator:
    """Given what it uses rather than the whole broker, so that it imports nothing of it:
    ``host`` (config, logs, replicas, cluster view and clock, as the runtime wants them), the
    reactor its timers run on, ``create_topic`` (creates ``__consumer_offsets``) and the
    group configs (the consumer groups' session and heartbeat settings)."""

    def __init__(
        self,
        host: CoordinatorHost,
        *,
        reactor: Any,
        create_topic: TopicCreator,
        group_configs: GroupConfigs,
    ):
        self.host = host
        self.reactor = reactor
        self.config = host.config
        self.groups: dict[str, Group] = {}
        self.runtime = CoordinatorRuntime(
            host, CONSUMER_OFFSETS, self, create_topic, reactor=reactor
        )
        # Groups of type "consumer" (KIP-848) live apart from the classic ones.
        self.consumer = ConsumerGroupCoordinator(self, host.logs, group_configs)
        # Groups of type "streams" (KIP-1071) too.
        self.streams = StreamsGroupCoordinator(self, host.logs, group_configs)
        # And share groups (KIP-932).
        self.share = ShareGroupCoordinator(self, host.logs, group_configs)
        self.offsets = OffsetManager(self.runtime, self, self.reactor)

    # -- lifecycle --------------------------------------------------------------------------

    def now_ms(self) -> int:
        return self.host.now_ms()

    def start(self) -> None:
        """Start loading groups and offsets from ``__consumer_offsets`` (if it exists; in the
        background), then the offset-expiry timer. In cluster mode nothing is loaded here:
        partitions are loaded as this broker becomes their leader (the runtime follows their
        leadership)."""
        self.runtime.start()
        self.offsets.start()

    def stop(self) -> None:
        """Stop every timer (offset expiry, rebalances, sessions) and loading: the broker is
        stopping."""
        self.runtime.stop()
        self.offsets.stop()
        for group in self.groups.values():
            self._cancel_group_timers(group)
        self.consumer.stop()
        self.streams.stop()
        self.share.stop()

    def _cancel_group_timers(self, group: Group) -> None:
        """Cancel a group's rebalance, sync and member timers (it is dropped or unloaded)."""
        for timer in (group.join_timer, group.sync_timer, *group.pending_members.values()):
            _cancel(timer)
        group.join_timer = group.sync_timer = None
        for member in group.members.values():
            _cancel(member.heartbeat_timer)
            member.heartbeat_timer = None

    # -- the offsets topic ------------------------------------------------------------------

    @property
    def log_ident(self) -> str:
        """Kafka's ``GroupCoordinator`` log prefix."""
        return f"[GroupCoordinator {self.host.replicas.node_id}]: "

    def _offsets_partition(self, group_id: str) -> str:
        """``__consumer_offsets-P``, the group's partition, as Kafka's rebalance lines name it."""
        return f"{OFFSETS_TOPIC}-{self.partition_for(group_id)}"

    def partition_for(self, group_id: str) -> int:
        """The partition of ``__consumer_offsets`` that holds the group."""
        return self.runtime.partition_for(group_id)

    def ensure_ready(self, group_id: str | None = None) -> ErrorCode | None:
        """Create ``__consumer_offsets`` on first use. COORDINATOR_NOT_AVAILABLE while it cannot
        be created (as Kafka: its replication factor exceeds the live brokers). With a group
        id, in cluster mode: NOT_COORDINATOR unless this broker leads the group's partition,
        COORDINATOR_LOAD_IN_PROGRESS while that partition loads."""
        return self.runtime.ensure_ready(group_id)

    def replicated(self, group_id: str) -> defer.Deferred:
        """Fires with NONE once everything appended so far to the group's partition is below
        the high watermark (at once on one node); else the error a commit answers (Kafka's
        mapping of an acks=-1 append's errors in ``GroupMetadataManager.storeOffsets``)."""
        return self.runtime.replicated(group_id)

    @property
    def committed_on_append(self) -> bool:
        """One node: what is appended is committed at once, and ``replicated`` would fire
        before it returns; an OffsetCommit answers without a Deferred."""
        return not self.runtime.clustered

    def _group_record(self, group: Group) -> tuple[bytes, bytes]:
        """The group's GroupMetadata record: what a new coordinator needs to carry it on."""
        value = GroupValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id,
            current_state_timestamp=group.current_state_timestamp,
            members=[
                MemberValue(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata_for(group.protocol_name),
                    m.assignment,
                )
                for m in group.members.values()
            ],
        )
        return encode_key(GroupKey(group.group_id)), encode_group_value(value)

    def _store_group(self, group: Group) -> ErrorCode:
        """Append the group's record (its generation, leader, members and assignments)."""
        return self.runtime.append(group.group_id, [self._group_record(group)])

    def _store_group_replicated(self, group: Group, on_stored: Callable[[ErrorCode], None]) -> None:
        """Kafka's ``storeGroup`` with acks=-1: append the group's record and call
        ``on_stored(error)`` once the high watermark passed it (at once on one node), so that
        a JoinGroup or SyncGroup answer never promises metadata a new coordinator would lack.
        ``on_stored`` is not called when the group was unloaded meanwhile (its waiting members
        were answered NOT_COORDINATOR)."""
        error = self._store_group(group)
        if error != ErrorCode.NONE:
            on_stored(error)
            return

        def done(error: ErrorCode) -> None:
            if self.groups.get(group.group_id) is group:
                on_stored(error)

        self.replicated(group.group_id).addCallback(done)

    # -- loading ----------------------------------------------------------------------------

    def load_partition(self, partition: int, to_log_end: bool = False) -> Load:
        """Replay one partition of ``__consumer_offsets`` (up to the high watermark, or the log
        end for a new leader, whose whole log is to be committed), a batch a step; returns the
        groups loaded. Nothing is applied before the last step."""
        values: dict[str, Any] = {}
        offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        pending: PendingOffsets = {}
        yield from self._replay(partition, values, offsets, pending, to_log_end)
        self.offsets.restore_pending(pending)
        now = self.now_ms()
        pending_groups = {g for by_group in pending.values() for g in by_group}
        count = 0
        for group_id in set(values) | {g for g, found in offsets.items() if found} | pending_groups:
            count += 1
            if isinstance(values.get(group_id), ConsumerGroupValue):
                self.consumer.restore(group_id, values[group_id], offsets.get(group_id, {}))
                continue
            if isinstance(values.get(group_id), ShareGroupValue):
                self.share.restore(group_id, values[group_id], offsets.get(group_id, {}))
                continue
            if isinstance(values.get(group_id), StreamsGroupValue):
                self.streams.restore(group_id, values[group_id], offsets.get(group_id, {}))
                continue
            group = self._restore_group(group_id, values.get(group_id), now)
            group.offsets = offsets.get(group_id, {})
            self.groups[group_id] = group
        return count

    def unload_partition(self, partition: int) -> int:
        """This broker no longer leads ``partition``: forget its groups, their offsets and
        pending transactional offsets (Kafka's ``onResignation``); members waiting on JoinGroup
        or SyncGroup get NOT_COORDINATOR. Returns the groups dropped."""

        def mine(group_id: str) -> bool:
            return self.partition_for(group_id) == partition

        dropped = 0
        for group_id in [g for g in self.groups if mine(g)]:
            group = self.groups.pop(group_id)
            self._cancel_group_timers(group)
            for member in list(group.members.values()):
                member.complete_join(JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
                member.complete_sync(SyncResult(ErrorCode.NOT_COORDINATOR))
            dropped += 1
        dropped += self.consumer.forget(mine) + self.streams.forget(mine) + self.share.forget(mine)
        self.offsets.forget_pending(mine)
        return dropped

    def _replay(
        self,
        partition: int,
        values: dict[str, Any],
        offsets: dict[str, dict[tuple[str, int], CommittedOffset]],
        pending: PendingOffsets,
        to_log_end: bool,
    ) -> Iterator[None]:
        """Read the partition's records into ``values`` (group id -> its latest group record)
        and ``offsets`` (group id -> committed offsets); transactional offsets go to
        ``pending`` (producer id -> group id -> offsets) until their marker.

        A plain offset commit is kept as bytes, the last of each key (``latest``), and decoded
        once the partition is read: a group that commits every few seconds leaves many commits
        of each of its partitions, of which only the last counts, and decoding each was most of
        a restart's time (benchmarks/results.md, the groups dimension). A marker decodes those
        kept so far first, so that a transaction's offsets land after the commits before it
        and under those after it."""
        latest: dict[bytes, bytes | None] = {}
        for batch, position in self.runtime.batches(partition, to_log_end):
            yield
            if batch.is_control:
                self._apply_latest(latest, values, offsets)
                self._replay_marker(batch, offsets, pending)
                continue
            if batch.is_transactional:
                # Pending until the producer's marker says commit or abort.
                target = pending.setdefault(batch.producer_id, {})
                for record in batch.records():
                    if record.offset >= position:
                        self._apply_record(record.key, record.value, values, target)
                continue
            for record in batch.records():
                if record.offset < position:
                    continue
                key = record.key
                if key is not None and key[:2] in OFFSET_KEY_PREFIXES:
                    latest[key[2:]] = record.value  # the legacy type and the current alike
                else:
                    self._apply_record(key, record.value, values, offsets)
        self._apply_latest(latest, values, offsets)

    @classmethod
    def _apply_latest(
        cls,
        latest: dict[bytes, bytes | None],
        values: dict[str, Any],
        offsets: dict[str, dict[tuple[str, int], CommittedOffset]],
    ) -> None:
        """Decode and apply the offset commits ``_replay`` kept (keys without their record
        type), then forget them."""
        for key, value in latest.items():
            cls._apply_record(OFFSET_KEY_PREFIX + key, value, values, offsets)
        latest.clear()

    @staticmethod
    def _replay_marker(
        batch: RecordBatch,
        offsets: dict[str, dict[tuple[str, int], CommittedOffset]],
        pending: PendingOffsets,
    ) -> None:
        """A marker: the producer's pending offsets become committed (COMMIT) or are dropped."""
        found = pending.pop(batch.producer_id, None)
        if not found:
            return
        try:
            kind = next(iter(batch.records()), None)
            kind = decode_control_record(kind)[0] if kind is not None else None
        except DecodeError:
            kind = None
        if kind == ControlRecordType.COMMIT:
            for group_id, committed in found.items():
                offsets.setdefault(group_id, {}).update(committed)

    @staticmethod
    def _apply_record(
        key_bytes: bytes | None,
        value_bytes: bytes | None,
        values: dict[str, Any],
        offsets: dict[str, dict[tuple[str, int], CommittedOffset]],
    ) -> None:
        """One record of the partition: an offset (or its tombstone) or a group record."""
        if key_bytes is None:
            return
        try:
            key = decode_key(key_bytes)
            if isinstance(key, OffsetKey):
                group_offsets = offsets.setdefault(key.group, {})
                if value_bytes is None:
                    group_offsets.pop((key.topic, key.partition), None)
                else:
                    value = decode_offset_value(value_bytes)
                    group_offsets[(key.topic, key.partition)] = CommittedOffset(
                        value.offset, value.leader_epoch, value.metadata, value.commit_timestamp
                    )
            elif isinstance(key, (GroupKey, ConsumerGroupKey, StreamsGroupKey, ShareGroupKey)):
                if value_bytes is None:
                    values.pop(key.group, None)
                elif isinstance(key, ConsumerGroupKey):
                    values[key.group] = decode_consumer_group_value(value_bytes)
                elif isinstance(key, StreamsGroupKey):
                    values[key.group] = decode_streams_group_value(value_bytes)
                elif isinstance(key, ShareGroupKey):
                    values[key.group] = decode_share_group_value(value_bytes)
                else:
                    values[key.group] = decode_group_value(value_bytes)
        except (RecordFormatError, ValueError) as exc:
            log.warning("skipping unreadable %s record: %s", OFFSETS_TOPIC, exc)

    def _restore_group(self, group_id: str, value: GroupValue | None, now: int) -> Group:
        """A classic group as its record left it; its members get a session timeout again."""
        if value is None:
            return Group(group_id, now)
        state = S.STABLE if value.members else S.EMPTY
        group = Group(group_id, now, state)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        if value.current_state_timestamp >= 0:
            group.current_state_timestamp = value.current_state_timestamp
        for m in value.members:
            member = Member(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout,
                m.session_timeout,
                value.protocol_type,
                [(value.protocol or "", m.subscription)],
            )
            member.assignment = m.assignment
            group.add(member)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        for member in group.members.values():
            self._schedule_heartbeat(group, member)
        return group

    # -- JoinGroup --------------------------------------------------------------------------

    def join_group(self, req: JoinRequest) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        if not req.group_id:
            d.callback(JoinResult(ErrorCode.INVALID_GROUP_ID, req.member_id))
            return d
        if not (
            self.config["group.min.session.timeout.ms"]
            <= req.session_timeout_ms
            <= self.config["group.max.session.timeout.ms"]
        ):
            d.callback(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id))
            return d
        if req.rebalance_timeout_ms < 0:
            req.rebalance_timeout_ms = req.session_timeout_ms
        consumer_group = self.consumer.groups.get(req.group_id)
        if req.group_id in self.share.groups:
            # Kafka converts no share group to a classic one.
            d.callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
            return d
        if consumer_group is not None:
            if consumer_group.members:
                d.callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
                return d
            # An empty consumer group becomes a classic group and keeps its offsets.
            offsets = self.consumer.convert_to_classic(consumer_group)
            if offsets is None:
                d.callback(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, req.member_id))
                return d
            self.groups[req.group_id] = Group(req.group_id, self.now_ms())
            self.groups[req.group_id].offsets = offsets
        group = self.groups.get(req.group_id)
        created = False
        if group is None:
            if req.member_id:
                d.callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id))
                return d
            group = self.groups[req.group_id] = Group(req.group_id, self.now_ms())
            created = True
        if not self._accept_joining_member(group, req.member_id):
            if group.has(req.member_id):
                self._remove_member(group, req.member_id)
            d.callback(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
        elif not req.member_id:
            self._new_member_join(group, req, d)
        else:
            self._current_member_join(group, req, d)
        if group.is_in(S.PREPARING_REBALANCE):
            self._try_complete_join(group)
        if (
            created
            and group.is_in(S.EMPTY)
            and not group.members
            and not group.pending_members
            and not group.offsets
        ):
            del self.groups[req.group_id]
        return d

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        max_size = self.config["group.max.size"]
        if group.is_in(S.EMPTY, S.DEAD):
            return True
        if group.is_in(S.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            awaiting = sum(1 for m in group.members.values() if m.awaiting_join)
            return (member is not None and member.awaiting_join) or awaiting < max_size
        return group.has(member_id) or len(group.members) < max_size

    def _new_member_join(self, group: Group, req: JoinRequest, d: defer.Deferred) -> None:
        if group.is_in(S.DEAD):
            d.callback(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            d.callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        new_id = f"{prefix}-{uuid.uuid4()}"
        if req.group_instance_id is not None:
            self._static_member_join(group, req, new_id, d)
        elif req.require_known_member_id:
            # KIP-394: hand out the id first; the member must come back with it.
            group.pending_members[new_id] = self.reactor.callLater(
                req.session_timeout_ms / 1000.0, self._pending_member_expired, group, new_id
            )
            d.callback(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, req, new_id, d)

    def _current_member_join(self, group: Group, req: JoinRequest, d: defer.Deferred) -> None:
        member_id = req.member_id
        if group.is_in(S.DEAD):
            d.callback(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            d.callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            _cancel(group.pending_members.pop(member_id))
            self._add_member_and_rebalance(group, req, member_id, d)
            return
        if group.is_static_member_fenced(req.group_instance_id, member_id):
            d.callback(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            return
        if not group.has(member_id) or (
            req.group_instance_id is not None
            and group.static_member_id(req.group_instance_id) is None
        ):
            d.callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        member = group.members[member_id]
        if group.is_in(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, req, d)
        elif group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                # It lost the JoinGroup response: answer it again for this generation.
                d.callback(self._join_result(group, member))
            else:
                self._update_member_and_rebalance(group, member, req, d)
        elif group.is_in(S.STABLE):
            if group.is_leader(member_id) or not member.matches(req.protocols):
                self._update_member_and_rebalance(group, member, req, d)
            else:
                d.callback(self._join_result(group, member))
        else:
            d.callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _static_member_join(
        self, group: Group, req: JoinRequest, new_id: str, d: defer.Deferred
    ) -> None:
        instance_id = req.group_instance_id
        old_id = group.static_member_id(instance_id)
        if old_id is None:
            self._add_member_and_rebalance(group, req, new_id, d)
            return
        # A known static member restarted: its old member id is fenced and replaced.
        old_member = group.members[old_id]
        old_member.complete_join(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        old_member.complete_sync(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        previous_leader = group.leader_id or ""
        saved = (
            old_member.protocols,
            old_member.rebalance_timeout_ms,
            old_member.session_timeout_ms,
        )
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._schedule_heartbeat(group, member)
        self._update_member(member, req, d)
        if group.is_in(S.STABLE):
            if group.select_protocol() == group.protocol_name:

                def stored(error: ErrorCode) -> None:
                    if error != ErrorCode.NONE:
                        member.join_deferred = None
                        group.replace_static_member(instance_id, new_id, old_id)
                        (
                            member.protocols,
                            member.rebalance_timeout_ms,
                            member.session_timeout_ms,
                        ) = saved
                        self._schedule_heartbeat(group, member)
                        d.callback(JoinResult(error, ""))
                    elif req.api_version >= 9:
                        # KIP-814: the leader learns it leads but must not reassign.
                        is_leader = group.is_leader(new_id)
                        member.complete_join(
                            self._join_result(group, member, skip_assignment=is_leader)
                        )
                    else:
                        # Older clients: report the previous leader id so a restarted leader
                        # does not compute an assignment the stable group would never
                        # distribute.
                        result = self._join_result(group, member)
                        result.leader_id = previous_leader
                        result.members = []
                        member.complete_join(result)

                self._store_group_replicated(group, stored)
            else:
                self._maybe_prepare_rebalance(group, "static member joined with a new protocol")
        elif group.is_in(S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, "static member rejoined during a rebalance")

    def _add_member_and_rebalance(
        self, group: Group, req: JoinRequest, member_id: str, d: defer.Deferred
    ) -> None:
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            [(n, bytes(m)) for n, m in req.protocols],
        )
        member.is_new = True
        if group.in_initial_rebalance():
            group.new_member_added = True
        member.join_deferred = d
        group.add(member)
        # A new member cannot heartbeat before its JoinGroup returns; it is dropped only if the
        # join takes far too long (it will retry if it is still alive).
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        instance = "None" if req.group_instance_id is None else f"Some({req.group_instance_id})"
        self._maybe_prepare_rebalance(
            group,
            f"Adding new member {member_id} with group instance id {instance}; "
            "client reason: not provided",
        )

    def _update_member(self, member: Member, req: JoinRequest, d: defer.Deferred) -> None:
        if member.join_deferred is not None:
            member.complete_join(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        member.protocols = [(n, bytes(m)) for n, m in req.protocols]
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_deferred = d

    def _update_member_and_rebalance(
        self, group: Group, member: Member, req: JoinRequest, d: defer.Deferred
    ) -> None:
        self._update_member(member, req, d)
        self._maybe_prepare_rebalance(
            group,
            f"Updating metadata for member {member.member_id} during {group.state}; "
            "client reason: not provided",
        )

    def _join_result(
        self, group: Group, member: Member, skip_assignment: bool = False
    ) -> JoinResult:
        members = []
        if group.is_leader(member.member_id):
            members = [
                (m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
                for m in group.members.values()
            ]
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            members,
            skip_assignment,
        )

    # -- rebalancing ------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        _cancel(group.sync_timer)
        group.sync_timer = None
        _cancel(group.join_timer)
        initial = group.is_in(S.EMPTY)
        group.transition_to(S.PREPARING_REBALANCE, self.now_ms())
        log.info(
            "%sPreparing to rebalance group %s in state %s with old generation %d (%s) "
            "(reason: %s)",
            self.log_ident,
            group.group_id,
            group.state,
            group.generation_id,
            self._offsets_partition(group.group_id),
            reason,
        )
        if initial:
            # Kafka's InitialDelayedJoin: wait for more members before the first generation,
            # extended while new members keep arriving, up to the rebalance timeout. Only this
            # timer ends the join phase, even with a delay of 0: JoinGroups already received
            # when it fires (sent together) join the same generation.
            delay = self.config["group.initial.rebalance.delay.ms"]
            group.new_member_added = False
            group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.join_timer = self.reactor.callLater(
                delay / 1000.0, self._initial_delay_expired, group
            )
        else:
            group.join_timer = self.reactor.callLater(
                group.rebalance_timeout_ms() / 1000.0, self._complete_join, group
            )
            self._try_complete_join(group)

    def _initial_delay_expired(self, group: Group) -> None:
        group.join_timer = None
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        delay = self.config["group.initial.rebalance.delay.ms"]
        if group.new_member_added and group.initial_delay_remaining_ms > 0:
            group.new_member_added = False
            step = min(delay, group.initial_delay_remaining_ms)
            group.initial_delay_remaining_ms = max(group.initial_delay_remaining_ms - step, 0)
            group.join_timer = self.reactor.callLater(
                step / 1000.0, self._initial_delay_expired, group
            )
        else:
            self._complete_join(group)

    def _try_complete_join(self, group: Group) -> None:
        """Kafka's ``maybeCompleteJoinPhase``: end the join phase once every member rejoined,
        except in the initial rebalance, which only its timer ends."""
        if (
            group.is_in(S.PREPARING_REBALANCE)
            and not group.in_initial_rebalance()
            and group.all_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """The join phase ends (all members rejoined, or the rebalance timeout passed)."""
        if not group.is_in(S.PREPARING_REBALANCE) or self.groups.get(group.group_id) is not group:
            return
        _cancel(group.join_timer)
        group.join_timer = None
        not_rejoined = [
            m.member_id for m in group.members.values() if not m.awaiting_join and not m.is_static
        ]
        if not_rejoined:
            log.info(
                "%sGroup %s removed dynamic members who haven't joined: Set(%s)",
                self.log_ident,
                group.group_id,
                ", ".join(not_rejoined),
            )
            for member_id in not_rejoined:
                self._remove_member(group, member_id)
        if not group.elect_joined_leader() and group.members:
            log.error(
                "%sGroup %s could not complete rebalance because no members rejoined",
                self.log_ident,
                group.group_id,
            )
            # Nobody rejoined yet: wait another rebalance timeout for the session timeouts.
            group.join_timer = self.reactor.callLater(
                group.rebalance_timeout_ms() / 1000.0, self._complete_join, group
            )
            return
        now = self.now_ms()
        group.generation_id += 1
        if group.members:
            group.protocol_name = group.select_protocol()
            group.transition_to(S.COMPLETING_REBALANCE, now)
        else:
            group.protocol_name = None
            group.transition_to(S.EMPTY, now)
        group.pending_sync = set(group.members)
        if group.is_in(S.EMPTY):
            log.info(
                "%sGroup %s with generation %d is now empty (%s)",
                self.log_ident,
                group.group_id,
                group.generation_id,
                self._offsets_partition(group.group_id),
            )
            self._store_group(group)
            return
        log.info(
            "%sStabilized group %s generation %d (%s) with %d members",
            self.log_ident,
            group.group_id,
            group.generation_id,
            self._offsets_partition(group.group_id),
            len(group.members),
        )
        generation = group.generation_id
        for member in list(group.members.values()):
            member.complete_join(self._join_result(group, member))
            self._schedule_heartbeat(group, member)
            member.is_new = False
        group.sync_timer = self.reactor.callLater(
            group.rebalance_timeout_ms() / 1000.0, self._pending_sync_expired, group, generation
        )

    def _pending_sync_expired(self, group: Group, generation: int) -> None:
        group.sync_timer = None
        if generation != group.generation_id or self.groups.get(group.group_id) is not group:
            return
        if group.is_in(S.COMPLETING_REBALANCE, S.STABLE) and group.pending_sync:
            missing = sorted(group.pending_sync)
            for member_id in missing:
                self._remove_member(group, member_id)
            self._prepare_rebalance(
                group, f"Removing Set({', '.join(missing)}) on pending sync request expiration"
            )

    def _reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.complete_sync(SyncResult(error))

    # -- sessions ---------------------------------------------------------------------------

    def _schedule_heartbeat(
        self, group: Group, member: Member, timeout_ms: int | None = None
    ) -> None:
        _cancel(member.heartbeat_timer)
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_timer = self.reactor.callLater(
            timeout / 1000.0, self._heartbeat_expired, group, member
        )

    def _heartbeat_expired(self, group: Group, member: Member) -> None:
        member.heartbeat_timer = None
        if (
            self.groups.get(group.group_id) is not group
            or group.members.get(member.member_id) is not member
        ):
            return
        if (member.awaiting_join and not member.is_new) or member.awaiting_sync:
            # Its JoinGroup/SyncGroup is parked here; the rebalance deadlines decide its fate.
            self._schedule_heartbeat(group, member)
            return
        log.info(
            "%sMember %s in group %s has failed, removing it from the group",
            self.log_ident,
            member.member_id,
            group.group_id,
        )
        self._remove_member_and_update_group(
            group, member, f"removing member {member.member_id} on heartbeat expiration"
        )

    def _pending_member_expired(self, group: Group, member_id: str) -> None:
        if group.pending_members.pop(member_id, None) is not None:
            log.info(
                "%sPending member %s in group %s has been removed after session timeout "
                "expiration.",
                self.log_ident,
                member_id,
                group.group_id,
            )
            self._try_complete_join(group)

    def _remove_member(self, group: Group, member_id: str) -> Member | None:
        member = group.remove(member_id)
        if member is not None:
            _cancel(member.heartbeat_timer)
            member.heartbeat_timer = None
        return member

    def _remove_member_and_update_group(self, group: Group, member: Member, reason: str) -> None:
        member.complete_join(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        member.complete_sync(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        self._remove_member(group, member.member_id)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # -- SyncGroup --------------------------------------------------------------------------

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        group = self.groups.get(group_id)
        error = None
        if group is None:
            error = ErrorCode.UNKNOWN_MEMBER_ID
        elif group.is_in(S.DEAD):
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        elif group.is_static_member_fenced(group_instance_id, member_id):
            error = ErrorCode.FENCED_INSTANCE_ID
        elif not group.has(member_id):
            error = ErrorCode.UNKNOWN_MEMBER_ID
        elif generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        elif protocol_type is not None and protocol_type != group.protocol_type:
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        elif protocol_name is not None and protocol_name != group.protocol_name:
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        elif group.is_in(S.EMPTY):
            error = ErrorCode.UNKNOWN_MEMBER_ID
        elif group.is_in(S.PREPARING_REBALANCE):
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None:
            d.callback(SyncResult(error))
            return d
        member = group.members[member_id]
        if group.is_in(S.STABLE):
            group.pending_sync.discard(member_id)
            d.callback(
                SyncResult(
                    ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
                )
            )
            self._schedule_heartbeat(group, member)
            return d
        # CompletingRebalance: park until the leader's assignment arrives.
        if member.sync_deferred is not None:
            member.complete_sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_deferred = d
        group.pending_sync.discard(member_id)
        if group.is_leader(member_id):
            log.info(
                "%sAssignment received from leader %s for group %s for generation %d. "
                "The group has %d members, %d of which are static.",
                self.log_ident,
                member_id,
                group_id,
                group.generation_id,
                len(group.members),
                sum(1 for m in group.members.values() if m.is_static),
            )
            for m in group.members.values():
                m.assignment = bytes(assignments.get(m.member_id, b"") or b"")
            generation = group.generation_id
            self._store_group_replicated(
                group, lambda error: self._assignment_stored(group, generation, error)
            )
        return d

    def _assignment_stored(self, group: Group, generation: int, error: ErrorCode) -> None:
        """The leader's assignment is replicated (or failed): every member gets it, as in
        Kafka's SyncGroup callback, unless the group moved on meanwhile (a rebalance already
        answered the waiting members REBALANCE_IN_PROGRESS)."""
        if not group.is_in(S.COMPLETING_REBALANCE) or group.generation_id != generation:
            return
        if error != ErrorCode.NONE:
            self._reset_and_propagate_assignment_error(group, error)
            self._maybe_prepare_rebalance(group, "storing the assignment failed")
            return
        group.transition_to(S.STABLE, self.now_ms())
        for m in list(group.members.values()):
            m.complete_sync(
                SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, m.assignment)
            )
            self._schedule_heartbeat(group, m)

    # -- Heartbeat, LeaveGroup --------------------------------------------------------------

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(group_instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_in(S.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, group.members[member_id])
        if group.is_in(S.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """(top-level error, one error per leaving (member id, instance id))."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(leaving)
        if group.is_in(S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        errors = []
        for member_id, instance_id in leaving:
            if not member_id:
                # Removal by instance id alone (the admin client's removeMembersFromGroup).
                current = group.static_member_id(instance_id)
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    self._remove_member_and_update_group(
                        group, group.members[current], _on_leave_group(current)
                    )
                    errors.append(ErrorCode.NONE)
            elif member_id in group.pending_members:
                _cancel(group.pending_members.pop(member_id))
                self._try_complete_join(group)
                errors.append(ErrorCode.NONE)
            elif group.is_static_member_fenced(instance_id, member_id):
                errors.append(ErrorCode.FENCED_INSTANCE_ID)
            elif group.has(member_id):
                self._remove_member_and_update_group(
                    group, group.members[member_id], _on_leave_group(member_id)
                )
                errors.append(ErrorCode.NONE)
            else:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
        return ErrorCode.NONE, errors

    # -- admin ------------------------------------------------------------------------------

    def modern_group(self, group_id: str) -> Any:
        """The consumer-protocol, Streams or share group of that id, or None."""
        return (
            self.consumer.groups.get(group_id)
            or self.streams.groups.get(group_id)
            or self.share.groups.get(group_id)
        )

    def is_share_group(self, group_id: str) -> bool:
        """Whether the id is a share group's, which keeps no committed offsets."""
        return group_id in self.share.groups

    def list_groups(self) -> list[Group]:
        return [g for g in self.groups.values() if not g.is_in(S.DEAD)]

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        results = {}
        for group_id in group_ids:
            if group_id in self.consumer.groups:
                results[group_id] = self.consumer.delete(self.consumer.groups[group_id])
                continue
            if group_id in self.streams.groups:
                results[group_id] = self.streams.delete(self.streams.groups[group_id])
                continue
            if group_id in self.share.groups:
                results[group_id] = self.share.delete(self.share.groups[group_id])
                continue
            group = self.groups.get(group_id)
            if group is None or group.is_in(S.DEAD):
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_in(S.EMPTY):
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                entries = [(encode_key(OffsetKey(group_id, t, p)), None) for t, p in group.offsets]
                entries.append((encode_key(GroupKey(group_id)), None))
                error = self.runtime.append(group_id, entries)
                if error == ErrorCode.NONE:
                    self.drop_group(group)
                results[group_id] = error
        return results

    def drop_group(self, group: Group) -> None:
        """Forget the group (deleted, expired, or converted to a consumer group): Dead, its
        timers cancelled, its offsets gone."""
        group.transition_to(S.DEAD, self.now_ms())
        self._cancel_group_timers(group)
        group.offsets = {}
        self.groups.pop(group.group_id, None)

    # -- offsets (wireserver.groups.offsets) --------------------------------------------------

    def keep_alive(self, group: Group, member: Member) -> None:
        """A member's offset commit counts as a heartbeat: its session timer starts again."""
        self._schedule_heartbeat(group, member)

    def drop_offsets_of_topic(self, topic: str) -> int:
        """A topic was deleted (``OffsetManager.drop_offsets_of_topic``)."""
        return self.offsets.drop_offsets_of_topic(topic)

    def expire_offsets(self) -> int:
        """Offset expiry (``OffsetManager.expire_offsets``)."""
        return self.offsets.expire_offsets()


def _cancel(timer: Any) -> None:
    if timer is not None and timer.active():
        timer.cancel()


def _on_leave_group(member_id: str) -> str:
    """Kafka's rebalance reason for a member that sent LeaveGroup."""
    return f"Removing member {member_id} on LeaveGroup; client reason: not provided"
