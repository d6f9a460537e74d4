"""What the transaction tests share: a broker's settings for them, unique names, and a
consumer reading a partition whole with either isolation level."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaException, TopicPartition

TIMEOUT_CHECK_MS = 100


def broker_overrides() -> dict:
    return {
        "transaction.state.log.num.partitions": "5",
        "offsets.topic.num.partitions": "5",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(TIMEOUT_CHECK_MS),
    }


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def consume_all(
    bootstrap: str, topic: str, isolation: str, expect: int | None = None, timeout: float = 10.0
) -> list[bytes]:
    """Values of ``topic`` partition 0 read from the start until ``expect`` arrive (or, when
    None, until the end offset the consumer reports is reached)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("reader"),
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    if expect is None or len(values) >= expect:
                        break
                    continue
                raise KafkaException(msg.error())
            values.append(msg.value())
            if expect is not None and len(values) >= expect:
                # Read a little longer to catch anything that should not be there.
                deadline = min(deadline, time.monotonic() + 0.5)
    finally:
        consumer.close()
    return values
