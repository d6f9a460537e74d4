"""A broker pointed at the wrong ZooKeeper keeps its data.

Kafka refuses to start a broker whose ``meta.properties`` names another cluster than
ZooKeeper's ``/cluster/id`` (InconsistentClusterIdException). Before this guard a wireserver
broker adopted the other id and then deleted, as deleted-while-away topics, every topic the
other cluster did not know: a mistyped chroot cost all its data.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.cluster.conftest import CLUSTER_OVERRIDES, zk_client
from wireserver.testing import BrokerStartError, EmbeddedBroker

TOPIC = "precious"
VALUES = [f"value {i}".encode() for i in range(20)]


def broker_on(zookeeper, chroot: str, data_dir) -> EmbeddedBroker:
    return EmbeddedBroker(
        "subprocess",
        data_dir=data_dir,
        overrides={
            **CLUSTER_OVERRIDES,
            "broker.id": "1",
            "zookeeper.connect": zookeeper.connect + chroot,
        },
    )


def read_all(bootstrap: str) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "guard-check", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(values) < len(VALUES) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def segment_bytes(data_dir) -> int:
    partition_dir = os.path.join(data_dir, f"{TOPIC}-0")
    return sum(
        os.path.getsize(os.path.join(partition_dir, name))
        for name in os.listdir(partition_dir)
        if name.endswith(".log")
    )


def unique_chroot() -> str:
    return f"/guard-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def written(zookeeper, tmp_path):
    """(data dir, chroot): a broker's data dir holding an acknowledged topic of the cluster
    in that chroot."""
    data_dir, chroot = tmp_path / "data", unique_chroot()
    with broker_on(zookeeper, chroot, data_dir) as broker:
        broker.create_topic(TOPIC, partitions=1, replication_factor=1)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
        for value in VALUES:
            producer.produce(TOPIC, value, partition=0)
        assert producer.flush(30) == 0
    return data_dir, chroot


def test_another_clusters_zookeeper_is_refused_and_the_data_kept(zookeeper, written):
    data_dir, home = written
    other = unique_chroot()
    session = zk_client(zookeeper, other)
    client = next(session)
    client.create(
        "/cluster/id", json.dumps({"version": "1", "id": "b" * 22}).encode(), makepath=True
    )
    next(session, None)  # stops the client
    before = segment_bytes(data_dir)
    broker = broker_on(zookeeper, other, data_dir)
    with pytest.raises(BrokerStartError) as refused:
        broker.start()
    assert "doesn't match stored clusterId" in str(refused.value)
    assert "zookeeper.connect may be wrong" in str(refused.value)
    assert segment_bytes(data_dir) == before
    with broker_on(zookeeper, home, data_dir) as back:
        assert read_all(back.bootstrap_servers) == VALUES


def test_an_empty_chroot_does_not_delete_the_topics_it_never_had(zookeeper, written):
    data_dir, home = written
    before = segment_bytes(data_dir)
    with broker_on(zookeeper, unique_chroot(), data_dir) as broker:
        # The new tree has no topic: the broker has seen its topic list once it answers
        # Metadata; give the watch a moment more to have run.
        assert TOPIC not in broker.topics()
        time.sleep(1.0)
        assert "is not in the new cluster's ZooKeeper" in broker.log_text()
    assert segment_bytes(data_dir) == before
    with broker_on(zookeeper, home, data_dir) as back:
        assert read_all(back.bootstrap_servers) == VALUES
