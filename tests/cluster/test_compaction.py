"""Compaction in a cluster: every replica cleans its own log, and a follower that was away
catches up from a compacted leader, fetching across the holes the cleaner left; once it leads,
consumers read what they read from the old leader."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.test_failures import partitions, wait_isr

pytestmark = pytest.mark.integration

KEYS = [f"k{i}".encode() for i in range(6)]
TOPIC = "compacted"
CONFIGS = {
    "cleanup.policy": "compact",
    "internal.segment.bytes": "4096",
    "min.cleanable.dirty.ratio": "0.01",
    "segment.ms": "200",
}


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, "/wireserver-compaction", {"log.cleaner.backoff.ms": "100"})
    nodes.start()
    yield nodes
    nodes.close()


def produce(bootstrap: str, records: list[tuple[bytes, bytes]]) -> dict:
    """Key -> (offset, value) of its last acknowledged record (acks=all, idempotent)."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    last = {}

    def acked(err, msg):
        assert err is None, err
        last[msg.key()] = (msg.offset(), msg.value())

    for key, value in records:
        producer.produce(TOPIC, key=key, value=value, on_delivery=acked)
    assert producer.flush(30) == 0
    return last


def read_all(bootstrap: str) -> list[tuple[int, bytes, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.monotonic_ns()}",
            "enable.auto.commit": False,
        }
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        consumer.assign([TopicPartition(TOPIC, 0, low)])
        found: list[tuple[int, bytes, bytes]] = []
        deadline = time.monotonic() + 20
        while (not found or found[-1][0] < high - 1) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                found.append((msg.offset(), msg.key(), msg.value()))
        return found
    finally:
        consumer.close()


def latest(records) -> dict:
    return {key: (offset, value) for offset, key, value in records if key != b"roll"}


def compacted(records) -> bool:
    keys = [key for _, key, _ in records if key != b"roll"]
    return bool(keys) and len(keys) == len(set(keys))


def test_a_follower_catches_up_from_a_compacted_leader(cluster: Cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3, config=CONFIGS)])[TOPIC].result(30)
    wait_isr(cluster, TOPIC, [1, 2, 3])
    leader, _, replicas, _ = partitions(cluster, TOPIC)[0]
    away = next(r for r in replicas if r != leader)
    cluster.brokers[away].stop()
    wait_isr(cluster, TOPIC, sorted(set(replicas) - {away}))

    last = produce(cluster.bootstrap, [(k, b"v%d-" % n + k * 100) for n in range(40) for k in KEYS])
    time.sleep(0.3)  # past segment.ms: the next append rolls, and the cleaner may take the rest
    produce(cluster.bootstrap, [(b"roll", b"r")])
    cleaned = wait_for(
        lambda: (r := read_all(cluster.bootstrap)) and compacted(r) and r,
        60,
        0.3,
        what="the leader's cleaner to keep one record per key",
    )
    assert latest(cleaned) == last
    assert cleaned[0][0] > 0  # the start of the log is a hole now

    # The follower fetches from offset 0 of a log whose first offsets are gone.
    cluster.brokers[away].start()
    wait_isr(cluster, TOPIC, [1, 2, 3])
    # Make it the leader: the old leader and the third replica stop.
    for broker_id in replicas:
        if broker_id != away:
            cluster.brokers[broker_id].stop()
    wait_for(
        lambda: partitions(cluster, TOPIC)[0][0] == away,
        60,
        0.3,
        what=f"broker {away} to lead {TOPIC}",
    )
    bootstrap = cluster.brokers[away].bootstrap_servers
    assert latest(read_all(bootstrap)) == last
    for broker_id in replicas:
        if broker_id != away:
            cluster.brokers[broker_id].start()
