"""Coordinators follow leadership on a 3-broker cluster: a consumer group whose coordinator is
killed moves to the new leader of its ``__consumer_offsets`` partition and resumes from its
committed offsets; ElectLeaders PREFERRED and ``auto.leader.rebalance.enable`` move leadership
back to the preferred replica after a failover."""

from __future__ import annotations

import os
import signal
import time

import pytest
from confluent_kafka import Consumer, ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.coordinators import OVERRIDES, find_coordinator
from tests.cluster.topics import create
from wireserver.testing.cluster import cluster_metadata as metadata

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, "/wireserver-coordination", OVERRIDES).start()
    yield nodes
    nodes.close()


def consume(cluster: Cluster, topic: str, group: str, count: int) -> list[int]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe([topic])
    offsets: list[int] = []
    try:
        while len(offsets) < count:
            msg = consumer.poll(30)
            assert msg is not None, f"no message after {offsets[-1:]}"
            if msg.error():
                continue
            offsets.append(msg.offset())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return offsets


def test_group_coordinator_moves_with_offsets_leadership(cluster):
    topic, group = "coordinated", "resumes"
    create(cluster, topic, partitions=1, rf=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(100):
        producer.produce(topic, str(i).encode())
    assert producer.flush(30) == 0
    assert consume(cluster, topic, group, 40) == list(range(40))

    any_broker = next(iter(cluster.brokers.values())).bootstrap_servers
    error, coordinator = find_coordinator(any_broker, group)
    assert error == 0 and coordinator in cluster.brokers
    # Every broker names the same coordinator: the leader of the group's offsets partition.
    for broker in cluster.brokers.values():
        assert find_coordinator(broker.bootstrap_servers, group) == (0, coordinator)
    offsets_leaders = {p[0] for p in metadata(any_broker, "__consumer_offsets")[2].values()}
    assert coordinator in offsets_leaders

    cluster.brokers[coordinator].kill()
    survivor = next(b for b in cluster.brokers.values() if b.running)
    moved = wait_for(
        lambda: (
            (r := find_coordinator(survivor.bootstrap_servers, group))[0] == 0
            and r[1] != coordinator
            and r[1]
        ),
        30,
        what="a new coordinator",
    )
    assert moved in cluster.brokers and moved != coordinator
    # The group resumes where it committed.
    assert consume(cluster, topic, group, 20) == list(range(40, 60))
    cluster.brokers[coordinator].start()
    wait_for(
        lambda: len(metadata(survivor.bootstrap_servers, "none")[1]) == 3,
        30,
        what="the broker to register again",
    )


def _fail_over_and_return(cluster: Cluster, topic: str) -> tuple[int, str]:
    create(cluster, topic, partitions=1, rf=3)
    any_broker = next(iter(cluster.brokers.values())).bootstrap_servers
    # The controller elects leaders just after creation: wait for the partition to have one.
    wait_for(
        lambda: metadata(any_broker, topic)[2].get(0, (-1,))[0] != -1,
        30,
        what="a leader after creation",
    )
    preferred, _, replicas, _ = metadata(any_broker, topic)[2][0]
    assert preferred == replicas[0]
    cluster.brokers[preferred].kill()
    observer = next(b for b in cluster.brokers.values() if b.running).bootstrap_servers
    wait_for(
        lambda: metadata(observer, topic)[2][0][0] not in (-1, preferred), 30, what="a failover"
    )
    cluster.brokers[preferred].start()
    wait_for(
        lambda: preferred in metadata(observer, topic)[2][0][3],
        60,
        what="the preferred replica to rejoin the ISR",
    )
    return preferred, observer


def test_elect_leaders_preferred_moves_leadership_back(cluster):
    topic = "preferred"
    preferred, observer = _fail_over_and_return(cluster, topic)
    assert metadata(observer, topic)[2][0][0] != preferred
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)]).result(30)
    assert list(result.values()) == [None]
    wait_for(
        lambda: metadata(observer, topic)[2][0][0] == preferred,
        10,
        what="the preferred replica to lead",
    )
    # Again: nothing to do.
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)]).result(30)
    (error,) = result.values()
    assert error is not None and "ELECTION_NOT_NEEDED" in str(error)


@pytest.fixture
def rebalancing_cluster(zookeeper):
    overrides = {
        "auto.leader.rebalance.enable": "true",
        "leader.imbalance.check.interval.seconds": "1",
    }
    nodes = Cluster(zookeeper, 3, "/wireserver-rebalance", overrides).start()
    yield nodes
    nodes.close()


def test_auto_leader_rebalance(rebalancing_cluster):
    cluster = rebalancing_cluster
    preferred, observer = _fail_over_and_return(cluster, "rebalanced")
    wait_for(
        lambda: metadata(observer, "rebalanced")[2][0][0] == preferred,
        20,
        what="the automatic preferred election",
    )


def test_offset_fetch_never_shows_a_commit_before_it_is_replicated(cluster):
    """Found by the fault campaign (``scripts/chaos``): a commit was shown by OffsetFetch as
    soon as the coordinator appended it, before its followers had it; the coordinator then
    failed over and the group's committed offset went backwards. Kafka shows a commit only
    once its acks=-1 append completes. Here the followers of the group's ``__consumer_offsets``
    partition are paused: the new commit must stay invisible until they are back."""
    topic, group = "durable-commit", "durable-commit-group"
    create(cluster, topic)
    writer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    try:
        writer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)

        def committed() -> int:
            return reader.committed([TopicPartition(topic, 0)], timeout=10)[0].offset

        assert committed() == 5
        _, coordinator = find_coordinator(cluster.bootstrap.split(",")[0], group)
        followers = [b for i, b in cluster.brokers.items() if i != coordinator]
        for broker in followers:
            os.kill(broker.pid, signal.SIGSTOP)
        try:
            writer.commit(offsets=[TopicPartition(topic, 0, 9)], asynchronous=True)
            # Well inside replica.lag.time.max.ms (3 s): the ISR still waits for the followers.
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                assert committed() == 5
        finally:
            for broker in followers:
                os.kill(broker.pid, signal.SIGCONT)
        wait_for(lambda: committed() == 9, 30, 0.2, what="the commit once replicated")
    finally:
        writer.close()
        reader.close()
