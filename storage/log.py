"""``Log``: one partition's log, a directory of segments (Kafka's ``UnifiedLog`` + ``LocalLog``).

Offsets: ``log_start_offset`` ≤ ``high_watermark`` ≤ ``log_end_offset`` always (asserted).
The log end offset is the next offset to be assigned; the high watermark is set by the caller
(replication) and bounds what consumers see (pass it as ``upper_bound`` to ``read``).

Transactions: ``last_stable_offset`` is the smaller of the high watermark and the first offset
of the oldest open transaction (read_committed consumers read below it). ``append_marker``
writes a COMMIT/ABORT control batch for a producer; an ABORT adds an ``AbortedTxn`` entry to the
``.txnindex`` of the segment holding the marker, and ``collect_aborted`` answers which aborted
transactions overlap a fetched range. The index is rebuilt from the log when a segment is
re-scanned (entries past the recovered end are dropped) and by the replay of batch headers after
the producer-state snapshot (``AbortedTxn`` entries are added again where missing).

Deliberate differences from Kafka:

- Segments are deleted at once instead of being renamed ``.deleted`` and removed after
  ``file.delete.delay.ms``; leftover ``.deleted``/``.cleaned``/``.tmp`` files from Kafka (or a
  crash) are removed on open.

Compaction (``storage.cleaner``) swaps cleaned segments in with ``replace_segments``, as Kafka's
``replaceSegments``: the new segment's files go from ``.cleaned`` to ``.swap`` (indexes first,
the ``.log`` last), the old segments are deleted, then the ``.swap`` files take the final names.
On open a ``<base>.log.swap`` is a complete replacement that a crash interrupted: the old
segments whose base offsets fall in its offset range are deleted and the swap files renamed into
place (Kafka's ``LogLoader``); every other ``.swap`` and ``.cleaned`` file is deleted.
- ``segment.jitter.ms`` is ignored (Kafka subtracts a random jitter from ``segment.ms``).
- ``read`` may return batches from several consecutive segments in one call (Kafka stops at the
  end of the first segment); clients accept either.
- Without ``min_one_batch``, a first batch larger than ``max_bytes`` yields no data rather than
  a truncated partial batch.
- Index files are not preallocated or memory mapped.
"""

from __future__ import annotations

import bisect
import functools
import logging
import os
import shutil
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from wireserver.protocol.errors import DecodeError
from wireserver.protocol.records import (
    NO_PARTITION_LEADER_EPOCH,
    RecordBatch,
    build_control_batch,
    decode_control_record,
)
from wireserver.storage.batches import (
    BatchHeader,
    iter_headers,
    iter_record_timestamps,
    read_header,
    set_base_offset_and_epoch,
    set_log_append_time,
)
from wireserver.storage.changes import ChangeJournal
from wireserver.storage.checkpoint import fsync_dir
from wireserver.storage.configdef import LONG_MAX
from wireserver.storage.epochs import LeaderEpochCache
from wireserver.storage.errors import (
    InvalidOffset,
    InvalidProducerEpoch,
    LogInvariantError,
    OffsetOutOfRange,
    TransactionCoordinatorFenced,
)
from wireserver.storage.file_records import FileRecords, FileRegion
from wireserver.storage.index import IndexMemory
from wireserver.storage.log_config import LogConfig
from wireserver.storage.log_dir_failure import LogDirFailureChannel
from wireserver.storage.open_files import OpenFiles
from wireserver.storage.producer_state import CompletedTxn, ProducerStateManager
from wireserver.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    filename_prefix,
)
from wireserver.storage.txn_index import TXN_INDEX_SUFFIX, AbortedTxn

logger = logging.getLogger(__name__)

#: Below this a stretch of a segment is read into memory even for a zero-copy read: for a few
#: kilobytes one pread and an ordinary socket write cost less Python work than handing a
#: descriptor over for sendfile.
ZERO_COPY_MIN_BYTES = 64 * 1024
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
_STRAY_SUFFIXES = (".deleted", CLEANED_SUFFIX, SWAP_SUFFIX, ".tmp")
_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


class AppendResult(NamedTuple):
    base_offset: int  # offset of the first record appended
    last_offset: int  # offset of the last record appended
    log_append_time: int  # the broker time stamped on the batches, -1 unless LogAppendTime
    log_start_offset: int
    duplicate: bool = False  # a retried idempotent batch: nothing written, original offsets


class ReadResult(NamedTuple):
    data: bytes | FileRecords  # whole batches, possibly empty
    first_offset: int  # base offset of the first batch returned, -1 if none
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    next_offset: int = -1  # the offset after the last batch returned, -1 if none


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _storage_io(what: str) -> Callable[[_Method], _Method]:
    """Run a ``Log`` method as Kafka's ``maybeHandleIOException`` does (``what`` starts
    Kafka's message, which goes on with the partition and the dir): refused with
    ``KafkaStorageError`` once the log dir is offline; an ``OSError`` inside (ENOSPC, EIO) is
    reported to the log dir's failure channel, which takes the dir offline, and raised as
    ``KafkaStorageError`` (the partition's KAFKA_STORAGE_ERROR)."""

    def wrap(method: _Method) -> _Method:
        @functools.wraps(method)
        def run(self: Log, *args: Any, **kwargs: Any) -> Any:
            failures = self.failures
            failures.check(self.log_dir)
            try:
                return method(self, *args, **kwargs)
            except OSError as exc:
                message = f"{what} {self.topic}-{self.partition} in dir {self.log_dir}"
                failures.raise_failure(self.log_dir, message, exc)
                raise  # not reached: raise_failure raises

        return run  # type: ignore[return-value]

    return wrap


def parse_partition_dir(name: str) -> tuple[str, int]:
    """``my-topic-3`` → (``my-topic``, 3). Raises ValueError for anything else."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"not a partition directory name: {name!r}")
    return topic, int(partition)


class Log:
    """One partition's log. Use ``Log.open``. Not thread-safe except ``flush``.

    Every write (appends, rolls, flushes, truncation, deletion, compaction swaps) goes through
    ``failures``, the log dirs' failure channel (``storage.log_dir_failure``): an I/O error
    takes the log's dir (``log_dir``) offline and raises ``KafkaStorageError``."""

    def __init__(
        self,
        directory: str,
        config: LogConfig,
        now_ms: Callable[[], int],
        producer_id_expiration_ms: int = 86_400_000,
        failures: LogDirFailureChannel | None = None,
        open_files: OpenFiles | None = None,
        index_memory: IndexMemory | None = None,
    ):
        self.directory = directory
        self.open_files = open_files  # the broker's descriptor pool (storage.open_files)
        # the broker's cap on inactive segments' index entries in memory (storage.index)
        self.index_memory = index_memory
        self.log_dir = os.path.dirname(os.path.abspath(directory))
        self.failures = failures if failures is not None else LogDirFailureChannel()
        self.config = config
        self._now_ms = now_ms
        try:
            self.topic, self.partition = parse_partition_dir(os.path.basename(directory))
        except ValueError:
            self.topic, self.partition = os.path.basename(directory), 0
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._log_start_offset = 0
        self._high_watermark = 0
        self.recovery_point = 0
        self.last_flush_ms = now_ms()
        # The manager's set of logs written since their last flush check (LogManager.
        # logs_due_for_flush walks it, not every log): appends add this log to it.
        self.flush_watch: set[Log] | None = None
        #: The manager's journal of changes a Fetch answer can show (``storage.changes``):
        #: every change of the log end, high watermark, log start, open transactions or of
        #: the log's files stamps the topic there (``fetch_state_changed``).
        self.changes: ChangeJournal | None = None
        #: The replica layer's partition made for this log (``ReplicaManager.partition``): a
        #: wide Fetch finds it through the log it looks up anyway, without a second lookup.
        #: Storage never reads it.
        self.replica: Any = None
        self.leader_epoch_cache: LeaderEpochCache
        self.producer_state = ProducerStateManager(directory, producer_id_expiration_ms)
        # the producer state's open transactions, which it never rebinds: a wide Fetch
        # reads them for every log it answers, and this saves touching the state itself
        self._ongoing_txns = self.producer_state.ongoing
        # Observability for tests and operators.
        self.recovered_segments = 0  # segments re-scanned (CRC-checked) on open
        self.rebuilt_indexes = 0  # of which because an index was missing or inconsistent
        self.truncated_bytes = 0  # bytes cut from torn or corrupt tails on open
        self.completed_swaps = 0  # interrupted compaction swaps finished on open
        # Bumped whenever segments are cut or emptied in place (truncation): a compaction
        # planned before then must not swap in segments built from the old bytes.
        self.truncations = 0
        self.closed = False

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        directory: str,
        config: LogConfig,
        *,
        now_ms: Callable[[], int],
        recover: bool,
        recovery_point: int = 0,
        log_start_offset: int | None = None,
        high_watermark: int | None = None,
        producer_id_expiration_ms: int = 86_400_000,
        failures: LogDirFailureChannel | None = None,
        open_files: OpenFiles | None = None,
        index_memory: IndexMemory | None = None,
    ) -> Log:
        """Open (creating if needed) the log in ``directory``.

        ``recover=True`` (no clean-shutdown marker) re-scans every segment from the one holding
        ``recovery_point`` on: CRCs are checked, the first torn or corrupt batch and everything
        after it (later segments included) is cut off, and indexes are rebuilt. With
        ``recover=False`` segments are loaded from their indexes, and only a segment whose index
        is missing or inconsistent (or whose tail does not walk) is re-scanned.
        ``log_start_offset`` / ``high_watermark`` come from the log dir's checkpoints.
        Producer state is then loaded from the newest snapshot and rebuilt from the batch
        headers after it.
        """
        os.makedirs(directory, exist_ok=True)
        log = cls(
            directory, config, now_ms, producer_id_expiration_ms, failures, open_files, index_memory
        )
        log._load(recover, recovery_point, log_start_offset, high_watermark)
        return log

    def _new_segment(self, base_offset: int) -> LogSegment:
        return LogSegment(
            self.directory,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_bytes=self.config.segment_index_bytes,
            created_ms=self._now_ms(),
            open_files=self.open_files,
        )

    def _load(
        self,
        recover: bool,
        recovery_point: int,
        log_start_offset: int | None,
        high_watermark: int | None,
    ) -> None:
        names = os.listdir(self.directory)
        if names:  # a new partition's directory is empty: nothing to complete or sweep
            self._complete_interrupted_swaps()
            names = os.listdir(self.directory)
        bases: set[int] = set()
        for name in names:
            path = os.path.join(self.directory, name)
            if name.endswith(_STRAY_SUFFIXES):
                if os.path.isfile(path):
                    os.unlink(path)
                continue
            stem, ext = os.path.splitext(name)
            if (
                ext in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
                and stem.isdigit()
            ):
                if ext == LOG_SUFFIX:
                    bases.add(int(stem))
        # Indexes without a log file are orphans.
        for name in os.listdir(self.directory) if names else ():
            stem, ext = os.path.splitext(name)
            if (
                ext in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
                and stem.isdigit()
                and int(stem) not in bases
            ):
                os.unlink(os.path.join(self.directory, name))
        ordered = sorted(bases)
        segments: list[LogSegment] = []
        # (leader epoch, base offset) of the batches recovery re-scans: the epoch checkpoint
        # may have lost them in a crash (``LeaderEpochCache.assign`` writes without fsync).
        recovered_epochs: list[tuple[int, int]] = []
        for i, base in enumerate(ordered):
            seg = self._new_segment(base)
            upper = ordered[i + 1] if i + 1 < len(ordered) else None
            needs_scan = recover and (upper is None or upper > recovery_point)
            if needs_scan:
                self.recovered_segments += 1
                truncated = seg.recover(epochs=recovered_epochs)
            elif seg.load():
                truncated = 0
            else:
                self.recovered_segments += 1
                self.rebuilt_indexes += 1
                truncated = seg.recover(epochs=recovered_epochs)
            segments.append(seg)
            if truncated:
                self.truncated_bytes += truncated
                # Everything after a torn or corrupt batch is gone, later segments included.
                for later in ordered[i + 1 :]:
                    doomed = self._new_segment(later)
                    doomed.delete()
                break
        if not segments:
            start = log_start_offset if log_start_offset is not None else 0
            segments.append(self._new_segment(start))
        # An empty segment (other than the last) is dropped; a rolled empty segment can remain
        # after a crash.
        self._segments = [s for s in segments[:-1] if s.size > 0] + [segments[-1]]
        for s in segments[:-1]:
            if s.size == 0:
                s.delete()
        self._bases = [s.base_offset for s in self._segments]
        for seg in self._segments:
            if seg.dirty:
                seg.flush()
        for seg in self._segments[:-1]:
            seg.seal_indexes(self.index_memory)
        leo = self.log_end_offset
        first_base = self._segments[0].base_offset
        start = first_base if log_start_offset is None else max(log_start_offset, first_base)
        self._log_start_offset = min(start, leo)
        self.leader_epoch_cache = LeaderEpochCache(self.directory)
        for epoch, offset in recovered_epochs:
            self.leader_epoch_cache.assign(epoch, offset)
        self.leader_epoch_cache.truncate_from_end(leo)
        self.leader_epoch_cache.truncate_from_start(self._log_start_offset)
        hw = self._log_start_offset if high_watermark is None else high_watermark
        self._high_watermark = min(max(hw, self._log_start_offset), leo)
        self.recovery_point = leo
        self._check_invariants()
        self.producer_state.load(self._log_start_offset, leo, self._now_ms())
        self._replay_producer_state()

    def _complete_interrupted_swaps(self) -> None:
        """Finish the compaction swaps a crash interrupted (Kafka's ``LogLoader``): a
        ``<base>.log.swap`` exists only once its segment was complete and fsynced, so the old
        segments whose base offsets fall in its range are deleted and its files renamed into
        place. A swap at or above the lowest ``.cleaned`` file belongs to an unfinished cleaning
        and is left for the stray-file sweep, as in Kafka."""
        names = os.listdir(self.directory)
        cleaned = [
            int(name.split(".", 1)[0])
            for name in names
            if name.endswith(CLEANED_SUFFIX) and name.split(".", 1)[0].isdigit()
        ]
        lowest_cleaned = min(cleaned, default=None)
        for name in sorted(names):
            stem = name.split(".", 1)[0]
            if name != stem + LOG_SUFFIX + SWAP_SUFFIX or not stem.isdigit():
                continue
            if lowest_cleaned is not None and int(stem) >= lowest_cleaned:
                continue
            self._complete_swap(int(stem))
            self.completed_swaps += 1

    def _complete_swap(self, base: int) -> None:
        swap = LogSegment(
            self.directory,
            base,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_bytes=self.config.segment_index_bytes,
            file_suffix=SWAP_SUFFIX,
        )
        swap.recover()  # rebuilds its offset and time indexes; its txnindex is kept
        swap.flush()
        end = max(swap.next_offset, base + 1)
        swap.close()
        prefix = os.path.join(self.directory, "")
        for name in os.listdir(self.directory):
            stem, ext = os.path.splitext(name)
            if ext != LOG_SUFFIX or not stem.isdigit() or not base <= int(stem) < end:
                continue
            old = prefix + stem
            os.unlink(old + LOG_SUFFIX)
            if int(stem) != base:
                # The replacement has files at ``base`` only; a final index name there is
                # the new one once its swap file is gone (the cleaner always writes all four).
                for suffix in _INDEX_SUFFIXES:
                    if os.path.exists(old + suffix):
                        os.unlink(old + suffix)
        new = prefix + filename_prefix(base)
        for suffix in _INDEX_SUFFIXES:
            if os.path.exists(new + suffix + SWAP_SUFFIX):
                os.replace(new + suffix + SWAP_SUFFIX, new + suffix)
        os.replace(new + LOG_SUFFIX + SWAP_SUFFIX, new + LOG_SUFFIX)
        fsync_dir(self.directory)

    def _replay_producer_state(self) -> int:
        """Bring producer state from its map end offset up to the log end by reading batch
        headers (no records). Returns the number of batches replayed."""
        state = self.producer_state
        start = max(state.map_end_offset, self._log_start_offset)
        count = 0
        for i, seg in enumerate(self._segments):
            if seg.size == 0 or self._upper_bound(i) <= start:
                continue
            if seg.base_offset < start:
                found = seg.find(start)
                if found is None:
                    continue
                position = found[0]
            else:
                position = 0
            for pos, header in seg.walk(position):
                if header.last_offset >= start:
                    control, coordinator_epoch = (
                        self._control(seg, pos, header) if header.is_control else (None, -1)
                    )
                    completed = state.replay(header, control, coordinator_epoch)
                    if completed is not None:
                        self._index_completed(seg, completed)
                    count += 1
        state.map_end_offset = self.log_end_offset
        state.replayed_batches = count
        return count

    @staticmethod
    def _control(seg: LogSegment, position: int, header: BatchHeader) -> tuple[int | None, int]:
        return _control_of(seg.read(position, header.size))

    def _index_completed(self, seg: LogSegment, completed: CompletedTxn) -> None:
        if completed.is_aborted:
            lso = self.producer_state.last_stable_offset_after(completed)
            seg.txn_index.append(
                AbortedTxn(
                    completed.producer_id, completed.first_offset, completed.last_offset, lso
                )
            )

    def _rebuild_producer_state(self) -> None:
        """After truncation: reload the newest snapshot at or below the new end, replay."""
        self.producer_state.load(self._log_start_offset, self.log_end_offset, self._now_ms())
        self._replay_producer_state()

    # -- properties ----------------------------------------------------------------------
    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def name(self) -> str:
        """``topic-partition``, as Kafka's log lines name a partition."""
        return f"{self.topic}-{self.partition}"

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        """Set the high watermark, clamped to [log start offset, log end offset]."""
        offset = min(max(offset, self._log_start_offset), self.log_end_offset)
        if offset != self._high_watermark:
            self._high_watermark = offset
            self.fetch_state_changed()

    def fetch_state_changed(self) -> None:
        """Stamp this log's topic in the manager's change journal (``storage.changes``)."""
        if self.changes is not None:
            self.changes.stamp(self.topic)

    @property
    def first_unstable_offset(self) -> int | None:
        return self.producer_state.first_unstable_offset()

    def fetch_offsets(self) -> tuple[int, int, int]:
        """(high watermark, last stable offset, log start offset), what a Fetch reports for
        each partition, in one call (a wide Fetch reads them for thousands of logs)."""
        hw = self._high_watermark
        # last_stable_offset's shortcut written out: with these three reads as calls, a Fetch
        # of 10,000 caught-up partitions took some 12 % longer (measured).
        if not self._ongoing_txns:
            return hw, hw, self._log_start_offset
        return hw, self.last_stable_offset, self._log_start_offset

    @property
    def last_stable_offset(self) -> int:
        """min(first offset of the oldest open transaction, high watermark)."""
        hw = self._high_watermark
        if not self._ongoing_txns:  # most logs: no call (a wide Fetch reads each)
            return hw
        first = self.producer_state.first_unstable_offset()
        return hw if first is None or first > hw else max(first, self._log_start_offset)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), oldest first. Markers
        follow their data, so the search starts at the segment holding ``fetch_offset`` and
        stops after a segment with an entry whose LSO reaches ``upper_bound`` (Kafka's
        ``isComplete``), or at the end of the log."""
        out: list[AbortedTxn] = []
        for i in range(self._segment_index_for(fetch_offset), len(self._segments)):
            found, complete = self._segments[i].txn_index.collect(fetch_offset, upper_bound)
            out.extend(found)
            if complete:
                break
        return out

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def _check_invariants(self) -> None:
        if not self._log_start_offset <= self._high_watermark <= self.log_end_offset:
            raise LogInvariantError(
                f"{self.directory}: log start {self._log_start_offset} <= high watermark "
                f"{self._high_watermark} <= log end {self.log_end_offset} does not hold"
            )

    def _upper_bound(self, index: int) -> int:
        """Offsets of segment ``index`` lie below this."""
        if index + 1 < len(self._segments):
            return self._segments[index + 1].base_offset
        return self.log_end_offset

    # -- appending -----------------------------------------------------------------------
    def _roll_if_needed(
        self, size: int, max_timestamp: int, first_offset: int, last_offset: int, now_ms: int
    ) -> None:
        active = self.active_segment
        if active.should_roll(
            segment_bytes=self.config.segment_size,
            segment_ms=self.config.segment_ms,
            incoming_size=size,
            incoming_max_timestamp=max_timestamp,
            last_offset=last_offset,
            now_ms=now_ms,
        ):
            self.roll(first_offset)

    @_storage_io("Error while rolling log segment for")
    def roll(self, base_offset: int | None = None) -> LogSegment:
        """Start a new active segment at ``base_offset`` (default: the log end offset)."""
        start_ms = self._now_ms()
        active = self.active_segment
        if base_offset is None:
            base_offset = self.log_end_offset
        if active.size == 0:
            if active.base_offset == base_offset:
                return active
            # An empty active segment is replaced rather than left behind.
            self._segments.pop()
            self._bases.pop()
            active.delete()
        else:
            active.on_become_inactive()
            active.seal_indexes(self.index_memory)
        seg = self._new_segment(base_offset)
        self._segments.append(seg)
        self._bases.append(base_offset)
        if self.producer_state.map_end_offset == base_offset:
            # Kafka snapshots producer state at every roll; fsynced by the next flush.
            self.producer_state.take_snapshot(sync=False)
        logger.info(
            "[LocalLog partition=%s, dir=%s] Rolled new log segment at offset %d in %d ms.",
            self.name,
            self.log_dir,
            base_offset,
            self._now_ms() - start_ms,
        )
        return seg

    @_storage_io("Error while appending records to")
    def append(
        self,
        buf,
        leader_epoch: int,
        now_ms: int | None = None,
        *,
        check_sequences: bool = True,
        headers: list[tuple[int, BatchHeader]] | None = None,
    ) -> AppendResult:
        """Append validated batches as leader: assign offsets from the log end offset by
        patching each batch's baseOffset, stamp ``leader_epoch`` and (for LogAppendTime
        topics) the append time, write them to the active segment and index them.
        ``buf`` must be writable (a bytearray or a memoryview of one); it is patched in place.
        ``headers``: the (position, header) of each of its batches as validation read them
        (``storage.validation.validate_batches``), else read here."""
        if now_ms is None:
            now_ms = self._now_ms()
        view = memoryview(buf)
        if view.readonly:
            raise TypeError("append needs a writable buffer (it patches offsets in place)")
        log_append = self.config.message_timestamp_type == "LogAppendTime"
        first_offset = next_offset = self.log_end_offset
        incoming = list(iter_headers(view)) if headers is None else headers
        # Idempotent producers: a duplicate answers the original offsets and writes nothing;
        # epoch and sequence errors raise before anything is written.
        prepared = self.producer_state.prepare(
            (h for _, h in incoming),
            first_offset,
            now_ms if log_append else None,
            check_sequences=check_sequences,
        )
        if prepared.duplicate is not None:
            dup = prepared.duplicate
            return AppendResult(
                dup.first_offset, dup.last_offset, dup.timestamp, self._log_start_offset, True
            )
        stamped: list[tuple[int, BatchHeader]] = []
        max_timestamp = -1
        for pos, header in incoming:
            set_base_offset_and_epoch(view, pos, header, next_offset, leader_epoch)
            if log_append:
                set_log_append_time(view, pos, header.size, now_ms)
            header = read_header(view, pos)
            stamped.append((pos, header))
            max_timestamp = max(max_timestamp, header.max_timestamp)
            next_offset = header.next_offset
        if not stamped:
            raise ValueError("nothing to append")
        last_offset = next_offset - 1
        self._roll_if_needed(len(view), max_timestamp, first_offset, last_offset, now_ms)
        self.active_segment.append(view, stamped)
        self.leader_epoch_cache.assign(leader_epoch, first_offset)
        self.producer_state.commit(prepared, self.log_end_offset)
        if self.flush_watch is not None:
            self.flush_watch.add(self)
        self.fetch_state_changed()
        return AppendResult(
            first_offset, last_offset, now_ms if log_append else -1, self._log_start_offset
        )

    @_storage_io("Error while appending records to")
    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int = 0,
        leader_epoch: int = 0,
        now_ms: int | None = None,
        transaction_version: int = 0,
    ) -> tuple[AppendResult, CompletedTxn | None]:
        """Write a transaction marker (a COMMIT or ABORT control batch) for ``producer_id`` as
        the transaction coordinator does (Kafka's ``AppendOrigin.COORDINATOR``): an epoch below
        the producer's current one raises ``InvalidProducerEpoch``, a coordinator epoch below
        the one of the producer's last marker ``TransactionCoordinatorFenced``. Closes the
        producer's open transaction here, if any (an ABORT is indexed in ``.txnindex``).

        Transaction protocol v2 (``transaction_version`` 2, KIP-890) bumps the epoch in every
        marker, so there the marker's epoch must be above the producer's (Kafka's
        ``ProducerAppendInfo.checkProducerEpoch``), except for a retried marker: the same epoch
        when no transaction is open any more."""
        if now_ms is None:
            now_ms = self._now_ms()
        entry = self.producer_state.entry(producer_id)
        strict = transaction_version >= 2
        if entry is not None and (
            producer_epoch < entry.producer_epoch
            or (
                strict
                and producer_epoch == entry.producer_epoch
                and entry.current_txn_first_offset >= 0
            )
        ):
            raise InvalidProducerEpoch(
                f"Epoch of producer {producer_id} in the transaction marker is "
                f"{producer_epoch}, {'not above' if strict else 'smaller than'} the last seen "
                f"epoch {entry.producer_epoch}"
            )
        if entry is not None and coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFenced(
                f"Invalid coordinator epoch for producer {producer_id}: {coordinator_epoch} "
                f"(zombie), {entry.coordinator_epoch} (current)"
            )
        offset = self.log_end_offset
        batch = build_control_batch(
            commit,
            producer_id,
            producer_epoch,
            now_ms,
            coordinator_epoch,
            base_offset=offset,
            partition_leader_epoch=leader_epoch,
        )
        header = read_header(batch, 0)
        self._roll_if_needed(len(batch), header.max_timestamp, offset, offset, now_ms)
        self.active_segment.append(batch, [(0, header)])
        self.leader_epoch_cache.assign(leader_epoch, offset)
        completed = self.producer_state.replay(header, 1 if commit else 0, coordinator_epoch)
        if completed is not None:
            self._index_completed(self.active_segment, completed)
        if self.flush_watch is not None:
            self.flush_watch.add(self)
        self.fetch_state_changed()
        return AppendResult(offset, offset, -1, self._log_start_offset), completed

    @_storage_io("Error while appending records to")
    def append_as_follower(self, buf) -> AppendResult:
        """Append batches copied from the leader, keeping their offsets and leader epochs.
        The first batch must start at or after the log end offset (InvalidOffset otherwise)."""
        view = memoryview(buf)
        headers = list(iter_headers(view))
        if not headers:
            raise ValueError("nothing to append")
        first_offset = headers[0][1].base_offset
        if first_offset < self.log_end_offset:
            raise InvalidOffset(
                f"follower append at {first_offset} below log end {self.log_end_offset}"
            )
        expect = first_offset
        for _, header in headers:
            if header.base_offset < expect:
                raise InvalidOffset(f"batch offsets not increasing at {header.base_offset}")
            expect = header.next_offset
        last_offset = headers[-1][1].last_offset
        max_timestamp = max(h.max_timestamp for _, h in headers)
        now_ms = self._now_ms()
        active = self.active_segment
        if active.size == 0 and active.base_offset != first_offset:
            self.roll(first_offset)
        else:
            self._roll_if_needed(len(view), max_timestamp, first_offset, last_offset, now_ms)
        self.active_segment.append(view, headers)
        for pos, header in headers:
            if header.partition_leader_epoch != NO_PARTITION_LEADER_EPOCH:
                self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
            control, coordinator_epoch = (
                _control_of(view[pos : pos + header.size]) if header.is_control else (None, -1)
            )
            completed = self.producer_state.replay(header, control, coordinator_epoch)
            if completed is not None:
                self._index_completed(self.active_segment, completed)
        if self.flush_watch is not None:
            self.flush_watch.add(self)
        self.fetch_state_changed()
        return AppendResult(first_offset, last_offset, -1, self._log_start_offset)

    # -- reading -------------------------------------------------------------------------
    def _segment_index_for(self, offset: int) -> int:
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    @_storage_io("Exception while reading from")
    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        upper_bound: int | None = None,
        min_one_batch: bool = True,
        zero_copy: bool = False,
    ) -> ReadResult:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` of them, except
        that with ``min_one_batch`` a first batch bigger than ``max_bytes`` is returned whole
        (KIP-74). Batches reaching ``upper_bound`` (high watermark / last stable offset) or
        beyond are left out. ``OffsetOutOfRange`` below the log start or above the log end.

        With ``zero_copy`` a stretch of at least ``ZERO_COPY_MIN_BYTES`` stays in its segment
        file (a ``FileRecords`` for ``os.sendfile``) instead of being read into memory, while
        fewer than ``MAX_OPEN_REGIONS`` such stretches are waiting to be sent."""
        leo = self.log_end_offset
        if offset < self._log_start_offset or offset > leo:
            raise OffsetOutOfRange(offset, self._log_start_offset, leo)
        bound = leo if upper_bound is None else min(upper_bound, leo)
        chunks: list = []
        total = 0
        first = next_offset = -1
        done = offset >= bound
        index = self._segment_index_for(offset)
        while not done and index < len(self._segments):
            seg = self._segments[index]
            found = seg.find_position(offset) if index == self._segment_index_for(offset) else None
            start = (
                found
                if found is not None
                else (0 if first >= 0 or seg.base_offset >= offset else None)
            )
            if start is None:
                index += 1
                continue
            end = start
            for pos, base_offset, last_offset, size in seg.spans(start):
                if last_offset < offset:
                    end = pos + size
                    start = end
                    continue
                if last_offset >= bound:
                    done = True
                    break
                if total + size > max_bytes:
                    if total == 0 and min_one_batch:
                        end = pos + size
                        total += size
                        first = base_offset if first < 0 else first
                        next_offset = last_offset + 1
                    done = True
                    break
                if first < 0:
                    first = base_offset
                end = pos + size
                total += size
                next_offset = last_offset + 1
            if end > start:
                if zero_copy and end - start >= ZERO_COPY_MIN_BYTES and FileRegion.available():
                    chunks.append(FileRegion(seg.fd, start, end - start))
                else:
                    chunks.append(seg.read(start, end - start))
            index += 1
        if any(not isinstance(chunk, bytes) for chunk in chunks):
            data: bytes | FileRecords = FileRecords(chunks)
        else:
            data = b"".join(chunks)
        return ReadResult(
            data, first, self._log_start_offset, leo, self._high_watermark, next_offset
        )

    def _first_record_at_or_after(
        self, seg: LogSegment, position: int, header: BatchHeader, predicate
    ) -> tuple[int, int] | None:
        batch = seg.read(position, header.size)
        for offset, timestamp in iter_record_timestamps(batch):
            if offset >= self._log_start_offset and predicate(timestamp):
                return offset, timestamp
        return None

    def offset_for_timestamp(
        self, timestamp: int, *, upper_bound: int | None = None
    ) -> OffsetAndTimestamp | None:
        """The first record (at or after the log start) whose timestamp is >= ``timestamp``,
        as (offset, timestamp) — the exact record, found through the time index and one scan of
        the matching batch's records. None when there is none (below ``upper_bound`` if
        given). ``timestamp`` must be >= 0; ListOffsets' special values (-1 latest, -2
        earliest, -3 max timestamp) are the caller's, see ``max_timestamp``."""
        if timestamp < 0:
            raise ValueError("timestamp must be >= 0")
        limit = self.log_end_offset if upper_bound is None else upper_bound
        for i, seg in enumerate(self._segments):
            if seg.size == 0 or seg.max_timestamp < timestamp:
                continue
            if self._upper_bound(i) <= self._log_start_offset:
                continue
            start_offset = max(seg.time_index.lookup_before(timestamp), self._log_start_offset)
            found = seg.find(start_offset)
            if found is None:
                continue
            for pos, header in seg.walk(found[0]):
                if header.max_timestamp < timestamp or header.last_offset < self._log_start_offset:
                    continue
                hit = self._first_record_at_or_after(seg, pos, header, lambda ts: ts >= timestamp)
                if hit is not None:
                    if hit[0] >= limit:
                        return None
                    return OffsetAndTimestamp(hit[0], hit[1])
        return None

    def max_timestamp(self) -> TimestampAndOffset | None:
        """(largest record timestamp, offset of the first record carrying it), or None for an
        empty log (Kafka's ListOffsets MAX_TIMESTAMP, KIP-734)."""
        best: LogSegment | None = None
        for i, seg in enumerate(self._segments):
            if seg.size == 0 or self._upper_bound(i) <= self._log_start_offset:
                continue
            if best is None or seg.max_timestamp > best.max_timestamp:
                best = seg
        if best is None or best.max_timestamp < 0:
            return None
        found = best.find(best.offset_of_max_timestamp)
        if found is not None:
            hit = self._first_record_at_or_after(
                best, found[0], found[1], lambda ts: ts == best.max_timestamp
            )
            if hit is not None:
                return TimestampAndOffset(hit[1], hit[0])
        return TimestampAndOffset(best.max_timestamp, best.offset_of_max_timestamp)

    @_storage_io("Error while writing the leader epoch checkpoint of")
    def assign_leader_epoch(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (a new leader's epoch)."""
        self.leader_epoch_cache.assign(epoch, start_offset)

    def leader_epoch_for_offset(self, offset: int) -> int | None:
        return self.leader_epoch_cache.epoch_for_offset(offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch (KIP-101): see ``LeaderEpochCache.end_offset_for``."""
        return self.leader_epoch_cache.end_offset_for(epoch, self.log_end_offset)

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    # -- deleting and truncating -----------------------------------------------------------
    def _delete_segments(self, count: int, reason: Callable[[list[LogSegment]], None]) -> int:
        """Delete the ``count`` oldest segments (rolling first if that would be all);
        ``reason(doomed)`` logs why, in Kafka's words (its ``SegmentDeletionReason``)."""
        if count <= 0:
            return 0
        if count >= len(self._segments):
            count = len(self._segments)
            self.roll()
        doomed = self._segments[:count]
        reason(doomed)
        self._segments = self._segments[count:]
        self._bases = self._bases[count:]
        for seg in doomed:
            seg.delete()
        first_base = self._segments[0].base_offset
        if first_base > self._log_start_offset:
            self._set_log_start(first_base, "segment deletion")
        return count

    def _set_log_start(self, offset: int, reason: str) -> None:
        """Move the log start offset up; ``reason`` is Kafka's
        ``LogStartOffsetIncrementReason`` wording, for the log line."""
        self._log_start_offset = offset
        self.fetch_state_changed()
        logger.info(
            "[UnifiedLog partition=%s, dir=%s] Incremented log start offset to %d due to %s",
            self.name,
            self.log_dir,
            offset,
            reason,
        )
        if self._high_watermark < offset:
            self._high_watermark = offset
        if self.recovery_point < offset:
            self.recovery_point = offset
        self.leader_epoch_cache.truncate_from_start(offset)
        self.producer_state.on_log_start_offset_incremented(offset)
        self._check_invariants()

    def _delete_below_log_start(self) -> int:
        count = 0
        while count < len(self._segments) and self._upper_bound(count) <= self._log_start_offset:
            if count == len(self._segments) - 1 and self.active_segment.size == 0:
                break
            count += 1
        return self._delete_segments(count, self._log_start_offset_breach)

    def _log_start_offset_breach(self, doomed: list[LogSegment]) -> None:
        logger.info(
            "[UnifiedLog partition=%s, dir=%s] Deleting segments due to log start offset %d "
            "breach: %s",
            self.name,
            self.log_dir,
            self._log_start_offset,
            ",".join(str(seg) for seg in doomed),
        )

    def _retention_ms_breach(self, doomed: list[LogSegment]) -> None:
        for seg in doomed:
            logger.info(
                "[UnifiedLog partition=%s, dir=%s] Deleting segment %s due to log retention "
                "time %dms breach based on the %s",
                self.name,
                self.log_dir,
                seg,
                self.config.retention_ms,
                "largest record timestamp in the segment"
                if seg.max_timestamp >= 0
                else "last modified time of the segment",
            )

    def _retention_size_breach(self, doomed: list[LogSegment]) -> None:
        size = self.size_bytes
        for seg in doomed:
            size -= seg.size
            logger.info(
                "[UnifiedLog partition=%s, dir=%s] Deleting segment %s due to log retention "
                "size %d breach. Log size after deletion will be %d.",
                self.name,
                self.log_dir,
                seg,
                self.config.retention_bytes,
                size,
            )

    @_storage_io("Exception while increasing log start offset for")
    def delete_records_before(
        self, offset: int, reason: str = "client delete records request"
    ) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (which may not pass the
        high watermark: ``OffsetOutOfRange``) and delete the segments wholly below it.
        Returns the new log start offset. A follower following its leader's log start passes
        ``reason="leader offset increment"``."""
        if offset > self._high_watermark or offset < 0:
            raise OffsetOutOfRange(
                offset,
                self._log_start_offset,
                self._high_watermark,
                f"cannot move log start to {offset}: high watermark is {self._high_watermark}",
            )
        if offset > self._log_start_offset:
            self._set_log_start(offset, reason)
            self._delete_below_log_start()
        return self._log_start_offset

    @_storage_io("Error while truncating log for")
    def truncate_to(self, offset: int) -> bool:
        """Follower truncation: drop every batch ending at or after ``offset``. Returns whether
        anything was removed. Below the log start offset the log is emptied and restarted at
        ``offset`` (Kafka's ``truncateFullyAndStartAt``)."""
        if offset >= self.log_end_offset:
            logger.info(
                "[UnifiedLog partition=%s, dir=%s] Truncating to %d has no effect as the largest "
                "offset in the log is %d",
                self.name,
                self.log_dir,
                offset,
                self.log_end_offset - 1,
            )
            return False
        logger.info(
            "[UnifiedLog partition=%s, dir=%s] Truncating to offset %d",
            self.name,
            self.log_dir,
            offset,
        )
        if offset < self._log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        self.truncations += 1
        keep = [s for s in self._segments if s.base_offset <= offset]
        for seg in self._segments[len(keep) :]:
            seg.delete()
        self._segments = keep
        self._bases = [s.base_offset for s in keep]
        self.active_segment.truncate_to(offset)
        leo = self.log_end_offset
        self._high_watermark = min(self._high_watermark, leo)
        self.recovery_point = min(self.recovery_point, leo)
        self.leader_epoch_cache.truncate_from_end(leo)
        if self._log_start_offset > leo:
            self._log_start_offset = leo
        self._check_invariants()
        self._rebuild_producer_state()
        self.fetch_state_changed()
        return True

    @_storage_io("Error while truncating the entire log for")
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete everything and restart the log empty at ``offset``."""
        self.truncations += 1
        for seg in self._segments:
            seg.delete()
        self._segments = [self._new_segment(offset)]
        self._bases = [offset]
        self._log_start_offset = offset
        self._high_watermark = offset
        self.recovery_point = offset
        self.leader_epoch_cache.clear()
        self.producer_state.truncate_fully_and_start_at(offset)
        self._check_invariants()
        self.fetch_state_changed()

    @_storage_io("Error while deleting segments for")
    def apply_retention(self, now_ms: int | None = None) -> int:
        """Delete whole old segments for ``cleanup.policy=delete`` logs: those wholly below the
        log start offset, then by ``retention.ms`` (a segment's largest timestamp older than
        ``now - retention.ms``; as in Kafka the active segment goes too, after a roll, when it
        qualifies and is fully below the high watermark), then by ``retention.bytes`` (oldest
        first, never the active segment). Only segments wholly below the high watermark are
        deleted. Advances the log start offset; returns the number of segments deleted."""
        if now_ms is None:
            now_ms = self._now_ms()
        deleted = self._delete_below_log_start()
        if not self.config.delete_enabled:
            return deleted
        cfg = self.config
        if cfg.retention_ms >= 0:
            count = 0
            for i, seg in enumerate(self._segments):
                if seg.size == 0 or self._upper_bound(i) > self._high_watermark:
                    break
                if seg.largest_timestamp() >= now_ms - cfg.retention_ms:
                    break
                count += 1
            deleted += self._delete_segments(count, self._retention_ms_breach)
        if cfg.retention_bytes >= 0:
            excess = self.size_bytes - cfg.retention_bytes
            count = 0
            for i, seg in enumerate(self._segments[:-1]):
                if excess - seg.size < 0 or self._upper_bound(i) > self._high_watermark:
                    break
                excess -= seg.size
                count += 1
            deleted += self._delete_segments(count, self._retention_size_breach)
        return deleted

    # -- compaction ------------------------------------------------------------------------
    @_storage_io("Error while replacing segments for")
    def replace_segments(
        self,
        replacements: list[tuple[list[LogSegment], LogSegment]],
        step: Callable[[str], None] | None = None,
    ) -> bool:
        """Swap compacted segments in (Kafka's ``replaceSegments``). Each replacement is (old
        segments, the new segment written under ``.cleaned`` names at the first old segment's
        base offset, flushed). Returns False, changing nothing, unless every old list is still a
        run of this log's inactive segments. Steps, each durable before the next: every new
        segment is renamed ``.swap`` (``step("after-swap-renamed")``); then for each one the
        old segments are deleted (``step("after-old-deleted")``) and the new one takes the final
        names (``step("after-swap-completed")``). ``step`` is a test hook: a crash at any step
        leaves what ``_complete_interrupted_swaps`` finishes on open."""
        for old, new in replacements:
            at = next((i for i, seg in enumerate(self._segments) if seg is old[0]), -1)
            run = self._segments[at : at + len(old)] if at >= 0 else []
            if (
                len(run) != len(old)
                or any(a is not b for a, b in zip(run, old))
                or at + len(old) >= len(self._segments)
                or new.base_offset != old[0].base_offset
            ):
                return False
        for _, new in replacements:
            new.change_file_suffix(SWAP_SUFFIX)
        fsync_dir(self.directory)
        if step is not None:
            step("after-swap-renamed")
        for old, new in replacements:
            for seg in old:
                seg.delete()
            fsync_dir(self.directory)
            if step is not None:
                step("after-old-deleted")
            new.change_file_suffix("")
            fsync_dir(self.directory)
            at = next(i for i, seg in enumerate(self._segments) if seg is old[0])
            self._segments[at : at + len(old)] = [new]
            new.seal_indexes(self.index_memory)
            self._bases = [seg.base_offset for seg in self._segments]
            if step is not None:
                step("after-swap-completed")
        return True

    # -- flushing and lifecycle ------------------------------------------------------------
    def unflushed_messages(self) -> int:
        return self.log_end_offset - self.recovery_point

    def flush_due(self, now_ms: int | None = None) -> bool:
        """Whether ``flush.messages`` or ``flush.ms`` call for an fsync now, or a rolled
        segment has not been flushed yet (Kafka flushes a segment when it rolls)."""
        if now_ms is None:
            now_ms = self._now_ms()
        unflushed = self.unflushed_messages()
        if unflushed <= 0:
            return False
        if unflushed >= self.config.flush_messages:
            return True
        if now_ms - self.last_flush_ms >= self.config.flush_ms:
            return True
        return self._rolled_segment_unflushed()

    def may_become_due(self) -> bool:
        """Whether ``flush_due`` can turn true without another append: there is data above
        the recovery point and ``flush.ms`` or ``flush.messages`` is set, or a rolled segment
        waits for its fsync. False for a log under Kafka's defaults (both ``Long.MAX``) once
        its rolled segments are flushed: only its next roll makes it due."""
        if self.unflushed_messages() <= 0:
            return False
        if self.config.flush_ms < LONG_MAX or self.config.flush_messages < LONG_MAX:
            return True
        return self._rolled_segment_unflushed()

    def _rolled_segment_unflushed(self) -> bool:
        """A segment rolled since the last flush still waits for its fsync. Only the segments
        from the one holding the recovery point up can (the flush that moved it there fsynced
        every segment below), so this looks at one or two of them however long the history:
        it runs on every append."""
        if self.recovery_point >= self._bases[-1]:
            return False  # it is in the active segment: nothing rolled since
        segments = self._segments
        first = self._segment_index_for(self.recovery_point)
        return any(segments[i].dirty for i in range(first, len(segments) - 1))

    @_storage_io("Error while flushing log for")
    def flush(self, now_ms: int | None = None) -> int:
        """fsync every segment holding data above the recovery point, then move the recovery
        point to the log end offset as it was when the flush began. Safe to run on another
        thread while the reactor appends. Returns the new recovery point."""
        target = self.log_end_offset
        start = self.recovery_point
        self.producer_state.sync_snapshots()
        self.leader_epoch_cache.sync()
        segments = list(self._segments)
        for i, seg in enumerate(segments):
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else None
            if seg.dirty or upper is None or upper > start:
                seg.flush()
        if target > self.recovery_point:
            self.recovery_point = target
        self.last_flush_ms = self._now_ms() if now_ms is None else now_ms
        return self.recovery_point

    def close(self, *, durable: bool = True) -> None:
        """Flush, write the producer snapshot and leader epoch checkpoint, and close every
        file. A log whose dir is offline is closed without writing anything (``KafkaStorageError``
        from ``_write_out``, after the files are closed).

        With ``durable=False`` nothing is fsynced and the recovery point moves to the log end
        at once: the caller syncs the whole file system afterwards, before it writes the
        recovery point checkpoint (``LogManager.close``: one ``syncfs`` per log dir in place
        of several fsyncs per partition, which at ten thousand partitions took minutes)."""
        if self.closed:
            return
        try:
            self._write_out(durable)
        finally:
            for seg in self._segments:
                seg.close()
            self.closed = True
            self.fetch_state_changed()

    @_storage_io("Error while closing log for")
    def _write_out(self, durable: bool = True) -> None:
        self.active_segment.on_become_inactive()
        if durable:
            self.flush()
        else:
            for seg in self._segments:  # their fsync comes with the caller's syncfs
                seg.write_index_entries()
            self.recovery_point = self.log_end_offset
        self.producer_state.take_snapshot(sync=durable)
        self.leader_epoch_cache.flush(sync=durable)

    def delete(self) -> None:
        """Close and remove the partition directory."""
        for seg in self._segments:
            seg.close()
        self.closed = True
        self.fetch_state_changed()
        shutil.rmtree(self.directory, ignore_errors=True)

    def move_to(self, directory: str) -> None:
        """Reopen this log from ``directory`` (its files closed, the partition's complete log
        in there: a replica moved to another log dir, ``storage.log_move``), keeping this
        object, which replication, fetch sessions and waiting requests hold. The log start
        offset and high watermark carry over; the leader epochs and producer state are read
        back from the checkpoint and snapshot the mover wrote there."""
        moved = Log.open(
            directory,
            self.config,
            now_ms=self._now_ms,
            recover=False,
            recovery_point=self.log_end_offset,
            log_start_offset=self._log_start_offset,
            high_watermark=self._high_watermark,
            producer_id_expiration_ms=self.producer_state.expiration_ms,
            failures=self.failures,
            open_files=self.open_files,
            index_memory=self.index_memory,
        )
        for name in (
            "directory",
            "log_dir",
            "_segments",
            "_bases",
            "_log_start_offset",
            "_high_watermark",
            "recovery_point",
            "leader_epoch_cache",
            "producer_state",
            "_ongoing_txns",
        ):
            setattr(self, name, getattr(moved, name))
        # A compaction planned on the old segments must not swap its result in.
        self.truncations += 1
        self.closed = False
        self.fetch_state_changed()

    def __repr__(self) -> str:
        return (
            f"Log({self.directory!r}, start={self._log_start_offset}, "
            f"hw={self._high_watermark}, end={self.log_end_offset}, "
            f"segments={len(self._segments)})"
        )


def _control_of(batch) -> tuple[int | None, int]:
    """(type, coordinator epoch) of a control batch's record (0 ABORT, 1 COMMIT, ...);
    (None, -1) if unreadable."""
    try:
        for record in RecordBatch(batch).records():
            return decode_control_record(record)
    except DecodeError:
        pass
    return None, -1
