"""One share-partition: what a share group (KIP-932) has delivered of one topic partition
(Kafka's ``SharePartition``), kept by the partition's leader. No I/O of its own: the log is
passed in to read from, and timers run on the injected reactor.

Offsets below the *start offset* are done with (acknowledged or archived); from the start
offset to the *end offset* (exclusive) records are *in flight*, each in one state of
``RecordState``:

- AVAILABLE: may be acquired by the next fetch of any member;
- ACQUIRED: handed to one member under an acquisition lock of
  ``share.record.lock.duration.ms``; when the lock expires before it is acknowledged, the
  record is AVAILABLE again, or ARCHIVED once it has been delivered
  ``share.delivery.count.limit`` times;
- ACKNOWLEDGED (accepted) and ARCHIVED (rejected, a gap, over the delivery limit, or a
  transaction marker): final. The start offset moves past the leading final records.

Offsets from the end offset on have not been fetched yet. A fetch acquires first the
AVAILABLE records in flight (redeliveries), then new records, and never lets the records in
flight pass ``share.partition.max.record.locks`` (except to finish a batch). Records go out as
the stored batches that hold at least one acquired record; the client keeps only the offsets
named in ``AcquiredRecords``. A new share-partition starts at the log end
(``share.auto.offset.reset`` latest, the default), at the log start (earliest), or at the first
record of the given duration ago (``by_duration:``). With ``share.isolation.level``
read_committed only records below the last stable offset are acquired, and those of aborted
transactions are archived instead.

Kafka keeps in-flight state per batch and splits a batch only when acknowledged record by
record; this keeps it per record, which is simpler and bounded by the record locks.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wireserver.groups.configs import reset_duration_ms
from wireserver.protocol.errors import ErrorCode
from wireserver.share.dlq import CLIENT_REJECT, DELIVERY_COUNT_EXCEEDED, DeadLetter
from wireserver.storage.batches import iter_headers
from wireserver.storage.errors import OffsetOutOfRange

# AcknowledgeTypes of ShareFetch / ShareAcknowledge.
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4


class RecordState(enum.IntEnum):
    """Kafka's ``RecordState`` (the ids are those it persists)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


FINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)

#: The least a share fetch reads from the log at a time (one read per fetch, usually).
READ_MIN_BYTES = 64 * 1024


@dataclass(eq=False)
class Acquisition:
    """The records one fetch (or one renewal) acquired for a member, and their lock timer.
    ``held`` counts the records it still holds: when the last is acknowledged or released the
    timer is cancelled, as Kafka cancels a batch's ``AcquisitionLockTimerTask``."""

    member_id: str
    timer: Any = None
    offsets: list[int] = field(default_factory=list)
    held: int = 0


class InFlight:
    __slots__ = ("state", "delivery_count", "acquisition")

    def __init__(self, state: RecordState, delivery_count: int = 0):
        self.state = state
        self.delivery_count = delivery_count
        self.acquisition: Acquisition | None = None


@dataclass
class Acquired:
    """What one fetch acquired: the batches to send and the acquired ranges
    (first offset, last offset, delivery count)."""

    records: bytes = b""
    ranges: list[tuple[int, int, int]] = field(default_factory=list)


class AcknowledgeError(Exception):
    def __init__(self, error: ErrorCode, message: str):
        super().__init__(message)
        self.error = error
        self.message = message


class SharePartition:
    """``setting(name)``: the group's ``share.*`` config (else its broker default);
    ``released()``: called when records become AVAILABLE again (waiting fetches retry);
    ``changed()``: called when the state to persist changed (not on acquisition: an
    acquisition does not outlive the broker); ``dead_lettered(letters, cause)``: called with
    the (offset, delivery count) of the records a member rejected or that reached the delivery
    limit, as they are archived (``wireserver.share.dlq``)."""

    def __init__(
        self,
        group_id: str,
        topic: str,
        partition: int,
        reactor: Any,
        setting: Callable[[str], Any],
        released: Callable[[], None],
        changed: Callable[[], None] = lambda: None,
        dead_lettered: Callable[[list[DeadLetter], str], None] = lambda letters, cause: None,
    ):
        self.group_id = group_id
        self.topic = topic
        self.partition = partition
        self.reactor = reactor
        self.setting = setting
        self.released = released
        self.changed = changed
        self.dead_lettered = dead_lettered
        #: the leader epoch of the partition it was made at, and the state epoch of the state
        #: it was made from (what its state writes are fenced with)
        self.leader_epoch = -1
        self.state_epoch = 0
        self.start_offset = -1  # -1: not initialized yet
        self.end_offset = -1
        self.records: dict[int, InFlight] = {}
        # bytes per record of the log as the last read found it: sizes the next read
        self.bytes_per_record = 1024.0
        # the acquisitions whose lock timer is pending: ``stop`` cancels them, so that no
        # timer of a stopped broker fires into its closed logs
        self.locked: set[Acquisition] = set()

    # -- state ------------------------------------------------------------------------------

    def initialize(self, log: Any) -> None:
        if self.start_offset >= 0:
            return
        reset = str(self.setting("share.auto.offset.reset")).lower()
        start = log.log_start_offset if reset == "earliest" else log.high_watermark
        duration = reset_duration_ms(reset)
        if duration is not None:
            since = max(0, int(self.reactor.seconds() * 1000) - duration)
            found = log.offset_for_timestamp(since, upper_bound=log.high_watermark)
            if found is not None:
                start = found.offset
        self.start_offset = self.end_offset = start
        self.changed()

    def restore(self, start_offset: int, batches: list[tuple[int, int, int, int]]) -> None:
        """The state read back from ``__share_group_state``: (first offset, last offset,
        state, delivery count) runs from ``state_batches``."""
        self.start_offset = start_offset
        self.records = {
            # an acquisition does not outlive the broker that made it
            offset: InFlight(
                RecordState(state) if state != RecordState.ACQUIRED else RecordState.AVAILABLE,
                count,
            )
            for first, last, state, count in batches
            for offset in range(max(first, start_offset), last + 1)
        }
        self.end_offset = max([start_offset, *(o + 1 for o in self.records)])
        for offset in range(start_offset, self.end_offset):
            self.records.setdefault(offset, InFlight(RecordState.ARCHIVED))
        self._advance()

    def _advance(self) -> None:
        while self.start_offset < self.end_offset:
            record = self.records.get(self.start_offset)
            if record is not None and record.state not in FINAL:
                break
            self.records.pop(self.start_offset, None)
            self.start_offset += 1

    def _persist_then_advance(self) -> None:
        """A state change is written with the start offset it was made at, then the start
        offset moves past the leading final records: as Kafka's ``SharePartition`` writes
        the state and moves on once the write is done, so the persisted start offset (what
        DescribeShareGroupOffsets shows) catches up with the next write, and a restart reads
        the final records back and moves past them again."""
        self.changed()
        self._advance()

    def _follow_log_start(self, log_start: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) are done with."""
        if self.start_offset >= log_start:
            return
        for offset in range(self.start_offset, min(log_start, self.end_offset)):
            record = self.records.pop(offset, None)
            if record is not None:
                self._let_go(record)
        self.start_offset = log_start
        self.end_offset = max(self.end_offset, log_start)

    def _release(self, offset: int, record: InFlight, exceeded: list[DeadLetter]) -> bool:
        """An acquired record goes back: AVAILABLE, or ARCHIVED at the delivery limit (then
        noted in ``exceeded``). True if it is AVAILABLE."""
        self._let_go(record)
        if record.delivery_count >= self.setting("share.delivery.count.limit"):
            record.state = RecordState.ARCHIVED
            exceeded.append((offset, record.delivery_count))
            return False
        record.state = RecordState.AVAILABLE
        return True

    # -- acquiring --------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        log: Any,
        max_records: int,
        max_bytes: int,
        read_committed: bool,
        strict: bool = False,
    ) -> Acquired:
        """Acquire for ``member_id`` what the next fetch gets (see the module docstring): up
        to ``max_records``, whole batches (``strict``: exactly, cutting a batch)."""
        self.initialize(log)
        self._follow_log_start(log.log_start_offset)
        self._advance()
        max_locks = self.setting("share.partition.max.record.locks")
        fetch_offset = next(
            (
                o
                for o in range(self.start_offset, self.end_offset)
                if self.records[o].state is RecordState.AVAILABLE
            ),
            self.end_offset,
        )
        bound = log.last_stable_offset if read_committed else log.high_watermark
        if fetch_offset >= bound or (
            fetch_offset == self.end_offset and self.end_offset - self.start_offset >= max_locks
        ):
            return Acquired()
        acquisition = Acquisition(member_id)
        # What to send, as slices of the reads: adjacent batches of one read merge, so that
        # the usual fetch, every batch read taken, sends that read itself.
        pieces: list[tuple[bytes, list[list[int]]]] = []
        budget = max(1, max_bytes)
        offset = fetch_offset
        # The reads are sized for the records still wanted (at this partition's bytes per
        # record so far), not for the fetch's byte limit: a consumer asking 500 records with
        # 50 MB allowed would otherwise read (and copy) 50 MB per fetch to send 500 KB.
        while budget > 0 and offset < bound and len(acquisition.offsets) < max_records:
            wanted = max_records - len(acquisition.offsets)
            size = min(budget, max(READ_MIN_BYTES, int(wanted * self.bytes_per_record * 1.25)))
            try:
                read = log.read(offset, size, upper_bound=bound)
            except OffsetOutOfRange:
                break
            data = bytes(read.data)  # a read without zero_copy is bytes already: no copy
            if not data:
                break
            aborted = log.collect_aborted(offset, read.next_offset) if read_committed else []
            spans, full = self._take(acquisition, data, aborted, max_records, max_locks, strict)
            pieces.append((data, spans))
            if read.next_offset > offset:
                self.bytes_per_record = len(data) / (read.next_offset - offset)
            budget -= len(data)
            if full or read.next_offset <= offset:
                break
            offset = read.next_offset
        self._advance()
        if not acquisition.offsets:
            return Acquired()
        self._lock(acquisition)
        return Acquired(_joined(pieces), self._ranges(acquisition.offsets))

    def _take(
        self,
        acquisition: Acquisition,
        data: bytes,
        aborted: list[Any],
        max_records: int,
        max_locks: int,
        strict: bool,
    ) -> tuple[list[list[int]], bool]:
        """Acquire what ``data`` (whole batches read from the log) holds for ``acquisition``:
        the [start, end) spans of the batches to send, and whether a limit (records, locks)
        was reached."""
        spans: list[list[int]] = []
        for pos, header in iter_headers(data):
            if len(acquisition.offsets) >= max_records:
                return spans, True
            if header.base_offset > self.end_offset and header.last_offset >= self.end_offset:
                # Offsets missing from the log (compacted away) are done with.
                for offset in range(self.end_offset, header.base_offset):
                    self.records[offset] = InFlight(RecordState.ARCHIVED)
                self.end_offset = header.base_offset
            if header.base_offset >= self.end_offset and (
                self.end_offset - self.start_offset >= max_locks
            ):
                return spans, True
            taken = False
            for offset in range(max(header.base_offset, self.start_offset), header.next_offset):
                if strict and len(acquisition.offsets) >= max_records:
                    break
                if offset >= self.end_offset:
                    self.records[offset] = InFlight(RecordState.AVAILABLE)
                    self.end_offset = offset + 1
                record = self.records[offset]
                if header.is_control or _is_aborted(header, aborted):
                    # Transaction markers are never delivered, nor (read_committed) the
                    # records of aborted transactions.
                    if record.state is RecordState.AVAILABLE:
                        record.state = RecordState.ARCHIVED
                    continue
                if record.state is not RecordState.AVAILABLE:
                    continue
                record.state = RecordState.ACQUIRED
                record.delivery_count += 1
                self._hold(record, acquisition, offset)
                taken = True
            if taken:
                if spans and spans[-1][1] == pos:
                    spans[-1][1] = pos + header.size
                else:
                    spans.append([pos, pos + header.size])
        return spans, len(acquisition.offsets) >= max_records

    def _ranges(self, offsets: list[int]) -> list[tuple[int, int, int]]:
        ranges: list[tuple[int, int, int]] = []
        for offset in offsets:
            count = self.records[offset].delivery_count
            if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == count:
                ranges[-1] = (ranges[-1][0], offset, count)
            else:
                ranges.append((offset, offset, count))
        return ranges

    def lock_duration_ms(self) -> int:
        return self.setting("share.record.lock.duration.ms")

    def _lock(self, acquisition: Acquisition) -> None:
        acquisition.timer = self.reactor.callLater(
            self.lock_duration_ms() / 1000.0, self._lock_expired, acquisition
        )
        self.locked.add(acquisition)

    def _unlock(self, acquisition: Acquisition) -> None:
        if acquisition.timer is not None and acquisition.timer.active():
            acquisition.timer.cancel()
        acquisition.timer = None
        self.locked.discard(acquisition)

    @staticmethod
    def _hold(record: InFlight, acquisition: Acquisition, offset: int) -> None:
        record.acquisition = acquisition
        acquisition.offsets.append(offset)
        acquisition.held += 1

    def _let_go(self, record: InFlight) -> None:
        """``record`` is no longer held; its acquisition's lock goes with its last record."""
        acquisition = record.acquisition
        if acquisition is None:
            return
        record.acquisition = None
        acquisition.held -= 1
        if acquisition.held == 0:
            self._unlock(acquisition)

    def _lock_expired(self, acquisition: Acquisition) -> None:
        """Kafka's ``AcquisitionLockTimerTask``: what the member still holds goes back."""
        acquisition.timer = None
        self.locked.discard(acquisition)
        available = False
        exceeded: list[DeadLetter] = []
        for offset in acquisition.offsets:
            record = self.records.get(offset)
            if record is not None and record.acquisition is acquisition:
                available = self._release(offset, record, exceeded) or available
        self._dead_letter(exceeded, DELIVERY_COUNT_EXCEEDED)
        self._persist_then_advance()
        if available:
            self.released()

    # -- acknowledging ----------------------------------------------------------------------

    def acknowledge(
        self, member_id: str, batches: list[tuple[int, int, list[int]]], renew: bool = False
    ) -> None:
        """Apply ``batches`` ((first offset, last offset, acknowledge types)) for the member,
        all or nothing: AcknowledgeError(INVALID_REQUEST) for a malformed batch,
        (INVALID_RECORD_STATE) for an offset the member does not hold."""
        changes: list[tuple[int, int]] = []
        for first, last, types in batches:
            if last < first or not types or len(types) not in (1, last - first + 1):
                raise AcknowledgeError(ErrorCode.INVALID_REQUEST, "Invalid acknowledgement batch.")
            for i, offset in enumerate(range(first, last + 1)):
                kind = types[0] if len(types) == 1 else types[i]
                if kind not in (GAP, ACCEPT, RELEASE, REJECT) and not (renew and kind == RENEW):
                    raise AcknowledgeError(
                        ErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {kind}."
                    )
                record = self.records.get(offset)
                if (
                    record is None
                    or record.state is not RecordState.ACQUIRED
                    or record.acquisition is None
                    or record.acquisition.member_id != member_id
                ):
                    raise AcknowledgeError(
                        ErrorCode.INVALID_RECORD_STATE,
                        f"The record state is invalid. The acknowledgement of delivery could "
                        f"not be completed for offset {offset}.",
                    )
                if kind == RENEW and not self.setting("share.renew.acknowledge.enable"):
                    raise AcknowledgeError(
                        ErrorCode.INVALID_RECORD_STATE,
                        "Renewing acquisition locks is not enabled for the group.",
                    )
                changes.append((offset, kind))
        available = False
        renewed = Acquisition(member_id)
        exceeded: list[DeadLetter] = []
        rejected: list[DeadLetter] = []
        for offset, kind in changes:
            record = self.records[offset]
            if kind == ACCEPT:
                record.state = RecordState.ACKNOWLEDGED
                self._let_go(record)
            elif kind == RELEASE:
                available = self._release(offset, record, exceeded) or available
            elif kind == RENEW:
                self._let_go(record)
                self._hold(record, renewed, offset)
            else:  # GAP, REJECT
                record.state = RecordState.ARCHIVED
                self._let_go(record)
                if kind == REJECT:
                    rejected.append((offset, record.delivery_count))
        self._dead_letter(rejected, CLIENT_REJECT)
        self._dead_letter(exceeded, DELIVERY_COUNT_EXCEEDED)
        if renewed.offsets:
            self._lock(renewed)
        self._persist_then_advance()
        if available:
            self.released()

    def release_member(self, member_id: str) -> None:
        """The member left the group or closed its share session: what it holds goes back (a
        member that holds nothing changes nothing, and nothing is written: as Kafka)."""
        held = [
            (offset, record)
            for offset, record in self.records.items()
            if record.state is RecordState.ACQUIRED
            and record.acquisition is not None
            and record.acquisition.member_id == member_id
        ]
        if not held:
            return
        available = False
        exceeded: list[DeadLetter] = []
        for offset, record in held:
            available = self._release(offset, record, exceeded) or available
        self._dead_letter(exceeded, DELIVERY_COUNT_EXCEEDED)
        self._persist_then_advance()
        if available:
            self.released()

    def _dead_letter(self, letters: list[DeadLetter], cause: str) -> None:
        if letters:
            self.dead_lettered(letters, cause)

    def stop(self) -> None:
        for acquisition in list(self.locked):
            self._unlock(acquisition)

    def state_batches(self) -> list[tuple[int, int, int, int]]:
        """The in-flight records as (first offset, last offset, state, delivery count) runs,
        as Kafka's share coordinator persists them (an acquired record counts as AVAILABLE:
        its lock does not outlive the broker)."""
        out: list[tuple[int, int, int, int]] = []
        for offset in range(self.start_offset, self.end_offset):
            record = self.records.get(offset)
            if record is None:
                continue
            state = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
            if out and out[-1][1] == offset - 1 and out[-1][2:] == (state, record.delivery_count):
                out[-1] = (out[-1][0], offset, state, record.delivery_count)
            else:
                out.append((offset, offset, int(state), record.delivery_count))
        return out


def _joined(pieces: list[tuple[bytes, list[list[int]]]]) -> bytes:
    """The spans of the reads, copied once, or not at all when they are one whole read."""
    taken = [(data, spans) for data, spans in pieces if spans]
    if len(taken) == 1:
        data, spans = taken[0]
        if len(spans) == 1 and spans[0] == [0, len(data)]:
            return data
    return b"".join(memoryview(data)[start:end] for data, spans in taken for start, end in spans)


def _is_aborted(header: Any, aborted: list[Any]) -> bool:
    """Whether a batch belongs to one of the ``aborted`` transactions (``Log.collect_aborted``)."""
    return header.is_transactional and any(
        txn.producer_id == header.producer_id
        and txn.first_offset <= header.base_offset <= txn.last_offset
        for txn in aborted
    )
