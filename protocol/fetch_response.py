"""A hand-written encoder for FetchResponse, the one message whose size is dominated by bytes
the broker already holds.

kafka-python's generated encoder copies every partition's records into its buffer, and the
result is copied again into immutable bytes; for a 50 MB fetch that is 100 MB of memcpy before
the socket sees a byte. This encoder writes the small fields into short buffers and hands the
records through untouched, as a list of chunks for ``transport.writeSequence``.

It covers every field of FetchResponse v4-18 (tagged fields included) and is checked byte for
byte against kafka-python's encoder in tests/protocol/test_fetch_response.py.
"""

from __future__ import annotations

import struct
from typing import Any

from kafka.protocol.consumer.fetch import FetchResponse

from wireserver.protocol.encoding import (
    I32,
    ZERO_UUID,
    array_length,
    leader_id_and_epoch,
    node_endpoints,
    string,
    tagged,
    uvarint,
)
from wireserver.protocol.metadata_response import PartitionEntries

_I32_I16_I32 = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_PARTITION_HEAD = struct.Struct(">ihq")  # partition_index, error_code, high_watermark
_Q = struct.Struct(">q")
# partition_index, error_code, high_watermark, last_stable_offset, log_start_offset, aborted
# transactions' length, preferred_read_replica, records' length, tagged fields (v12+)
_EMPTY_FLEXIBLE_PARTITION = struct.Struct(">ihqqqBiBB")
_QQ = struct.Struct(">qq")
_IQ = struct.Struct(">iq")
_QI = struct.Struct(">qi")
FLEXIBLE_FROM = 12


class FetchPartition:
    """A response partition as this encoder reads it. kafka-python's ``PartitionData`` takes
    about 8 µs to make (its constructor walks every field of the schema), and a consumer
    following a thousand partitions without a fetch session gets a thousand of them in every
    answer. It carries kafka-python's schema (``_struct``) so that the error meters and the
    request log read it as they read kafka-python's messages."""

    _struct = FetchResponse.FetchableTopicResponse.PartitionData._struct
    _version = None
    __slots__ = (
        "partition_index",
        "error_code",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "aborted_transactions",
        "preferred_read_replica",
        "records",
        "diverging_epoch",
        "current_leader",
        "snapshot_id",
        "encoded",
    )

    def __init__(
        self,
        partition_index: int,
        error_code: int,
        high_watermark: int,
        last_stable_offset: int,
        log_start_offset: int,
        aborted_transactions: list | None,
        records: Any,
        preferred_read_replica: int = -1,
    ):
        self.partition_index = partition_index
        self.error_code = error_code
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        self.aborted_transactions = aborted_transactions
        self.preferred_read_replica = preferred_read_replica
        self.records = records
        # kafka-python's EpochEndOffset, LeaderIdAndEpoch (KIP-951 hints) and SnapshotId
        self.diverging_epoch: Any = None
        self.current_leader: Any = None
        self.snapshot_id: Any = None
        #: the entry's bytes when made once to be sent in several answers (``keep_encoded``)
        self.encoded: bytes | None = None


class FetchTopic:
    """A response topic whose partitions were all made once and are sent again unchanged
    (``wireserver.apis.fetch.CaughtUpMemo``), with the topic's whole entry encoded once
    (``keep_encoded_topic``). Like ``FetchPartition`` it carries kafka-python's schema, for
    the error meters and the request log; its ``partitions`` count their error codes once
    (``PartitionEntries``)."""

    _struct = FetchResponse.FetchableTopicResponse._struct
    _version = None
    __slots__ = ("topic", "topic_id", "partitions", "encoded")

    def __init__(self, topic: str | None, topic_id: Any, partitions: PartitionEntries):
        self.topic = topic
        self.topic_id = topic_id
        self.partitions = partitions
        #: the entry's bytes (``keep_encoded_topic``)
        self.encoded: bytes | None = None


def is_empty(partition: Any) -> bool:
    """Nothing to send but offsets and the error code (most of a wide consumer's answer)."""
    records = partition.records
    return (
        records is not None
        and not len(records)
        and not partition.aborted_transactions
        and partition.diverging_epoch is None
        and partition.current_leader is None
        and partition.snapshot_id is None
    )


def pack_empty(partition: Any) -> bytes:
    """An ``is_empty`` partition's entry (flexible versions): a null (0) or, read_committed,
    an empty (1) aborted list, no records (1), no tagged fields (0), in one pack."""
    return _EMPTY_FLEXIBLE_PARTITION.pack(
        partition.partition_index,
        partition.error_code,
        partition.high_watermark,
        partition.last_stable_offset,
        partition.log_start_offset,
        0 if partition.aborted_transactions is None else 1,
        partition.preferred_read_replica,
        1,
        0,
    )


def keep_encoded(partition: FetchPartition, version: int) -> bool:
    """Encode an ``is_empty`` partition once, for answers that will send it again unchanged
    (``wireserver.apis.fetch.CaughtUpMemo``); False when the version or the entry has no
    such form."""
    if version < FLEXIBLE_FROM or not is_empty(partition):
        return False
    partition.encoded = pack_empty(partition)
    return True


def keep_encoded_topic(topic: FetchTopic, version: int) -> None:
    """Encode once a topic entry whose partitions are all kept encoded (``keep_encoded``)."""
    out = bytearray()
    _topic_head(topic, version, True, out)
    for partition in topic.partitions:
        out += partition.encoded
    out.append(0)  # no tagged fields
    topic.encoded = bytes(out)


def _topic_head(topic: Any, version: int, flexible: bool, out: bytearray) -> None:
    """A topic entry's id (v13+) or name, and its partitions' count."""
    if version >= 13:
        topic_id = topic.topic_id or ZERO_UUID
        out += topic_id.bytes
    else:
        string(topic.topic, flexible, out)
    array_length(len(topic.partitions), flexible, out)


def _partition_tags(partition: Any) -> list[tuple[int, bytes]]:
    tags = []
    diverging = getattr(partition, "diverging_epoch", None)
    if diverging is not None:
        tags.append((0, _IQ.pack(diverging.epoch, diverging.end_offset) + b"\x00"))
    leader = getattr(partition, "current_leader", None)
    if leader is not None:
        tags.append((1, leader_id_and_epoch(leader)))
    snapshot = getattr(partition, "snapshot_id", None)
    if snapshot is not None:
        tags.append((2, _QI.pack(snapshot.end_offset, snapshot.epoch) + b"\x00"))
    return tags


def encode_fetch_response(response: Any, version: int, correlation_id: int) -> list:
    """Chunks of the framed response (size prefix and header included): short bytes for the
    fields, and each partition's records object as it was given (bytes from the log)."""
    flexible = version >= FLEXIBLE_FROM
    chunks: list = []
    out = bytearray(4)  # size prefix, filled in at the end
    out += I32.pack(correlation_id)
    if flexible:
        out.append(0)  # response header v1: no tagged fields
    if version >= 7:
        out += _I32_I16_I32.pack(
            response.throttle_time_ms, response.error_code, response.session_id
        )
    else:
        out += I32.pack(response.throttle_time_ms)
    topics = response.responses
    array_length(len(topics), flexible, out)
    for topic in topics:
        # (kafka-python's topic entry, which the encoder also takes, has no such field)
        encoded_topic = getattr(topic, "encoded", None)
        if encoded_topic is not None:
            out += encoded_topic
            continue
        _topic_head(topic, version, flexible, out)
        for partition in topic.partitions:
            # (kafka-python's PartitionData, which the encoder also takes, has no such field)
            encoded = getattr(partition, "encoded", None)
            if encoded is not None:
                out += encoded
                continue
            records = partition.records
            aborted = partition.aborted_transactions
            if flexible and is_empty(partition):
                out += pack_empty(partition)
                continue
            out += _PARTITION_HEAD.pack(
                partition.partition_index, partition.error_code, partition.high_watermark
            )
            out += _Q.pack(partition.last_stable_offset)
            if version >= 5:
                out += _Q.pack(partition.log_start_offset)
            array_length(None if aborted is None else len(aborted), flexible, out)
            for txn in aborted or ():
                out += _QQ.pack(txn.producer_id, txn.first_offset)
                if flexible:
                    out.append(0)
            if version >= 11:
                out += I32.pack(partition.preferred_read_replica)
            if records is None:
                if flexible:
                    out.append(0)
                else:
                    out += I32.pack(-1)
            else:
                if flexible:
                    uvarint(len(records) + 1, out)
                else:
                    out += I32.pack(len(records))
                if len(records):
                    chunks.append(bytes(out))
                    chunks.append(records)
                    out = bytearray()
            if flexible:
                tagged(_partition_tags(partition), out)
        if flexible:
            out.append(0)
    if flexible:
        nodes = getattr(response, "node_endpoints", None)
        if version >= 16 and nodes:
            node_endpoints(nodes, out)
        else:
            out.append(0)
    chunks.append(bytes(out))
    size = sum(len(chunk) for chunk in chunks) - 4
    chunks[0] = I32.pack(size) + chunks[0][4:]
    return chunks
