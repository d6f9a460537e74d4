"""Durability across process death: every record acknowledged with acks=1 is read back after
``kill -9`` and a restart on the same data dir, at the offset it was acknowledged at. A clean
stop (SIGTERM) checkpoints everything, so the next start re-scans no segment."""

from __future__ import annotations

import re
import time

import pytest

from tests.integration.acknowledged_records import PADDING, check_acknowledged, read_all
from tests.integration.conftest import PARTITIONS
from wireserver.testing import EmbeddedBroker

RECOVERED_RE = re.compile(r"loaded (\d+) partition logs; (\d+) segments recovered")


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
