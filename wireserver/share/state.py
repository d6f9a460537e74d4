"""Share-partition state in ``__share_group_state``, as Kafka's share coordinator keeps it
(``share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json``),
so that nothing acknowledged is delivered again and nothing unacknowledged is lost across a
restart.

- Key (not flexible): int16 record type (0 ShareSnapshot, 1 ShareUpdate), then GroupId
  (string), TopicId (uuid), Partition (int32).
- ShareSnapshotValue (version 0, flexible): SnapshotEpoch, StateEpoch, LeaderEpoch (int32),
  StartOffset (int64), CreateTimestamp, WriteTimestamp (int64), StateBatches (compact array
  of FirstOffset, LastOffset (int64), DeliveryState (int8: 0 available, 2 acknowledged, 4
  archived), DeliveryCount (int16)), then tagged fields (tag 0: DeliveryCompleteCount, left at
  its default).

Which partition holds a share-partition's state is Kafka's: ``Utils.abs(hashCode)`` of
``"<group>:<topic id>:<partition>"`` modulo the topic's partitions
(``share.coordinator.state.topic.num.partitions``); the topic is compacted and made with
``share.coordinator.state.topic.replication.factor`` replicas (COORDINATOR_NOT_AVAILABLE while
that exceeds the live brokers, as for ``__consumer_offsets``).

In a cluster (as Kafka's ``ShareCoordinatorService`` and ``DefaultStatePersister``) the
share coordinator of a key is the leader of its ``__share_group_state`` partition, which loads
the partition when it becomes its leader (``CoordinatorRuntime``); a write is answered once
the high watermark has passed it (Kafka's coordinator appends with acks=-1). The partition
leader of a share-partition reads and writes its state here when it is the coordinator too,
else through that broker's ReadShareGroupState / WriteShareGroupState / DeleteShareGroupState
(``remote``, ``wireserver.cluster.share_state``), retrying while the coordinator moves
(NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, a lost
connection) for up to ``PERSIST_TIMEOUT_MS``. A read by a new leader records its leader epoch;
a read or write of an older leader epoch than the state's is FENCED_LEADER_EPOCH, a write of an
older state epoch FENCED_STATE_EPOCH (the state was reset since the leader read it), as Kafka's
share coordinator answers.

Writes are Kafka's ``ShareCoordinatorShard.generateShareStateRecord``: the first state of a
share-partition is a ShareSnapshot, then ShareUpdate records (ShareUpdateValue: SnapshotEpoch,
LeaderEpoch, StartOffset, the state batches that changed) until
``share.coordinator.snapshot.update.records.per.snapshot`` of them follow the snapshot (counted
as Kafka counts them), when the next write is a whole snapshot with the next snapshot epoch.
The share-partition hands over its whole state; the update carries what differs from the state
before (a state a delta cannot say, such as a start offset moved back, is a snapshot).
ShareUpdate records are read back on top of the latest snapshot, so a topic Kafka wrote loads
too.
"""

from __future__ import annotations

import base64
import logging
import struct
import uuid
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer, task

from wireserver.coordinator_runtime import (
    SHARE_STATE_TOPIC,
    CoordinatorRuntime,
    InternalTopic,
    Load,
)
from wireserver.metadata import NO_LEADER
from wireserver.protocol.encoding import I16, I32, I64, array_length, tagged
from wireserver.protocol.errors import ErrorCode
from wireserver.share.partition import FINAL

log = logging.getLogger(__name__)

SNAPSHOT, UPDATE = 0, 1

#: (group id, topic id, partition)
StateKey = tuple[str, uuid.UUID, int]
#: (first offset, last offset, delivery state, delivery count)
StateBatch = tuple[int, int, int, int]

_BATCH = struct.Struct(">qqbh")

#: How long a partition leader keeps trying to reach the share coordinator of a key before it
#: gives up on a read or write (Kafka's ``request.timeout.ms`` default).
PERSIST_TIMEOUT_MS = 30_000
#: The pause between those tries (Kafka's ``retry.backoff.ms`` default).
RETRY_BACKOFF_MS = 100
#: What a partition leader tries again: the coordinator moved, is loading, or is unreachable.
RETRIABLE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
    }
)


def _topic_configs(config: Any) -> dict[str, str]:
    return {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": str(config["share.coordinator.state.topic.segment.bytes"]),
        "min.insync.replicas": str(config["share.coordinator.state.topic.min.isr"]),
    }


SHARE_GROUP_STATE = InternalTopic(
    SHARE_STATE_TOPIC,
    "share.coordinator.state.topic.num.partitions",
    "share.coordinator.state.topic.replication.factor",
    _topic_configs,
    keys="share-partition(s)",
)


@dataclass
class ShareState:
    """One share-partition's persisted state."""

    start_offset: int
    batches: list[StateBatch] = field(default_factory=list)
    snapshot_epoch: int = 0
    state_epoch: int = 0
    create_timestamp: int = -1
    #: the leader epoch of the share-partition's leader that wrote it last
    leader_epoch: int = -1

    def delivery_complete_count(self) -> int:
        """The records from the start offset on that are done with (acknowledged or
        archived): Kafka's DeliveryCompleteCount, what the share-partition's lag leaves out."""
        return sum(
            last - max(first, self.start_offset) + 1
            for first, last, delivery_state, _ in self.batches
            if delivery_state in FINAL and last >= self.start_offset
        )


@dataclass(frozen=True)
class StateSummary:
    """What ReadShareGroupStateSummary tells of a share-partition (DescribeShareGroupOffsets):
    its state without the batches."""

    start_offset: int
    state_epoch: int
    leader_epoch: int
    delivery_complete_count: int

    @classmethod
    def of(cls, state: ShareState) -> StateSummary:
        return cls(
            state.start_offset,
            state.state_epoch,
            state.leader_epoch,
            state.delivery_complete_count(),
        )


def coordinator_key(key: StateKey) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey``."""
    group_id, topic_id, partition = key
    return f"{group_id}:{_java_uuid(topic_id)}:{partition}"


def changed_batches(before: ShareState, start_offset: int, batches: list[StateBatch]):
    """The state batches a ShareUpdate from ``before`` to (``start_offset``, ``batches``)
    carries: the records whose state or delivery count changed, in runs; None when the new
    state is not ``before`` plus such a delta (the start offset moved back, or a record at or
    above the start left the state), which takes a snapshot."""
    if start_offset < before.start_offset:
        return None
    old = _by_offset(before.batches, start_offset)
    new = _by_offset(batches, start_offset)
    if not old.keys() <= new.keys():
        return None
    return _runs({o: value for o, value in new.items() if old.get(o) != value})


def _by_offset(batches: list[StateBatch], start_offset: int) -> dict[int, tuple[int, int]]:
    """{offset: (delivery state, delivery count)} of the batches' records from ``start_offset``."""
    return {
        offset: (int(delivery_state), count)
        for first, last, delivery_state, count in batches
        for offset in range(max(first, start_offset), last + 1)
    }


def _runs(by_offset: dict[int, tuple[int, int]]) -> list[StateBatch]:
    """``_by_offset``'s records as state batches: adjacent offsets alike in one batch."""
    out: list[StateBatch] = []
    for offset in sorted(by_offset):
        value = by_offset[offset]
        if out and out[-1][1] == offset - 1 and out[-1][2:] == value:
            out[-1] = (out[-1][0], offset, *value)
        else:
            out.append((offset, offset, *value))
    return out


def _java_uuid(topic_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def encode_key(kind: int, key: StateKey) -> bytes:
    group_id, topic_id, partition = key
    data = group_id.encode()
    return I16.pack(kind) + I16.pack(len(data)) + data + topic_id.bytes + I32.pack(partition)


def encode_snapshot(state: ShareState, now_ms: int) -> bytes:
    out = bytearray(I16.pack(0))
    out += I32.pack(state.snapshot_epoch) + I32.pack(state.state_epoch)
    out += I32.pack(state.leader_epoch)
    out += I64.pack(state.start_offset) + I64.pack(state.create_timestamp) + I64.pack(now_ms)
    return _with_batches(out, state.batches)


def encode_update(
    snapshot_epoch: int, leader_epoch: int, start_offset: int, batches: list[StateBatch]
) -> bytes:
    out = bytearray(I16.pack(0))
    out += I32.pack(snapshot_epoch) + I32.pack(leader_epoch) + I64.pack(start_offset)
    return _with_batches(out, batches)


def _with_batches(out: bytearray, batches: list[StateBatch]) -> bytes:
    """A ShareSnapshot or ShareUpdate value's StateBatches array and its end."""
    array_length(len(batches), True, out)
    for first, last, delivery_state, count in batches:
        out += _BATCH.pack(first, last, delivery_state, count)
        tagged([], out)
    tagged([], out)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(data)
        self.pos = 0

    def unpack(self, fmt: struct.Struct) -> tuple:
        values = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return values

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def batches(self) -> list[StateBatch]:
        batches = []
        for _ in range(self.uvarint() - 1):
            batches.append(self.unpack(_BATCH))
            self.skip_tagged()
        return batches

    def skip_tagged(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()


def decode_key(data: bytes) -> tuple[int, StateKey] | None:
    (kind,) = I16.unpack_from(data, 0)
    if kind not in (SNAPSHOT, UPDATE):
        return None
    (length,) = I16.unpack_from(data, 2)
    group_id = bytes(data[4 : 4 + length]).decode()
    topic_id = uuid.UUID(bytes=bytes(data[4 + length : 20 + length]))
    (partition,) = I32.unpack_from(data, 20 + length)
    return kind, (group_id, topic_id, partition)


def decode_snapshot(data: bytes) -> ShareState:
    r = _Reader(data)
    r.unpack(I16)  # version
    snapshot_epoch, state_epoch, leader_epoch = r.unpack(struct.Struct(">iii"))
    start, created, _written = r.unpack(struct.Struct(">qqq"))
    return ShareState(start, r.batches(), snapshot_epoch, state_epoch, created, leader_epoch)


def apply_update(state: ShareState, data: bytes) -> None:
    """A ShareUpdate over the state: a new start offset (unless -1) and state batches that
    replace what they overlap."""
    r = _Reader(data)
    r.unpack(I16)  # version
    snapshot_epoch, leader_epoch = r.unpack(struct.Struct(">ii"))
    (start,) = r.unpack(I64)
    if start >= 0:
        state.start_offset = start
    by_offset = _by_offset(state.batches, state.start_offset)
    by_offset.update(_by_offset(r.batches(), state.start_offset))
    state.batches = _runs(by_offset)
    state.snapshot_epoch = snapshot_epoch
    state.leader_epoch = max(state.leader_epoch, leader_epoch)


class ShareStateStore:
    """The share coordinator of this broker (the state of the share-partitions whose
    ``__share_group_state`` partitions it leads: every one on a single node), and the way this
    broker's share-partitions reach the share coordinator of each key, here or elsewhere
    (``remote``: a ``ShareStateChannel``, set in cluster mode)."""

    def __init__(self, host: Any, create_topic: Any, reactor: Any = None):
        self.host = host
        self.reactor = reactor
        self.states: dict[StateKey, ShareState] = {}
        #: ShareUpdate records since the last snapshot, as Kafka's ``snapshotUpdateCount``
        self.updates: dict[StateKey, int] = {}
        self.runtime = CoordinatorRuntime(host, SHARE_GROUP_STATE, self, create_topic)
        self.remote: Any = None
        self.stopped = False

    def start(self) -> None:
        self.runtime.start()

    # -- what the runtime calls ---------------------------------------------------------------

    def load_partition(self, partition: int, to_log_end: bool = False) -> Load:
        """Replay one partition, a record a step (at once: this runtime has no reactor)."""
        loaded: set[StateKey] = set()
        for key_bytes, value in self.runtime.records(partition, to_log_end):
            yield
            decoded = decode_key(key_bytes)
            if decoded is None:
                continue
            kind, key = decoded
            try:
                if value is None:
                    self.states.pop(key, None)
                    self.updates.pop(key, None)
                elif kind == SNAPSHOT:
                    self.states[key] = decode_snapshot(value)
                    self._count_snapshot(key)
                elif key in self.states:
                    apply_update(self.states[key], value)
                    self._count_update(key)
            except (struct.error, IndexError, ValueError) as exc:
                log.warning("skipping unreadable %s record: %s", SHARE_STATE_TOPIC, exc)
                continue
            loaded.add(key)
        return len(loaded)

    def unload_partition(self, partition: int) -> int:
        mine = [
            k for k in self.states if self.runtime.partition_for(coordinator_key(k)) == partition
        ]
        for key in mine:
            del self.states[key]
            self.updates.pop(key, None)
        return len(mine)

    def _count_update(self, key: StateKey) -> None:
        """Kafka's count: the first update after a snapshot counts 0."""
        found = self.updates.get(key)
        self.updates[key] = 0 if found is None else found + 1

    def _count_snapshot(self, key: StateKey) -> None:
        """Kafka resets the count at a snapshot only once it reached the limit."""
        if self.updates.get(key, 0) >= self._updates_per_snapshot():
            self.updates[key] = 0

    def _updates_per_snapshot(self) -> int:
        return self.host.config["share.coordinator.snapshot.update.records.per.snapshot"]

    # -- the coordinator's side: the state RPCs' answers (keys 83-87) -------------------------

    def coordinator_error(self, key: StateKey) -> ErrorCode | None:
        """None when this broker is the share coordinator of ``key`` and has loaded it."""
        return self.runtime.ensure_ready(coordinator_key(key))

    def read(self, key: StateKey) -> ShareState | None:
        """The state of ``key`` as this (its) coordinator has it."""
        return self.states.get(key)

    def serve_read(self, key: StateKey, leader_epoch: int) -> defer.Deferred:
        """ReadShareGroupState: fires with (error or None, state or None). A read by a newer
        leader than the state's records its leader epoch first (a record, replicated), so
        that writes of the leaders before it are fenced from then on, as Kafka's share
        coordinator does; an older one is FENCED_LEADER_EPOCH."""
        error = self.coordinator_error(key)
        state = self.states.get(key)
        if error is not None or state is None or leader_epoch <= state.leader_epoch:
            if error is None and state is not None and 0 <= leader_epoch < state.leader_epoch:
                error = ErrorCode.FENCED_LEADER_EPOCH
            return defer.succeed((error, None if error is not None else state))
        written = self.serve_write(
            key, state.state_epoch, leader_epoch, state.start_offset, state.batches
        )
        return written.addCallback(
            lambda answer: (
                (None, self.states.get(key)) if answer == ErrorCode.NONE else (answer, None)
            )
        )

    def serve_write(
        self,
        key: StateKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: list[StateBatch],
    ) -> defer.Deferred:
        """WriteShareGroupState (and Initialize, with ``leader_epoch`` -1 and no batches): a
        ShareUpdate with what changed, or a ShareSnapshot (see the module docstring; a new
        state epoch is always a snapshot), answered (NONE or Kafka's error) once replicated."""
        error = self.coordinator_error(key)
        previous = self.states.get(key)
        if error is None and previous is not None:
            if leader_epoch >= 0 and leader_epoch < previous.leader_epoch:
                error = ErrorCode.FENCED_LEADER_EPOCH
            elif state_epoch < previous.state_epoch:
                error = ErrorCode.FENCED_STATE_EPOCH
        if error is not None:
            return defer.succeed(error)
        now = self.host.now_ms()
        recorded_epoch = max(leader_epoch, -1 if previous is None else previous.leader_epoch)
        delta = None
        if (
            previous is not None
            and state_epoch == previous.state_epoch
            and self.updates.get(key, 0) < self._updates_per_snapshot()
        ):
            delta = changed_batches(previous, start_offset, batches)
        if previous is not None and delta is not None:
            state = ShareState(
                start_offset,
                batches,
                previous.snapshot_epoch,
                state_epoch,
                previous.create_timestamp,
                recorded_epoch,
            )
            value = encode_update(state.snapshot_epoch, recorded_epoch, start_offset, delta)
            record = (encode_key(UPDATE, key), value)
        else:
            state = ShareState(
                start_offset,
                batches,
                snapshot_epoch=0 if previous is None else previous.snapshot_epoch + 1,
                state_epoch=state_epoch,
                create_timestamp=now if previous is None else previous.create_timestamp,
                leader_epoch=recorded_epoch,
            )
            record = (encode_key(SNAPSHOT, key), encode_snapshot(state, now))

        def applied() -> None:
            self.states[key] = state
            if delta is not None:
                self._count_update(key)
            else:
                self._count_snapshot(key)

        return self._append(key, [record], applied)

    def serve_delete(self, key: StateKey) -> defer.Deferred:
        """DeleteShareGroupState: tombstones for the key's records, answered once replicated."""
        error = self.coordinator_error(key)
        if error is not None:
            return defer.succeed(error)
        if key not in self.states:
            return defer.succeed(ErrorCode.NONE)
        tombstones = [(encode_key(SNAPSHOT, key), None), (encode_key(UPDATE, key), None)]

        def applied() -> None:
            self.states.pop(key, None)
            self.updates.pop(key, None)

        return self._append(key, tombstones, applied)

    def _append(self, key: StateKey, records: list, applied: Any) -> defer.Deferred:
        error = self.runtime.append(coordinator_key(key), records)
        if error != ErrorCode.NONE:
            log.warning("share-partition %s: state not persisted: %s", key, ErrorCode(error).name)
            return defer.succeed(error)
        applied()
        return self.runtime.replicated(coordinator_key(key))

    # -- the partition leader's side (Kafka's persister) ---------------------------------------

    def _coordinator_of(self, key: StateKey) -> tuple[ErrorCode | None, int]:
        """(error, broker id) of the share coordinator of ``key``: this broker on one node."""
        if not self.runtime.clustered:
            return None, self.host.node_id
        error = self.runtime.ensure_topic()
        if error is not None:
            return error, -1
        partition = self.runtime.partition_for(coordinator_key(key))
        leader = self.host.metadata.leader(SHARE_STATE_TOPIC, partition)
        if leader == NO_LEADER:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1
        return None, leader

    @defer.inlineCallbacks
    def _with_coordinator(self, key: StateKey, here: Any, there: Any):
        """``here()`` when this broker coordinates ``key``, else ``there(broker id)``; both
        fire with (error, result); retried while the error is RETRIABLE, up to
        ``PERSIST_TIMEOUT_MS``."""
        deadline = self.host.now_ms() + PERSIST_TIMEOUT_MS
        while True:
            error, coordinator = self._coordinator_of(key)
            result = None
            if error is None:
                if coordinator == self.host.node_id:
                    error, result = yield here()
                elif self.remote is None:
                    error = ErrorCode.COORDINATOR_NOT_AVAILABLE
                else:
                    error, result = yield there(coordinator)
            if (
                error not in RETRIABLE
                or self.stopped
                or self.reactor is None
                or self.host.now_ms() >= deadline
            ):
                return error, result
            yield task.deferLater(self.reactor, RETRY_BACKOFF_MS / 1000.0, lambda: None)

    def read_state(self, key: StateKey, leader_epoch: int) -> defer.Deferred:
        """Fires with (error, ShareState or None): the key's state from its coordinator."""

        def here() -> defer.Deferred:
            return self.serve_read(key, leader_epoch)

        return self._with_coordinator(
            key, here, lambda broker: self.remote.read(broker, key, leader_epoch)
        )

    def write_state(
        self,
        key: StateKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: list[StateBatch],
    ) -> defer.Deferred:
        """Fires with NONE once the key's coordinator has the state replicated, else the
        error."""

        def here() -> defer.Deferred:
            written = self.serve_write(key, state_epoch, leader_epoch, start_offset, batches)
            return written.addCallback(lambda error: (_none_or(error), None))

        def there(broker: int) -> defer.Deferred:
            return self.remote.write(broker, key, state_epoch, leader_epoch, start_offset, batches)

        return self._with_coordinator(key, here, there).addCallback(_error_only)

    def read_summary(self, key: StateKey) -> defer.Deferred:
        """Fires with (error, StateSummary or None): the key's state, without its batches, as
        its coordinator has it (what the group coordinator describes; a summary changes no
        leader epoch, as Kafka's ReadShareGroupStateSummary)."""

        def here() -> defer.Deferred:
            error = self.coordinator_error(key)
            state = None if error is not None else self.states.get(key)
            return defer.succeed((error, None if state is None else StateSummary.of(state)))

        return self._with_coordinator(key, here, lambda broker: self.remote.summary(broker, key))

    def initialize_state(self, key: StateKey, state_epoch: int, start_offset: int):
        """Fires with NONE once the key's state starts over at ``start_offset``, nothing in
        flight, at ``state_epoch`` (InitializeShareGroupState: AlterShareGroupOffsets), so
        that a leader holding the state it read before is fenced from writing it
        (FENCED_STATE_EPOCH)."""

        def here() -> defer.Deferred:
            written = self.serve_write(key, state_epoch, -1, start_offset, [])
            return written.addCallback(lambda error: (_none_or(error), None))

        def there(broker: int) -> defer.Deferred:
            return self.remote.initialize(broker, key, state_epoch, start_offset)

        return self._with_coordinator(key, here, there).addCallback(_error_only)

    def delete_state(self, key: StateKey) -> defer.Deferred:
        """Fires with NONE once the key's state is deleted at its coordinator; at once when
        the state topic was never made (no state was ever written: Kafka's group coordinator
        asks its persister nothing for a group without initialized share-partitions)."""
        if not self.host.metadata.registered(SHARE_STATE_TOPIC):
            return defer.succeed(ErrorCode.NONE)

        def here() -> defer.Deferred:
            return self.serve_delete(key).addCallback(lambda error: (_none_or(error), None))

        return self._with_coordinator(
            key, here, lambda broker: self.remote.delete(broker, key)
        ).addCallback(_error_only)

    def stop(self) -> None:
        """Retries end (a stopped broker reaches no coordinator)."""
        self.stopped = True
        if self.remote is not None:
            self.remote.stop()


def _none_or(error: ErrorCode) -> ErrorCode | None:
    return None if error == ErrorCode.NONE else error


def _error_only(answer: tuple[ErrorCode | None, Any]) -> ErrorCode:
    error = answer[0]
    return ErrorCode.NONE if error is None else error
