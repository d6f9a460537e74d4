"""One log segment: ``<20-digit base offset>.log`` with its ``.index``, ``.timeindex`` and (once
a transaction aborted in it) ``.txnindex`` (``storage.txn_index``).

The ``.log`` file holds record batches back to back, exactly as stored (Kafka's format). The
segment keeps in memory what Kafka's ``LogSegment`` keeps: its size, the next offset after its
last batch, the largest batch ``maxTimestamp`` and the offset of the batch holding it, and the
first batch's ``maxTimestamp`` (the base for time-based rolling).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from wireserver.storage.batches import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, crc_ok, read_header
from wireserver.storage.index import (
    INT32_MAX,
    CorruptIndexError,
    IndexMemory,
    OffsetIndex,
    TimeIndex,
)
from wireserver.storage.open_files import OpenFiles, PooledFile
from wireserver.storage.txn_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
#: Bytes read at a time when walking batch headers (``LogSegment.spans``).
WALK_BLOCK = 4096
#: Bytes a recovery reads at a time: a pread for each batch's header and another for its bytes
#: were most of the time a re-scan took with the Java producer's 16 KB batches.
RECOVER_BLOCK = 1 << 20
#: A batch header's base offset, batch length and last offset delta (bytes 0-12 and 23-26).
_SPAN = struct.Struct(">qi11xi")


def filename_prefix(offset: int) -> str:
    """Kafka's file name for a base offset: 20 digits, zero padded."""
    return f"{offset:020d}"


class CorruptSegmentError(ValueError):
    """Bytes in a ``.log`` file that do not walk as batches."""


class LogSegment:
    """A segment file and its two indexes. Not thread-safe except ``flush``."""

    def __init__(
        self,
        directory: str,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_bytes: int,
        created_ms: int = 0,
        file_suffix: str = "",
        open_files: OpenFiles | None = None,
    ):
        """``file_suffix`` (``.cleaned``, ``.swap``) is appended to every file name: the log
        cleaner writes a replacement segment under such names before swapping it in.
        ``open_files`` is the broker's descriptor pool (``storage.open_files``); without one
        each file keeps its descriptor from first use to ``close``."""
        self.directory = directory
        self.base_offset = base_offset
        self.file_suffix = file_suffix
        prefix = os.path.join(directory, filename_prefix(base_offset))
        self._log = PooledFile(prefix + LOG_SUFFIX + file_suffix, open_files)
        self.index_interval_bytes = index_interval_bytes
        self.offset_index = OffsetIndex(
            prefix + INDEX_SUFFIX + file_suffix, base_offset, max_index_bytes, open_files
        )
        self.time_index = TimeIndex(
            prefix + TIME_INDEX_SUFFIX + file_suffix, base_offset, max_index_bytes, open_files
        )
        self.txn_index = TransactionIndex(prefix + TXN_INDEX_SUFFIX + file_suffix, open_files)
        # Whether both index files were there before we opened them (else ``load`` fails and
        # the segment is rebuilt); new (empty) index files are created right away.
        self.indexes_existed = self.offset_index.exists() and self.time_index.exists()
        try:
            self.offset_index.open()
            self.time_index.open()
            self.size = self._log.size()
        except OSError:  # a full disk, too many open files: leave no descriptor behind
            self.offset_index.close()
            self.time_index.close()
            self._log.close()
            raise
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.first_batch_timestamp: int | None = None
        self.bytes_since_last_index_entry = 0
        self.created_ms = created_ms
        self.closed = False
        self.dirty = False  # written since the last fsync

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, next={self.next_offset}, size={self.size})"

    def __str__(self) -> str:
        """Kafka's ``LogSegment.toString``, as its retention and cleaner log lines show it."""
        try:
            modified = int(os.stat(self.log_path).st_mtime * 1000)
        except OSError:
            modified = 0
        return (
            f"LogSegment(baseOffset={self.base_offset}, size={self.size}, "
            f"lastModifiedTime={modified}, largestRecordTimestamp={self.max_timestamp})"
        )

    @property
    def log_path(self) -> str:
        return self._log.path

    # -- reading -------------------------------------------------------------------------
    @property
    def fd(self) -> int:
        """The ``.log`` file's descriptor, on the owner thread, to use or ``os.dup`` at once:
        the pool may close it to make room at the next open."""
        if self.closed:
            raise ValueError(f"segment {self.log_path} is closed")
        return self._log.fd

    def read(self, position: int, length: int) -> bytes:
        out = self._log.pread(length, position)
        if len(out) != length:
            raise CorruptSegmentError(f"{self.log_path}: short read at {position}")
        return out

    def header_at(self, position: int) -> BatchHeader:
        raw = self._log.pread(HEADER_SIZE, position)
        if len(raw) < HEADER_SIZE:
            raise CorruptSegmentError(f"{self.log_path}: torn header at {position}")
        header = read_header(raw)
        if header.batch_length < MIN_BATCH_LENGTH or position + header.size > self.size:
            raise CorruptSegmentError(f"{self.log_path}: bad batch length at {position}")
        return header

    def spans(self, position: int = 0) -> Iterator[tuple[int, int, int, int]]:
        """(position, base offset, last offset, size) of each batch from ``position`` to the
        end of the segment: what reads and index lookups need of a header.

        Headers are read ``WALK_BLOCK`` bytes at a time, so with small batches one pread
        serves many of them, and only the three fields needed are unpacked: a pread and a full
        ``BatchHeader`` per batch took a quarter of the broker's time in a Fetch of eight
        partitions of small batches (benchmarks: about 270 → 200 µs of CPU per such Fetch)."""
        block = b""
        block_start = position
        while position < self.size:
            at = position - block_start
            if at + HEADER_SIZE > len(block):
                block = self._log.pread(max(WALK_BLOCK, HEADER_SIZE), position)
                block_start, at = position, 0
                if len(block) < HEADER_SIZE:
                    raise CorruptSegmentError(f"{self.log_path}: torn header at {position}")
            base_offset, batch_length, last_offset_delta = _SPAN.unpack_from(block, at)
            size = batch_length + LOG_OVERHEAD
            if batch_length < MIN_BATCH_LENGTH or position + size > self.size:
                raise CorruptSegmentError(f"{self.log_path}: bad batch length at {position}")
            yield position, base_offset, base_offset + last_offset_delta, size
            position += size

    def walk(self, position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from ``position`` to the end of the segment."""
        for pos, _, _, _ in self.spans(position):
            yield pos, self.header_at(pos)

    def find(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= ``offset``, or None."""
        found = self.find_position(offset)
        return None if found is None else (found, self.header_at(found))

    def find_position(self, offset: int) -> int | None:
        """The position of the first batch whose last offset is >= ``offset``, or None."""
        _, position = self.offset_index.lookup(offset)
        for pos, _, last_offset, _ in self.spans(position):
            if last_offset >= offset:
                return pos
        return None

    def largest_timestamp(self) -> int:
        """Kafka's ``LogSegment.largestTimestamp``: the max batch timestamp, or the file's
        modification time when no batch carries a timestamp."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.stat(self.log_path).st_mtime * 1000)

    # -- writing -------------------------------------------------------------------------
    def should_roll(
        self,
        *,
        segment_bytes: int,
        segment_ms: int,
        incoming_size: int,
        incoming_max_timestamp: int,
        last_offset: int,
        now_ms: int,
    ) -> bool:
        """Kafka's ``LogSegment.shouldRoll``. Time is measured from the first batch's
        maxTimestamp to the incoming batches' maxTimestamp (falling back to the wall time since
        the segment was created when there is no timestamp)."""
        if self.size == 0:
            return False
        if self.size + incoming_size > segment_bytes:
            return True
        if self.first_batch_timestamp is not None and self.first_batch_timestamp >= 0:
            waited = incoming_max_timestamp - self.first_batch_timestamp
        else:
            waited = now_ms - self.created_ms
        if waited > segment_ms:
            return True
        if self.offset_index.is_full() or self.time_index.is_full():
            return True
        return last_offset - self.base_offset > INT32_MAX

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += header.size
        if self.first_batch_timestamp is None:
            self.first_batch_timestamp = header.max_timestamp
        self.next_offset = header.next_offset

    def append(self, data, headers: list[tuple[int, BatchHeader]]) -> None:
        """Write ``data`` (whole batches, offsets assigned) at the end and index it."""
        self.read_indexes()
        view = memoryview(data)
        start = self.size
        written = 0
        while written < len(view):
            written += self._log.pwrite(view[written:], start + written)
        for pos, header in headers:
            self._index_batch(start + pos, header)
        self.size = start + len(view)
        self.dirty = True

    def on_become_inactive(self) -> None:
        """Kafka appends a final time-index entry for the segment's max timestamp on roll;
        the segment then waits for a flush to write and fsync it, as Kafka flushes the
        segments below a new one."""
        if self.max_timestamp >= 0 and self.time_index.maybe_append(
            self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True
        ):
            self.dirty = True

    # -- loading and recovery -----------------------------------------------------------
    def load(self) -> bool:
        """Load the indexes' last entries and walk the tail after the offset index's last
        entry, without CRC checks; the indexes' other entries are read at first use
        (``storage.index``). False when an index is missing or its length or last entry is
        wrong (rebuild with ``recover``)."""
        if not self.indexes_existed:
            return False
        try:
            self.offset_index.open_unread(self.size, self._rebuild_indexes)
            last_offset, position = self.offset_index.last_entry()
            self.next_offset = last_offset + 1 if self.offset_index.entries else self.base_offset
            tail_max, tail_max_offset = -1, -1
            for _, header in self.walk(position):
                if header.base_offset < self.base_offset:
                    raise CorruptSegmentError("batch below the segment's base offset")
                self.next_offset = header.next_offset
                if header.max_timestamp > tail_max:
                    tail_max, tail_max_offset = header.max_timestamp, header.last_offset
            self.time_index.open_unread(self.next_offset, self._rebuild_indexes)
            entry = self.time_index.last_entry()
            if entry is not None:
                self.max_timestamp, self.offset_of_max_timestamp = entry
            if tail_max > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = tail_max, tail_max_offset
            self.first_batch_timestamp = self.header_at(0).max_timestamp if self.size else None
            self.bytes_since_last_index_entry = 0
        except (CorruptIndexError, CorruptSegmentError):
            return False
        return True

    def seal_indexes(self, memory: IndexMemory | None) -> None:
        """The segment is inactive (rolled, or below the active one at start-up): its index
        entries may be dropped from memory by ``memory`` and read again at next use
        (``storage.index.IndexMemory``)."""
        if memory is None:
            return
        self.offset_index.seal(memory, self.size, self._rebuild_indexes)
        self.time_index.seal(memory, self.next_offset, self._rebuild_indexes)

    def read_indexes(self) -> None:
        """Read the indexes' entries if they are still only in their files: before an append
        adds to them, so that a rebuild (``_rebuild_indexes``) never starts in the middle of
        indexing a batch."""
        self.offset_index.read_entries()
        self.time_index.read_entries()

    def _forget_batches(self) -> None:
        """Drop the indexes and what the segment knows of its batches, before indexing them
        again from the file."""
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.first_batch_timestamp = None
        self.bytes_since_last_index_entry = 0

    def _rebuild_indexes(self) -> None:
        """Index every batch again from its header: an index read at first use failed its
        check. The batches were trusted when the segment loaded, so unlike ``recover`` nothing
        is CRC-checked or truncated."""
        self._forget_batches()
        for position, header in self.walk(0):
            self._index_batch(position, header)
        self.dirty = True

    def recover(
        self, min_offset: int | None = None, epochs: list[tuple[int, int]] | None = None
    ) -> int:
        """Re-scan the whole segment: walk batches by length, check magic, CRC and offset
        order, truncate at the first bad batch and rebuild both indexes. Returns the number
        of bytes truncated. ``epochs`` gets the (leader epoch, base offset) of each valid
        batch that carries an epoch, for the leader epoch cache (Kafka's recovery does the
        same)."""
        self._forget_batches()
        file_size = self._log.size()
        self.size = file_size
        expect = self.base_offset if min_offset is None else max(min_offset, self.base_offset)
        position = 0
        block = b""
        block_start = 0
        while position < file_size:
            at = position - block_start
            if at + HEADER_SIZE > len(block):
                block = self._log.pread(RECOVER_BLOCK, position)
                block_start, at = position, 0
                if len(block) < HEADER_SIZE:
                    break
            header = read_header(block, at)
            size = header.size
            if header.batch_length < MIN_BATCH_LENGTH or position + size > file_size:
                break
            if header.magic != 2 or header.last_offset_delta < 0:
                break
            if header.base_offset < expect:
                break
            if at + size > len(block):
                block = self._log.pread(max(RECOVER_BLOCK, size), position)
                block_start, at = position, 0
                if len(block) < size:
                    break
            if not crc_ok(block, at, size, header.crc):
                break
            self._index_batch(position, header)
            epoch = header.partition_leader_epoch
            if epochs is not None and epoch >= 0 and (not epochs or epochs[-1][0] != epoch):
                epochs.append((epoch, header.base_offset))
            expect = header.next_offset
            position += size
        truncated = file_size - position
        if truncated:
            self._log.truncate(position)
        # Entries for markers that did not survive go; the producer-state replay after the
        # snapshot re-adds any that are missing.
        self.txn_index.truncate_to(self.next_offset)
        self.size = position
        self.dirty = True
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= ``offset`` (Kafka's ``truncateTo``); the
        segment then ends at a batch boundary. Returns the number of bytes removed."""
        # The segment is the log's last now: its entries change again.
        self.offset_index.unseal()
        self.time_index.unseal()
        found = self.find(offset)
        if found is None:
            return 0
        position = found[0]
        removed = self.size - position
        self._log.truncate(position)
        self.size = position
        self.offset_index.truncate_to_position(position)
        self.txn_index.truncate_to(offset)
        # Recompute the in-memory state from the remaining batches after the last entry.
        self.time_index.truncate_to_offset(found[1].base_offset)
        self.next_offset = self.base_offset
        self.max_timestamp, self.offset_of_max_timestamp = -1, -1
        entry = self.time_index.last_entry()
        if entry is not None:
            self.max_timestamp, self.offset_of_max_timestamp = entry
        start = 0
        if self.offset_index.entries:
            last_offset, start = self.offset_index.last_entry()
        for _, header in self.walk(start):
            self.next_offset = header.next_offset
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = (
                    header.max_timestamp,
                    header.last_offset,
                )
        if self.size == 0:
            self.first_batch_timestamp = None
        self.bytes_since_last_index_entry = 0
        self.dirty = True
        return removed

    # -- lifecycle -----------------------------------------------------------------------
    def change_file_suffix(self, new_suffix: str) -> None:
        """Rename every file from the current suffix to ``new_suffix`` (Kafka's
        ``changeFileSuffixes``), the indexes first and the ``.log`` last: recovery treats a
        ``.log.swap`` as the mark of a complete swap file set. Open descriptors stay valid."""
        for index in (self.txn_index, self.time_index, self.offset_index):
            index.rename(index.path[: len(index.path) - len(self.file_suffix)] + new_suffix)
        new_log_path = self.log_path[: len(self.log_path) - len(self.file_suffix)] + new_suffix
        os.replace(self.log_path, new_log_path)
        self._log.path = new_log_path
        self.file_suffix = new_suffix

    def write_index_entries(self) -> None:
        """Write the index entries still held for a write of their own (``storage.index``)."""
        self.offset_index.write_pending()
        self.time_index.write_pending()

    def flush(self) -> None:
        if self.closed:
            return
        self.dirty = False  # cleared first: an append racing with the fsync sets it again
        try:
            self._log.fsync(force=True)
            self.offset_index.flush()
            self.time_index.flush()
            self.txn_index.flush()
        except (OSError, ValueError):
            if not self.closed:
                self.dirty = True
                raise

    def close(self, *, write: bool = True) -> None:
        """Close every file; ``write=False`` (a halt, a deletion) drops the index entries
        held for the next run instead of writing them."""
        if self.closed:
            return
        self.closed = True
        self.offset_index.close(write=write)
        self.time_index.close(write=write)
        self.txn_index.close()
        self._log.close()

    def delete(self) -> None:
        self.close(write=False)
        for path in (
            self.log_path,
            self.offset_index.path,
            self.time_index.path,
            self.txn_index.path,
        ):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
