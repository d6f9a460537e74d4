"""Sparse segment indexes in Kafka's on-disk formats.

- ``.index`` (``OffsetIndex``): 8-byte entries, int32 offset relative to the segment's base
  offset and int32 byte position in the ``.log`` file. An entry ``(o, p)`` says the batch whose
  last offset is ``o`` starts at ``p``; a lookup returns the greatest entry with offset <= target
  and the reader walks batch headers forward from there.
- ``.timeindex`` (``TimeIndex``): 12-byte entries, int64 timestamp and int32 relative offset. An
  entry ``(t, o)`` says the largest batch ``maxTimestamp`` up to offset ``o`` is ``t``;
  timestamps in the file only grow.

An index that a start-up found on disk is not read then (``open_unread``): only its length and
its last entry are, which is what loading a segment needs; its entries are read and checked at
first use, and a failed check makes the segment rebuild both indexes from its log. Kafka maps a
segment's indexes only when they are first used (``LazyIndex``) for the same reason: reading
every entry of every segment made a broker's start-up, and its memory, grow with the log it held
(about 65,000 entries per GB of log written in 16 KB batches). An inactive segment's entries,
once read (or written before it rolled), are held by the broker's ``IndexMemory``, which drops
the least recently used ones back to their files past ``INDEX_MEMORY_BYTES``; an active
segment's stay in memory.

Entries are kept in memory, in typed arrays (``array``: 8 bytes an ``.index`` entry, 12 a
``.timeindex`` one, against about 165 for the two as lists of Python ints, which made a broker's
memory grow by megabytes with every gigabyte of log it held), and appended to the file (no
preallocation or mmap, unlike Kafka, so the file length is always a whole number of entries) in
runs of up to ``PENDING_ENTRIES``: a write of its own for every entry cost two system calls per
Produce request (one per index). A flush, close or truncation writes the run first, so what a flush
made durable includes every entry made before it, as Kafka's flush of its mapped index does;
entries lost with a crash are rebuilt by recovery, which re-scans every segment above the recovery
point. Capacity comes from ``segment.index.bytes``; a full index makes the log roll a new segment.
"""

from __future__ import annotations

import bisect
import errno
import logging
import os
import struct
import sys
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable

from wireserver.storage.open_files import OpenFiles, PooledFile

logger = logging.getLogger(__name__)

INT32_MAX = 2**31 - 1
#: Entries kept for one write to the file (one 16 KB batch per entry is about a second of a
#: busy partition's Produce requests).
PENDING_ENTRIES = 128
#: What the entries of inactive segments' indexes may take in memory (``IndexMemory``).
INDEX_MEMORY_BYTES = 64 * 1024 * 1024


class CorruptIndexError(ValueError):
    """An index file that fails its sanity check; the segment's indexes must be rebuilt."""


class _Unread:
    """What is known of an index whose entries are still only in its file (as many as
    ``_Index._on_file`` says): the last entry, the bound they are checked against at first use
    and how to rebuild the index when that check fails."""

    __slots__ = ("last", "bound", "rebuild")

    def __init__(self, last: tuple[int, int], bound: int, rebuild: Callable[[], None]) -> None:
        self.last = last
        self.bound = bound
        self.rebuild = rebuild


class _Sealed:
    """How an inactive segment's index may drop its entries: the ``IndexMemory`` that holds
    them, and the bound and rebuild ``open_unread`` would be given to read them again."""

    __slots__ = ("memory", "bound", "rebuild")

    def __init__(self, memory: IndexMemory, bound: int, rebuild: Callable[[], None]) -> None:
        self.memory = memory
        self.bound = bound
        self.rebuild = rebuild


class IndexMemory:
    """The inactive segments' index entries a broker holds in memory, least recently used
    first, and a cap on their bytes: past it the least recently used index drops its entries,
    which are then read again from its file at next use.

    Without it every entry read or written stayed in memory while its segment lived, so a
    broker's memory grew with the log it had been asked to read or had written since it
    started: about 1.3 MB per GB of log in 16 KB batches, 5 MB per GB in batches of
    ``index.interval.bytes`` (4 KB), and a consumer replaying a long history from its start
    read all of it. Kafka maps index files, and the OS evicts their pages. Active segments'
    indexes are never held here: they change with every append."""

    def __init__(self, capacity_bytes: int = INDEX_MEMORY_BYTES) -> None:
        self.capacity_bytes = capacity_bytes
        self._held: OrderedDict[_Index, int] = OrderedDict()
        self.held_bytes = 0
        self.dropped = 0  # indexes whose entries were dropped to make room, for tests

    def __len__(self) -> int:
        return len(self._held)

    def used(self, index: _Index) -> None:
        """``index`` (sealed, its entries in memory) was just used: hold it as the most
        recently used, dropping the entries of the least recently used ones past the cap."""
        held = self._held
        if index in held:
            held.move_to_end(index)
            return
        size = index.memory_bytes
        if not size:
            return
        held[index] = size
        self.held_bytes += size
        while self.held_bytes > self.capacity_bytes and len(held) > 1:
            oldest, oldest_size = held.popitem(last=False)
            self.held_bytes -= oldest_size
            if oldest.drop_entries():
                self.dropped += 1

    def forget(self, index: _Index) -> None:
        """``index`` is no longer held (closed, deleted, reset or active again)."""
        size = self._held.pop(index, None)
        if size is not None:
            self.held_bytes -= size


class _Index:
    ENTRY = struct.Struct(">ii")
    #: The array typecodes of an entry's key and value (signed, 32 or 64 bits).
    KEY_TYPE = "i"
    VALUE_TYPE = "i"

    def __init__(
        self, path: str, base_offset: int, max_index_bytes: int, pool: OpenFiles | None = None
    ):
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.ENTRY.size)
        self._keys = array(self.KEY_TYPE)
        self._values = array(self.VALUE_TYPE)
        # Entries live in memory: the file is opened only to write, truncate or fsync it.
        self._file = PooledFile(path, pool)
        # Entries made but not written yet, packed, and how many the file holds or is being
        # given; the lock orders writes from the owner thread and the flush thread.
        self._pending: list[bytes] = []
        self._on_file = 0
        self._lock = threading.Lock()
        # Set while the entries are only in the file (``open_unread``, ``drop_entries``).
        self._unread: _Unread | None = None
        # Set while the segment is inactive and an ``IndexMemory`` holds the entries (``seal``).
        self._sealed: _Sealed | None = None

    @property
    def path(self) -> str:
        return self._file.path

    # -- file handling -------------------------------------------------------------------
    def open(self) -> None:
        """Create the index file if it is not there."""
        if not self._file.is_open:
            self._file.fd  # noqa: B018 - opening creates it

    def _write_entry(self, raw: bytes) -> None:
        pending = self._pending
        pending.append(raw)
        if len(pending) >= PENDING_ENTRIES:
            self.write_pending()

    def write_pending(self) -> None:
        """Write the entries made since the last write (any thread). When the write fails
        they stay pending, and the next write starts where this one did."""
        with self._lock:
            self._write_held()

    def _write_held(self) -> None:
        """``write_pending`` with the lock taken. The owner thread appends without the lock
        (from the flush thread this runs beside it): the entries counted here are written and
        removed, later ones stay."""
        pending = self._pending
        count = len(pending)
        if not count:
            return
        raw = b"".join(pending[:count])
        if self._file.pwrite_any_thread(raw, self._on_file * self.ENTRY.size) < len(raw):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.path)
        self._on_file += count
        del pending[:count]

    def _read_raw(self) -> bytes:
        with open(self.path, "rb") as f:
            return f.read()

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def flush(self) -> None:
        self.write_pending()
        self._file.fsync()

    def close(self, *, write: bool = True) -> None:
        """Write what is pending (unless ``write`` is False: a halt, or a file about to be
        deleted, drops it) and close. A write that fails here is not raised, so that the
        segment's other files still close: ``Log.close`` has written every segment's entries
        before (and raised), and an index file short of entries is still a valid sparse
        index."""
        self.unseal()
        if not write:
            self._pending.clear()
        try:
            self.write_pending()
        except OSError:
            pass
        finally:
            self._file.close()

    def delete(self) -> None:
        self.close(write=False)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        if self._sealed is not None:
            self._sealed.memory.forget(self)
        with self._lock:
            self._unread = None
            self._pending.clear()
            self._on_file = 0
            del self._keys[:]
            del self._values[:]
            self._file.truncate(0)

    def rename(self, path: str) -> None:
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self._file.path = path

    def _truncate_entries(self, count: int) -> None:
        with self._lock:
            # Held entries past the truncation point are dropped rather than written first.
            del self._pending[max(0, count - self._on_file) :]
            self._write_held()
            del self._keys[count:]
            del self._values[count:]
            self._on_file = min(self._on_file, count)
            self._file.truncate(count * self.ENTRY.size)

    @property
    def entries(self) -> int:
        # Unread entries are all on file: an append or truncation reads them first.
        return len(self._keys) if self._unread is None else self._on_file

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def size_bytes(self) -> int:
        return self.entries * self.ENTRY.size

    @property
    def memory_bytes(self) -> int:
        """The bytes the entries take in memory (none while they are only in the file)."""
        return len(self._keys) * self.ENTRY.size

    # -- holding entries in memory (``IndexMemory``) --------------------------------------
    def seal(self, memory: IndexMemory, bound: int, rebuild: Callable[[], None]) -> None:
        """The segment is inactive: its entries no longer change, and ``memory`` may drop
        them when others are used more recently. ``bound`` and ``rebuild`` are what
        ``open_unread`` takes, to read them again."""
        self._sealed = _Sealed(memory, bound, rebuild)
        if self._unread is None:
            memory.used(self)

    def unseal(self) -> None:
        """The segment is active again (a truncation made it the last) or closing."""
        sealed = self._sealed
        if sealed is not None:
            self._sealed = None
            sealed.memory.forget(self)

    def drop_entries(self) -> bool:
        """Leave a sealed index's entries to its file, written first, as ``open_unread``
        leaves them; False when there are none or the write fails (they stay in memory)."""
        sealed = self._sealed
        if sealed is None or self._unread is not None or not self._keys:
            return False
        with self._lock:
            try:
                self._write_held()
            except OSError:
                return False
            last = (self._keys[-1], self._values[-1])
            self._unread = _Unread(last, sealed.bound, sealed.rebuild)
            self._keys = array(self.KEY_TYPE)
            self._values = array(self.VALUE_TYPE)
        return True

    # -- loading -------------------------------------------------------------------------
    def open_unread(self, bound: int, rebuild: Callable[[], None]) -> None:
        """Take the file's entries as the index's without reading them: read only the count
        and the last entry, and check that entry against ``bound`` (as ``load`` checks every
        entry); raise CorruptIndexError. The entries are read at first use
        (``read_entries``), and ``rebuild`` is called if they fail their check then."""
        entry_size = self.ENTRY.size
        file_size = self._file.size()
        if file_size % entry_size:
            raise CorruptIndexError(
                f"{self.path}: length {file_size} is not a multiple of {entry_size}"
            )
        count = file_size // entry_size
        self._loaded(array(self.KEY_TYPE), array(self.VALUE_TYPE))
        self._on_file = count
        if not count:
            return
        key, value = self.ENTRY.unpack(self._file.pread(entry_size, file_size - entry_size))
        self.check(array(self.KEY_TYPE, [key]), array(self.VALUE_TYPE, [value]), bound)
        self._unread = _Unread((key, value), bound, rebuild)

    def read_entries(self) -> None:
        """Read and check the entries ``open_unread`` left in the file; when they fail the
        check, log it and rebuild the index (and its segment's other one) from the log. A
        read that fails (``OSError``) leaves them unread, for the next use to try again."""
        unread = self._unread
        if unread is None:
            return
        try:
            self.load(unread.bound)
        except CorruptIndexError as e:
            self._unread = None
            logger.warning("%s; rebuilding the segment's indexes from its log", e)
            unread.rebuild()

    def load(self, bound: int) -> None:
        """Read the file and sanity-check it against ``bound``; raise CorruptIndexError."""
        keys, values = self._load_raw()
        self.check(keys, values, bound)
        self._loaded(keys, values)

    def check(self, keys: array, values: array, bound: int) -> None:
        raise NotImplementedError

    def _load_raw(self) -> tuple[array, array]:
        """The file's entries as two columns (keys, values); raise CorruptIndexError for a
        length that is not a whole number of entries."""
        raw = self._read_raw()
        size = self.ENTRY.size
        if len(raw) % size:
            raise CorruptIndexError(f"{self.path}: length {len(raw)} is not a multiple of {size}")
        if self.KEY_TYPE == self.VALUE_TYPE:
            both = array(self.KEY_TYPE)
            both.frombytes(raw)
            if sys.byteorder == "little":
                both.byteswap()
            return both[0::2], both[1::2]
        pairs = list(self.ENTRY.iter_unpack(raw))
        return (
            array(self.KEY_TYPE, [key for key, _ in pairs]),
            array(self.VALUE_TYPE, [value for _, value in pairs]),
        )

    def _loaded(self, keys: array, values: array) -> None:
        """Take checked entries read from the file as the index's."""
        self._unread = None
        self._keys, self._values = keys, values
        self._pending.clear()
        self._on_file = len(keys)


class OffsetIndex(_Index):
    """Relative offset → file position."""

    ENTRY = struct.Struct(">ii")

    def check(self, keys: array, values: array, bound: int) -> None:
        """Raise CorruptIndexError unless the entries grow and point inside a log file of
        ``bound`` bytes."""
        last_rel = last_pos = -1
        for rel, pos in zip(keys, values):
            if rel < 0 or pos <= 0 or pos >= bound:
                raise CorruptIndexError(f"{self.path}: entry ({rel}, {pos}) out of range")
            if rel <= last_rel or pos <= last_pos:
                raise CorruptIndexError(f"{self.path}: entries not increasing")
            last_rel, last_pos = rel, pos

    def append(self, offset: int, position: int) -> None:
        if self._unread is not None:
            self.read_entries()
        rel = offset - self.base_offset
        if not 0 <= rel <= INT32_MAX:
            raise ValueError(f"offset {offset} does not fit segment base {self.base_offset}")
        if self._keys and rel <= self._keys[-1]:
            raise ValueError(f"index offset {offset} not above last entry")
        self._write_entry(self.ENTRY.pack(rel, position))
        self._keys.append(rel)
        self._values.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the greatest entry with offset <= target, else (base, 0)."""
        if self._unread is not None:
            self.read_entries()
        i = bisect.bisect_right(self._keys, offset - self.base_offset) - 1
        found = (self.base_offset + self._keys[i], self._values[i]) if i >= 0 else None
        if self._sealed is not None:
            self._sealed.memory.used(self)
        return (self.base_offset, 0) if found is None else found

    def last_entry(self) -> tuple[int, int]:
        unread = self._unread
        if unread is not None:
            return self.base_offset + unread.last[0], unread.last[1]
        if not self._keys:
            return self.base_offset, 0
        return self.base_offset + self._keys[-1], self._values[-1]

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or beyond ``position``."""
        self.read_entries()
        self._truncate_entries(bisect.bisect_left(self._values, position))


class TimeIndex(_Index):
    """Timestamp → relative offset; timestamps strictly grow."""

    ENTRY = struct.Struct(">qi")
    KEY_TYPE = "q"

    def check(self, keys: array, values: array, bound: int) -> None:
        """Raise CorruptIndexError unless timestamps grow and every offset is below ``bound``,
        the segment's next offset."""
        first = True
        last_ts = last_rel = 0
        for ts, rel in zip(keys, values):
            if rel < 0 or self.base_offset + rel >= bound:
                raise CorruptIndexError(f"{self.path}: entry ({ts}, {rel}) out of range")
            if not first and (ts <= last_ts or rel < last_rel):
                raise CorruptIndexError(f"{self.path}: entries not increasing")
            first, last_ts, last_rel = False, ts, rel

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> bool:
        if self._unread is not None:
            self.read_entries()
        if self._keys and timestamp <= self._keys[-1]:
            return False
        if not skip_full_check and self.is_full():
            return False
        rel = offset - self.base_offset
        if self._values and rel < self._values[-1]:
            return False
        self._write_entry(self.ENTRY.pack(timestamp, rel))
        self._keys.append(timestamp)
        self._values.append(rel)
        return True

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry, or None."""
        unread = self._unread
        if unread is not None:
            return unread.last[0], self.base_offset + unread.last[1]
        if not self._keys:
            return None
        return self._keys[-1], self.base_offset + self._values[-1]

    def lookup_before(self, timestamp: int) -> int:
        """An offset such that every batch before its batch has maxTimestamp < ``timestamp``:
        the offset of the greatest entry with timestamp < target, else the segment base."""
        if self._unread is not None:
            self.read_entries()
        i = bisect.bisect_left(self._keys, timestamp) - 1
        found = self.base_offset + self._values[i] if i >= 0 else self.base_offset
        if self._sealed is not None:
            self._sealed.memory.used(self)
        return found

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets at or beyond ``offset``."""
        self.read_entries()
        self._truncate_entries(bisect.bisect_left(self._values, offset - self.base_offset))
