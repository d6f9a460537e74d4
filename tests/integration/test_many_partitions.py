"""More partitions than the broker may open files: under an open-files limit of 256 (which three
descriptors per partition would pass at 85 partitions) a broker creates 600 partitions, takes a
record in each from a real producer, hands every one back to a real consumer, and after a
restart serves them again."""

from __future__ import annotations

import os
import time

import pytest

from wireserver.testing import EmbeddedBroker

pytestmark = pytest.mark.integration

LIMIT = 256
TOPICS = 6
PARTITIONS = 100


def produce_everywhere(bootstrap: str, tag: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20)
    futures = [
        producer.send(f"wide-{t}", f"{tag} {t}/{p}".encode(), partition=p)
        for t in range(TOPICS)
        for p in range(PARTITIONS)
    ]
    for future in futures:
        future.get(timeout=60)
    producer.close()


def consume_everything(bootstrap: str, expected: int) -> dict[tuple[str, int], list[bytes]]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        *(f"wide-{t}" for t in range(TOPICS)),
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
    )
    seen: dict[tuple[str, int], list[bytes]] = {}
    count = 0
    deadline = time.monotonic() + 90
    while count < expected and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=1000).items():
            seen.setdefault((tp.topic, tp.partition), []).extend(r.value for r in records)
            count += len(records)
    consumer.close()
    return seen


def test_six_hundred_partitions_under_an_open_files_limit_of_256(tmp_path):
    from kafka.admin import KafkaAdminClient, NewTopic

    broker = EmbeddedBroker(
        "subprocess",
        data_dir=str(tmp_path / "data"),
        command_prefix=["prlimit", f"--nofile={LIMIT}:{LIMIT}", "--"],
    )
    with broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        for t in range(TOPICS):
            admin.create_topics([NewTopic(f"wide-{t}", PARTITIONS, 1)])
        admin.close()
        with open(f"/proc/{broker.pid}/limits", encoding="utf-8") as limits:
            assert f"Max open files            {LIMIT}" in limits.read()
        produce_everywhere(broker.bootstrap_servers, "first")
        seen = consume_everything(broker.bootstrap_servers, TOPICS * PARTITIONS)
        assert len(seen) == TOPICS * PARTITIONS
        assert all(values == [f"first {k[0][5:]}/{k[1]}".encode()] for k, values in seen.items())
        assert len(os.listdir(f"/proc/{broker.pid}/fd")) < LIMIT
        broker.restart()
        produce_everywhere(broker.bootstrap_servers, "second")
        seen = consume_everything(broker.bootstrap_servers, 2 * TOPICS * PARTITIONS)
        assert sum(len(v) for v in seen.values()) == 2 * TOPICS * PARTITIONS
        assert all(v[1] == f"second {k[0][5:]}/{k[1]}".encode() for k, v in seen.items())
