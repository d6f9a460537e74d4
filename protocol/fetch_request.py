"""A hand-written decoder for Fetch request bodies (API key 1, versions 4-18).

A consumer without fetch sessions (librdkafka) names every partition it follows in every
Fetch, and kafka-python's generated decoder makes an object through a Python constructor for
each of them: some 0.8 µs a partition, 8 ms for a Fetch of 10,000 partitions, more than the
broker then spends answering it. Here a topic's partitions, when none carries tagged fields
(as clients send them), are read by ``struct.iter_unpack`` into named tuples in one pass in
C; a partition with tagged fields is read field by field.

The result has kafka-python's attribute names and its values (``topics[].topic``, ``.topic_id``
(None for the zero id), ``.partitions[].fetch_offset``, ..., ``replica_state`` None when
absent), with the message definitions' defaults for fields a version lacks, and each level
carries kafka-python's schema (``_struct``) and the version (``_version``), so the request
log and the controls read it as they read kafka-python's messages. Any malformed input raises
``DecodeError`` and nothing else.
"""

from __future__ import annotations

import struct
import uuid
from collections import namedtuple
from functools import partial, partialmethod
from typing import Any

from kafka.protocol.consumer.fetch import FetchRequest

from wireserver.protocol.errors import DecodeError
from wireserver.protocol.produce_request import (
    compact_string,
    decode_guarded,
    read_uvarint,
    skip_tagged_fields,
    string16,
    topic_id_of,
)

MIN_VERSION = 4
MAX_VERSION = 18
FIRST_FLEXIBLE_VERSION = 12
FIRST_TOPIC_ID_VERSION = 13

_INT32 = struct.Struct(">i")
_INT32_INT64 = struct.Struct(">iq")
_INT64 = struct.Struct(">q")
_CLASSIC_HEAD = struct.Struct(">iiiib")  # replica_id, max_wait_ms, min_bytes, max_bytes, isolation
_FLEXIBLE_HEAD = struct.Struct(">iiib")  # max_wait_ms, min_bytes, max_bytes, isolation_level
_SESSION = struct.Struct(">ii")  # session_id, session_epoch
_TOPIC_ID_SIZE = 16


def _fields(struct_field: Any) -> dict[str, Any]:
    return {field.name: field for field in struct_field._fields}


_REQUEST_STRUCT = FetchRequest._struct
_TOPIC_STRUCT = _fields(_REQUEST_STRUCT)["topics"]
_PARTITION_STRUCT = _fields(_TOPIC_STRUCT)["partitions"]
_FORGOTTEN_STRUCT = _fields(_REQUEST_STRUCT)["forgotten_topics_data"]
_REPLICA_STATE_STRUCT = _fields(_REQUEST_STRUCT)["replica_state"]

#: Partition fields on the wire, by the first version of each layout (the fields a version
#: lacks read as the message definition's default, below).
_LAYOUTS = (
    (
        12,
        ">iiqiqiB",
        "partition current_leader_epoch fetch_offset last_fetched_epoch "
        "log_start_offset partition_max_bytes tagged_count",
    ),
    (
        9,
        ">iiqqi",
        "partition current_leader_epoch fetch_offset log_start_offset partition_max_bytes",
    ),
    (5, ">iqqi", "partition fetch_offset log_start_offset partition_max_bytes"),
    (4, ">iqi", "partition fetch_offset partition_max_bytes"),
)
_PARTITION_DEFAULTS = {
    "current_leader_epoch": -1,
    "last_fetched_epoch": -1,
    "log_start_offset": -1,
    "replica_directory_id": None,
    "high_watermark": (1 << 63) - 1,
}


def to_dict(message: Any, meta: bool = False, json: bool = False) -> dict[str, Any]:
    """kafka-python's ``to_dict(json=False)`` of a decoded message: the fields of its version,
    at every level (``meta`` and ``json`` are not supported)."""
    values: dict[str, Any] = {}
    for field in message._struct._fields:
        if not field.for_version_q(message._version):
            continue
        value = getattr(message, field.name, None)
        if isinstance(value, list):
            value = [to_dict(v) if hasattr(v, "_struct") else v for v in value]
        elif hasattr(value, "_struct"):
            value = to_dict(value)
        values[field.name] = value
    return values


#: (called through an Any: mypy, and so mypyc, take a ``namedtuple`` call for a class
#: declaration and would not run it)
_NAMEDTUPLE: Any = namedtuple


def _partition_classes(version: int) -> tuple[struct.Struct, type, type]:
    """(wire layout, class, class for a partition with tagged fields) of ``version``."""
    layout, names = next((lay, nam) for first, lay, nam in _LAYOUTS if version >= first)
    base: type = _NAMEDTUPLE("FetchPartition", names)
    attrs: dict[str, Any] = {
        "__slots__": (),
        "_struct": _PARTITION_STRUCT,
        "_version": version,
        # (a descriptor that binds whatever ``to_dict`` is: a compiled function does not)
        "to_dict": partialmethod(to_dict),
    }
    for name, default in _PARTITION_DEFAULTS.items():
        if name not in names.split():
            attrs[name] = default
    plain = type("FetchPartition", (base,), attrs)
    # Tagged fields set on the instance (a tuple subclass can't have slots of its own).
    tagged = type("TaggedFetchPartition", (plain,), {})
    return struct.Struct(layout), plain, tagged


_PARTITIONS = {v: _partition_classes(v) for v in range(MIN_VERSION, MAX_VERSION + 1)}


class _Message:
    """kafka-python's ``to_dict`` for the classes below."""

    __slots__ = ()

    def to_dict(self, meta: bool = False, json: bool = False) -> dict[str, Any]:
        return to_dict(self, meta, json)


class TopicEntry(_Message):
    """A topic of ``topics`` or of ``forgotten_topics_data`` (whose partitions are their
    indexes): ``_struct`` says which."""

    __slots__ = ("topic", "topic_id", "_partitions", "_version", "_struct", "raw")

    def __init__(
        self,
        topic: str | None,
        topic_id: uuid.UUID | None,
        partitions: list | None,
        version: int,
        schema: Any,
        raw: bytes | None = None,
    ):
        self.topic = topic
        self.topic_id = topic_id
        #: None until first read, when ``raw`` holds them (``partitions``)
        self._partitions = partitions
        self._version = version
        self._struct = schema
        #: the partitions' bytes as the request carried them, when none has tagged fields:
        #: a topic asked for exactly as before compares equal in one step, and need not be
        #: decoded at all (``wireserver.apis.fetch.CaughtUpMemo``); None otherwise
        self.raw = raw

    @property
    def partitions(self) -> list:
        """The partitions, decoded from ``raw`` in one pass when first read."""
        partitions = self._partitions
        if partitions is None:
            layout, partition_class, _ = _PARTITIONS[self._version]
            assert self.raw is not None
            values = layout.iter_unpack(self.raw)
            partitions = self._partitions = list(
                map(partial(tuple.__new__, partition_class), values)
            )
        return partitions

    @partitions.setter
    def partitions(self, partitions: list) -> None:
        self._partitions = partitions


class ReplicaState(_Message):
    __slots__ = ("replica_id", "replica_epoch", "_version")
    _struct = _REPLICA_STATE_STRUCT

    def __init__(self, replica_id: int, replica_epoch: int, version: int):
        self.replica_id = replica_id
        self.replica_epoch = replica_epoch
        self._version = version


class FetchRequestBody(_Message):
    """A Fetch request body (kafka-python's ``FetchRequest`` fields)."""

    __slots__ = (
        "cluster_id",
        "replica_id",
        "replica_state",
        "max_wait_ms",
        "min_bytes",
        "max_bytes",
        "isolation_level",
        "session_id",
        "session_epoch",
        "topics",
        "forgotten_topics_data",
        "rack_id",
        "_version",
    )
    _struct = _REQUEST_STRUCT

    def __init__(self, version: int) -> None:
        self._version = version
        self.cluster_id: str | None = None
        self.replica_id = -1
        self.replica_state: ReplicaState | None = None
        self.max_wait_ms = 0
        self.min_bytes = 0
        self.max_bytes = 0x7FFFFFFF
        self.isolation_level = 0
        self.session_id = 0
        self.session_epoch = -1
        self.topics: list[TopicEntry] = []
        self.forgotten_topics_data: list[TopicEntry] = []
        self.rack_id = ""


def decode_fetch_request(frame: memoryview, pos: int, version: int) -> FetchRequestBody:
    """Decode the Fetch request body of ``version`` that starts at ``frame[pos]``.

    Bytes after the body are ignored. Raises DecodeError for malformed input."""
    view = frame if isinstance(frame, memoryview) else memoryview(frame)
    return decode_guarded(
        "Fetch", version, MIN_VERSION, MAX_VERSION, lambda: _Reader(view, pos, version).body()
    )


class _Reader:
    """One body's decoding: the frame, the position and the version's layout."""

    def __init__(self, frame: memoryview, pos: int, version: int) -> None:
        self.frame = frame
        self.pos = pos
        self.end = len(frame)
        self.version = version
        self.flexible = version >= FIRST_FLEXIBLE_VERSION
        self.layout, _, self.tagged_class = _PARTITIONS[version]

    def need(self, size: int, what: str) -> None:
        if self.pos + size > self.end:
            raise DecodeError(f"truncated {what}")

    def count(self, what: str, least_size: int) -> int:
        """An array's length (int32, or uvarint + 1 when flexible); null is refused, as no
        Fetch array is nullable."""
        if self.flexible:
            count, self.pos = read_uvarint(self.frame, self.pos, self.end)
            if count == 0:
                raise DecodeError(f"{what} is null")
            count -= 1
        else:
            self.need(4, f"{what} length")
            (count,) = _INT32.unpack_from(self.frame, self.pos)
            self.pos += 4
        if count < 0 or count * least_size > self.end - self.pos:
            raise DecodeError(f"invalid {what} count {count}")
        return count

    def string(self, what: str) -> str:
        if self.flexible:
            value, self.pos = compact_string(self.frame, self.pos, self.end, what, nullable=False)
        else:
            value, self.pos = string16(self.frame, self.pos, self.end, what, nullable=False)
        assert value is not None
        return value

    def topic_id(self) -> uuid.UUID | None:
        self.need(_TOPIC_ID_SIZE, "topic_id")
        raw = bytes(self.frame[self.pos : self.pos + _TOPIC_ID_SIZE])
        self.pos += _TOPIC_ID_SIZE
        return topic_id_of(raw)

    def body(self) -> FetchRequestBody:
        version, frame = self.version, self.frame
        body = FetchRequestBody(version)
        if self.flexible:
            if version < 15:
                self.need(4, "replica_id")
                (body.replica_id,) = _INT32.unpack_from(frame, self.pos)
                self.pos += 4
            self.need(_FLEXIBLE_HEAD.size, "max_wait_ms/min_bytes/max_bytes/isolation_level")
            (body.max_wait_ms, body.min_bytes, body.max_bytes, body.isolation_level) = (
                _FLEXIBLE_HEAD.unpack_from(frame, self.pos)
            )
            self.pos += _FLEXIBLE_HEAD.size
        else:
            self.need(_CLASSIC_HEAD.size, "replica_id/max_wait_ms/min_bytes/max_bytes/isolation")
            (
                body.replica_id,
                body.max_wait_ms,
                body.min_bytes,
                body.max_bytes,
                body.isolation_level,
            ) = _CLASSIC_HEAD.unpack_from(frame, self.pos)
            self.pos += _CLASSIC_HEAD.size
        if version >= 7:
            self.need(_SESSION.size, "session_id/session_epoch")
            body.session_id, body.session_epoch = _SESSION.unpack_from(frame, self.pos)
            self.pos += _SESSION.size
        body.topics = [self.topic() for _ in range(self.count("topics", 2))]
        if version >= 7:
            body.forgotten_topics_data = [
                self.forgotten() for _ in range(self.count("forgotten_topics_data", 2))
            ]
        if version >= 11:
            body.rack_id = self.string("rack_id")
        if self.flexible:
            self.body_tags(body)
        return body

    def topic(self) -> TopicEntry:
        if self.version >= FIRST_TOPIC_ID_VERSION:
            name, topic_id = "", self.topic_id()  # as kafka-python reads it: no name
        else:
            name, topic_id = self.string("topic name"), None
        count = self.count("partitions", self.layout.size)
        partitions, raw = self.partitions(count)
        if self.flexible:
            self.pos = skip_tagged_fields(self.frame, self.pos, self.end)
        return TopicEntry(name, topic_id, partitions, self.version, _TOPIC_STRUCT, raw)

    def partitions(self, count: int) -> tuple[list | None, bytes | None]:
        """``count`` partitions: their bytes, to be decoded when first read
        (``TopicEntry.partitions``), when none has tagged fields (their count, the last byte
        of a flexible layout, is 0 in all); else the partitions, read one by one."""
        start, stride = self.pos, self.layout.size
        span = count * stride
        self.need(span, "partitions")
        raw = bytes(self.frame[start : start + span])
        if not self.flexible or not any(raw[stride - 1 :: stride]):
            self.pos = start + span
            return None, raw
        return [self.tagged_partition() for _ in range(count)], None

    def tagged_partition(self) -> Any:
        """A flexible partition read field by field, with its tagged fields."""
        frame = self.frame
        stride = self.layout.size - 1  # the fields before the tagged-field count
        self.need(stride, "partition")
        values = self.layout.unpack_from(bytes(frame[self.pos : self.pos + stride]) + b"\0")
        self.pos += stride
        tagged: dict[str, Any] = {}
        count, self.pos = read_uvarint(frame, self.pos, self.end)
        for _ in range(count):
            tag, self.pos = read_uvarint(frame, self.pos, self.end)
            size, self.pos = read_uvarint(frame, self.pos, self.end)
            self.need(size, "tagged field")
            if tag == 0 and self.version >= 17:
                if size != 16:
                    raise DecodeError(f"replica_directory_id of {size} bytes")
                raw = bytes(frame[self.pos : self.pos + 16])
                # (the zero id reads as None, as kafka-python reads it)
                tagged["replica_directory_id"] = uuid.UUID(bytes=raw) if any(raw) else None
            elif tag == 1 and self.version >= 18:
                if size != 8:
                    raise DecodeError(f"high_watermark of {size} bytes")
                (tagged["high_watermark"],) = _INT64.unpack_from(frame, self.pos)
            self.pos += size
        partition: Any = tuple.__new__(self.tagged_class, values[:-1] + (count,))
        for name, value in tagged.items():
            setattr(partition, name, value)
        return partition

    def forgotten(self) -> TopicEntry:
        if self.version >= FIRST_TOPIC_ID_VERSION:
            name, topic_id = "", self.topic_id()
        else:
            name, topic_id = self.string("forgotten topic name"), None
        count = self.count("forgotten partitions", 4)
        self.need(4 * count, "forgotten partitions")
        partitions = list(struct.unpack_from(f">{count}i", self.frame, self.pos))
        self.pos += 4 * count
        if self.flexible:
            self.pos = skip_tagged_fields(self.frame, self.pos, self.end)
        return TopicEntry(name, topic_id, partitions, self.version, _FORGOTTEN_STRUCT)

    def body_tags(self, body: FetchRequestBody) -> None:
        """The body's tagged fields: ``cluster_id`` (0), ``replica_state`` (1, v15+)."""
        frame = self.frame
        count, self.pos = read_uvarint(frame, self.pos, self.end)
        for _ in range(count):
            tag, self.pos = read_uvarint(frame, self.pos, self.end)
            size, self.pos = read_uvarint(frame, self.pos, self.end)
            self.need(size, "tagged field")
            field_end = self.pos + size
            if tag == 0:
                body.cluster_id, _ = compact_string(
                    frame, self.pos, field_end, "cluster_id", nullable=True
                )
            elif tag == 1 and self.version >= 15:
                if size < _INT32_INT64.size:
                    raise DecodeError(f"replica_state of {size} bytes")
                replica_id, replica_epoch = _INT32_INT64.unpack_from(frame, self.pos)
                body.replica_state = ReplicaState(replica_id, replica_epoch, self.version)
            self.pos = field_end
