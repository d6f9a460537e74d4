"""Fetch from the nearest replica (KIP-392) and rack-aware placement on three brokers in racks
a, b and c. Which broker served a consumer is read from the brokers' own BytesOut counters
(``kafka_server_brokertopicmetrics_bytesout_total``, consumer reads only; replication is not
counted), as an operator would check it, not just from the records arriving."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.cluster.conftest import Cluster, wait_for
from tests.prometheus_scrape import matching, scrape
from wireserver.testing.cluster import cluster_metadata as metadata
from wireserver.testing.wire import KafkaWire, fetch_request

RACKS = {1: "a", 2: "b", 3: "c"}
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
RECORDS = 200
VALUE = b"v" * 100


def rack_cluster(zookeeper, chroot: str, overrides: dict) -> Cluster:
    cluster = Cluster(zookeeper, 3, chroot, overrides)
    for broker_id, broker in cluster.brokers.items():
        broker.overrides["broker.rack"] = RACKS[broker_id]
    return cluster.start(together=True)


@pytest.fixture(scope="module")
def nearest(zookeeper):
    cluster = rack_cluster(zookeeper, "/nearest", {"replica.selector.class": SELECTOR})
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def leader_only(zookeeper):
    cluster = rack_cluster(zookeeper, "/leader-only", {})
    yield cluster
    cluster.close()


def create(cluster: Cluster, topic: NewTopic) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([topic])[topic.topic].result(30)
    wait_for(
        lambda: all(
            metadata(b.bootstrap_servers, topic.topic)[2] for b in cluster.brokers.values()
        ),
        30,
        what=f"every broker to know {topic.topic}",
    )


def produce(cluster: Cluster, topic: str) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(topic, key=str(i).encode(), value=VALUE, partition=0)
    assert producer.flush(30) == 0


def consume_all(cluster: Cluster, topic: str, rack: str) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"{topic}-reader",
            "client.rack": rack,
            "enable.auto.commit": False,
        }
    )
    keys: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while len(keys) < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                keys.append(message.key())
    finally:
        consumer.close()
    return keys


def bytes_out(cluster: Cluster, topic: str) -> dict[int, float]:
    """Each broker's BytesOut for ``topic``: the record bytes it sent to consumers."""
    return {
        broker_id: sum(
            matching(
                scrape(broker.ops_url),
                "kafka_server_brokertopicmetrics_bytesout_total",
                topic=topic,
            )
        )
        for broker_id, broker in cluster.brokers.items()
    }


@pytest.mark.parametrize(
    "selector, rack, server",
    [
        (True, "b", 2),  # the follower in the consumer's rack
        (True, "c", 1),  # no replica in rack c: the leader
        (False, "b", 1),  # no replica.selector.class: the leader, whatever the rack
    ],
    ids=["follower-in-rack", "no-replica-in-rack", "no-selector"],
)
def test_a_confluent_consumer_is_served_by_the_replica_the_leader_names(
    request, selector, rack, server
):
    """Partition 0 on brokers 1 (rack a, the leader) and 2 (rack b): every record arrives,
    and all record bytes leave from ``server``."""
    cluster = request.getfixturevalue("nearest" if selector else "leader_only")
    topic = f"read-{rack}-{int(selector)}"
    create(cluster, NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2]]))
    produce(cluster, topic)
    assert consume_all(cluster, topic, rack) == [str(i).encode() for i in range(RECORDS)]
    served = bytes_out(cluster, topic)
    assert served[server] >= RECORDS * len(VALUE), served
    assert all(served[b] == 0 for b in RACKS if b != server), served


def raw_fetch(
    broker,
    topic: str,
    offset: int,
    version: int = 12,
    isolation: int = 0,
    session: tuple[int, int] = (0, -1),
):
    """One consumer Fetch of partition 0 at ``offset`` (in fetch ``session``: id, epoch):
    (error code, high watermark, record bytes, session id, last stable offset) as this broker
    answers; the request's error code when it has one."""
    request = fetch_request(
        topic,
        offset,
        version=version,
        isolation_level=isolation,
        session=session,
        rack_id="b",
    )
    with KafkaWire(broker.bootstrap_servers) as wire:
        response = wire.request(request)
    if response.error_code:
        return response.error_code, -1, 0, response.session_id, -1
    partition = response.responses[0].partitions[0]
    return (
        partition.error_code,
        partition.high_watermark,
        len(partition.records or b""),
        response.session_id,
        partition.last_stable_offset,
    )


def on_follower(cluster: Cluster, topic: str, rounds: int = 1):
    """``topic`` on brokers 1 (leader) and 2, with ``rounds`` x RECORDS records that broker 2
    may serve (its high watermark has reached them); returns broker 2."""
    if rounds == 1:
        create(cluster, NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2]]))
    produce(cluster, topic)
    follower = cluster.brokers[2]
    wait_for(
        lambda: raw_fetch(follower, topic, 0)[1] == rounds * RECORDS,
        30,
        what="the follower's high watermark to reach the leader's",
    )
    return follower


def test_a_follower_serves_up_to_its_high_watermark_and_refuses_past_its_log_end(leader_only):
    follower = on_follower(leader_only, "serve")
    error, hw, size, _, _ = raw_fetch(follower, "serve", 0)
    assert (error, hw) == (0, RECORDS) and size > 0
    assert raw_fetch(follower, "serve", 0, isolation=1)[0] == 0  # read_committed too
    assert raw_fetch(follower, "serve", RECORDS)[:2] == (0, RECORDS)  # caught up: nothing
    assert raw_fetch(follower, "serve", RECORDS + 1)[0] == 1  # OFFSET_OUT_OF_RANGE
    # Before v11 a request carries no client metadata: only the leader serves it.
    assert raw_fetch(follower, "serve", 0, version=10)[0] == 6  # NOT_LEADER_OR_FOLLOWER
    assert raw_fetch(leader_only.brokers[3], "serve", 0)[0] == 6  # no replica there


def test_a_follower_keeps_a_consumers_fetch_session(leader_only):
    follower = on_follower(leader_only, "session")
    error, _, size, session_id, _ = raw_fetch(follower, "session", 0, session=(0, 0))
    assert error == 0 and size > 0 and session_id > 0
    on_follower(leader_only, "session", rounds=2)
    # The incremental fetch names the partition at its new offset and gets the new records.
    error, hw, size, same, _ = raw_fetch(follower, "session", RECORDS, session=(session_id, 1))
    assert (error, hw, same) == (0, 2 * RECORDS, session_id) and size > 0
    # A stale epoch is refused as Kafka refuses it: INVALID_FETCH_SESSION_EPOCH.
    assert raw_fetch(follower, "session", RECORDS, session=(session_id, 1))[0] == 71


def test_read_committed_on_a_follower_stops_at_its_last_stable_offset(leader_only):
    follower = on_follower(leader_only, "txn")
    producer = Producer(
        {"bootstrap.servers": leader_only.bootstrap, "transactional.id": "kip392-open"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for _ in range(5):
        producer.produce("txn", value=VALUE, partition=0)
    assert producer.flush(30) == 0
    wait_for(
        lambda: raw_fetch(follower, "txn", 0)[1] == RECORDS + 5,
        30,
        what="the follower's high watermark to pass the open transaction's records",
    )
    # The follower's own producer state holds the transaction open: read_committed stops
    # before it, read_uncommitted reads it.
    error, hw, size, _, lso = raw_fetch(follower, "txn", RECORDS, isolation=1)
    assert (error, hw, lso, size) == (0, RECORDS + 5, RECORDS, 0)
    assert raw_fetch(follower, "txn", RECORDS)[2] > 0
    producer.commit_transaction(30)
    wait_for(
        lambda: raw_fetch(follower, "txn", RECORDS, isolation=1)[4] == RECORDS + 6,
        30,
        what="the follower's last stable offset to pass the commit marker",
    )
    assert raw_fetch(follower, "txn", RECORDS, isolation=1)[2] > 0


def test_kafka_python_consumer_reads_from_the_follower_of_its_rack(nearest):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

    create(nearest, NewTopic("kp", num_partitions=1, replica_assignment=[[1, 2]]))
    produce(nearest, "kp")
    consumer = KafkaConsumer(
        bootstrap_servers=nearest.bootstrap,
        client_rack="b",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    partition = KafkaTopicPartition("kp", 0)
    seen: list[bytes] = []
    try:
        consumer.assign([partition])
        for target in (RECORDS, 2 * RECORDS):
            if target > RECORDS:
                produce(nearest, "kp")  # a second round, read through the same consumer
            deadline = time.monotonic() + 30
            while len(seen) < target and time.monotonic() < deadline:
                for records in consumer.poll(500).values():
                    seen.extend(r.key for r in records)
    finally:
        consumer.close()
    assert seen == [str(i % RECORDS).encode() for i in range(2 * RECORDS)]
    served = bytes_out(nearest, "kp")
    assert served[2] >= 2 * RECORDS * len(VALUE), served
    assert served[1] == 0 and served[3] == 0, served


def test_placement_puts_one_replica_in_each_rack(nearest):
    create(nearest, NewTopic("spread", 6, replication_factor=3))
    admin = AdminClient({"bootstrap.servers": nearest.bootstrap})
    admin.create_partitions([NewPartitions("spread", 9)])["spread"].result(30)
    wait_for(
        lambda: len(metadata(nearest.bootstrap.split(",")[0], "spread")[2]) == 9,
        30,
        what="the added partitions",
    )
    partitions = metadata(nearest.bootstrap.split(",")[0], "spread")[2]
    for _, _, replicas, _ in partitions.values():
        assert sorted(RACKS[b] for b in replicas) == ["a", "b", "c"], partitions
    # Leadership is spread too: each broker leads a third of the partitions.
    leaders = [replicas[0] for _, _, replicas, _ in partitions.values()]
    assert sorted(leaders.count(b) for b in RACKS) == [3, 3, 3], partitions
