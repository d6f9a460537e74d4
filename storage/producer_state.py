"""Idempotent-producer state of one partition (Kafka's ``ProducerStateManager``,
``ProducerStateEntry``, ``ProducerAppendInfo`` and ``BatchMetadata``).

For every producer id that wrote to the partition we keep its epoch and the metadata of its
last five batches (Kafka's ``NUM_BATCHES_TO_RETAIN``, the largest
``max.in.flight.requests.per.connection`` an idempotent producer may use): last sequence, last
offset, offset delta (so first sequence and first offset follow) and max timestamp. Everything
is read from batch headers; records are never decoded.

Rules (Kafka 4.1, ``ProducerAppendInfo.checkProducerEpoch`` / ``checkSequence`` and
``ProducerStateEntry.findDuplicateBatch``), for batches a client sends:

- A batch with the producer's current epoch and exactly the sequence range of one of the
  cached batches is a duplicate: nothing is written and the original offsets are answered.
- An epoch below the producer's current one: ``INVALID_PRODUCER_EPOCH``.
- A new (higher) epoch must start at sequence 0, unless the producer is unknown:
  ``OUT_OF_ORDER_SEQUENCE_NUMBER`` otherwise.
- With the current epoch the first sequence must follow the last one (``Int32.MAX`` wraps to
  0): ``OUT_OF_ORDER_SEQUENCE_NUMBER`` otherwise.
- An unknown producer (never seen, expired, or whose state was lost with its data) is accepted
  at any sequence: Kafka brokers no longer answer ``UNKNOWN_PRODUCER_ID`` on produce.

State changes only after the append succeeded (``prepare`` validates and computes, ``commit``
installs). Batches replayed from the log (recovery, truncation, follower appends) update state
without validation, as Kafka's ``AppendOrigin.REPLICATION``.

Snapshots: ``<20-digit offset>.snapshot`` in the partition directory hold the state of every
batch below that offset. They are written when a segment rolls (at the new segment's base
offset, without fsync; ``Log.flush`` fsyncs them off the reactor) and at clean shutdown (at
the log end, fsynced). Loading takes the newest readable snapshot between the log start and
the log end offset and replays batch headers from there to the log end.

Snapshot file format (all big-endian), a documented variant of Kafka's ``ProducerSnapshot``:

    version                   int16   2 (Kafka writes 1; we read both)
    crc                       uint32  CRC-32C of every byte after this field
    producer count            int32
    per producer:
      producer_id             int64
      producer_epoch          int16
      coordinator_epoch       int32
      last_timestamp          int64
      current_txn_first_offset int64  (-1: none)
      batch count             int8    0-5, oldest first
      per batch:
        last_sequence         int32
        last_offset           int64
        offset_delta          int32
        timestamp             int64

Kafka's version 1 keeps one batch per producer (``producer_id int64, epoch int16,
last_sequence int32, last_offset int64, offset_delta int32, timestamp int64,
coordinator_epoch int32, current_txn_first_offset int64``); we keep all five so that a retry
of any in-flight batch is still recognised after a restart. Version 1 files (from a Kafka log
dir) are read, never written.

Producer entries are removed only when ``producer.id.expiration.ms`` has passed since their
last batch's timestamp (``remove_expired``, and when a snapshot is loaded), not by retention,
and never while they have a transaction open.

Transactions (Kafka's ``ongoingTxns`` / ``appendEndTxnMarker``): the first transactional batch
of a producer sets its entry's ``current_txn_first_offset``; the producer's COMMIT or ABORT
marker (a control batch; its record gives the type) closes it and yields a ``CompletedTxn``.
``first_unstable_offset`` is the smallest first offset of the open transactions, which bounds
the partition's last stable offset. Open transactions survive restarts through the snapshot
field and the replay of batch headers (control records are the only records decoded).
Batches the broker writes itself (``check_sequences=False``: TxnOffsetCommit records in
``__consumer_offsets``, Kafka's ``AppendOrigin.COORDINATOR``) get the epoch check only.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

from crc32c._crc32c import crc32c as crc32c_checksum  # not via crc32c/__init__ (cli.py)

from wireserver.storage.checkpoint import atomic_write, fsync_dir
from wireserver.storage.errors import InvalidProducerEpoch, OutOfOrderSequence

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = 2**31 - 1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 2
KAFKA_SNAPSHOT_VERSION = 1

_PREFIX = struct.Struct(">hI")  # version, crc
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqqb")
_BATCH = struct.Struct(">iqiq")
_KAFKA_ENTRY = struct.Struct(">qhiqiqiq")


class CompletedTxn(NamedTuple):
    """A transaction closed by a marker in this partition (Kafka's ``CompletedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


class CorruptSnapshot(ValueError):
    """A snapshot file that fails its CRC or does not parse."""


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's ``DefaultRecordBatch.incrementSequence``: wraps past Int32.MAX to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


class BatchMetadata(NamedTuple):
    """One appended batch of a producer (Kafka's ``BatchMetadata``)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """A producer id's epoch and its last ``NUM_BATCHES_TO_RETAIN`` batches, oldest first."""

    __slots__ = (
        "producer_id",
        "producer_epoch",
        "batches",
        "coordinator_epoch",
        "last_timestamp",
        "current_txn_first_offset",
    )

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        batches: Iterable[BatchMetadata] = (),
        coordinator_epoch: int = -1,
        last_timestamp: int = -1,
        current_txn_first_offset: int = -1,
    ):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.batches: deque[BatchMetadata] = deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            self.batches,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def maybe_update_epoch(self, epoch: int) -> bool:
        """A new epoch forgets the batches of the old one."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
            return True
        return False

    def add_batch(
        self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int
    ) -> None:
        self.maybe_update_epoch(epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.last_seq == last_seq and batch.first_seq == first_seq:
                return batch
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProducerStateEntry):
            return NotImplemented
        return (
            self.producer_id,
            self.producer_epoch,
            list(self.batches),
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        ) == (
            other.producer_id,
            other.producer_epoch,
            list(other.batches),
            other.coordinator_epoch,
            other.last_timestamp,
            other.current_txn_first_offset,
        )

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(id={self.producer_id}, epoch={self.producer_epoch}, "
            f"batches={list(self.batches)}, last_timestamp={self.last_timestamp})"
        )


class PreparedAppend(NamedTuple):
    """What ``prepare`` found: a duplicate (nothing to write), or what ``commit`` installs once
    the batches are in the log: ``updates``, new or copied entries, and ``in_place``, the one
    batch of an existing producer (its ``_apply`` arguments), added to its entry as it is."""

    duplicate: BatchMetadata | None
    updates: dict
    in_place: dict


_NOTHING = PreparedAppend(None, {}, {})


# -- snapshot files -------------------------------------------------------------------------


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    entries = list(entries)
    body = bytearray(_COUNT.pack(len(entries)))
    for entry in entries:
        batches = list(entry.batches)
        body += _ENTRY.pack(
            entry.producer_id,
            entry.producer_epoch,
            entry.coordinator_epoch,
            entry.last_timestamp,
            entry.current_txn_first_offset,
            len(batches),
        )
        for batch in batches:
            body += _BATCH.pack(
                batch.last_seq, batch.last_offset, batch.offset_delta, batch.timestamp
            )
    return _PREFIX.pack(SNAPSHOT_VERSION, crc32c_checksum(body)) + bytes(body)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """Entries of a snapshot file (ours, version 2, or Kafka's version 1)."""
    view = memoryview(data)
    if len(view) < _PREFIX.size + _COUNT.size:
        raise CorruptSnapshot(f"snapshot of {len(view)} bytes is too short")
    version, crc = _PREFIX.unpack_from(view, 0)
    if version not in (SNAPSHOT_VERSION, KAFKA_SNAPSHOT_VERSION):
        raise CorruptSnapshot(f"unknown snapshot version {version}")
    computed = crc32c_checksum(view[_PREFIX.size :])
    if computed != crc:
        raise CorruptSnapshot(f"snapshot CRC mismatch: stored {crc}, computed {computed}")
    pos = _PREFIX.size
    (count,) = _COUNT.unpack_from(view, pos)
    pos += _COUNT.size
    if count < 0:
        raise CorruptSnapshot(f"negative producer count {count}")
    entries: list[ProducerStateEntry] = []
    try:
        for _ in range(count):
            if version == KAFKA_SNAPSHOT_VERSION:
                (
                    pid,
                    epoch,
                    last_seq,
                    last_offset,
                    delta,
                    timestamp,
                    coordinator_epoch,
                    txn_first,
                ) = _KAFKA_ENTRY.unpack_from(view, pos)
                pos += _KAFKA_ENTRY.size
                batches = (
                    [BatchMetadata(last_seq, last_offset, delta, timestamp)]
                    if last_offset >= 0
                    else []
                )
                entries.append(
                    ProducerStateEntry(pid, epoch, batches, coordinator_epoch, timestamp, txn_first)
                )
                continue
            pid, epoch, coordinator_epoch, timestamp, txn_first, n = _ENTRY.unpack_from(view, pos)
            pos += _ENTRY.size
            if not 0 <= n <= NUM_BATCHES_TO_RETAIN:
                raise CorruptSnapshot(f"producer {pid} has {n} batches")
            batches = []
            for _ in range(n):
                batches.append(BatchMetadata(*_BATCH.unpack_from(view, pos)))
                pos += _BATCH.size
            entries.append(
                ProducerStateEntry(pid, epoch, batches, coordinator_epoch, timestamp, txn_first)
            )
    except struct.error:
        raise CorruptSnapshot("snapshot ends inside an entry") from None
    if pos != len(view):
        raise CorruptSnapshot(f"{len(view) - pos} bytes after the last entry")
    return entries


def list_snapshots(directory: str) -> list[int]:
    """Offsets of the ``.snapshot`` files in ``directory``, ascending."""
    out = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        stem, ext = os.path.splitext(name)
        if ext == SNAPSHOT_SUFFIX and stem.isdigit():
            out.append(int(stem))
    return sorted(out)


def _apply(
    entry: ProducerStateEntry,
    epoch: int,
    first_seq: int,
    last_seq: int,
    offset: int,
    delta: int,
    timestamp: int,
    transactional: bool,
    check_sequences: bool,
) -> None:
    """Add one checked batch (first offset ``offset``) to a producer's entry."""
    if check_sequences or first_seq >= 0:
        entry.add_batch(epoch, last_seq, offset + delta, delta, timestamp)
    else:
        entry.maybe_update_epoch(epoch)
        entry.last_timestamp = timestamp
    if transactional and entry.current_txn_first_offset < 0:
        entry.current_txn_first_offset = offset


# -- the manager ----------------------------------------------------------------------------


class ProducerStateManager:
    """Producer state of one partition, with its snapshot files. Reactor thread only, except
    ``sync_snapshots`` (called from ``Log.flush``)."""

    def __init__(self, directory: str, expiration_ms: int = 86_400_000):
        self.directory = directory
        self.expiration_ms = expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.map_end_offset = 0  # state covers every batch below this offset
        self.last_snapshot_offset = -1
        self.snapshots: list[int] = list_snapshots(directory)
        self._unsynced: list[str] = []
        self.replayed_batches = 0  # observability: headers replayed by the last load

    # -- checks on the produce path ------------------------------------------------------
    def prepare(
        self,
        headers: Iterable,
        first_offset: int,
        log_append_time: int | None = None,
        *,
        check_sequences: bool = True,
    ) -> PreparedAppend:
        """Validate the batches a client sends (headers before offsets are assigned; they will
        get consecutive offsets from ``first_offset``). Returns the duplicate batch, if any
        batch is one, else the entries to ``commit`` after the append. Raises
        ``InvalidProducerEpoch`` / ``OutOfOrderSequence``; changes nothing."""
        updates: dict[int, ProducerStateEntry] | None = None
        in_place: dict[int, tuple] | None = None
        offset = first_offset
        for header in headers:
            delta = header.last_offset_delta
            pid = header.producer_id
            if pid < 0:
                offset += delta + 1
                continue
            epoch = header.producer_epoch
            first_seq = header.base_sequence
            last_seq = increment_sequence(first_seq, delta)
            current = self.producers.get(pid)
            if current is not None:
                duplicate = current.find_duplicate(epoch, first_seq, last_seq)
                if duplicate is not None:
                    return PreparedAppend(duplicate, {}, {})
            timestamp = log_append_time if log_append_time is not None else header.max_timestamp
            change = (
                epoch,
                first_seq,
                last_seq,
                offset,
                delta,
                timestamp,
                header.is_transactional,
                check_sequences,
            )
            updated = None if updates is None else updates.get(pid)
            if (
                updated is None
                and current is not None
                and (in_place is None or pid not in in_place)
            ):
                # An existing producer's first batch here (a Produce request's only one):
                # checked against its entry, which ``commit`` updates without a copy.
                self._check_epoch(pid, epoch, current.producer_epoch, offset)
                if check_sequences:
                    self._check_sequence(
                        pid, epoch, first_seq, current, current.producer_epoch, offset
                    )
                if in_place is None:
                    in_place = {}
                in_place[pid] = change
                offset += delta + 1
                continue
            if updates is None:
                updates = {}
            if updated is None:
                # A new producer, or a second batch of one: changes go to a copy of its entry.
                updated = current.copy() if current is not None else ProducerStateEntry(pid)
                earlier = None if in_place is None else in_place.pop(pid, None)
                if earlier is not None:
                    _apply(updated, *earlier)
                updates[pid] = updated
            original_epoch = current.producer_epoch if current is not None else NO_PRODUCER_EPOCH
            self._check_epoch(pid, epoch, updated.producer_epoch, offset)
            if check_sequences:
                self._check_sequence(pid, epoch, first_seq, updated, original_epoch, offset)
            _apply(updated, *change)
            offset += delta + 1
        if updates or in_place:
            return PreparedAppend(None, updates or {}, in_place or {})
        return _NOTHING

    @staticmethod
    def _check_epoch(pid: int, epoch: int, current: int, offset: int) -> None:
        if epoch < current:
            raise InvalidProducerEpoch(
                f"Epoch of producer {pid} at offset {offset} is {epoch}, which is smaller "
                f"than the last seen epoch {current}"
            )

    @staticmethod
    def _check_sequence(
        pid: int,
        epoch: int,
        first_seq: int,
        updated: ProducerStateEntry,
        original_epoch: int,
        offset: int,
    ) -> None:
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequence(
                    f"Invalid sequence number for new epoch of producer {pid} at offset "
                    f"{offset}: {epoch} (request epoch), {first_seq} (seq. number), "
                    f"{updated.producer_epoch} (current producer epoch)"
                )
            return
        last_seq = updated.last_seq
        # No epoch before this request (a new producer, or one whose state is gone): any
        # sequence is accepted, as in Kafka.
        if original_epoch == NO_PRODUCER_EPOCH or in_sequence(last_seq, first_seq):
            return
        raise OutOfOrderSequence(
            f"Out of order sequence number for producer {pid} at offset {offset}: "
            f"{first_seq} (incoming seq. number), {last_seq} (current end sequence number)"
        )

    def commit(self, prepared: PreparedAppend, end_offset: int) -> None:
        """Install what ``prepare`` computed, once the batches are in the log."""
        for pid, change in prepared.in_place.items():
            entry = self.producers[pid]
            _apply(entry, *change)
            if entry.current_txn_first_offset >= 0:
                self.ongoing[pid] = entry.current_txn_first_offset
        for pid, entry in prepared.updates.items():
            self.producers[pid] = entry
            if entry.current_txn_first_offset >= 0:
                self.ongoing[pid] = entry.current_txn_first_offset
        self.map_end_offset = end_offset

    # -- replay (recovery, truncation, follower appends) ---------------------------------
    def replay(
        self, header, control_type: int | None = None, coordinator_epoch: int = -1
    ) -> CompletedTxn | None:
        """Update from a batch already in the log (offsets assigned); no validation. For a
        transaction marker pass ``control_type`` (0 ABORT, 1 COMMIT) and the coordinator epoch
        from its record; the transaction it closes is returned."""
        completed = None
        pid = header.producer_id
        if pid >= 0:
            entry = self.producers.get(pid)
            if entry is None:
                entry = self.producers[pid] = ProducerStateEntry(pid)
            if header.is_control:
                # A transaction marker: the epoch moves on, no data batch is cached.
                entry.maybe_update_epoch(header.producer_epoch)
                entry.last_timestamp = header.max_timestamp
                if coordinator_epoch >= 0:
                    entry.coordinator_epoch = coordinator_epoch
                if control_type in (0, 1):
                    first = entry.current_txn_first_offset
                    completed = CompletedTxn(
                        pid,
                        first if first >= 0 else header.base_offset,
                        header.last_offset,
                        control_type == 0,
                    )
                entry.current_txn_first_offset = -1
                self.ongoing.pop(pid, None)
            else:
                if header.base_sequence >= 0:
                    entry.add_batch(
                        header.producer_epoch,
                        increment_sequence(header.base_sequence, header.last_offset_delta),
                        header.last_offset,
                        header.last_offset_delta,
                        header.max_timestamp,
                    )
                else:
                    entry.maybe_update_epoch(header.producer_epoch)
                    entry.last_timestamp = header.max_timestamp
                if header.is_transactional and entry.current_txn_first_offset < 0:
                    entry.current_txn_first_offset = header.base_offset
                    self.ongoing[pid] = header.base_offset
        self.map_end_offset = header.next_offset
        return completed

    # -- transactions -------------------------------------------------------------------
    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open transaction, None when none is open."""
        return min(self.ongoing.values()) if self.ongoing else None

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` is closed (Kafka's ``lastStableOffset(completedTxn)``),
        recorded in its aborted-transaction index entry."""
        others = [first for pid, first in self.ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    # -- expiration ---------------------------------------------------------------------
    def is_expired(
        self, entry: ProducerStateEntry, now_ms: int, expiration_ms: int | None = None
    ) -> bool:
        limit = self.expiration_ms if expiration_ms is None else expiration_ms
        return entry.current_txn_first_offset < 0 and now_ms - entry.last_timestamp >= limit

    def remove_expired(self, now_ms: int, expiration_ms: int | None = None) -> int:
        """Forget producers idle for ``producer.id.expiration.ms``; returns how many."""
        if expiration_ms is not None:
            self.expiration_ms = expiration_ms
        doomed = [pid for pid, entry in self.producers.items() if self.is_expired(entry, now_ms)]
        for pid in doomed:
            del self.producers[pid]
        return len(doomed)

    # -- snapshots ----------------------------------------------------------------------
    def _path(self, offset: int) -> str:
        return os.path.join(self.directory, snapshot_name(offset))

    def take_snapshot(self, *, sync: bool = True) -> bool:
        """Write a snapshot at ``map_end_offset`` unless one is there already. Without
        ``sync`` the file is fsynced later by ``sync_snapshots``."""
        offset = self.map_end_offset
        if offset == self.last_snapshot_offset and offset in self.snapshots:
            return False
        path = self._path(offset)
        atomic_write(path, encode_snapshot(self.producers.values()), sync=sync)
        if not sync:
            self._unsynced.append(path)
        if offset not in self.snapshots:
            self.snapshots.append(offset)
            self.snapshots.sort()
        self.last_snapshot_offset = offset
        return True

    def sync_snapshots(self) -> None:
        """fsync the snapshots written without it (safe on a flush thread)."""
        paths, self._unsynced = self._unsynced, []
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if paths:
            fsync_dir(self.directory)

    def _delete_snapshot(self, offset: int) -> None:
        try:
            os.unlink(self._path(offset))
        except FileNotFoundError:
            pass
        if offset in self.snapshots:
            self.snapshots.remove(offset)
        if offset == self.last_snapshot_offset:
            self.last_snapshot_offset = -1

    def delete_snapshots_outside(self, log_start_offset: int, log_end_offset: int) -> None:
        """Remove snapshots below the log start or above the log end offset."""
        for offset in list(self.snapshots):
            if offset < log_start_offset or offset > log_end_offset:
                self._delete_snapshot(offset)

    def read_snapshot(self, offset: int) -> list[ProducerStateEntry]:
        with open(self._path(offset), "rb") as f:
            return decode_snapshot(f.read())

    def load(
        self,
        log_start_offset: int,
        log_end_offset: int,
        now_ms: int,
        max_snapshot_offset: int | None = None,
    ) -> None:
        """Reset to the newest readable snapshot in [log start, log end] (corrupt ones are
        deleted), dropping expired producers; ``map_end_offset`` tells where to replay from
        (the snapshot's offset, or the log start when there is none)."""
        self.producers = {}
        self.ongoing.clear()  # never rebound: Log keeps it (Log.fetch_offsets)
        self.snapshots = list_snapshots(self.directory)
        upper = (
            log_end_offset
            if max_snapshot_offset is None
            else min(log_end_offset, max_snapshot_offset)
        )
        self.delete_snapshots_outside(log_start_offset, upper)
        self.replayed_batches = 0
        while self.snapshots:
            offset = self.snapshots[-1]
            try:
                entries = self.read_snapshot(offset)
            except (CorruptSnapshot, OSError):
                self._delete_snapshot(offset)
                continue
            for entry in entries:
                if not self.is_expired(entry, now_ms):
                    self.producers[entry.producer_id] = entry
                    if entry.current_txn_first_offset >= 0:
                        self.ongoing[entry.producer_id] = entry.current_txn_first_offset
            self.map_end_offset = offset
            self.last_snapshot_offset = offset
            return
        self.map_end_offset = log_start_offset
        self.last_snapshot_offset = -1

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers = {}
        self.ongoing.clear()  # never rebound: Log keeps it (Log.fetch_offsets)
        for snap in list(self.snapshots):
            self._delete_snapshot(snap)
        self.map_end_offset = offset
        self.last_snapshot_offset = -1

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Retention or DeleteRecords moved the log start: snapshots below it go (producer
        entries stay until they expire, as in Kafka)."""
        for offset in list(self.snapshots):
            if offset < log_start_offset:
                self._delete_snapshot(offset)
        if self.map_end_offset < log_start_offset:
            self.map_end_offset = log_start_offset

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)
