"""A hand-written decoder for Produce request bodies (API key 0, versions 3-13).

It exists for one reason: zero-copy records. kafka-python's generated decoder copies every
partition's ``records`` out of the frame with ``bytes(...)``; here each ``records`` is a
``memoryview`` slice of the request frame, so a record batch is not copied before the handler
decides what to do with it. Everything else (a few ints and strings per topic and partition) is
decoded plainly with ``struct.Struct``; records are never looked into.

The result mirrors kafka-python's ``ProduceRequest`` attribute names (``transactional_id``,
``acks``, ``timeout_ms``, ``topic_data[].name/.topic_id/.partition_data[].index/.records``), so
handlers read either. Any malformed input raises ``DecodeError`` and nothing else.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from wireserver.protocol.errors import DecodeError

FIRST_FLEXIBLE_VERSION = 9
FIRST_TOPIC_ID_VERSION = 13
MIN_VERSION = 3
MAX_VERSION = 13

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_MAX_STRING = 0x7FFF  # Kafka refuses longer compact strings too
_ZERO_UUID = uuid.UUID(int=0)
T = TypeVar("T")

#: Topic ids as read, by their 16 bytes: making a ``UUID`` cost more than the rest of a
#: topic's fields (a Kafka 4 producer names its topic by id in every request), and a broker
#: sees few distinct ids. Emptied when it passes ``_TOPIC_IDS_KEPT``.
_topic_ids: dict[bytes, uuid.UUID] = {}
_TOPIC_IDS_KEPT = 10_000


def topic_id_of(raw: bytes) -> uuid.UUID | None:
    """The id in ``raw`` (None for the zero id, which names no topic), kept for next time
    (Produce and Fetch requests name topics by id)."""
    kept = _topic_ids.get(raw)
    if kept is not None:
        return kept
    topic_id = uuid.UUID(bytes=raw)
    if topic_id == _ZERO_UUID:
        return None
    if len(_topic_ids) >= _TOPIC_IDS_KEPT:
        _topic_ids.clear()
    _topic_ids[raw] = topic_id
    return topic_id


# Each class has an ``__init__`` of its own, which the compiled build compiles (the one
# ``dataclass`` generates stays interpreted; see ``protocol.messages.RequestHeader``).


@dataclass(slots=True, init=False)
class ProducePartitionData:
    """One partition: its index and its records (a slice of the frame, or None when null)."""

    index: int
    records: memoryview | None

    def __init__(self, index: int, records: memoryview | None) -> None:
        self.index = index
        self.records = records


@dataclass(slots=True, init=False)
class ProduceTopicData:
    """One topic: ``name`` up to v12 (empty from v13), ``topic_id`` from v13 (None before, and
    None for the all-zero UUID, as kafka-python reads it)."""

    name: str | None
    topic_id: uuid.UUID | None
    partition_data: list[ProducePartitionData]

    def __init__(
        self,
        name: str | None,
        topic_id: uuid.UUID | None,
        partition_data: list[ProducePartitionData],
    ) -> None:
        self.name = name
        self.topic_id = topic_id
        self.partition_data = partition_data


@dataclass(slots=True, init=False)
class ProduceRequestBody:
    """A Produce request body."""

    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: list[ProduceTopicData]

    def __init__(
        self,
        transactional_id: str | None,
        acks: int,
        timeout_ms: int,
        topic_data: list[ProduceTopicData],
    ) -> None:
        self.transactional_id = transactional_id
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.topic_data = topic_data


def decode_produce_request(frame: memoryview, pos: int, version: int) -> ProduceRequestBody:
    """Decode the Produce request body of ``version`` that starts at ``frame[pos]``.

    Bytes after the body are ignored. Raises DecodeError for malformed input."""
    view = frame if isinstance(frame, memoryview) else memoryview(frame)

    def decode() -> ProduceRequestBody:
        if version >= FIRST_FLEXIBLE_VERSION:
            return _decode_flexible(view, pos, version >= FIRST_TOPIC_ID_VERSION)
        return _decode_classic(view, pos)

    return decode_guarded("Produce", version, MIN_VERSION, MAX_VERSION, decode)


def decode_guarded(
    api: str, version: int, min_version: int, max_version: int, decode: Callable[[], T]
) -> T:
    """``decode()`` for a version this decoder reads, with any error it raises on malformed
    input as a DecodeError."""
    if not min_version <= version <= max_version:
        raise DecodeError(f"{api} v{version} is not decoded here")
    try:
        return decode()
    except DecodeError:
        raise
    except (struct.error, IndexError, ValueError) as exc:  # defensive: bounds are checked
        raise DecodeError(f"malformed {api} v{version} request: {exc}") from None


def _string(frame: memoryview, pos: int, size: int, end: int, what: str) -> str:
    """``size`` bytes at ``pos`` as UTF-8."""
    if pos + size > end:
        raise DecodeError(f"truncated {what}")
    try:
        return str(frame[pos : pos + size], "utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"{what} is not UTF-8: {exc}") from None


def string16(
    frame: memoryview, pos: int, end: int, what: str, nullable: bool
) -> tuple[str | None, int]:
    """An int16-length string (-1 for null where ``nullable``); the value and the next pos."""
    if pos + 2 > end:
        raise DecodeError(f"truncated {what} length")
    (size,) = _INT16.unpack_from(frame, pos)
    pos += 2
    if size == -1 and nullable:
        return None, pos
    if size < 0:
        raise DecodeError(f"invalid {what} length {size}")
    return _string(frame, pos, size, end, what), pos + size


def compact_string(
    frame: memoryview, pos: int, end: int, what: str, nullable: bool
) -> tuple[str | None, int]:
    """A compact string (uvarint length + 1, 0 for null where ``nullable``); the value and
    the next pos."""
    size, pos = read_uvarint(frame, pos, end)
    if size == 0:
        if nullable:
            return None, pos
        raise DecodeError(f"{what} is null")
    size -= 1
    if size > _MAX_STRING:
        raise DecodeError(f"invalid {what} length {size}")
    return _string(frame, pos, size, end, what), pos + size


def _decode_classic(frame: memoryview, pos: int) -> ProduceRequestBody:
    """Versions 3-8: int16-length strings, int32-length arrays and bytes, no tagged fields."""
    end = len(frame)
    int32 = _INT32.unpack_from

    transactional_id, pos = string16(frame, pos, end, "transactional_id", nullable=True)

    if pos + 10 > end:
        raise DecodeError("truncated acks/timeout_ms/topic_data")
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, pos)
    (topic_count,) = int32(frame, pos + 6)
    pos += 10
    if topic_count < 0 or topic_count * 6 > end - pos:
        raise DecodeError(f"invalid topic_data count {topic_count}")

    topics = []
    for _ in range(topic_count):
        name, pos = string16(frame, pos, end, "topic name", nullable=False)

        if pos + 4 > end:
            raise DecodeError("truncated partition_data count")
        (partition_count,) = int32(frame, pos)
        pos += 4
        if partition_count < 0 or partition_count * 8 > end - pos:
            raise DecodeError(f"invalid partition_data count {partition_count}")
        partitions = []
        for _ in range(partition_count):
            if pos + 8 > end:
                raise DecodeError("truncated partition")
            (index,) = int32(frame, pos)
            (size,) = int32(frame, pos + 4)
            pos += 8
            if size == -1:
                records = None
            elif size < 0:
                raise DecodeError(f"invalid records length {size}")
            elif pos + size > end:
                raise DecodeError("truncated records")
            else:
                records = frame[pos : pos + size]
                pos += size
            partitions.append(ProducePartitionData(index, records))
        topics.append(ProduceTopicData(name, None, partitions))
    return ProduceRequestBody(transactional_id, acks, timeout_ms, topics)


def read_uvarint(frame: memoryview, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's limit)."""
    if pos >= end:
        raise DecodeError("truncated varint")
    byte = frame[pos]
    pos += 1
    if byte < 0x80:
        return byte, pos
    value = byte & 0x7F
    shift = 7
    while True:
        if pos >= end:
            raise DecodeError("truncated varint")
        byte = frame[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise DecodeError("varint too long")


def skip_tagged_fields(frame: memoryview, pos: int, end: int) -> int:
    """Skip a tagged-field section (Produce, and the request header, define no tags we read,
    so all are unknown)."""
    if pos < end and frame[pos] == 0:  # the usual case: no tagged fields
        return pos + 1
    count, pos = read_uvarint(frame, pos, end)
    if count * 2 > end - pos:
        raise DecodeError(f"invalid tagged field count {count}")
    for _ in range(count):
        _tag, pos = read_uvarint(frame, pos, end)
        size, pos = read_uvarint(frame, pos, end)
        pos += size
        if pos > end:
            raise DecodeError("truncated tagged field")
    return pos


def _decode_flexible(frame: memoryview, pos: int, topic_ids: bool) -> ProduceRequestBody:
    """Versions 9-13: compact strings, arrays and bytes (uvarint length + 1, 0 for null) and
    tagged fields after the body, each topic and each partition. From v13 topics carry a
    16-byte topic id instead of a name."""
    end = len(frame)
    int32 = _INT32.unpack_from

    transactional_id, pos = compact_string(frame, pos, end, "transactional_id", nullable=True)

    if pos + 6 > end:
        raise DecodeError("truncated acks/timeout_ms")
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, pos)
    pos += 6
    topic_count, pos = read_uvarint(frame, pos, end)
    if topic_count == 0:
        raise DecodeError("topic_data is null")
    topic_count -= 1
    if topic_count * (18 if topic_ids else 3) > end - pos:
        raise DecodeError(f"invalid topic_data count {topic_count}")

    topics = []
    for _ in range(topic_count):
        if topic_ids:
            if pos + 16 > end:
                raise DecodeError("truncated topic_id")
            raw = bytes(frame[pos : pos + 16])
            topic_id = topic_id_of(raw)
            name: str | None = ""  # as kafka-python reads v13: no name, only the id
            pos += 16
        else:
            name, pos = compact_string(frame, pos, end, "topic name", nullable=False)
            topic_id = None

        partition_count, pos = read_uvarint(frame, pos, end)
        if partition_count == 0:
            raise DecodeError("partition_data is null")
        partition_count -= 1
        if partition_count * 6 > end - pos:
            raise DecodeError(f"invalid partition_data count {partition_count}")
        partitions = []
        for _ in range(partition_count):
            if pos + 4 > end:
                raise DecodeError("truncated partition index")
            (index,) = int32(frame, pos)
            size, pos = read_uvarint(frame, pos + 4, end)
            if size == 0:
                records = None
            else:
                size -= 1
                if pos + size > end:
                    raise DecodeError("truncated records")
                records = frame[pos : pos + size]
                pos += size
            pos = skip_tagged_fields(frame, pos, end)
            partitions.append(ProducePartitionData(index, records))
        pos = skip_tagged_fields(frame, pos, end)
        topics.append(ProduceTopicData(name, topic_id, partitions))
    skip_tagged_fields(frame, pos, end)
    return ProduceRequestBody(transactional_id, acks, timeout_ms, topics)
