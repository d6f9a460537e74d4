"""Three broker processes on one ZooKeeper: placement, ISR, acks=all, min.insync.replicas,
leader failover with every acknowledged record read back in order, and a killed broker's
return to the ISR."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.topics import create, records_on_disk
from wireserver.testing.cluster import cluster_metadata as metadata

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, "/wireserver-replication").start()
    yield nodes
    nodes.close()


def test_rf3_topic_has_three_replicas_and_full_isr(cluster):
    create(cluster, "placed", partitions=3, rf=3)
    any_broker = next(iter(cluster.brokers.values())).bootstrap_servers
    controller, brokers, partitions = metadata(any_broker, "placed")
    assert brokers == [1, 2, 3]
    assert controller in brokers
    assert sorted(partitions) == [0, 1, 2]
    for leader, epoch, replicas, isr in partitions.values():
        assert sorted(replicas) == [1, 2, 3]
        assert leader == replicas[0]
        assert sorted(isr) == [1, 2, 3]
        assert epoch == 0
    # Round-robin placement: every broker is the preferred leader of one partition.
    assert sorted(p[2][0] for p in partitions.values()) == [1, 2, 3]
    # Every broker answers the same (once the ZooKeeper watches have fired everywhere).
    for broker in cluster.brokers.values():
        wait_for(
            lambda: metadata(broker.bootstrap_servers, "placed")[2] == partitions,
            10,
            what=f"broker {broker.node_id} to see the topic",
        )


def test_acks_all_reaches_every_broker_log(cluster):
    create(cluster, "everywhere", partitions=2, rf=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    for i in range(200):
        producer.produce(
            "everywhere",
            str(i).encode(),
            partition=i % 2,
            on_delivery=lambda err, msg: err and errors.append(err),
        )
    assert producer.flush(30) == 0
    assert errors == []
    for partition in (0, 1):
        for broker in cluster.brokers.values():
            wait_for(
                lambda: records_on_disk(broker.data_dir, "everywhere", partition) == 100,
                10,
                what=f"broker {broker.node_id} to hold partition {partition}",
            )


def test_min_insync_replicas_refuses_acks_all(cluster):
    create(cluster, "lonely", partitions=1, rf=1, min_insync_replicas=2)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "retries": 0,
            "enable.idempotence": False,
        }
    )
    errors = []
    producer.produce("lonely", b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS]
    # acks=1 is not subject to min.insync.replicas.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1"})
    errors = []
    producer.produce("lonely", b"y", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert errors == [None]


def test_leader_kill_failover_keeps_every_acknowledged_record(cluster):
    topic = "failover"
    create(cluster, topic, partitions=1, rf=3, min_insync_replicas=2)
    first = next(iter(cluster.brokers.values())).bootstrap_servers
    _, _, partitions = metadata(first, topic)
    old_leader, old_epoch, _, _ = partitions[0]

    acked: list[int] = []
    failed: list = []
    stop = threading.Event()

    def produce() -> None:
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                "message.timeout.ms": 60000,
            }
        )
        i = 0
        while not stop.is_set():

            def delivered(err, msg, value=i):
                (failed.append(err) if err else acked.append(value))

            producer.produce(topic, str(i).encode(), on_delivery=delivered)
            producer.poll(0)
            i += 1
            time.sleep(0.002)
        producer.flush(60)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    wait_for(lambda: len(acked) > 300, 30, what="records before the kill")
    victim = cluster.brokers[old_leader]
    victim.kill()
    survivors = [b for b in cluster.brokers.values() if b.running]

    def new_leader():
        _, _, now = metadata(survivors[0].bootstrap_servers, topic)
        leader, epoch, _, isr = now[0]
        return (leader, epoch, isr) if leader not in (-1, old_leader) else None

    leader, epoch, isr = wait_for(new_leader, 30, what="a new leader")
    assert epoch > old_epoch
    assert leader in partitions[0][3]
    count_at_failover = len(acked)
    wait_for(
        lambda: len(acked) > count_at_failover + 300,
        30,
        what="records acknowledged by the new leader",
    )

    # The killed broker comes back, truncates if it must, catches up and rejoins the ISR.
    victim.start()

    def back_in_isr():
        _, _, now = metadata(survivors[0].bootstrap_servers, topic)
        return old_leader in now[0][3]

    wait_for(back_in_isr, 60, what="the restarted broker to rejoin the ISR")
    stop.set()
    thread.join(90)
    assert failed == []

    # Every acknowledged record is read back, in order, once (idempotence is on).
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "check",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    values = []
    while len(values) < high:
        msg = consumer.poll(5)
        if msg is None:
            break
        if msg.error():
            continue
        values.append(int(msg.value()))
    consumer.close()
    assert len(values) == len(set(values)), "duplicates"
    assert values == sorted(values), "out of order"
    missing = set(acked) - set(values)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    # The returned broker holds what the leader holds.
    leader_broker = cluster.brokers[leader]
    wait_for(
        lambda: (
            records_on_disk(victim.data_dir, topic, 0)
            == records_on_disk(leader_broker.data_dir, topic, 0)
        ),
        20,
        what="the restarted broker to catch up",
    )
