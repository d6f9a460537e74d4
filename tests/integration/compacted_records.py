"""Records of a compacted topic as the cleaner tests write and read them: keyed records (and
tombstones) produced with their offsets, the whole partition read back, and what compaction
leaves of them (the latest record of each key)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]]) -> dict:
    """Send ``records`` (key, value or None) with an idempotent producer; returns each key's
    last (offset, value) as the broker acknowledged it."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    last: dict[bytes, tuple[int, bytes | None]] = {}

    def acked(err, msg):
        assert err is None, err
        last[msg.key()] = (msg.offset(), msg.value())

    for key, value in records:
        producer.produce(topic, key=key, value=value, on_delivery=acked)
    assert producer.flush(30) == 0
    return last


def read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    """Every record of partition 0 from its start: (offset, key, value)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, low)])
        found = []
        deadline = time.monotonic() + 20
        while (not found or found[-1][0] < high - 1) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                found.append((msg.offset(), msg.key(), msg.value()))
        return found
    finally:
        consumer.close()


def latest_only(records) -> bool:
    keys = [key for _, key, _ in records if key != b"roll"]
    return len(keys) == len(set(keys))


def latest(records) -> dict:
    """Key -> (offset, value) of its last record (the test's own ``roll`` key left out)."""
    return {key: (offset, value) for offset, key, value in records if key != b"roll"}
