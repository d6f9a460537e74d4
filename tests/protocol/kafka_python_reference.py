"""kafka-python as the reference the protocol tests compare wireserver's own encoders and
decoders with."""

from __future__ import annotations

import uuid


def kafka_python_encoding(spec, version: int, correlation_id: int, response) -> bytes:
    """The framed response as kafka-python writes it, header and all (the reference for the
    encoders that write headers and topic entries themselves)."""
    response._version = version
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def produce_request_values(body, version: int) -> tuple:
    """Every field of a Produce request body (ours, or kafka-python's decoded or built) as
    plain values; the all-zero topic id is None, as decoders read it."""
    topics = []
    for topic in body.topic_data:
        name = topic.name
        topic_id = None if topic.topic_id == uuid.UUID(int=0) else topic.topic_id
        partitions = [
            (p.index, None if p.records is None else bytes(p.records)) for p in topic.partition_data
        ]
        topics.append((name, topic_id, partitions))
    return body.transactional_id, body.acks, body.timeout_ms, topics
