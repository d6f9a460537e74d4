"""Log compaction of one partition (Kafka 4.x's ``Cleaner`` and the offset arithmetic of
``LogCleanerManager``).

A compacted log has a clean head, already compacted, and a dirty tail written since. A cleaning
maps every key of the dirty part that may be cleaned to the offset of its last record (a
bounded ``OffsetMap`` of key hashes), then rewrites every segment from the log's first up to
where the map reached, keeping a record when its offset is at least the map's offset for its
key or its key is not in the map. Offsets never change: kept records keep theirs (batches keep
their base offset, offset range and producer fields, so holes appear), and the next cleaning
starts from where this one's map stopped (the ``cleaner-offset-checkpoint``).

What may be cleaned (``cleanable_offsets``): whole segments from the first dirty offset up to
the first uncleanable one, which is the smallest of the last stable offset (an open transaction
or the high watermark), the active segment's base offset, and the base offset of the first
segment holding a record younger than ``min.compaction.lag.ms`` (by the segment's largest
timestamp); rounded down to a segment boundary. ``dirty_ratio`` and
``max_compaction_delay_ms`` (``max.compaction.lag.ms``) tell the scheduler when to clean.

What a cleaning keeps, beyond the latest record of each key (Kafka's rules):

- Tombstones (null values) stay until their delete horizon: the first cleaning that keeps a
  tombstone rewrites its batch with the delete-horizon attribute and ``now +
  delete.retention.ms`` as the base timestamp (KIP-534); a cleaning at or after the horizon drops
  them.
- Records of aborted transactions (from the segments' ``.txnindex``) go. An ABORT marker stays
  while the cleaning still meets data of its transaction, and its entry is written to the new
  segment's ``.txnindex``; a COMMIT marker stays while data of its transaction is met. A marker
  whose transaction has no data left gets a delete horizon and goes once it passed.
- The batch holding each active producer's last data offset (or its last marker, when it has no
  data batch) is kept, empty if all its records go, so sequence and epoch checks survive; so is
  the batch ending at the first uncleanable offset, which keeps the log's last offset.
- Empty batches otherwise go; batches whose records all stay are copied unchanged; the others
  are rebuilt with the kept records, in the same codec.

Segments are cleaned in groups (``group_segments_by_size``): consecutive segments whose total
log and index sizes fit ``segment.bytes`` and ``segment.index.bytes`` and whose offsets fit an
int32 from the group's base offset become one new segment, written as ``<base>.log.cleaned``
(with its indexes) and swapped in by ``Log.replace_segments``.

Threads: ``prepare_cleaning`` runs on the thread that owns the ``Log`` (it snapshots the
segments to read, with descriptors of their own, the aborted transactions, the producers' last
batches, the configuration and the time); ``CleaningJob.run`` may run on a worker thread: it
only reads those descriptors and writes new ``.cleaned`` files; ``CleaningJob.commit`` runs on
the owner thread again and swaps the new segments in only if the log still holds exactly the
segments it read, unchanged (retention, DeleteRecords or truncation may have run meanwhile);
otherwise it deletes its files. ``clean`` does the three in one call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from wireserver.protocol.records import (
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    NO_TIMESTAMP,
    TIMESTAMP_LOG_APPEND_TIME,
    ControlRecordType,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    build_empty_batch,
    decode_control_record,
)
from wireserver.storage.batches import iter_headers
from wireserver.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT, read_offsets, write_offsets
from wireserver.storage.index import INT32_MAX
from wireserver.storage.log import CLEANED_SUFFIX, Log
from wireserver.storage.offset_map import DEFAULT_LOAD_FACTOR, OffsetMap
from wireserver.storage.segment import CorruptSegmentError, LogSegment, filename_prefix
from wireserver.storage.txn_index import AbortedTxn, TransactionIndex

#: Kafka's ``log.cleaner.dedupe.buffer.size`` default (shared by its cleaner threads).
DEFAULT_DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024
#: Bytes read from a segment at a time (Kafka's ``log.cleaner.io.buffer.size`` is 512 KiB).
READ_CHUNK_BYTES = 512 * 1024

Throttle = Callable[[int], None]
Step = Callable[[str], None]


# -- what may be cleaned ------------------------------------------------------------------------


class CleanableOffsets(NamedTuple):
    """Kafka's ``OffsetsToClean`` and ``LogToClean`` for one log."""

    first_dirty_offset: int
    first_uncleanable_offset: int  # a segment's base offset: cleaning stops below it
    clean_bytes: int  # segments below the first dirty offset
    cleanable_bytes: int  # segments from the first dirty to the first uncleanable offset
    max_compaction_delay_ms: int  # > 0: max.compaction.lag.ms passed for a dirty record
    checkpoint_was_invalid: bool  # the checkpointed offset was outside the log: rewrite it

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    def should_clean(self, min_cleanable_dirty_ratio: float) -> bool:
        """Kafka's choice of a log to clean: enough dirty bytes, or records past their
        ``max.compaction.lag.ms``."""
        if self.cleanable_bytes <= 0:
            return False
        return self.max_compaction_delay_ms > 0 or self.dirty_ratio > min_cleanable_dirty_ratio


def _floor_index(segments: list[LogSegment], offset: int) -> int:
    """Index of the segment holding ``offset`` (the last with base <= offset), 0 below all."""
    found = 0
    for i, seg in enumerate(segments):
        if seg.base_offset > offset:
            break
        found = i
    return found


def _overlapping(segments: list[LogSegment], start: int, end: int) -> list[LogSegment]:
    """Kafka's ``logSegments(from, to)``: the segment holding ``start`` and those after it with
    a base offset below ``end``."""
    if start >= end:
        return []
    return [seg for seg in segments[_floor_index(segments, start) :] if seg.base_offset < end]


def cleanable_offsets(log: Log, last_clean_offset: int | None, now_ms: int) -> CleanableOffsets:
    """Where the next cleaning of ``log`` starts and must stop, and how dirty the log is.
    ``last_clean_offset`` is the log's entry of the cleaner checkpoint (None: never cleaned)."""
    segments = log.segments
    active = segments[-1]
    start = log.log_start_offset
    checkpoint = start if last_clean_offset is None else last_clean_offset
    invalid = checkpoint < start or checkpoint > log.log_end_offset
    first_dirty = start if invalid else checkpoint
    non_active_dirty = segments[_floor_index(segments, first_dirty) : -1]
    if first_dirty >= active.base_offset:
        non_active_dirty = []
    limits = [log.last_stable_offset, active.base_offset]
    lag = max(log.config.min_compaction_lag_ms, 0)
    if lag > 0:
        for seg in non_active_dirty:
            if seg.largest_timestamp() > now_ms - lag:
                limits.append(seg.base_offset)
                break
    uncleanable = max(first_dirty, min(limits))
    # Rounded down to the segment holding it (Kafka's ``calculateCleanableBytes``).
    if uncleanable >= active.base_offset:
        first_uncleanable = active.base_offset
    else:
        first_uncleanable = segments[_floor_index(segments, uncleanable)].base_offset
    cleanable = _overlapping(segments, min(first_dirty, first_uncleanable), first_uncleanable)
    clean = [seg for seg in segments if seg.base_offset < first_dirty]
    return CleanableOffsets(
        first_dirty,
        first_uncleanable,
        sum(seg.size for seg in clean),
        sum(seg.size for seg in cleanable),
        _max_compaction_delay(log, non_active_dirty, now_ms),
        invalid,
    )


def _max_compaction_delay(log: Log, dirty: list[LogSegment], now_ms: int) -> int:
    """How long ago the oldest dirty segment's first batch became due for compaction under
    ``max.compaction.lag.ms`` (0: none is due)."""
    firsts = [
        seg.first_batch_timestamp
        for seg in dirty
        if seg.first_batch_timestamp is not None and seg.first_batch_timestamp > 0
    ]
    if not firsts:
        return 0
    clean_until = now_ms - max(log.config.max_compaction_lag_ms, 0)
    earliest = min(firsts)
    return clean_until - earliest if earliest < clean_until else 0


# -- the cleaner checkpoint ---------------------------------------------------------------------


def cleaner_checkpoint_path(log: Log) -> str:
    """``cleaner-offset-checkpoint`` in the log dir holding ``log``'s partition directory."""
    return os.path.join(os.path.dirname(os.path.abspath(log.directory)), CLEANER_OFFSET_CHECKPOINT)


def read_cleaner_checkpoint(log: Log) -> int | None:
    return read_offsets(cleaner_checkpoint_path(log)).get((log.topic, log.partition))


def write_cleaner_checkpoint(log: Log, first_dirty_offset: int) -> None:
    """Record ``log``'s first dirty offset, keeping the other logs' entries; an I/O error
    takes the log dir offline (``KafkaStorageError``)."""
    path = cleaner_checkpoint_path(log)
    with log.failures.guard(log.log_dir, _clean_failed(log)):
        offsets = read_offsets(path)
        offsets[(log.topic, log.partition)] = first_dirty_offset
        write_offsets(path, offsets)


def _clean_failed(log: Log) -> str:
    """Kafka's message for an I/O error while cleaning."""
    return (
        f"Failed to clean up log for {log.topic}-{log.partition} in dir {log.log_dir} "
        "due to IOException"
    )


# -- grouping -----------------------------------------------------------------------------------


@dataclass
class SourceSegment:
    """What the worker needs of one segment to clean, snapshotted on the owner thread. ``fd``
    is a descriptor of its own: the segment may be deleted (retention) while it is read."""

    segment: LogSegment  # identity, for the commit's check; never used by the worker
    base_offset: int
    size: int
    offset_index_bytes: int
    time_index_bytes: int
    mtime_ns: int
    fd: int = -1

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def group_segments_by_size(
    segments: list[SourceSegment],
    max_size: int,
    max_index_size: int,
    first_uncleanable_offset: int,
) -> list[list[SourceSegment]]:
    """Kafka's ``groupSegmentsBySize``: consecutive segments whose log, offset index and time
    index sizes each add up to at most ``max_size`` / ``max_index_size``, and whose offsets
    stay within an int32 of the group's base offset, are cleaned into one segment (so cleaned
    segments do not keep shrinking). The last offset of a segment is taken as the next one's
    base offset minus one (for the last, ``first_uncleanable_offset`` minus one)."""
    groups: list[list[SourceSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_size = segments[i].size
        index_size = segments[i].offset_index_bytes
        time_size = segments[i].time_index_bytes
        i += 1
        while i < len(segments):
            seg = segments[i]
            last = (
                segments[i + 1].base_offset - 1
                if i + 1 < len(segments)
                else first_uncleanable_offset - 1
            )
            if (
                log_size + seg.size > max_size
                or index_size + seg.offset_index_bytes > max_index_size
                or time_size + seg.time_index_bytes > max_index_size
                or (seg.size > 0 and last - group[0].base_offset > INT32_MAX)
            ):
                break
            group.append(seg)
            log_size += seg.size
            index_size += seg.offset_index_bytes
            time_size += seg.time_index_bytes
            i += 1
        groups.append(group)
    return groups


# -- transactions met while cleaning -----------------------------------------------------------


class _Transactions:
    """Kafka's ``CleanedTransactionMetadata``: the aborted transactions (from the
    ``.txnindex``) are taken up as the cleaner reaches their first offset; data batches of one
    of them are discarded; a marker can go when no data of its transaction was met."""

    def __init__(self, aborted: list[AbortedTxn]):
        self._pending = sorted(set(aborted), key=lambda txn: (txn.first_offset, txn.last_offset))
        self._next = 0
        self._aborted: dict[int, list] = {}  # producer id -> [AbortedTxn, data met]
        self._committed: set[int] = set()  # producers with data of an open commit met
        self.index: TransactionIndex | None = None  # where retained ABORT markers are indexed

    def _take_up_to(self, offset: int) -> None:
        while self._next < len(self._pending) and self._pending[self._next].first_offset <= offset:
            txn = self._pending[self._next]
            self._aborted.setdefault(txn.producer_id, [txn, False])
            self._next += 1

    def on_data_batch(self, batch: RecordBatch) -> bool:
        """Whether the batch belongs to an aborted transaction (its records all go)."""
        self._take_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        aborted = self._aborted.get(batch.producer_id)
        if aborted is not None:
            aborted[1] = True
            return True
        self._committed.add(batch.producer_id)
        return False

    def on_control_batch(self, batch: RecordBatch) -> bool:
        """Whether the marker may go: no data of its transaction was met by this cleaning."""
        self._take_up_to(batch.last_offset)
        record = next(iter(batch.records()), None) if batch.record_count else None
        if record is None:
            return True  # already emptied by an earlier cleaning
        kind, _ = decode_control_record(record)
        if kind == ControlRecordType.ABORT:
            aborted = self._aborted.pop(batch.producer_id, None)
            if aborted is not None and aborted[1]:
                if self.index is not None:
                    self.index.append(aborted[0])
                return False
            return True
        if kind == ControlRecordType.COMMIT:
            if batch.producer_id in self._committed:
                self._committed.discard(batch.producer_id)
                return False
            return True
        return False


# -- reading ------------------------------------------------------------------------------------


def _read_batches(
    fd: int, position: int, end: int, throttle: Throttle | None
) -> Iterator[RecordBatch]:
    """The batches of a segment file from ``position`` to ``end``, read a chunk at a time."""
    while position < end:
        chunk = os.pread(fd, min(READ_CHUNK_BYTES, end - position), position)
        if throttle is not None:
            throttle(len(chunk))
        view = memoryview(chunk)
        at = 0
        while at + LOG_OVERHEAD <= len(view):
            length = int.from_bytes(view[at + 8 : at + 12], "big", signed=True)
            if length < MIN_BATCH_LENGTH or position + at + length + LOG_OVERHEAD > end:
                raise CorruptSegmentError(f"bad batch length at {position + at}")
            if at + length + LOG_OVERHEAD > len(view):
                break
            yield RecordBatch(view[at : at + length + LOG_OVERHEAD])
            at += length + LOG_OVERHEAD
        if at == 0:  # one batch larger than a chunk
            if len(view) < LOG_OVERHEAD:
                raise CorruptSegmentError(f"torn batch header at {position}")
            size = int.from_bytes(view[8:12], "big", signed=True) + LOG_OVERHEAD
            big = os.pread(fd, size, position)
            if throttle is not None:
                throttle(len(big))
            yield RecordBatch(big)
            at = size
        position += at


# -- the job ------------------------------------------------------------------------------------


@dataclass
class CleanerStats:
    """What one cleaning did, as Kafka's ``CleanerStats`` counts it for its summary line:
    ``bytes_read`` by the cleaning pass, ``map_bytes_read`` while building the offset map;
    the times are ``time.monotonic()`` seconds (a report, not a decision)."""

    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    records_read: int = 0
    records_kept: int = 0
    records_removed: int = 0
    keyless_records: int = 0  # records without a key in a compacted log: dropped, as Kafka
    map_records: int = 0  # records read to build the offset map
    map_utilization: float = 0.0
    start_s: float = 0.0
    map_done_s: float = 0.0
    end_s: float = 0.0

    @property
    def elapsed_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def elapsed_index_s(self) -> float:
        return self.map_done_s - self.start_s


class CleanResult(NamedTuple):
    committed: bool  # False: abandoned (the log changed meanwhile), nothing swapped in
    first_dirty_offset: int  # where the next cleaning starts (write it to the checkpoint)
    map_full: bool  # the offset map filled up before the first uncleanable offset
    stats: CleanerStats


@dataclass
class CleaningJob:
    """One cleaning of one log: ``prepare_cleaning`` → ``run`` (any thread) → ``commit``."""

    log: Log
    directory: str
    first_dirty_offset: int
    first_uncleanable_offset: int
    sources: list[SourceSegment]
    dirty_start_position: int  # where the map's read starts in the first dirty segment
    aborted: list[AbortedTxn]
    last_batches: dict[int, tuple[int, int]]  # producer id -> (last data offset or -1, epoch)
    segment_bytes: int
    max_index_bytes: int
    index_interval_bytes: int
    delete_retention_ms: int
    now_ms: int
    dedupe_buffer_bytes: int
    load_factor: float
    truncations: int
    end_offset: int = -1
    map_full: bool = False
    output: list[tuple[list[SourceSegment], LogSegment]] = field(default_factory=list)
    stats: CleanerStats = field(default_factory=CleanerStats)
    _map: OffsetMap | None = None

    # -- the worker's part ---------------------------------------------------------------
    def run(self, throttle: Throttle | None = None, step: Step | None = None) -> None:
        """Build the offset map and write the cleaned segments as ``.cleaned`` files. Reads
        only this job's descriptors and writes only new files, so it may run on a worker
        thread while the log's owner appends and reads. ``throttle(n)`` is called for every
        ``n`` bytes read or written (``log.cleaner.io.max.bytes.per.second``); ``step`` is a
        test hook, called with ``"after-cleaned-written"`` once every file is durable.
        An I/O error (a full disk) takes the log dir offline (Kafka's cleaner reports it to
        the failure channel) and raises ``KafkaStorageError``."""
        log = self.log
        self.stats.start_s = time.monotonic()
        with log.failures.guard(log.log_dir, _clean_failed(log)):
            offset_map = OffsetMap(self.dedupe_buffer_bytes, self.load_factor)
            self._map = offset_map
            self._build_offset_map(offset_map, throttle)
            self.stats.map_done_s = time.monotonic()
            self.end_offset = offset_map.latest_offset + 1
            self.stats.map_utilization = offset_map.utilization
            to_clean = [src for src in self.sources if src.base_offset < self.end_offset]
            groups = group_segments_by_size(
                to_clean, self.segment_bytes, self.max_index_bytes, self.first_uncleanable_offset
            )
            transactions = _Transactions(self.aborted)
            try:
                for group in groups:
                    self.output.append((group, self._clean_group(group, transactions, throttle)))
            except BaseException:
                self._delete_output()
                raise
        self.stats.end_s = time.monotonic()
        if step is not None:
            step("after-cleaned-written")

    def _build_offset_map(self, offset_map: OffsetMap, throttle: Throttle | None) -> None:
        """Kafka's ``buildOffsetMap``: the last offset of every key in the dirty segments,
        records of aborted transactions left out, until the map is full."""
        start = self.first_dirty_offset
        transactions = _Transactions([t for t in self.aborted if t.last_offset >= start])
        dirty = [
            (i, src)
            for i, src in enumerate(self.sources)
            if i + 1 == len(self.sources) or self.sources[i + 1].base_offset > start
        ]
        for n, (i, src) in enumerate(dirty):
            position = self.dirty_start_position if n == 0 else 0
            next_base = (
                self.sources[i + 1].base_offset
                if i + 1 < len(self.sources)
                else self.first_uncleanable_offset
            )
            for batch in _read_batches(src.fd, position, src.size, throttle):
                self.stats.map_bytes_read += len(batch)
                if batch.is_control:
                    transactions.on_control_batch(batch)
                elif not transactions.on_data_batch(batch):
                    for record in batch.records():
                        self.stats.map_records += 1
                        if record.key is not None and record.offset >= start:
                            if offset_map.size >= offset_map.capacity:
                                self.map_full = True
                                return
                            offset_map.put(record.key, record.offset)
                if batch.last_offset >= start:
                    offset_map.update_latest_offset(batch.last_offset)
            # Holes at the end of a segment: the map covers up to the next one.
            offset_map.update_latest_offset(next_base - 1)

    def _clean_group(
        self, group: list[SourceSegment], transactions: _Transactions, throttle: Throttle | None
    ) -> LogSegment:
        base = group[0].base_offset
        prefix = os.path.join(self.directory, filename_prefix(base))
        for name in (".log", ".index", ".timeindex", ".txnindex"):
            if os.path.exists(prefix + name + CLEANED_SUFFIX):
                os.unlink(prefix + name + CLEANED_SUFFIX)
        cleaned = LogSegment(
            self.directory,
            base,
            index_interval_bytes=self.index_interval_bytes,
            max_index_bytes=self.max_index_bytes,
            created_ms=self.now_ms,
            file_suffix=CLEANED_SUFFIX,
        )
        try:
            # Always there, even empty: recovery reads a final name without a ``.swap`` twin
            # as the replacement's own file.
            cleaned.txn_index.create()
            transactions.index = cleaned.txn_index
            for src in group:
                out = bytearray()
                for batch in _read_batches(src.fd, 0, src.size, throttle):
                    self.stats.bytes_read += len(batch)
                    kept = self._filter_batch(batch, transactions)
                    if kept is not None:
                        out += kept
                    if len(out) >= READ_CHUNK_BYTES:
                        self._write(cleaned, out, throttle)
                        out = bytearray()
                if out:
                    self._write(cleaned, out, throttle)
            cleaned.on_become_inactive()
            cleaned.flush()
            # Kafka keeps the last old segment's modification time (segments without timestamps
            # fall back on it for retention and the compaction lag).
            os.utime(cleaned.log_path, ns=(group[-1].mtime_ns, group[-1].mtime_ns))
        except BaseException:
            cleaned.delete()
            raise
        return cleaned

    def _write(self, cleaned: LogSegment, data: bytearray, throttle: Throttle | None) -> None:
        cleaned.append(data, list(iter_headers(data)))
        self.stats.bytes_written += len(data)
        if throttle is not None:
            throttle(len(data))

    def _is_last_batch_of_producer(self, batch: RecordBatch) -> bool:
        last = self.last_batches.get(batch.producer_id)
        if batch.producer_id < 0 or last is None:
            return False
        last_data_offset, epoch = last
        if last_data_offset >= 0:
            return batch.last_offset == last_data_offset
        return batch.is_control and batch.producer_epoch == epoch

    def _filter_batch(self, batch: RecordBatch, transactions: _Transactions) -> bytes | None:
        """What of ``batch`` the cleaned segment keeps: the batch itself, a rebuilt batch, an
        empty header, or nothing (Kafka's ``cleanInto`` filter and ``MemoryRecords.filterTo``)."""
        horizon = batch.delete_horizon_ms
        if batch.is_control:
            discardable = transactions.on_control_batch(batch)
            drop_records = discardable and horizon is not None and horizon <= self.now_ms
        else:
            discardable = transactions.on_data_batch(batch)
            drop_records = discardable
        retain_empty = (
            self._is_last_batch_of_producer(batch)
            or batch.next_offset == self.first_uncleanable_offset
        )
        if drop_records and not retain_empty:
            self.stats.records_removed += batch.record_count
            return None
        records = list(batch.records())
        self.stats.records_read += len(records)
        kept = [r for r in records if not drop_records and self._retain(batch, horizon, r)]
        self.stats.records_kept += len(kept)
        self.stats.records_removed += len(records) - len(kept)
        if not kept:
            return bytes(build_empty_batch(batch)) if retain_empty else None
        needs_horizon = horizon is None and (
            any(r.value is None for r in kept) or (discardable and batch.is_control)
        )
        if len(kept) == len(records) and not needs_horizon:
            return bytes(batch.buffer)
        return bytes(self._rebuild(batch, kept, horizon, needs_horizon))

    def _retain(self, batch: RecordBatch, horizon: int | None, record: Record) -> bool:
        """Kafka's ``shouldRetainRecord``."""
        if batch.is_control:
            return True
        offset_map = self._map
        assert offset_map is not None
        if record.offset > offset_map.latest_offset:
            return True
        if record.key is None:
            self.stats.keyless_records += 1
            return False
        if record.offset < offset_map.get(record.key):
            return False
        return record.value is not None or horizon is None or self.now_ms < horizon

    def _rebuild(
        self, batch: RecordBatch, kept: list[Record], horizon: int | None, needs_horizon: bool
    ) -> bytearray:
        """The kept records in a batch with the original's base offset, offset range, codec and
        producer fields (Kafka's ``buildRetainedRecordsInto``)."""
        if needs_horizon:
            horizon = self.now_ms + self.delete_retention_ms
        log_append = batch.timestamp_type == TIMESTAMP_LOG_APPEND_TIME
        builder = RecordBatchBuilder(
            compression=batch.compression,
            base_offset=batch.base_offset,
            partition_leader_epoch=batch.partition_leader_epoch,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            is_control=batch.is_control,
            timestamp_type=batch.timestamp_type,
            delete_horizon_ms=NO_TIMESTAMP if horizon is None else horizon,
        )
        for record in kept:
            builder.append(
                record.timestamp,
                record.key,
                record.value,
                record.headers,
                offset_delta=record.offset - batch.base_offset,
            )
        return builder.build(
            last_offset_delta=batch.last_offset_delta,
            max_timestamp=batch.max_timestamp if log_append else None,
        )

    # -- the owner's part ----------------------------------------------------------------
    def _log_unchanged(self) -> bool:
        log = self.log
        if log.closed or log.truncations != self.truncations:
            return False
        current = {id(seg): seg for seg in log.segments}
        return all(
            id(src.segment) in current and src.segment.size == src.size for src in self.sources
        )

    def commit(self, step: Step | None = None) -> CleanResult:
        """On the log's owner thread: swap the cleaned segments in if the log still holds the
        very segments read, unchanged; otherwise delete them. Returns where the next cleaning
        starts (unchanged when abandoned) and the statistics. ``step``: see
        ``Log.replace_segments``."""
        try:
            replaced = False
            if self.end_offset >= 0 and self._log_unchanged():
                replaced = self.log.replace_segments(
                    [([src.segment for src in group], new) for group, new in self.output], step
                )
            if not replaced:
                self._delete_output()
                return CleanResult(False, self.first_dirty_offset, self.map_full, self.stats)
            return CleanResult(True, self.end_offset, self.map_full, self.stats)
        finally:
            self._close_sources()

    def abandon(self) -> None:
        """Give the job up (on the owner thread, after ``run`` or instead of it)."""
        self._delete_output()
        self._close_sources()

    def _delete_output(self) -> None:
        for _, new in self.output:
            new.delete()
        self.output = []

    def _close_sources(self) -> None:
        for src in self.sources:
            src.close()


def prepare_cleaning(
    log: Log,
    offsets: CleanableOffsets,
    *,
    now_ms: int,
    dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
    load_factor: float = DEFAULT_LOAD_FACTOR,
) -> CleaningJob | None:
    """On the log's owner thread: snapshot what a cleaning of ``log`` up to
    ``offsets.first_uncleanable_offset`` needs. None when there is nothing dirty to clean."""
    first_dirty, first_uncleanable = offsets.first_dirty_offset, offsets.first_uncleanable_offset
    if first_dirty >= first_uncleanable:
        return None
    segments = [seg for seg in log.segments[:-1] if seg.base_offset < first_uncleanable]
    if not segments:
        return None
    sources = []
    try:
        for seg in segments:
            sources.append(
                SourceSegment(
                    seg,
                    seg.base_offset,
                    seg.size,
                    seg.offset_index.size_bytes,
                    seg.time_index.size_bytes,
                    os.stat(seg.log_path).st_mtime_ns,
                    os.dup(seg.fd),
                )
            )
    except BaseException:
        for src in sources:
            src.close()
        raise
    first_dirty_segment = segments[_floor_index(segments, first_dirty)]
    last_batches = {
        pid: (entry.last_data_offset, entry.producer_epoch)
        for pid, entry in log.producer_state.producers.items()
    }
    cfg = log.config
    return CleaningJob(
        log=log,
        directory=log.directory,
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        sources=sources,
        dirty_start_position=first_dirty_segment.offset_index.lookup(first_dirty)[1],
        aborted=log.collect_aborted(segments[0].base_offset, first_uncleanable),
        last_batches=last_batches,
        segment_bytes=cfg.segment_size,
        max_index_bytes=cfg.segment_index_bytes,
        index_interval_bytes=cfg.index_interval_bytes,
        delete_retention_ms=cfg.delete_retention_ms,
        now_ms=now_ms,
        dedupe_buffer_bytes=dedupe_buffer_bytes,
        load_factor=load_factor,
        truncations=log.truncations,
    )


def clean(
    log: Log,
    *,
    now_ms: int | None = None,
    last_clean_offset: int | None = None,
    use_checkpoint: bool = True,
    dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
    load_factor: float = DEFAULT_LOAD_FACTOR,
    throttle: Throttle | None = None,
    step: Step | None = None,
) -> CleanResult | None:
    """Clean ``log`` now, in this thread (tests, tools). The first dirty offset comes from
    ``last_clean_offset``, else (``use_checkpoint``) from the log dir's cleaner checkpoint,
    which is then updated. None when nothing may be cleaned. Ignores ``min.cleanable.dirty.
    ratio``: see ``CleanableOffsets.should_clean`` for the scheduler's choice."""
    if now_ms is None:
        now_ms = log._now_ms()
    if last_clean_offset is None and use_checkpoint:
        last_clean_offset = read_cleaner_checkpoint(log)
    offsets = cleanable_offsets(log, last_clean_offset, now_ms)
    job = prepare_cleaning(
        log,
        offsets,
        now_ms=now_ms,
        dedupe_buffer_bytes=dedupe_buffer_bytes,
        load_factor=load_factor,
    )
    if job is None:
        return None
    try:
        job.run(throttle, step)
    except BaseException:
        job.abandon()
        raise
    result = job.commit(step)
    if use_checkpoint and result.committed:
        write_cleaner_checkpoint(log, result.first_dirty_offset)
    return result
