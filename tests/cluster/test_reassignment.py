"""Partition reassignment (KIP-455) in a real cluster, driven by Kafka's own
``kafka-reassign-partitions``: a partition moved from brokers {1,2} to {3,4} (the 4th broker
started in the test) under acks=all load from an idempotent producer loses no acknowledged
record, ends on the target replicas and leaves no data on the old ones; a reassignment that
cannot complete yet (its new replica's fetches wait for 100 MB that never come) is listed in
progress and cancelled back to its original replicas."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.cluster.reassignment import (
    THROTTLE_RATE,
    LoadProducer,
    create_topic,
    execute_throttled,
    log_bytes,
    plan_file,
    read_all,
    reassign_tool,
)
from wireserver.testing.cluster import cluster_metadata

from .conftest import Cluster, wait_for

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-reassign"


#: A follower that takes a minute per fetch unless 100 MB are there to copy: a
#: reassignment onto it stays in progress for as long as the test needs.
SLOW_FOLLOWER = {
    "replica.fetch.min.bytes": str(100 * 1024 * 1024),
    "replica.fetch.wait.max.ms": "60000",
    "replica.lag.time.max.ms": "60000",
}


@pytest.fixture(scope="module")
def nodes(zookeeper):
    """Brokers 1-3 running; brokers 4 and 5 (a slow follower) made but started by the
    tests."""
    cluster = Cluster(zookeeper, 5, CHROOT)
    cluster.brokers[5].overrides.update(SLOW_FOLLOWER)
    # Broker 3's fetches of a throttled partition overshoot the rate by at most 64 KB each.
    cluster.brokers[3].overrides.update({"replica.fetch.max.bytes": "65536"})
    try:
        for broker_id in (1, 2, 3):
            cluster.brokers[broker_id].start()
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.close()


def start(nodes, broker_id: int) -> None:
    if not nodes.brokers[broker_id].running:
        nodes.brokers[broker_id].start()
        nodes.wait_ready()


def test_move_under_load_to_a_new_broker(nodes, reference, tmp_path):
    topic = "moved"
    create_topic(nodes.bootstrap, topic, [1, 2])
    load = LoadProducer(nodes.bootstrap, topic)
    load.start()
    try:
        wait_for(lambda: len(load.acked) >= 200, 30, what="the first acknowledged records")
        start(nodes, 4)
        plan = plan_file(tmp_path, topic, [3, 4])
        out = reassign_tool(
            reference, nodes.bootstrap, "--execute", "--reassignment-json-file", plan
        )
        assert "Successfully started partition reassignment" in out, out
        wait_for(
            lambda: (
                f"Reassignment of partition {topic}-0 is completed."
                in reassign_tool(
                    reference, nodes.bootstrap, "--verify", "--reassignment-json-file", plan
                )
            ),
            60,
            what="--verify to report the reassignment complete",
        )
        acked_before_end = len(load.acked)
        wait_for(lambda: len(load.acked) > acked_before_end + 50, 30, what="records after the move")
    finally:
        load.stopping.set()
        assert load.done.wait(90)
    assert not load.errors, load.errors[:5]

    def moved() -> int | None:
        leader, _, replicas, isr = cluster_metadata(nodes.bootstrap, topic)[2][0]
        if sorted(replicas) == [3, 4] and sorted(isr) == [3, 4] and leader in (3, 4):
            return leader
        return None

    leader = wait_for(moved, 30, what="Metadata to show the partition on brokers 3 and 4")
    values = read_all(nodes.brokers[leader].bootstrap_servers, topic, len(load.acked))
    assert set(load.acked) <= set(values)
    assert len(values) == len(set(values))  # idempotence: no duplicates
    wait_for(
        lambda: log_bytes(nodes.brokers[1], topic) == 0 and log_bytes(nodes.brokers[2], topic) == 0,
        30,
        what="the old replicas' data deleted",
    )
    assert log_bytes(nodes.brokers[3], topic) > 0 and log_bytes(nodes.brokers[4], topic) > 0


def test_list_and_cancel_a_reassignment_in_progress(nodes, reference, tmp_path):
    topic = "stalled"
    create_topic(nodes.bootstrap, topic, [1, 2])
    producer = Producer({"bootstrap.servers": nodes.bootstrap, "acks": "all"})
    for i in range(20):
        producer.produce(topic, str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    start(nodes, 5)
    plan = plan_file(tmp_path, topic, [1, 5])
    reassign_tool(reference, nodes.bootstrap, "--execute", "--reassignment-json-file", plan)
    listed = reassign_tool(reference, nodes.bootstrap, "--list")
    assert f"{topic}-0: replicas: 1,5,2. adding: 5. removing: 2." in listed, listed
    verified = reassign_tool(
        reference, nodes.bootstrap, "--verify", "--reassignment-json-file", plan
    )
    assert f"Reassignment of partition {topic}-0 is still in progress." in verified, verified
    leader, _, replicas, isr = cluster_metadata(nodes.bootstrap, topic)[2][0]
    assert replicas == [1, 5, 2] and 5 not in isr
    out = reassign_tool(reference, nodes.bootstrap, "--cancel", "--reassignment-json-file", plan)
    assert f"Successfully cancelled partition reassignment for: {topic}-0" in out, out
    listed = reassign_tool(reference, nodes.bootstrap, "--list")
    assert "No partition reassignments found." in listed, listed
    wait_for(
        lambda: cluster_metadata(nodes.bootstrap, topic)[2][0][2] == [1, 2],
        30,
        what="the original replicas back",
    )
    leader, _, replicas, isr = cluster_metadata(nodes.bootstrap, topic)[2][0]
    assert leader in (1, 2) and 5 not in isr


def describe(bootstrap: str, resource) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_configs([resource])[resource].result(timeout=30)


def test_throttled_move_takes_size_over_rate_and_verify_clears_the_throttle(
    nodes, reference, tmp_path
):
    """``--throttle`` sets the leader and follower rates on the brokers and the throttled
    replicas on the topic; the new replica (not in the ISR) then copies the partition at
    about the rate, and ``--verify`` of the completed move removes every throttle config."""
    topic = "throttled"
    create_topic(nodes.bootstrap, topic, [1, 2])
    producer = Producer({"bootstrap.servers": nodes.bootstrap, "acks": "all", "batch.size": 16384})
    value = os.urandom(10_000)
    for _ in range(300):
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0
    size = log_bytes(nodes.brokers[1], topic)
    assert size >= 3_000_000
    plan = plan_file(tmp_path, topic, [1, 3])
    started = time.monotonic()
    out = execute_throttled(reference, nodes.bootstrap, plan)
    assert f"The inter-broker throttle limit was set to {THROTTLE_RATE} B/s" in out, out
    topic_resource = ConfigResource("TOPIC", topic)
    throttled = describe(nodes.bootstrap, topic_resource)
    assert throttled["leader.replication.throttled.replicas"].value == "0:1,0:2"
    assert throttled["follower.replication.throttled.replicas"].value == "0:3"
    broker_resource = ConfigResource("BROKER", "1")
    rate = describe(nodes.brokers[1].bootstrap_servers, broker_resource)
    assert rate["leader.replication.throttled.rate"].value == str(THROTTLE_RATE)
    verified = wait_for(
        lambda: (
            out
            if f"Reassignment of partition {topic}-0 is completed."
            in (
                out := reassign_tool(
                    reference, nodes.bootstrap, "--verify", "--reassignment-json-file", plan
                )
            )
            else None
        ),
        60,
        what="--verify to report the throttled reassignment complete",
    )
    elapsed = time.monotonic() - started
    assert elapsed >= 0.6 * size / THROTTLE_RATE, (elapsed, size)
    assert "Clearing broker-level throttles" in verified, verified
    assert "Clearing topic-level throttles on topic throttled" in verified, verified
    cleared = describe(nodes.bootstrap, topic_resource)
    for name in (
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    ):
        assert cleared[name].value in ("", None) and cleared[name].is_default, cleared[name]
    for broker_id in (1, 3):
        rates = describe(
            nodes.brokers[broker_id].bootstrap_servers, ConfigResource("BROKER", str(broker_id))
        )
        for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
            assert rates[name].value == str(2**63 - 1) and rates[name].is_default, rates[name]
    assert log_bytes(nodes.brokers[3], topic) >= size
