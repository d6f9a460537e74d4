"""Compaction in a cluster: every replica cleans its own log, and a follower that was away
catches up from a compacted leader, fetching across the holes the cleaner left; once it leads,
consumers read what they read from the old leader."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.replicated_load import partitions, wait_isr
from tests.integration.compacted_records import latest, latest_only, produce, read_all

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


def test_a_follower_catches_up_from_a_compacted_leader(cluster: Cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3, config=CONFIGS)])[TOPIC].result(30)
    wait_isr(cluster, TOPIC, [1, 2, 3])
    leader, _, replicas, _ = partitions(cluster, TOPIC)[0]
    away = next(r for r in replicas if r != leader)
    cluster.brokers[away].stop()
    wait_isr(cluster, TOPIC, sorted(set(replicas) - {away}))

    last = produce(
        cluster.bootstrap, TOPIC, [(k, b"v%d-" % n + k * 100) for n in range(40) for k in KEYS]
    )
    time.sleep(0.3)  # past segment.ms: the next append rolls, and the cleaner may take the rest
    produce(cluster.bootstrap, TOPIC, [(b"roll", b"r")])
    cleaned = wait_for(
        lambda: (r := read_all(cluster.bootstrap, TOPIC)) and latest_only(r) and r,
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
    assert latest(read_all(bootstrap, TOPIC)) == last
    for broker_id in replicas:
        if broker_id != away:
            cluster.brokers[broker_id].start()
