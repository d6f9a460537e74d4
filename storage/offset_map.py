"""The log cleaner's key → latest offset map (Kafka's ``SkimpyOffsetMap``).

The cleaner must know, for every key of the dirty part of a log, the offset of its last record.
Keeping the keys themselves would make memory grow with the keys' sizes; like Kafka we keep the
16-byte MD5 of each key and an 8-byte offset in one preallocated buffer of
``log.cleaner.dedupe.buffer.size`` bytes (an open-addressing hash table, linear probing), so the
memory used is exactly the configured buffer whatever the keys. Two keys with the same MD5 would
be taken for one key (as in Kafka); that is a 2^-128 chance a pair.

The cleaner stops filling the map at ``capacity`` = slots × ``log.cleaner.io.buffer.load.factor``
(0.9 by default), which keeps probe sequences short, and then cleans only as far as the map got.
"""

from __future__ import annotations

import hashlib
import struct

HASH_SIZE = 16  # MD5
ENTRY_SIZE = HASH_SIZE + 8  # hash + offset
DEFAULT_LOAD_FACTOR = 0.9
_OFFSET = struct.Struct(">q")


class OffsetMap:
    """Key hashes → offsets in a fixed buffer of ``memory_bytes``. Not thread-safe: one cleaning
    uses one map."""

    def __init__(self, memory_bytes: int, load_factor: float = DEFAULT_LOAD_FACTOR):
        self.slots = memory_bytes // ENTRY_SIZE
        if self.slots < 1:
            raise ValueError(f"an offset map of {memory_bytes} bytes holds no entry")
        self.capacity = max(1, int(self.slots * load_factor))
        # Offsets are stored plus one, so an all-zero entry is an empty slot.
        self._table = bytearray(self.slots * ENTRY_SIZE)
        self.size = 0
        # The last offset the map covers (Kafka's ``latestOffset``): set by every put (a map that
        # fills up in the middle of a batch covers the log up to its last record put) and by
        # ``update_latest_offset`` after each batch read.
        self.latest_offset = -1

    @staticmethod
    def hash_key(key: bytes) -> bytes:
        return hashlib.md5(key, usedforsecurity=False).digest()

    def _find(self, digest: bytes) -> tuple[int, bool]:
        """(position of the slot holding ``digest`` or of the empty slot ending its probe
        sequence, whether the digest is there)."""
        table = self._table
        slot = int.from_bytes(digest[:8], "big") % self.slots
        while True:
            position = slot * ENTRY_SIZE
            if table[position + HASH_SIZE : position + ENTRY_SIZE] == b"\0" * 8:
                return position, False
            if table[position : position + HASH_SIZE] == digest:
                return position, True
            slot = slot + 1 if slot + 1 < self.slots else 0

    @property
    def full(self) -> bool:
        return self.size >= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        """Map ``key`` to ``offset`` (later puts win). Raises when the map is full and the key
        new: callers check ``full`` first, as the cleaner stops there."""
        digest = self.hash_key(key)
        position, found = self._find(digest)
        if not found:
            if self.size >= self.slots:
                raise OverflowError("offset map is full")
            self._table[position : position + HASH_SIZE] = digest
            self.size += 1
        _OFFSET.pack_into(self._table, position + HASH_SIZE, offset + 1)
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The offset of ``key``'s last record, -1 when the key is not in the map."""
        position, found = self._find(self.hash_key(key))
        if not found:
            return -1
        return _OFFSET.unpack_from(self._table, position + HASH_SIZE)[0] - 1

    def update_latest_offset(self, offset: int) -> None:
        """Say the map covers the log up to ``offset`` (batches with no key to map count too)."""
        self.latest_offset = offset

    @property
    def utilization(self) -> float:
        return self.size / self.slots
