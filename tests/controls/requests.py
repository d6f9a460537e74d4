"""Requests and answers the control tests share: a Produce to send, a partition's error in its
answer, commands the control API refuses."""

from __future__ import annotations

import time

from kafka.protocol.producer.produce import ProduceRequest

from wireserver.protocol.records import RecordBatchBuilder


def produce_request(topic: str, value: bytes = b"v", version: int = 9, partition: int = 0):
    builder = RecordBatchBuilder()
    builder.append(int(time.time() * 1000), b"k", value)
    data = ProduceRequest.TopicProduceData.PartitionProduceData(
        index=partition, records=bytes(builder.build())
    )
    return ProduceRequest(
        version=version,
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[data])],
    )


def partition_error(response) -> int:
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return partition.error_code


BAD_COMMANDS = [
    ({"api": "Produce"}, "missing field 'control'"),
    ({"control": "explode"}, "unknown control 'explode'"),
    ({"control": "error", "error": 6}, "missing field 'api'"),
    ({"control": "error", "api": "Produce"}, "missing field 'error'"),
    ({"control": "error", "api": "Prodce", "error": 6}, "unknown API 'Prodce'"),
    ({"control": "error", "api": 999, "error": 6}, "unknown API 999"),
    ({"control": "error", "api": "Produce", "error": "NOT_A_CODE"}, "unknown error code"),
    ({"control": "error", "api": "Produce", "error": 9999}, "unknown error code 9999"),
    ({"control": "error", "api": "Produce", "error": 0}, "error code 0"),
    ({"control": "error", "api": "Produce", "error": "NONE"}, "error code 0"),
    ({"control": "error", "api": "Produce", "error": 6, "colour": 1}, "unknown field 'colour'"),
    ({"control": "error", "api": "Produce", "error": 6, "count": 0}, "'count'"),
    ({"control": "error", "api": "Produce", "error": 6, "count": "2"}, "'count'"),
    ({"control": "error", "api": "Produce", "error": 6, "partition": 1}, "'partition' needs"),
    ({"control": "error", "api": "Produce", "error": 6, "topic": 5}, "'topic' must be"),
    ({"control": "error", "api": ["Produce"], "error": 6}, "'api' must be"),
    ({"control": "latency"}, "missing field 'ms'"),
    ({"control": "latency", "ms": -1}, "'ms' must not be negative"),
    ({"control": "latency", "ms": 1.5}, "'ms' must be an integer"),
    ({"control": "latency", "ms": True}, "'ms' must be an integer"),
    ({"control": "disconnect", "handle": "yes"}, "'handle' must be true or false"),
    ({"control": "throttle", "ms": 100}, "missing field 'api'"),
    ({"control": "throttle", "api": "Produce", "ms": -5}, "'ms' must not be negative"),
    ({"control": "throttle", "api": "SaslHandshake", "ms": 5}, "no throttle_time_ms"),
    ({"control": "clock", "advance_ms": 0}, "'advance_ms' must not be less than 1"),
    ({"control": "clock", "advance_ms": -1}, "'advance_ms'"),
    ({"control": "refuse_connections", "count": -1}, "'count'"),
    ({"control": "down", "ms": 1}, "unknown field 'ms'"),
    ({"control": ["error"]}, "unknown control ['error']"),
    ({"control": "error", "api": None, "error": 6}, "field 'api' of control 'error' must not be"),
    ({"control": "throttle", "api": None, "ms": 5}, "field 'api' of control 'throttle' must not"),
    ({"control": "latency", "ms": 2**31}, "'ms' must be at most 2147483647"),
    ({"control": "clock", "advance_ms": 10**20}, "'advance_ms' must be at most"),
    (
        {"control": "error", "api": "Produce", "error": 6, "partition": -1, "topic": "t"},
        "'partition'",
    ),
]
