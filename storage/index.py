"""Sparse segment indexes in Kafka's on-disk formats.

- ``.index`` (``OffsetIndex``): 8-byte entries, int32 offset relative to the segment's base
  offset and int32 byte position in the ``.log`` file. An entry ``(o, p)`` says the batch whose
  last offset is ``o`` starts at ``p``; a lookup returns the greatest entry with offset <= target
  and the reader walks batch headers forward from there.
- ``.timeindex`` (``TimeIndex``): 12-byte entries, int64 timestamp and int32 relative offset. An
  entry ``(t, o)`` says the largest batch ``maxTimestamp`` up to offset ``o`` is ``t``;
  timestamps in the file only grow.

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
import os
import struct
import sys
import threading
from array import array

from wireserver.storage.open_files import OpenFiles, PooledFile

INT32_MAX = 2**31 - 1
#: Entries kept for one write to the file (one 16 KB batch per entry is about a second of a
#: busy partition's Produce requests).
PENDING_ENTRIES = 128


class CorruptIndexError(ValueError):
    """An index file that fails its sanity check; the segment's indexes must be rebuilt."""


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
        with self._lock:
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
        return len(self._keys)

    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    @property
    def size_bytes(self) -> int:
        return len(self._keys) * self.ENTRY.size

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
        self._keys, self._values = keys, values
        self._pending.clear()
        self._on_file = len(keys)


class OffsetIndex(_Index):
    """Relative offset → file position."""

    ENTRY = struct.Struct(">ii")

    def load(self, log_size: int) -> None:
        """Read the file and sanity-check it against the log's size; raise CorruptIndexError."""
        keys, values = self._load_raw()
        last_rel = last_pos = -1
        for rel, pos in zip(keys, values):
            if rel < 0 or pos <= 0 or pos >= log_size:
                raise CorruptIndexError(f"{self.path}: entry ({rel}, {pos}) out of range")
            if rel <= last_rel or pos <= last_pos:
                raise CorruptIndexError(f"{self.path}: entries not increasing")
            last_rel, last_pos = rel, pos
        self._loaded(keys, values)

    def append(self, offset: int, position: int) -> None:
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
        i = bisect.bisect_right(self._keys, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[i], self._values[i]

    def last_entry(self) -> tuple[int, int]:
        if not self._keys:
            return self.base_offset, 0
        return self.base_offset + self._keys[-1], self._values[-1]

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or beyond ``position``."""
        self._truncate_entries(bisect.bisect_left(self._values, position))


class TimeIndex(_Index):
    """Timestamp → relative offset; timestamps strictly grow."""

    ENTRY = struct.Struct(">qi")
    KEY_TYPE = "q"

    def load(self, next_offset: int | None = None) -> None:
        keys, values = self._load_raw()
        first = True
        last_ts = last_rel = 0
        for ts, rel in zip(keys, values):
            if rel < 0 or (next_offset is not None and self.base_offset + rel >= next_offset):
                raise CorruptIndexError(f"{self.path}: entry ({ts}, {rel}) out of range")
            if not first and (ts <= last_ts or rel < last_rel):
                raise CorruptIndexError(f"{self.path}: entries not increasing")
            first, last_ts, last_rel = False, ts, rel
        self._loaded(keys, values)

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> bool:
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
        if not self._keys:
            return None
        return self._keys[-1], self.base_offset + self._values[-1]

    def lookup_before(self, timestamp: int) -> int:
        """An offset such that every batch before its batch has maxTimestamp < ``timestamp``:
        the offset of the greatest entry with timestamp < target, else the segment base."""
        i = bisect.bisect_left(self._keys, timestamp) - 1
        if i < 0:
            return self.base_offset
        return self.base_offset + self._values[i]

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets at or beyond ``offset``."""
        self._truncate_entries(bisect.bisect_left(self._values, offset - self.base_offset))
