"""Durability across process death: every record acknowledged with acks=1 is read back after
``kill -9`` and a restart on the same data dir, at the offset it was acknowledged at. A clean
stop (SIGTERM) checkpoints everything, so the next start re-scans no segment."""

from __future__ import annotations

import re
import time

import pytest

from tests.integration.conftest import PARTITIONS
from wireserver.testing import EmbeddedBroker

RECOVERED_RE = re.compile(r"loaded (\d+) partition logs; (\d+) segments recovered")
PADDING = b"." * 1000


@pytest.fixture
def process_broker():
    # Small segments (Kafka's minimum) so that the logs have several.
    with EmbeddedBroker(
        "subprocess", overrides={"num.partitions": PARTITIONS, "log.segment.bytes": 1024 * 1024}
    ) as running:
        yield running


def recovery_counts(broker: EmbeddedBroker) -> list[tuple[int, int]]:
    """(partition logs, segments recovered) for every start so far, from the broker log."""
    return [(int(a), int(b)) for a, b in RECOVERED_RE.findall(broker.log_text())]


def produce(
    bootstrap: str, topic: str, values: range, acked: dict, flush: bool = True, producer=None
):
    from confluent_kafka import Producer

    producer = producer or Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "enable.idempotence": False,
            "linger.ms": 5,
            "message.timeout.ms": 20000,
            "retries": 0,
        }
    )

    def report(err, msg):
        if err is None:
            acked[(msg.partition(), msg.offset())] = msg.value()

    for i in values:
        while True:
            try:
                producer.produce(
                    topic,
                    value=b"record-%06d" % i + PADDING,
                    partition=i % PARTITIONS,
                    on_delivery=report,
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if flush:
        assert producer.flush(30) == 0
    return producer


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


def test_kill_9_keeps_every_acknowledged_record(process_broker):
    topic = "durable"
    bootstrap = process_broker.bootstrap_servers
    acked: dict = {}
    produce(bootstrap, topic, range(3000), acked)
    assert len(acked) == 3000
    # More records in flight while the broker dies.
    producer = produce(bootstrap, topic, range(3000, 6000), acked, flush=False)
    deadline = time.monotonic() + 20
    while len(acked) < 3300:  # die with part of the second wave acknowledged
        assert time.monotonic() < deadline
        producer.poll(0.001)
    process_broker.kill()
    producer.flush(1)  # in-flight ones fail (retries=0) or were acknowledged before the kill
    acked_before_restart = dict(acked)
    process_broker.start()
    assert process_broker.bootstrap_servers == bootstrap  # same port after a restart
    producer.flush(20)
    stored = read_all(bootstrap, topic, len(acked))
    check_acknowledged(acked_before_restart, stored)
    check_acknowledged(acked, stored)
    print(
        f"acknowledged before the kill: {len(acked_before_restart)}, in all: {len(acked)}; "
        f"(partition logs, segments recovered) per start: {recovery_counts(process_broker)}"
    )
    (_, first), (logs, after_kill) = recovery_counts(process_broker)
    assert first == 0 and logs == PARTITIONS
    assert after_kill > 0, "a start after SIGKILL should have re-scanned the unflushed tail"


def test_clean_stop_needs_no_recovery(process_broker):
    topic = "clean"
    acked: dict = {}
    produce(process_broker.bootstrap_servers, topic, range(2000), acked)
    process_broker.restart()  # SIGTERM, wait, start on the same dir and port
    stored = read_all(process_broker.bootstrap_servers, topic, len(acked))
    check_acknowledged(acked, stored)
    counts = recovery_counts(process_broker)
    assert counts[-1] == (PARTITIONS, 0), counts
    assert sum(len(r) for r in stored.values()) == 2000
