"""What ``/api/`` tells an operator of a one-node broker that real clients use: a topic's
offsets and size after kafka-python produced to it, a classic group's and a consumer-protocol
group's committed offsets and lag, and a confluent-kafka transaction left open."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.ops.conftest import get, get_json
from wireserver.ops.status import group_offsets
from wireserver.testing import EmbeddedBroker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker():
    overrides = {
        "metrics.listeners": "HTTP://:0",
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.num.partitions": "3",
    }
    with EmbeddedBroker(overrides=overrides) as instance:
        yield instance


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(count):
        producer.send(topic, b"value-%d" % i, key=b"key-%d" % i, partition=partition)
    producer.flush(30)
    producer.close()


def topic_entry(broker, name: str) -> dict:
    (entry,) = [t for t in get_json(broker.ops_url, "/api/topics")["topics"] if t["name"] == name]
    return entry


def group_entry(broker, group_id: str) -> dict:
    found = [
        g for g in get_json(broker.ops_url, "/api/groups")["groups"] if g["group_id"] == group_id
    ]
    assert len(found) == 1, found
    return found[0]


def wait_until(condition, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_topics_show_each_partition_s_state_offsets_and_size(broker):
    topic = unique("orders")
    broker.create_topic(topic, partitions=2)
    produce(broker.bootstrap_servers, topic, 0, 7)

    entry = topic_entry(broker, topic)
    assert entry["internal"] is False
    assert entry["min_insync_replicas"] == 1
    first, second = entry["partitions"]
    assert first["partition"] == 0 and second["partition"] == 1
    for partition in (first, second):
        assert partition["leader"] == 0
        assert partition["replicas"] == [0] and partition["isr"] == [0]
        assert partition["offline_replicas"] == []
        assert not partition["under_replicated"]
        assert not partition["under_min_isr"]
        assert not partition["offline"]
        assert partition["hosted_here"] is True
        assert partition["log_start_offset"] == 0
    assert first["high_watermark"] == first["log_end_offset"] == 7
    assert first["size_bytes"] > 0
    assert second["high_watermark"] == second["log_end_offset"] == 0
    assert second["size_bytes"] == 0

    cluster = get_json(broker.ops_url, "/api/cluster")
    assert cluster["controller_id"] == 0 and cluster["node_id"] == 0
    assert cluster["clustered"] is False
    (me,) = cluster["brokers"]
    assert me == {
        "id": 0,
        "host": "127.0.0.1",
        "port": broker.port,
        "rack": None,
        "alive": True,
    }
    assert cluster["summary"]["under_replicated"] == 0
    assert cluster["summary"]["offline"] == 0
    assert cluster["summary"]["partitions"] >= 2


def test_no_record_data_is_served(broker):
    topic = unique("secrets")
    broker.create_topic(topic)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    producer.send(
        topic, b"the-secret-value", key=b"the-secret-key", headers=[("h", b"the-secret-header")]
    ).get(timeout=30)
    producer.close()
    for path in ("/", "/metrics", "/api/cluster", "/api/topics", "/api/groups"):
        body = get(broker.ops_url, path).body
        assert b"the-secret" not in body, path


def test_a_classic_group_shows_its_state_members_committed_offsets_and_lag(broker):
    topic, group = unique("lagging"), unique("readers")
    broker.create_topic(topic, partitions=2)
    produce(broker.bootstrap_servers, topic, 0, 10)
    produce(broker.bootstrap_servers, topic, 1, 3)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        client_id="lag-reader",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        # Metadata first: kafka-python's leader, assigning before it knows the topic, assigns
        # nothing and now and then never gets to the rebalance that would fix it.
        assert consumer.partitions_for_topic(topic) == {0, 1}
        consumer.subscribe([topic])
        wait_until(lambda: consumer.poll(200) or consumer.assignment(), "an assignment")
        consumer.commit(
            {
                TopicPartition(topic, 0): OffsetAndMetadata(4, "", -1),
                TopicPartition(topic, 1): OffsetAndMetadata(3, "", -1),
            }
        )
        entry = group_entry(broker, group)
        assert entry["type"] == "classic"
        assert entry["state"] == "Stable"
        assert entry["protocol_type"] == "consumer"
        assert entry["coordinator"] == 0
        (member,) = entry["members"]
        assert member["client_id"] == "lag-reader"
        assert member["client_host"].endswith("127.0.0.1")
        assert entry["offsets"] == [
            {"topic": topic, "partition": 0, "committed_offset": 4, "end_offset": 10, "lag": 6},
            {"topic": topic, "partition": 1, "committed_offset": 3, "end_offset": 3, "lag": 0},
        ]
        assert entry["total_lag"] == 6
    finally:
        consumer.close()
    left = wait_until(
        lambda: (g := group_entry(broker, group))["state"] == "Empty" and g,
        "the group to empty",
    )
    assert left["members"] == []
    assert left["total_lag"] == 6

    # The function the /metrics lag gauge uses gives the same figures.
    rows = broker._runner.call(group_offsets, broker.broker)
    mine = sorted((r.topic, r.partition, r.lag) for r in rows if r.group_id == group)
    assert mine == [(topic, 0, 6), (topic, 1, 0)]


def test_a_consumer_protocol_group_shows_its_assignment_and_lag(broker):
    topic, group = unique("kip848"), unique("modern")
    broker.create_topic(topic)
    produce(broker.bootstrap_servers, topic, 0, 5)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": "modern-reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        wait_until(lambda: consumer.poll(0.2) is not None, "a record")
        consumer.commit(offsets=[CTopicPartition(topic, 0, 2)], asynchronous=False)
        entry = wait_until(
            lambda: (g := group_entry(broker, group))["state"] == "Stable" and g, "Stable"
        )
        assert entry["type"] == "consumer"
        (member,) = entry["members"]
        assert member["client_id"] == "modern-reader"
        assert member["assigned"] == [[topic, 0]]
        assert member["member_epoch"] > 0
        assert entry["offsets"] == [
            {"topic": topic, "partition": 0, "committed_offset": 2, "end_offset": 5, "lag": 3}
        ]
    finally:
        consumer.close()


def test_an_open_transaction_is_listed_until_it_commits(broker):
    topic, txn_id = unique("txn"), unique("payments")
    broker.create_topic(topic)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id, "linger.ms": 0}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"pending", partition=0)
    assert producer.flush(30) == 0

    def listed():
        found = get_json(broker.ops_url, "/api/transactions")["transactions"]
        return [t for t in found if t["transactional_id"] == txn_id]

    (txn,) = listed()
    assert txn["state"] == "Ongoing"
    assert txn["partitions"] == [[topic, 0]]
    assert txn["producer_id"] >= 0 and txn["producer_epoch"] >= 0
    assert txn["start_time_ms"] > 0
    # The open transaction's batch counts in the high watermark.
    assert topic_entry(broker, topic)["partitions"][0]["high_watermark"] == 1

    producer.commit_transaction(30)
    assert listed() == []
