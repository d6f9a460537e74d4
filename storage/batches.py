"""The few record-batch operations storage needs, on top of ``protocol.records``.

Storage never decodes records on the append path: it reads the 61-byte header, patches
``baseOffset`` and ``partitionLeaderEpoch`` (outside the CRC), and for LogAppendTime rewrites the
timestamp type and ``maxTimestamp`` and recomputes the CRC-32C (``RecordBatch`` does the work).
Headers are unpacked once into a ``BatchHeader`` tuple because the segment code reads many of
them from ``pread`` buffers. Record-level decoding happens only where a feature needs it (exact
offsets in ``offset_for_timestamp`` / ``max_timestamp``), through ``iter_record_timestamps``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from wireserver.protocol.records import (
    ATTR_CONTROL_MASK as CONTROL_MASK,
)
from wireserver.protocol.records import (
    ATTR_TIMESTAMP_TYPE_MASK as TIMESTAMP_TYPE_MASK,
)
from wireserver.protocol.records import (
    ATTR_TRANSACTIONAL_MASK as TRANSACTIONAL_MASK,
)
from wireserver.protocol.records import (
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    RecordBatch,
    crc32c_checksum,
)
from wireserver.protocol.records import (
    HEADER_STRUCT as _HEADER,
)

#: baseOffset, batchLength and partitionLeaderEpoch: the first 16 bytes of a v2 batch header
_OFFSET_LENGTH_EPOCH = struct.Struct(">qii")


class BatchHeader(NamedTuple):
    """The unpacked 61-byte header of a v2 record batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)


#: ``tuple.__new__`` straight from the unpacked fields: ``BatchHeader._make`` is two Python
#: calls more, and every batch of every Produce has its header read twice
_new_header = tuple.__new__


def read_header(buf, pos: int = 0) -> BatchHeader:
    """Unpack the header at ``pos``; the caller guarantees 61 bytes are there."""
    return _new_header(BatchHeader, _HEADER.unpack_from(buf, pos))


def _view(buf, pos: int, size: int) -> RecordBatch:
    return RecordBatch(memoryview(buf)[pos : pos + size])


def crc_ok(buf, pos: int, size: int, crc: int) -> bool:
    """Whether ``crc``, the stored CRC-32C of the batch at ``buf[pos:pos+size]`` (its header
    read already), matches its bytes. No ``RecordBatch`` is made: a recovery checks every
    batch of a segment this way, and for 16 KB batches making one cost as much as the CRC."""
    return crc32c_checksum(memoryview(buf)[pos + CRC_START : pos + size]) == crc


def set_base_offset_and_epoch(buf, pos: int, header: BatchHeader, offset: int, epoch: int) -> None:
    """Write baseOffset and partitionLeaderEpoch (both outside the CRC) of the batch at ``pos``,
    whose header is ``header``, in one pack: batchLength, between the two, is written back as
    it is. An append does this to every batch, so no ``RecordBatch`` view is made for it."""
    _OFFSET_LENGTH_EPOCH.pack_into(buf, pos, offset, header.batch_length, epoch)


def set_log_append_time(buf, pos: int, size: int, timestamp: int) -> None:
    """Mark the batch LogAppendTime with ``maxTimestamp = timestamp`` and fix up the CRC."""
    _view(buf, pos, size).set_log_append_time(timestamp)


def iter_headers(buf) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) for each batch in a buffer of whole, already validated batches."""
    mv = memoryview(buf)
    pos = 0
    end = len(mv)
    while pos + HEADER_SIZE <= end:
        header = read_header(mv, pos)
        if pos + header.size > end:
            raise ValueError(f"batch at {pos} runs past the end of the buffer")
        yield pos, header
        pos += header.size
    if pos != end:
        raise ValueError(f"{end - pos} trailing bytes after the last batch")


def iter_record_timestamps(batch: bytes) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of each record of one whole batch, decompressing if needed.

    For LogAppendTime batches every record's timestamp is the batch's ``maxTimestamp``.
    """
    for record in RecordBatch(batch).records():
        yield record.offset, record.timestamp
