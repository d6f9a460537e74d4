"""Records acknowledged with acks=1 and what is read back: the padding that makes each record
about 1 KB, every partition read to its end, and the check that each acknowledged record is at
the offset it was acknowledged at (the durability and full-disk tests kill or starve the broker
between the two)."""

from __future__ import annotations

import time

from tests.integration.conftest import PARTITIONS

PADDING = b"." * 1000


def read_all(bootstrap: str, topic: str, expected: int) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of every partition: {partition: [(offset, value), ...]}."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "durability",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    deadline = time.monotonic() + 30
    try:
        while len(at_end) < PARTITIONS or sum(map(len, out.values())) < expected:
            assert time.monotonic() < deadline, "timed out reading back"
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                if message.error().code() == message.error()._PARTITION_EOF:
                    at_end.add(message.partition())
                    continue
                raise AssertionError(message.error())
            out[message.partition()].append((message.offset(), message.value()))
    finally:
        consumer.close()
    return out


def check_acknowledged(acked: dict, stored: dict) -> None:
    """Each acknowledged record is at its offset; each partition reads back in offset order
    with no gaps, and the values of one partition come in the order they were sent."""
    for partition, records in stored.items():
        offsets = [o for o, _ in records]
        assert offsets == list(range(len(offsets))), f"partition {partition} has gaps"
        values = [v for _, v in records]
        assert values == sorted(values), f"partition {partition} out of order"
    by_offset = {(p, o): v for p, records in stored.items() for o, v in records}
    missing = {k: v for k, v in acked.items() if by_offset.get(k) != v}
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {list(missing)[:5]}"
