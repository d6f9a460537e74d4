"""Kafka record batches, format v2 (magic 2): a zero-copy view, a splitter and a builder.

Layout of a v2 batch (all big-endian), 61 bytes of header then the records::

    baseOffset            int64   @0    -+ the 12-byte "log overhead"
    batchLength           int32   @8    -+ (bytes after this field)
    partitionLeaderEpoch  int32   @12
    magic                 int8    @16   (2)
    crc                   uint32  @17   CRC-32C of everything from attributes to the end
    attributes            int16   @21   codec 0x07, timestamp type 0x08, transactional 0x10,
                                        control 0x20, delete horizon 0x40
    lastOffsetDelta       int32   @23
    baseTimestamp         int64   @27
    maxTimestamp          int64   @35
    producerId            int64   @43
    producerEpoch         int16   @51
    baseSequence          int32   @53
    recordCount           int32   @57
    records               ...     @61   (compressed as a whole when the codec is not NONE)

Each record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
keyLength varint (-1 = null), key, valueLength varint (-1 = null), value, headerCount varint,
then per header keyLength varint, key (UTF-8), valueLength varint (-1 = null), value. Varints
are zigzag-encoded.

The broker stores batches as clients send them: it reads the header through ``RecordBatch``,
checks the CRC and patches ``baseOffset`` / ``partitionLeaderEpoch`` (outside the CRC) in place.
Records are decoded only by ``RecordBatch.records()`` (and, up to each key, by
``RecordBatch.keyless_records()``). Every decoder here raises only
``DecodeError`` subclasses (``CorruptRecordBatch``, ``TruncatedRecordBatch``,
``UnsupportedMagic``) on bad input.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from crc32c._crc32c import crc32c as crc32c_checksum  # not via crc32c/__init__ (cli.py)

from wireserver.protocol.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Codec,
    compress,
    decompress,
)
from wireserver.protocol.errors import CorruptRecordBatch, TruncatedRecordBatch, UnsupportedMagic

__all__ = [
    "Codec",
    "ControlRecordType",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "build_control_batch",
    "build_empty_batch",
    "decode_control_record",
    "iter_batches",
    "LOG_OVERHEAD",
    "HEADER_SIZE",
    "MAGIC_V2",
    "NO_TIMESTAMP",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
]

# -- header layout -----------------------------------------------------------------------------

BASE_OFFSET_OFFSET = 0
BATCH_LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORD_COUNT_OFFSET = 57
RECORDS_OFFSET = 61

LOG_OVERHEAD = 12  # baseOffset + batchLength
HEADER_SIZE = 61
#: The smallest legal batchLength: a header and no records.
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
#: CRC covers the bytes from attributes to the end of the batch.
CRC_START = ATTRIBUTES_OFFSET

MAGIC_V2 = 2
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

ATTR_COMPRESSION_MASK = 0x07
#: compression bits -> codec, a dict lookup where ``Codec(bits)`` is an enum call (every
#: produced batch's validation asks)
_CODECS = {codec.value: codec for codec in Codec}
ATTR_TIMESTAMP_TYPE_MASK = 0x08
ATTR_TRANSACTIONAL_MASK = 0x10
ATTR_CONTROL_MASK = 0x20
ATTR_DELETE_HORIZON_MASK = 0x40

TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

#: The whole 61-byte header, in field order.
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
assert HEADER_STRUCT.size == HEADER_SIZE

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")

_i8 = _INT8.unpack_from
_i16 = _INT16.unpack_from
_i32 = _INT32.unpack_from
_u32 = _UINT32.unpack_from
_i64 = _INT64.unpack_from


# -- records -----------------------------------------------------------------------------------


@dataclass(slots=True)
class Record:
    """One record of a batch, with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list  # list[tuple[str, bytes | None]]


class ControlRecordType:
    """The ``type`` field of a control record's key (Kafka's ``ControlRecordType``)."""

    ABORT: Final = 0
    COMMIT: Final = 1
    LEADER_CHANGE: Final = 2
    SNAPSHOT_HEADER: Final = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def decode_control_record(record: Record) -> tuple[int, int]:
    """``(control type, coordinator epoch)`` of a transaction-marker control record.

    The coordinator epoch is only meaningful for ABORT/COMMIT markers (``-1`` otherwise)."""
    key = record.key
    if key is None or len(key) < 4:
        raise CorruptRecordBatch("control record key too short")
    _version, kind = _CONTROL_KEY.unpack_from(key, 0)
    epoch = -1
    if kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        value = record.value
        if value is None or len(value) < 6:
            raise CorruptRecordBatch("transaction marker value too short")
        _version, epoch = _CONTROL_VALUE.unpack_from(value, 0)
    return kind, epoch


def _read_varint(buf, pos: int, end: int, limit: int) -> tuple[int, int]:
    """Zigzag varint at ``pos``; returns (value, new position). ``limit`` is 5 or 10 bytes."""
    result = 0
    shift = 0
    stop = min(end, pos + limit)
    while pos < stop:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    if pos >= end:
        raise CorruptRecordBatch("truncated varint in record")
    raise CorruptRecordBatch("varint too long in record")


def _parse_records(
    data: bytes, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None
) -> Iterator[Record]:
    """Yield ``count`` records from ``data`` (uncompressed record bytes), which they must fill
    exactly. ``data`` is ``bytes``, not a view: a record's key and value are then one slice
    each, where a view's slice is a view to copy again (7-13 % of a record's parse in the
    interpreter, about a third compiled; benchmarks/results.md)."""
    end = len(data)
    pos = 0
    for _ in range(count):
        length, pos = _read_varint(data, pos, end, 5)
        if length < 0 or length > end - pos:
            raise CorruptRecordBatch(f"record length {length} runs past the batch")
        rec_end = pos + length
        if pos >= rec_end:
            raise CorruptRecordBatch("empty record")
        pos += 1  # attributes (unused)
        ts_delta, pos = _read_varint(data, pos, rec_end, 10)
        off_delta, pos = _read_varint(data, pos, rec_end, 5)
        key_len, pos = _read_varint(data, pos, rec_end, 5)
        if key_len < 0:
            if key_len != -1:
                raise CorruptRecordBatch(f"bad key length {key_len}")
            key = None
        else:
            if key_len > rec_end - pos:
                raise CorruptRecordBatch("record key runs past the record")
            key = data[pos : pos + key_len]
            pos += key_len
        value_len, pos = _read_varint(data, pos, rec_end, 5)
        if value_len < 0:
            if value_len != -1:
                raise CorruptRecordBatch(f"bad value length {value_len}")
            value = None
        else:
            if value_len > rec_end - pos:
                raise CorruptRecordBatch("record value runs past the record")
            value = data[pos : pos + value_len]
            pos += value_len
        header_count, pos = _read_varint(data, pos, rec_end, 5)
        if header_count < 0 or header_count > rec_end - pos:
            raise CorruptRecordBatch(f"bad header count {header_count}")
        headers = []
        for _h in range(header_count):
            hk_len, pos = _read_varint(data, pos, rec_end, 5)
            if hk_len < 0 or hk_len > rec_end - pos:
                raise CorruptRecordBatch(f"bad header key length {hk_len}")
            try:
                hkey = str(data[pos : pos + hk_len], "utf-8")
            except UnicodeDecodeError:
                raise CorruptRecordBatch("header key is not UTF-8") from None
            pos += hk_len
            hv_len, pos = _read_varint(data, pos, rec_end, 5)
            if hv_len < 0:
                if hv_len != -1:
                    raise CorruptRecordBatch(f"bad header value length {hv_len}")
                hvalue = None
            else:
                if hv_len > rec_end - pos:
                    raise CorruptRecordBatch("header value runs past the record")
                hvalue = data[pos : pos + hv_len]
                pos += hv_len
            headers.append((hkey, hvalue))
        if pos != rec_end:
            raise CorruptRecordBatch("record length does not match its fields")
        timestamp = log_append_time if log_append_time is not None else base_timestamp + ts_delta
        yield Record(base_offset + off_delta, timestamp, key, value, headers)
    if pos != end:
        raise CorruptRecordBatch(f"{end - pos} bytes left over after {count} records")


# -- the batch view ----------------------------------------------------------------------------


class RecordBatch:
    """A zero-copy view over a buffer holding exactly one v2 record batch.

    Construction checks only that the buffer holds a header of magic 2 (``UnsupportedMagic``
    for magic 0/1, ``CorruptRecordBatch`` otherwise); call ``validate()`` before trusting the
    rest. Header properties unpack at fixed offsets on every access.
    """

    __slots__ = ("_buf",)

    def __init__(self, buffer):
        buf = buffer if isinstance(buffer, memoryview) else memoryview(buffer)
        if buf.format != "B" or buf.ndim != 1:
            buf = buf.cast("B")
        if len(buf) <= MAGIC_OFFSET:
            raise CorruptRecordBatch(f"record batch of {len(buf)} bytes is too short")
        magic = buf[MAGIC_OFFSET]
        if magic != MAGIC_V2:
            if magic in (0, 1):
                raise UnsupportedMagic(magic)
            raise CorruptRecordBatch(f"unknown record batch magic {magic}")
        if len(buf) < HEADER_SIZE:
            raise CorruptRecordBatch(f"record batch of {len(buf)} bytes is too short")
        self._buf = buf

    # header fields
    @property
    def buffer(self) -> memoryview:
        return self._buf

    @property
    def base_offset(self) -> int:
        return _i64(self._buf, BASE_OFFSET_OFFSET)[0]

    @property
    def batch_length(self) -> int:
        return _i32(self._buf, BATCH_LENGTH_OFFSET)[0]

    @property
    def partition_leader_epoch(self) -> int:
        return _i32(self._buf, PARTITION_LEADER_EPOCH_OFFSET)[0]

    @property
    def magic(self) -> int:
        return self._buf[MAGIC_OFFSET]

    @property
    def crc(self) -> int:
        return _u32(self._buf, CRC_OFFSET)[0]

    @property
    def attributes(self) -> int:
        return _i16(self._buf, ATTRIBUTES_OFFSET)[0]

    @property
    def compression(self) -> Codec:
        """The codec; ``CorruptRecordBatch`` for the unassigned values 5-7."""
        bits = self._buf[ATTRIBUTES_OFFSET + 1] & ATTR_COMPRESSION_MASK
        codec = _CODECS.get(bits)
        if codec is None:
            raise CorruptRecordBatch(f"unknown compression codec {bits}")
        return codec

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self._buf[ATTRIBUTES_OFFSET + 1] & ATTR_TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self._buf[ATTRIBUTES_OFFSET + 1] & ATTR_TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self._buf[ATTRIBUTES_OFFSET + 1] & ATTR_CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self._buf[ATTRIBUTES_OFFSET + 1] & ATTR_DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon the log cleaner stored in the base timestamp (KIP-534), if set."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_offset_delta(self) -> int:
        return _i32(self._buf, LAST_OFFSET_DELTA_OFFSET)[0]

    @property
    def base_timestamp(self) -> int:
        return _i64(self._buf, BASE_TIMESTAMP_OFFSET)[0]

    @property
    def max_timestamp(self) -> int:
        return _i64(self._buf, MAX_TIMESTAMP_OFFSET)[0]

    @property
    def producer_id(self) -> int:
        return _i64(self._buf, PRODUCER_ID_OFFSET)[0]

    @property
    def producer_epoch(self) -> int:
        return _i16(self._buf, PRODUCER_EPOCH_OFFSET)[0]

    @property
    def base_sequence(self) -> int:
        return _i32(self._buf, BASE_SEQUENCE_OFFSET)[0]

    @property
    def record_count(self) -> int:
        return _i32(self._buf, RECORD_COUNT_OFFSET)[0]

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Total bytes of the batch: batchLength + 12."""
        return _i32(self._buf, BATCH_LENGTH_OFFSET)[0] + LOG_OVERHEAD

    def header(self) -> tuple:
        """All 13 header fields at once, in layout order (one ``struct`` call)."""
        return HEADER_STRUCT.unpack_from(self._buf, 0)

    def __len__(self) -> int:
        return len(self._buf)

    def __repr__(self) -> str:
        return (
            f"<RecordBatch base_offset={self.base_offset} last_offset_delta="
            f"{self.last_offset_delta} count={self.record_count} size={len(self._buf)} "
            f"attributes={self.attributes:#x}>"
        )

    # checks
    def compute_crc(self) -> int:
        """CRC-32C of the bytes from attributes to the end of the buffer."""
        return crc32c_checksum(self._buf[CRC_START:])

    def verify_crc(self) -> bool:
        return self.compute_crc() == self.crc

    def validate(self, strict: bool = False, check_crc: bool = True) -> None:
        """Raise ``CorruptRecordBatch`` unless the header holds together and the CRC matches
        (``check_crc=False``: the caller has just checked the CRC).

        Checks: batchLength >= 49 and equal to the buffer length - 12; recordCount >= 0;
        lastOffsetDelta >= 0; recordCount <= lastOffsetDelta + 1; a known codec; for an
        uncompressed batch, no more records than bytes; the CRC.

        ``strict=True`` adds what Kafka demands of a batch a producer sends: at least one
        record and recordCount == lastOffsetDelta + 1 (compaction may leave gaps in batches
        already in a log, so this is not checked by default).
        """
        buf = self._buf
        batch_length = _i32(buf, BATCH_LENGTH_OFFSET)[0]
        if batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordBatch(f"batch length {batch_length} is below {MIN_BATCH_LENGTH}")
        if batch_length + LOG_OVERHEAD != len(buf):
            raise CorruptRecordBatch(
                f"batch length {batch_length} does not match buffer of {len(buf)} bytes"
            )
        count = _i32(buf, RECORD_COUNT_OFFSET)[0]
        last_delta = _i32(buf, LAST_OFFSET_DELTA_OFFSET)[0]
        if count < 0:
            raise CorruptRecordBatch(f"negative record count {count}")
        if last_delta < 0:
            raise CorruptRecordBatch(f"negative last offset delta {last_delta}")
        if count > last_delta + 1:
            raise CorruptRecordBatch(
                f"record count {count} exceeds the offset range of {last_delta + 1}"
            )
        codec = self.compression
        if codec is Codec.NONE and count > len(buf) - HEADER_SIZE:
            raise CorruptRecordBatch(
                f"{count} records cannot fit in {len(buf) - HEADER_SIZE} bytes"
            )
        if strict:
            if count == 0:
                raise CorruptRecordBatch("batch has no records")
            if count != last_delta + 1:
                raise CorruptRecordBatch(
                    f"record count {count} does not match last offset delta {last_delta}"
                )
        if check_crc and not self.verify_crc():
            raise CorruptRecordBatch(
                f"CRC mismatch: stored {self.crc:#010x}, computed {self.compute_crc():#010x}"
            )

    # patches
    def set_base_offset(self, offset: int) -> None:
        """Write baseOffset in place (outside the CRC). Needs a writable buffer."""
        _INT64.pack_into(self._buf, BASE_OFFSET_OFFSET, offset)

    def set_partition_leader_epoch(self, epoch: int) -> None:
        """Write partitionLeaderEpoch in place (outside the CRC). Needs a writable buffer."""
        _INT32.pack_into(self._buf, PARTITION_LEADER_EPOCH_OFFSET, epoch)

    def set_log_append_time(self, timestamp_ms: int) -> None:
        """Kafka's LogAppendTime: set the timestamp-type bit and maxTimestamp, rewrite the CRC.
        Records then all read as ``timestamp_ms``. Needs a writable buffer."""
        buf = self._buf
        attrs = _i16(buf, ATTRIBUTES_OFFSET)[0] | ATTR_TIMESTAMP_TYPE_MASK
        _INT16.pack_into(buf, ATTRIBUTES_OFFSET, attrs)
        _INT64.pack_into(buf, MAX_TIMESTAMP_OFFSET, timestamp_ms)
        _UINT32.pack_into(buf, CRC_OFFSET, self.compute_crc())

    # records
    def records(
        self, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
    ) -> Iterator[Record]:
        """Iterate the records, decompressing first when needed. Control batches' records
        iterate too (see ``decode_control_record``). ``CorruptRecordBatch`` on anything
        malformed. Does not check the CRC: call ``validate()`` for that."""
        buf = self._buf
        count = _i32(buf, RECORD_COUNT_OFFSET)[0]
        if count < 0:
            raise CorruptRecordBatch(f"negative record count {count}")
        end = _i32(buf, BATCH_LENGTH_OFFSET)[0] + LOG_OVERHEAD
        if end < HEADER_SIZE or end > len(buf):
            raise CorruptRecordBatch("batch length does not fit the buffer")
        codec = self.compression
        if codec is Codec.NONE:
            payload = bytes(buf[HEADER_SIZE:end])  # one copy, for slices that need none
        else:
            payload = decompress(codec, buf[HEADER_SIZE:end], max_decompressed_size)
        if count > len(payload):
            raise CorruptRecordBatch(f"{count} records cannot fit in {len(payload)} bytes")
        log_append_time = self.max_timestamp if self.timestamp_type else None
        return _parse_records(
            payload, count, self.base_offset, self.base_timestamp, log_append_time
        )

    def keyless_records(
        self, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
    ) -> list[int]:
        """Indexes in the batch of the records whose key is null (a compacted topic refuses
        them). Each record is read up to its key length and then skipped by its length, so an
        uncompressed batch is walked in place, nothing copied; a compressed one is
        decompressed first. ``CorruptRecordBatch`` unless the records fill the batch exactly."""
        payload = self._buf[HEADER_SIZE:]
        codec = self.compression
        if codec is not Codec.NONE:
            payload = decompress(codec, payload, max_decompressed_size)
        end = len(payload)
        pos = 0
        keyless = []
        for index in range(self.record_count):
            length, pos = _read_varint(payload, pos, end, 5)
            if length <= 0 or length > end - pos:
                raise CorruptRecordBatch(f"record length {length} does not fit the batch")
            rec_end = pos + length
            _ts_delta, field = _read_varint(payload, pos + 1, rec_end, 10)  # after attributes
            _off_delta, field = _read_varint(payload, field, rec_end, 5)
            key_len, field = _read_varint(payload, field, rec_end, 5)
            if key_len < -1 or key_len > rec_end - field:
                raise CorruptRecordBatch(f"bad key length {key_len}")
            if key_len == -1:
                keyless.append(index)
            pos = rec_end
        if pos != end:
            raise CorruptRecordBatch(f"{end - pos} bytes left over after the records")
        return keyless


# -- splitting ---------------------------------------------------------------------------------


def iter_batches(buf) -> Iterator[RecordBatch]:
    """Split concatenated batches by their length fields alone (no CRC work).

    Raises, once the complete batches before it have been yielded: ``UnsupportedMagic`` for a
    magic 0/1 message set, ``CorruptRecordBatch`` for another magic or a batchLength below 49,
    ``TruncatedRecordBatch`` (``valid_length`` = bytes of the complete batches before it) for a
    last batch that runs past the end of ``buf``.
    """
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    n = len(view)
    pos = 0
    while pos < n:
        rem = n - pos
        if rem < LOG_OVERHEAD:
            raise TruncatedRecordBatch(f"{rem} trailing bytes are not a batch header", pos)
        length = _i32(view, pos + BATCH_LENGTH_OFFSET)[0]
        size = length + LOG_OVERHEAD
        if rem <= MAGIC_OFFSET:
            if length < MIN_BATCH_LENGTH:
                raise CorruptRecordBatch(
                    f"batch length {length} at {pos} is below {MIN_BATCH_LENGTH}"
                )
            raise TruncatedRecordBatch(f"batch at {pos} is cut off after {rem} bytes", pos)
        magic = view[pos + MAGIC_OFFSET]
        if magic != MAGIC_V2:
            if magic in (0, 1):
                raise UnsupportedMagic(magic)
            raise CorruptRecordBatch(f"unknown record batch magic {magic} at {pos}")
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordBatch(f"batch length {length} at {pos} is below {MIN_BATCH_LENGTH}")
        if size > rem:
            raise TruncatedRecordBatch(
                f"batch at {pos} of {size} bytes runs past the buffer ({rem} bytes left)", pos
            )
        yield RecordBatch(view[pos : pos + size])
        pos += size


# -- building ----------------------------------------------------------------------------------


def _varint(value: int, out: bytearray) -> None:
    """Append ``value`` zigzag varint-encoded (works for 32- and 64-bit values)."""
    v = (value << 1) ^ (value >> 63)
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _as_bytes(data) -> bytes | None:
    if data is None:
        return None
    return bytes(data)


class RecordBatchBuilder:
    """Builds one v2 batch. ``append`` records in offset order, then ``build()``."""

    __slots__ = (
        "compression",
        "base_offset",
        "partition_leader_epoch",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "is_control",
        "timestamp_type",
        "delete_horizon_ms",
        "_records",
        "_count",
        "_base_timestamp",
        "_max_timestamp",
        "_last_delta",
    )

    def __init__(
        self,
        compression: Codec = Codec.NONE,
        base_offset: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control: bool = False,
        timestamp_type: int = TIMESTAMP_CREATE_TIME,
        delete_horizon_ms: int = NO_TIMESTAMP,
    ):
        """``delete_horizon_ms`` >= 0 (the log cleaner, KIP-534) sets the delete-horizon
        attribute and stores the horizon as the batch's base timestamp; record timestamps are
        then written relative to it (deltas may be negative) and read back unchanged."""
        self.compression = Codec(compression)
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.timestamp_type = timestamp_type
        self.delete_horizon_ms = delete_horizon_ms
        self._records = bytearray()
        self._count = 0
        self._base_timestamp = delete_horizon_ms
        self._max_timestamp = NO_TIMESTAMP
        self._last_delta = -1

    @property
    def record_count(self) -> int:
        return self._count

    def append(
        self,
        timestamp: int,
        key,
        value,
        headers: Iterable[tuple] = (),
        offset_delta: int | None = None,
    ) -> int:
        """Add a record; returns its offset delta. ``key``/``value`` are bytes-like or None,
        ``headers`` pairs of (str key, bytes-like value or None). ``offset_delta`` defaults to
        the next one; the log cleaner passes the record's own, leaving holes, which must grow."""
        delta = self._last_delta + 1 if offset_delta is None else offset_delta
        if delta <= self._last_delta:
            raise ValueError(f"offset delta {delta} does not follow {self._last_delta}")
        if self._count == 0:
            if self.delete_horizon_ms < 0:
                self._base_timestamp = timestamp
            self._max_timestamp = timestamp
        elif timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        body = bytearray(b"\x00")  # attributes
        _varint(timestamp - self._base_timestamp, body)
        _varint(delta, body)
        for part in (_as_bytes(key), _as_bytes(value)):
            if part is None:
                body.append(1)  # zigzag(-1)
            else:
                _varint(len(part), body)
                body += part
        headers = list(headers)
        _varint(len(headers), body)
        for hkey, hvalue in headers:
            hk = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
            _varint(len(hk), body)
            body += hk
            hv = _as_bytes(hvalue)
            if hv is None:
                body.append(1)
            else:
                _varint(len(hv), body)
                body += hv
        _varint(len(body), self._records)
        self._records += body
        self._count += 1
        self._last_delta = delta
        return delta

    def build(
        self, last_offset_delta: int | None = None, max_timestamp: int | None = None
    ) -> bytearray:
        """The finished batch, CRC included. ``last_offset_delta`` (at least the last record's)
        and ``max_timestamp`` override what the records give: the log cleaner keeps a batch's
        offset range (its producer's last sequence depends on it) and its LogAppendTime."""
        if last_offset_delta is None:
            last_offset_delta = max(self._last_delta, 0)
        elif last_offset_delta < self._last_delta:
            raise ValueError(f"last offset delta {last_offset_delta} is below a record's")
        payload: bytes | bytearray = self._records
        if self.compression is not Codec.NONE:
            payload = compress(self.compression, bytes(payload))
        attrs = int(self.compression)
        if self.timestamp_type:
            attrs |= ATTR_TIMESTAMP_TYPE_MASK
        if self.is_transactional:
            attrs |= ATTR_TRANSACTIONAL_MASK
        if self.is_control:
            attrs |= ATTR_CONTROL_MASK
        if self.delete_horizon_ms >= 0:
            attrs |= ATTR_DELETE_HORIZON_MASK
        out = bytearray(HEADER_SIZE + len(payload))
        HEADER_STRUCT.pack_into(
            out,
            0,
            self.base_offset,
            len(out) - LOG_OVERHEAD,
            self.partition_leader_epoch,
            MAGIC_V2,
            0,
            attrs,
            last_offset_delta,
            self._base_timestamp,
            self._max_timestamp if max_timestamp is None else max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self._count,
        )
        out[HEADER_SIZE:] = payload
        _UINT32.pack_into(out, CRC_OFFSET, crc32c_checksum(memoryview(out)[CRC_START:]))
        return out


def build_empty_batch(batch: RecordBatch) -> bytearray:
    """A header-only copy of ``batch`` (no records, codec NONE, no base timestamp): what the log
    cleaner keeps of a batch whose records all went but whose offset range and producer fields
    must stay (Kafka's ``DefaultRecordBatch.writeEmptyHeader``)."""
    attrs = batch.attributes & (
        ATTR_TIMESTAMP_TYPE_MASK | ATTR_TRANSACTIONAL_MASK | ATTR_CONTROL_MASK
    )
    out = bytearray(HEADER_SIZE)
    HEADER_STRUCT.pack_into(
        out,
        0,
        batch.base_offset,
        HEADER_SIZE - LOG_OVERHEAD,
        batch.partition_leader_epoch,
        MAGIC_V2,
        0,
        attrs,
        batch.last_offset_delta,
        NO_TIMESTAMP,
        batch.max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        0,
    )
    _UINT32.pack_into(out, CRC_OFFSET, crc32c_checksum(memoryview(out)[CRC_START:]))
    return out


def build_control_batch(
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytearray:
    """A transaction marker: a transactional control batch holding one control record
    (key: version 0, type COMMIT/ABORT; value: version 0, coordinatorEpoch)."""
    builder = RecordBatchBuilder(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
    )
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    builder.append(
        timestamp,
        _CONTROL_KEY.pack(0, kind),
        _CONTROL_VALUE.pack(0, coordinator_epoch),
    )
    return builder.build()
