"""Records of ``__transaction_state`` in Apache Kafka's TransactionLog format
(``transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json`` and
``TransactionLogValue.json``), so Kafka's tools read the topic the same.

Key: int16 key version (0), then ``TransactionalId`` (int16-length UTF-8).

Value, version 0 (what we write; not flexible):

    ProducerId                       int64
    ProducerEpoch                    int16
    TransactionTimeoutMs             int32
    TransactionStatus                int8   (``TxnState.id``)
    TransactionPartitions            nullable array (int32 count, -1 null) of
        Topic                        string (int16 length)
        PartitionIds                 array of int32
    TransactionLastUpdateTimestampMs int64
    TransactionStartTimestampMs      int64

Version 1 is the flexible form (compact strings and arrays, tagged fields: 0
PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion); Kafka writes it for clients
on transaction protocol v2, and so do we. A null value is a tombstone (the
transactional id expired). Empty states carry null partitions, as Kafka writes them.

The partition of ``__transaction_state`` that holds a transactional id (Java's
``String.hashCode`` and ``Utils.abs``, as for groups) is ``wireserver.coordinator_runtime``'s
``partition_for``, imported here for this module's readers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from wireserver.coordinator_runtime import TRANSACTION_STATE_TOPIC, partition_for  # noqa: F401
from wireserver.protocol.encoding import uvarint_bytes as _uvarint

KEY_VERSION = 0
VALUE_VERSION = 0

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class TxnRecordError(ValueError):
    """A key or value of ``__transaction_state`` we cannot read."""


@dataclass
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: int
    partitions: list[tuple[str, list[int]]] | None = field(default_factory=list)
    last_update_timestamp: int = -1
    start_timestamp: int = -1
    # Version 1's tagged fields (0, 1, 2); written for transaction protocol v2.
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def decode_key(data: bytes) -> str:
    try:
        (version,) = _I16.unpack_from(data, 0)
        if version != KEY_VERSION:
            raise TxnRecordError(f"unknown transaction log key version {version}")
        (length,) = _I16.unpack_from(data, 2)
        if length < 0 or 4 + length != len(data):
            raise TxnRecordError("bad transactional id length")
        return bytes(data[4 : 4 + length]).decode("utf-8")
    except (struct.error, UnicodeDecodeError) as exc:
        raise TxnRecordError(f"unreadable transaction log key: {exc}") from None


def _encode_flexible(value: TxnLogValue) -> bytes:
    """Version 1, as Kafka writes it for clients on transaction protocol v2."""
    out = bytearray(_I16.pack(1))
    out += _I64.pack(value.producer_id) + _I16.pack(value.producer_epoch)
    out += _I32.pack(value.timeout_ms) + _I8.pack(value.status)
    if value.partitions is None:
        out += _uvarint(0)
    else:
        out += _uvarint(len(value.partitions) + 1)
        for topic, ids in value.partitions:
            name = topic.encode("utf-8")
            out += _uvarint(len(name) + 1) + name + _uvarint(len(ids) + 1)
            out += b"".join(_I32.pack(partition) for partition in ids) + _uvarint(0)
    out += _I64.pack(value.last_update_timestamp) + _I64.pack(value.start_timestamp)
    tags = [
        (0, _I64.pack(value.previous_producer_id), value.previous_producer_id != -1),
        (1, _I64.pack(value.next_producer_id), value.next_producer_id != -1),
        (2, _I16.pack(value.client_transaction_version), value.client_transaction_version != 0),
    ]
    written = [(tag, data) for tag, data, present in tags if present]
    out += _uvarint(len(written))
    for tag, data in written:
        out += _uvarint(tag) + _uvarint(len(data)) + data
    return bytes(out)


def encode_value(value: TxnLogValue) -> bytes:
    if value.client_transaction_version >= 2:
        return _encode_flexible(value)
    out = bytearray(_I16.pack(VALUE_VERSION))
    out += _I64.pack(value.producer_id) + _I16.pack(value.producer_epoch)
    out += _I32.pack(value.timeout_ms) + _I8.pack(value.status)
    if value.partitions is None:
        out += _I32.pack(-1)
    else:
        out += _I32.pack(len(value.partitions))
        for topic, ids in value.partitions:
            out += _string(topic) + _I32.pack(len(ids))
            for partition in ids:
                out += _I32.pack(partition)
    out += _I64.pack(value.last_update_timestamp) + _I64.pack(value.start_timestamp)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(data)
        self.pos = 0

    def take(self, st: struct.Struct) -> int:
        (value,) = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return value

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            if self.pos >= len(self.data) or shift > 28:
                raise TxnRecordError("bad varint")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise TxnRecordError("field runs past the end")
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def skip_tags(self) -> dict[int, bytes]:
        """Read a tagged-field section: {tag: its bytes}."""
        tags = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            tags[tag] = self.raw(self.uvarint())
        return tags


def decode_value(data: bytes) -> TxnLogValue:
    reader = _Reader(data)
    try:
        version = reader.take(_I16)
        if version not in (0, 1):
            raise TxnRecordError(f"unknown transaction log value version {version}")
        flexible = version >= 1
        pid = reader.take(_I64)
        epoch = reader.take(_I16)
        timeout = reader.take(_I32)
        status = reader.take(_I8)
        count = reader.uvarint() - 1 if flexible else reader.take(_I32)
        partitions: list[tuple[str, list[int]]] | None = None
        if count >= 0:
            partitions = []
            for _ in range(count):
                length = reader.uvarint() - 1 if flexible else reader.take(_I16)
                topic = reader.raw(length).decode("utf-8")
                n = reader.uvarint() - 1 if flexible else reader.take(_I32)
                if n < 0:
                    raise TxnRecordError("null partition id array")
                ids = [reader.take(_I32) for _ in range(n)]
                if flexible:
                    reader.skip_tags()
                partitions.append((topic, ids))
        last_update = reader.take(_I64)
        start = reader.take(_I64)
        tags = reader.skip_tags() if flexible else {}
        value = TxnLogValue(pid, epoch, timeout, status, partitions, last_update, start)
        if 0 in tags:
            (value.previous_producer_id,) = _I64.unpack(tags[0])
        if 1 in tags:
            (value.next_producer_id,) = _I64.unpack(tags[1])
        if 2 in tags:
            (value.client_transaction_version,) = _I16.unpack(tags[2])
    except (struct.error, UnicodeDecodeError) as exc:
        raise TxnRecordError(f"unreadable transaction log value: {exc}") from None
    return value
