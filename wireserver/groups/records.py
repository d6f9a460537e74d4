"""Records of ``__consumer_offsets``, laid out as Apache Kafka's group coordinator writes them
(``group-coordinator/src/main/resources/common/message/*.json``), so the topic reads the same
to Kafka's own tools.

A key starts with an int16 record type (the "key version" of older Kafka), a value with an
int16 value version; strings are int16-length UTF-8, bytes int32-length, arrays int32-count
(these versions are not flexible). A null value is a tombstone.

- OffsetCommitKey (type 1; type 0 is the legacy spelling, read the same): group, topic,
  partition.
- OffsetCommitValue: we write version 3 (offset, leaderEpoch, metadata, commitTimestamp) and
  read versions 0-3 (v1 carries an expireTimestamp after commitTimestamp).
- GroupMetadataKey (type 2): group.
- ConsumerGroupMetadataKey (type 3): group. Its value (version 0, flexible): the epoch of a
  consumer-protocol (KIP-848) group, then tagged fields; fields Kafka appended later are
  ignored on read. Kafka's other KIP-848 records (types 4-8: member subscriptions, target and
  current assignments) are neither written nor read: members rejoin after a restart.
- StreamsGroupMetadataKey (type 17): group. Its value (version 0, flexible): the epoch of a
  Streams (KIP-1071) group and the hash of its topics' metadata (we write 0), then tagged
  fields, ignored on read. Kafka's other streams records (types 18-22: members, target and
  current assignments, topology) are neither written nor read: members rejoin after a restart.
- ShareGroupMetadataKey (type 11): group. Its value (version 0, flexible) has the layout of
  StreamsGroupMetadataValue: the epoch of a share group (KIP-932) and the hash of its topics'
  metadata (we write 0). Kafka's other share group records (types 9, 10, 12-14, 16) are neither
  written nor read: members rejoin after a restart.
- GroupMetadataValue: we write version 3 (protocolType, generation, protocol?, leader?,
  currentStateTimestamp, members[memberId, groupInstanceId?, clientId, clientHost,
  rebalanceTimeout, sessionTimeout, subscription, assignment]) and read versions 0-3.

Which partition of ``__consumer_offsets`` holds a group (Java's ``String.hashCode`` and Kafka's
``Utils.abs``, so a group lands on the partition Kafka would choose) is
``wireserver.coordinator_runtime``'s ``partition_for``, imported here for this module's readers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from wireserver.coordinator_runtime import (  # noqa: F401
    OFFSETS_TOPIC,
    java_string_hashcode,
    kafka_abs,
    partition_for,
)

LEGACY_OFFSET_COMMIT_KEY = 0
OFFSET_COMMIT_KEY = 1
GROUP_METADATA_KEY = 2
CONSUMER_GROUP_METADATA_KEY = 3
SHARE_GROUP_METADATA_KEY = 11
STREAMS_GROUP_METADATA_KEY = 17

OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
#: An OffsetCommitKey's record type and its group's length.
_OFFSET_KEY_HEAD = struct.Struct(">hh")
#: An OffsetCommitValue's version, offset, leader epoch and its metadata's length.
_OFFSET_VALUE_HEAD = struct.Struct(">hqih")

#: The first bytes of an offset commit's key: its record type (``OFFSET_KEY_PREFIX``), or the
#: legacy spelling of it; a load tells offset commits by them without decoding the key.
OFFSET_KEY_PREFIX = _I16.pack(OFFSET_COMMIT_KEY)
OFFSET_KEY_PREFIXES = (OFFSET_KEY_PREFIX, _I16.pack(LEGACY_OFFSET_COMMIT_KEY))


class RecordFormatError(ValueError):
    """A key or value of ``__consumer_offsets`` we cannot read."""


# -- primitive writers/readers ----------------------------------------------------------------


def _utf8(value: str) -> bytes:
    """A string field's bytes; Kafka's int16 length caps them at 32,767."""
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise RecordFormatError("string longer than 32767 bytes")
    return data


class _Writer:
    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def int16(self, v: int) -> _Writer:
        self.buf += _I16.pack(v)
        return self

    def int32(self, v: int) -> _Writer:
        self.buf += _I32.pack(v)
        return self

    def int64(self, v: int) -> _Writer:
        self.buf += _I64.pack(v)
        return self

    def string(self, v: str | None) -> _Writer:
        if v is None:
            return self.int16(-1)
        data = _utf8(v)
        self.int16(len(data))
        self.buf += data
        return self

    def bytes_(self, v: bytes | None) -> _Writer:
        if v is None:
            return self.int32(-1)
        self.int32(len(v))
        self.buf += v
        return self


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise RecordFormatError("record truncated")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def int64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def string(self, nullable: bool = False) -> str | None:
        n = self.int16()
        if n == -1 and nullable:
            return None
        try:
            return str(self._take(n), "utf-8")
        except UnicodeDecodeError as exc:
            raise RecordFormatError(f"string is not UTF-8: {exc}") from None

    def bytes_(self) -> bytes | None:
        n = self.int32()
        if n == -1:
            return None
        return bytes(self._take(n))


# -- keys -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupKey:
    group: str


@dataclass(frozen=True)
class StreamsGroupKey:
    group: str


@dataclass(frozen=True)
class ShareGroupKey:
    group: str


Key = OffsetKey | GroupKey | ConsumerGroupKey | StreamsGroupKey | ShareGroupKey

#: The group records that name a group alone, by their record type.
_GROUP_KEYS: dict[type, int] = {
    ConsumerGroupKey: CONSUMER_GROUP_METADATA_KEY,
    StreamsGroupKey: STREAMS_GROUP_METADATA_KEY,
    ShareGroupKey: SHARE_GROUP_METADATA_KEY,
}


def encode_offset_key(group: str, topic: str, partition: int) -> bytes:
    """An OffsetCommitKey's bytes, in one join: an OffsetCommit makes one per partition."""
    group_bytes, topic_bytes = _utf8(group), _utf8(topic)
    head = _OFFSET_KEY_HEAD.pack(OFFSET_COMMIT_KEY, len(group_bytes))
    tail = _I16.pack(len(topic_bytes)), topic_bytes, _I32.pack(partition)
    return b"".join((head, group_bytes, *tail))


def encode_key(key: Key) -> bytes:
    if isinstance(key, OffsetKey):
        return encode_offset_key(key.group, key.topic, key.partition)
    kind = _GROUP_KEYS.get(type(key))
    if kind is not None:
        return bytes(_Writer().int16(kind).string(key.group).buf)
    return bytes(_Writer().int16(GROUP_METADATA_KEY).string(key.group).buf)


def decode_key(data: bytes) -> Key | None:
    """The key, or None for a record type this coordinator does not keep (the KIP-848, share
    and streams group records Kafka also writes here)."""
    r = _Reader(data)
    kind = r.int16()
    if kind in (LEGACY_OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY):
        return OffsetKey(r.string(), r.string(), r.int32())
    if kind == GROUP_METADATA_KEY:
        return GroupKey(r.string())
    if kind == CONSUMER_GROUP_METADATA_KEY:
        return ConsumerGroupKey(r.string())
    if kind == STREAMS_GROUP_METADATA_KEY:
        return StreamsGroupKey(r.string())
    if kind == SHARE_GROUP_METADATA_KEY:
        return ShareGroupKey(r.string())
    return None


@dataclass(frozen=True)
class ConsumerGroupValue:
    epoch: int


def encode_consumer_group_value(value: ConsumerGroupValue) -> bytes:
    # Version 0, flexible: the epoch and an empty tagged-field section.
    return bytes(_Writer().int16(0).int32(value.epoch).buf) + b"\x00"


def decode_consumer_group_value(data: bytes) -> ConsumerGroupValue:
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        raise RecordFormatError(f"unsupported ConsumerGroupMetadataValue version {version}")
    return ConsumerGroupValue(r.int32())


@dataclass(frozen=True)
class StreamsGroupValue:
    epoch: int
    metadata_hash: int = 0


def encode_streams_group_value(value: StreamsGroupValue) -> bytes:
    # Version 0, flexible: the epoch, the metadata hash and an empty tagged-field section.
    w = _Writer().int16(0).int32(value.epoch).int64(value.metadata_hash)
    return bytes(w.buf) + b"\x00"


class ShareGroupValue(StreamsGroupValue):
    """ShareGroupMetadataValue: laid out as StreamsGroupMetadataValue."""


def _decode_epoch_and_hash(data: bytes, cls: type[StreamsGroupValue]) -> StreamsGroupValue:
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        name = cls.__name__.replace("Value", "MetadataValue")
        raise RecordFormatError(f"unsupported {name} version {version}")
    return cls(r.int32(), r.int64())


def decode_streams_group_value(data: bytes) -> StreamsGroupValue:
    return _decode_epoch_and_hash(data, StreamsGroupValue)


def decode_share_group_value(data: bytes) -> StreamsGroupValue:
    return _decode_epoch_and_hash(data, ShareGroupValue)


# -- offset values ----------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


def encode_offset_value(value: OffsetValue) -> bytes:
    return encode_offset_fields(
        value.offset, value.leader_epoch, value.metadata, value.commit_timestamp
    )


def encode_offset_fields(
    offset: int, leader_epoch: int, metadata: str | None, commit_timestamp: int
) -> bytes:
    """An OffsetCommitValue's bytes (version 3) from its fields, without an ``OffsetValue``."""
    metadata_bytes = _utf8(metadata or "")
    head = _OFFSET_VALUE_HEAD.pack(
        OFFSET_COMMIT_VALUE_VERSION, offset, leader_epoch, len(metadata_bytes)
    )
    return b"".join((head, metadata_bytes, _I64.pack(commit_timestamp)))


def decode_offset_value(data: bytes) -> OffsetValue:
    r = _Reader(data)
    version = r.int16()
    if version not in (0, 1, 2, 3):
        raise RecordFormatError(f"unsupported OffsetCommitValue version {version}")
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.string() or ""
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == 1 else -1
    return OffsetValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


# -- group values -----------------------------------------------------------------------------


@dataclass
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberValue] = field(default_factory=list)


def encode_group_value(value: GroupValue) -> bytes:
    w = _Writer().int16(GROUP_METADATA_VALUE_VERSION)
    w.string(value.protocol_type).int32(value.generation)
    w.string(value.protocol).string(value.leader).int64(value.current_state_timestamp)
    w.int32(len(value.members))
    for m in value.members:
        w.string(m.member_id).string(m.group_instance_id).string(m.client_id)
        w.string(m.client_host).int32(m.rebalance_timeout).int32(m.session_timeout)
        w.bytes_(m.subscription).bytes_(m.assignment)
    return bytes(w.buf)


def decode_group_value(data: bytes) -> GroupValue:
    r = _Reader(data)
    version = r.int16()
    if version not in (0, 1, 2, 3):
        raise RecordFormatError(f"unsupported GroupMetadataValue version {version}")
    protocol_type = r.string() or ""
    generation = r.int32()
    protocol = r.string(nullable=True)
    leader = r.string(nullable=True)
    timestamp = r.int64() if version >= 2 else -1
    count = r.int32()
    if count < 0:
        count = 0
    members = []
    for _ in range(count):
        member_id = r.string()
        instance_id = r.string(nullable=True) if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        subscription = r.bytes_() or b""
        assignment = r.bytes_() or b""
        if rebalance_timeout < 0:
            rebalance_timeout = session_timeout
        members.append(
            MemberValue(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    return GroupValue(protocol_type, generation, protocol, leader, timestamp, members)


# -- consumer protocol ------------------------------------------------------------------------


def subscribed_topics(subscription: bytes) -> set[str] | None:
    """The topics of a ``consumer`` protocol subscription (ConsumerProtocolSubscription: int16
    version, then an array of topic names in every version), or None if it cannot be read."""
    try:
        r = _Reader(subscription)
        version = r.int16()
        if version < 0:
            return None
        count = r.int32()
        if count < 0:
            return None
        return {r.string() for _ in range(count)}
    except (RecordFormatError, struct.error):
        return None
