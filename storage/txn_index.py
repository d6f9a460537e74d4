"""The aborted-transaction index of a segment: ``<20-digit base offset>.txnindex`` (Kafka's
``TransactionIndex`` and ``AbortedTxn``).

Each entry is 34 bytes, big-endian, as Kafka writes them:

    version            int16  0
    producer_id        int64
    first_offset       int64  first offset of the aborted transaction in this partition
    last_offset        int64  offset of its ABORT marker
    last_stable_offset int64  the partition's LSO right after the marker was written

An entry is appended to the index of the segment that holds the ABORT marker, so entries are
ordered by ``last_offset``. A read_committed fetch asks every segment from the one holding the
fetch offset for entries overlapping the returned range (``last_offset >= fetch offset`` and
``first_offset < end of the returned data``), and the client drops the aborted records.

The file is created on the first entry (a segment with no aborted transaction has none, as in
Kafka). Entries are kept in memory; a torn tail (a length that is not a multiple of 34) is cut
off when the file is read.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from typing import NamedTuple

from wireserver.storage.open_files import OpenFiles, PooledFile

TXN_INDEX_SUFFIX = ".txnindex"
ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class CorruptTxnIndex(ValueError):
    pass


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            ABORTED_TXN_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )

    @classmethod
    def decode(cls, raw, pos: int = 0) -> AbortedTxn:
        version, pid, first, last, lso = _ENTRY.unpack_from(raw, pos)
        if version != ABORTED_TXN_VERSION:
            raise CorruptTxnIndex(f"unknown aborted transaction entry version {version}")
        return cls(pid, first, last, lso)


class TransactionIndex:
    """One segment's ``.txnindex``. Reactor thread only, except ``flush``."""

    def __init__(self, path: str, pool: OpenFiles | None = None):
        self._entries: list[AbortedTxn] | None = None  # loaded on first use
        self._file = PooledFile(path, pool)

    @property
    def path(self) -> str:
        return self._file.path

    # -- reading -------------------------------------------------------------------------
    def _load(self) -> list[AbortedTxn]:
        if self._entries is not None:
            return self._entries
        entries: list[AbortedTxn] = []
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raw = b""
        whole = len(raw) - len(raw) % ENTRY_SIZE
        try:
            for pos in range(0, whole, ENTRY_SIZE):
                entries.append(AbortedTxn.decode(raw, pos))
        except CorruptTxnIndex:
            whole = len(entries) * ENTRY_SIZE
        if whole != len(raw):
            os.truncate(self.path, whole)
        self._entries = entries
        return entries

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._load())

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetch_offset, upper_bound), and whether the search may stop at
        this segment: an entry whose last stable offset reaches ``upper_bound`` (Kafka's
        ``TxnIndexSearchResult.isComplete``; no transaction open then began below it). One
        pass, and nothing built for an empty index (most segments of most logs): a
        read_committed fetch asks every segment from its offset up."""
        found: list[AbortedTxn] = []
        for txn in self._load():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    # -- writing -------------------------------------------------------------------------
    def append(self, txn: AbortedTxn) -> bool:
        """Add an entry unless one at or after its marker offset is there already (replaying
        the log after a restart finds the markers it indexed before). Returns whether added."""
        entries = self._load()
        if entries and entries[-1].last_offset >= txn.last_offset:
            return False
        self._file.pwrite(txn.encode(), len(entries) * ENTRY_SIZE)
        entries.append(txn)
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after ``offset``."""
        entries = self._load()
        keep = [txn for txn in entries if txn.last_offset < offset]
        if len(keep) == len(entries):
            return
        self._entries = keep
        if self._file.is_open or os.path.exists(self.path):
            self._file.truncate(len(keep) * ENTRY_SIZE)

    def create(self) -> None:
        """Make the (possibly empty) file exist now rather than on the first entry."""
        self._load()
        self._file.fd  # noqa: B018 - opening creates it

    def rename(self, path: str) -> None:
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self._file.path = path

    def reset(self) -> None:
        self._entries = []
        if self._file.is_open or os.path.exists(self.path):
            self._file.truncate(0)

    def write_all(self, entries: Iterable[AbortedTxn]) -> None:
        self.reset()
        for txn in entries:
            self.append(txn)

    # -- lifecycle -----------------------------------------------------------------------
    def flush(self) -> None:
        self._file.fsync()

    def close(self) -> None:
        self._file.close()

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._entries = []
