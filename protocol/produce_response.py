"""A hand-written encoder for ProduceResponse, and the light body, topic and partition entries
it reads.

A Produce answer is small, but it has an entry per partition written, and a producer writing
across many partitions sends one request for all those a broker leads (librdkafka: 100 and
more). kafka-python's ``PartitionProduceResponse`` takes 6-9 µs to make (its constructor walks
the schema) and its encoder as long again or longer, per partition: 1-2 ms of answer for such a
request. ``ProducePartition``, ``ProduceTopic`` and the body, ``ProduceAnswer`` (one per
request, however few partitions), are plain slotted objects, and a partition without record
errors, error message or leader hint (nearly all of them) is written here in one ``struct``
pack (v8+).

It covers every field of ProduceResponse v3-13 (tagged fields included) and is checked byte for
byte against kafka-python's encoder in tests/protocol/test_produce_response.py.
"""

from __future__ import annotations

import struct
from typing import Any

from kafka.protocol.producer.produce import ProduceResponse

from wireserver.protocol.encoding import (
    I32,
    ZERO_UUID,
    array_length,
    leader_id_and_epoch,
    node_endpoints,
    string,
    tagged,
)
from wireserver.protocol.framing import response_head

FLEXIBLE_FROM = 9
#: From v10 a partition carries ``CurrentLeader`` and the response ``NodeEndpoints`` (KIP-951).
LEADER_HINTS_FROM = 10
TOPIC_IDS_FROM = 13

# index, error_code, base_offset, log_append_time_ms (v3-4)
_PARTITION_V3 = struct.Struct(">ihqq")
# and log_start_offset (v5+)
_PARTITION_V5 = struct.Struct(">ihqqq")
# A partition without record errors, error message or leader hint in one pack, its last value
# given: v8, no record errors (0, padding) and no error message (-1); v9+ (compact), no record
# errors (1), no error message and no tagged fields (0, 0: padding).
_PLAIN_PARTITION_V8 = struct.Struct(">ihqqq4xh")
_PLAIN_FLEXIBLE_PARTITION = struct.Struct(">ihqqqBxx")


class ProducePartition:
    """A response partition as this encoder reads it, in place of kafka-python's
    ``PartitionProduceResponse`` (see the module's docstring). It carries kafka-python's schema
    (``_struct``) so that the error meters and the request log read it as they read
    kafka-python's messages. ``error_code`` and ``current_leader`` are set again after the
    append when replication fails or the leader moved."""

    _struct = ProduceResponse.TopicProduceResponse.PartitionProduceResponse._struct
    _version = None
    __slots__ = (
        "index",
        "error_code",
        "base_offset",
        "log_append_time_ms",
        "log_start_offset",
        "record_errors",
        "error_message",
        "current_leader",
    )

    def __init__(
        self,
        index: int,
        error_code: int,
        base_offset: int,
        log_append_time_ms: int,
        log_start_offset: int,
        record_errors: list | None,
        error_message: str | None,
    ):
        self.index = index
        self.error_code = error_code
        self.base_offset = base_offset
        self.log_append_time_ms = log_append_time_ms
        self.log_start_offset = log_start_offset
        self.record_errors = record_errors
        self.error_message = error_message
        self.current_leader: Any = None  # LeaderIdAndEpoch, v10+ (KIP-951)


class ProduceTopic:
    """A response topic, in place of kafka-python's ``TopicProduceResponse`` (about 3 µs to
    make: a producer writing one partition each of a hundred topics gets a hundred), read as
    ``ProducePartition`` is."""

    _struct = ProduceResponse.TopicProduceResponse._struct
    _version = None
    __slots__ = ("name", "topic_id", "partition_responses")

    def __init__(self, name: str | None, topic_id: Any, partition_responses: list):
        self.name = name
        self.topic_id = topic_id
        self.partition_responses = partition_responses


class ProduceAnswer:
    """The response body, in place of kafka-python's ``ProduceResponse`` (about 3 µs to make,
    one per Produce request), read as ``ProduceTopic`` is; ``_version`` is the request's, as
    kafka-python's message keeps it, for the request log."""

    _struct = ProduceResponse._struct
    __slots__ = ("_version", "responses", "throttle_time_ms", "node_endpoints")

    def __init__(self, version: int, responses: list, throttle_time_ms: int, node_endpoints: list):
        self._version = version
        self.responses = responses
        self.throttle_time_ms = throttle_time_ms
        self.node_endpoints = node_endpoints


def _partition(partition: Any, version: int, flexible: bool, out: bytearray) -> None:
    """Any partition entry, of any version."""
    if version < 5:
        out += _PARTITION_V3.pack(
            partition.index,
            partition.error_code,
            partition.base_offset,
            partition.log_append_time_ms,
        )
        return
    out += _PARTITION_V5.pack(
        partition.index,
        partition.error_code,
        partition.base_offset,
        partition.log_append_time_ms,
        partition.log_start_offset,
    )
    if version < 8:
        return
    record_errors = partition.record_errors
    array_length(None if record_errors is None else len(record_errors), flexible, out)
    for record_error in record_errors or ():
        out += I32.pack(record_error.batch_index)
        string(record_error.batch_index_error_message, flexible, out)
        if flexible:
            out.append(0)
    string(partition.error_message, flexible, out)
    if flexible:
        leader = partition.current_leader if version >= LEADER_HINTS_FROM else None
        tagged([] if leader is None else [(0, leader_id_and_epoch(leader))], out)


def encode_produce_response(
    response: Any, version: int, correlation_id: int, header_version: int
) -> list[bytes]:
    """The framed Produce response (size, header, body) as chunks."""
    flexible = version >= FLEXIBLE_FROM
    leader_hints = version >= LEADER_HINTS_FROM
    plain: struct.Struct | None = None  # v3-7: the general path writes an entry in one pack
    plain_last = 0
    if flexible:
        plain, plain_last = _PLAIN_FLEXIBLE_PARTITION, 1
    elif version >= 8:
        plain, plain_last = _PLAIN_PARTITION_V8, -1
    out = bytearray()
    topics = response.responses
    array_length(len(topics), flexible, out)
    for topic in topics:
        if version >= TOPIC_IDS_FROM:
            out += (topic.topic_id or ZERO_UUID).bytes
        else:
            string(topic.name, flexible, out)
        partitions = topic.partition_responses
        array_length(len(partitions), flexible, out)
        for p in partitions:
            record_errors = p.record_errors
            if (
                plain
                and not record_errors
                and record_errors is not None
                and p.error_message is None
                and (p.current_leader is None or not leader_hints)
            ):
                out += plain.pack(
                    p.index,
                    p.error_code,
                    p.base_offset,
                    p.log_append_time_ms,
                    p.log_start_offset,
                    plain_last,
                )
            else:
                _partition(p, version, flexible, out)
        if flexible:
            out.append(0)
    out += I32.pack(response.throttle_time_ms)
    if flexible:
        nodes = response.node_endpoints if leader_hints else None
        if nodes:
            node_endpoints(nodes, out)
        else:
            out.append(0)
    return [response_head(len(out), correlation_id, header_version), bytes(out)]
