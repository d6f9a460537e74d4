"""Transactions against a real broker with real clients: confluent-kafka transactional
producers (commit, abort, consume-transform-produce, fencing, timeout), read_committed and
read_uncommitted consumers (confluent-kafka, kafka-python), a restart with a transaction open,
and kafka-python's admin client (list/describe transactions, describe producers)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.txn.helpers import broker_overrides, consume_all, unique
from wireserver.testing import EmbeddedBroker


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(overrides=broker_overrides()) as instance:
        yield instance


def txn_producer(bootstrap: str, transactional_id: str, **extra) -> Producer:
    config = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 0}
    config.update(extra)
    producer = Producer(config)
    producer.init_transactions(20)
    return producer


def produce(producer: Producer, topic: str, values: list[bytes], partition: int = 0) -> None:
    for value in values:
        producer.produce(topic, value, partition=partition)
    producer.flush(10)


def test_commit_and_abort_read_committed_and_uncommitted(broker):
    topic = unique("txn")
    broker.create_topic(topic, partitions=1)
    producer = txn_producer(broker.bootstrap_servers, unique("tid"))
    producer.begin_transaction()
    produce(producer, topic, [b"c1", b"c2", b"c3"])
    producer.commit_transaction(10)
    producer.begin_transaction()
    produce(producer, topic, [b"a1", b"a2", b"a3"])
    producer.abort_transaction(10)
    producer.begin_transaction()
    produce(producer, topic, [b"c4", b"c5"])
    producer.commit_transaction(10)

    committed = consume_all(broker.bootstrap_servers, topic, "read_committed", expect=5)
    assert committed == [b"c1", b"c2", b"c3", b"c4", b"c5"]
    everything = consume_all(broker.bootstrap_servers, topic, "read_uncommitted", expect=8)
    assert everything == [b"c1", b"c2", b"c3", b"a1", b"a2", b"a3", b"c4", b"c5"]

    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    kconsumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        isolation_level="read_committed",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    try:
        kconsumer.assign([KTopicPartition(topic, 0)])
        kconsumer.seek_to_beginning()
        seen = [record.value for record in kconsumer]
    finally:
        kconsumer.close()
    assert seen == [b"c1", b"c2", b"c3", b"c4", b"c5"]


def test_open_transaction_holds_back_read_committed(broker):
    topic = unique("lso")
    broker.create_topic(topic, partitions=1)
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers})
    produce(plain, topic, [b"before"])
    producer = txn_producer(broker.bootstrap_servers, unique("tid"))
    producer.begin_transaction()
    produce(producer, topic, [b"open"])
    produce(plain, topic, [b"after"])
    # The open transaction holds the LSO at its first offset.
    assert consume_all(broker.bootstrap_servers, topic, "read_committed") == [b"before"]
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "x",
            "isolation.level": "read_committed",
        }
    )
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)
    consumer.close()
    assert (low, high) == (0, 1)
    producer.commit_transaction(10)
    assert consume_all(broker.bootstrap_servers, topic, "read_committed", expect=3) == [
        b"before",
        b"open",
        b"after",
    ]


def test_consume_transform_produce_commits_offsets_atomically(broker):
    source, sink, group = unique("in"), unique("out"), unique("group")
    broker.create_topic(source, partitions=1)
    broker.create_topic(sink, partitions=1)
    produce(
        Producer({"bootstrap.servers": broker.bootstrap_servers}),
        source,
        [f"m{i}".encode() for i in range(6)],
    )
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([source])
    producer = txn_producer(broker.bootstrap_servers, unique("etl"))
    try:
        batches = []
        deadline = time.monotonic() + 20
        while sum(len(b) for b in batches) < 6 and time.monotonic() < deadline:
            msgs = [m for m in consumer.consume(6, 0.5) if not m.error()]
            if msgs:
                batches.append(msgs)
        assert sum(len(b) for b in batches) == 6
        first, rest = batches[0][:3], [m for b in batches for m in b][3:]
        # Transaction 1: transform three records and commit their offsets: aborted.
        producer.begin_transaction()
        for msg in first:
            producer.produce(sink, msg.value().upper(), partition=0)
        producer.send_offsets_to_transaction(
            [TopicPartition(source, 0, first[-1].offset() + 1)],
            consumer.consumer_group_metadata(),
            10,
        )
        producer.abort_transaction(10)
        assert consumer.committed([TopicPartition(source, 0)], 5)[0].offset < 0
        # Transaction 2: all six, committed with the offsets.
        producer.begin_transaction()
        for msg in first + rest:
            producer.produce(sink, msg.value().upper(), partition=0)
        producer.send_offsets_to_transaction(
            [TopicPartition(source, 0, rest[-1].offset() + 1)],
            consumer.consumer_group_metadata(),
            10,
        )
        producer.commit_transaction(10)
        assert consumer.committed([TopicPartition(source, 0)], 5)[0].offset == 6
    finally:
        consumer.close()
    assert consume_all(broker.bootstrap_servers, sink, "read_committed", expect=6) == [
        f"M{i}".encode() for i in range(6)
    ]


def test_second_producer_fences_the_first(broker):
    topic, tid = unique("fence"), unique("tid")
    broker.create_topic(topic, partitions=1)
    first = txn_producer(broker.bootstrap_servers, tid)
    first.begin_transaction()
    produce(first, topic, [b"zombie"])
    second = txn_producer(broker.bootstrap_servers, tid)  # aborts the open transaction
    with pytest.raises(KafkaException) as info:
        first.commit_transaction(10)
    assert info.value.args[0].fatal() or "fenced" in str(info.value).lower()
    second.begin_transaction()
    produce(second, topic, [b"live"])
    second.commit_transaction(10)
    assert consume_all(broker.bootstrap_servers, topic, "read_committed", expect=1) == [b"live"]


def test_transaction_left_open_is_aborted_after_its_timeout(broker):
    topic, tid = unique("timeout"), unique("tid")
    broker.create_topic(topic, partitions=1)
    producer = txn_producer(broker.bootstrap_servers, tid, **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    produce(producer, topic, [b"stuck"])
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers})
    produce(plain, topic, [b"plain"])
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        deadline = time.monotonic() + 15
        state = None
        while time.monotonic() < deadline:
            state = admin.describe_transactions([tid])[tid].state
            if state == "CompleteAbort":
                break
            time.sleep(0.1)
        assert state == "CompleteAbort"
    finally:
        admin.close()
    assert consume_all(broker.bootstrap_servers, topic, "read_committed", expect=1) == [b"plain"]
    with pytest.raises(KafkaException):
        producer.commit_transaction(5)


def test_admin_lists_and_describes_transactions_and_producers(broker):
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import KafkaAdminClient

    topic, tid = unique("admin"), unique("tid")
    broker.create_topic(topic, partitions=1)
    producer = txn_producer(broker.bootstrap_servers, tid)
    producer.begin_transaction()
    produce(producer, topic, [b"x"])
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        listed = admin.list_transactions(state_filters=["Ongoing"])
        listed_ids = {t.transactional_id for listings in listed.values() for t in listings}
        assert tid in listed_ids
        assert not {
            t.transactional_id
            for listings in admin.list_transactions(
                state_filters=["CompleteCommit"], transactional_id_pattern=tid
            ).values()
            for t in listings
        }
        description = admin.describe_transactions([tid])[tid]
        assert description.state == "Ongoing"
        producers = admin.describe_producers([KTopicPartition(topic, 0)])
        (state,) = producers.values()
        (active,) = state.active_producers
        assert active.current_transaction_start_offset == 0
        producer.commit_transaction(10)
        assert admin.describe_transactions([tid])[tid].state == "CompleteCommit"
    finally:
        admin.close()


def test_coordinator_state_survives_restart(tmp_path):
    with EmbeddedBroker(overrides=broker_overrides(), data_dir=tmp_path / "data") as instance:
        topic, done_tid, open_tid = unique("restart"), unique("done"), unique("open")
        instance.create_topic(topic, partitions=1)
        done = txn_producer(instance.bootstrap_servers, done_tid)
        done.begin_transaction()
        produce(done, topic, [b"committed"])
        done.commit_transaction(10)
        pending = txn_producer(instance.bootstrap_servers, open_tid)
        pending.begin_transaction()
        produce(pending, topic, [b"pending"])
        instance.restart()
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=instance.bootstrap_servers)
        try:
            described = admin.describe_transactions([done_tid, open_tid])
            assert described[done_tid].state == "CompleteCommit"
            assert described[open_tid].state == "Ongoing"
        finally:
            admin.close()
        # The open transaction's first offset still holds the LSO after the restart.
        assert consume_all(instance.bootstrap_servers, topic, "read_committed") == [b"committed"]
        # As in Kafka, the producer can still commit what it had open.
        pending.commit_transaction(20)
        assert consume_all(instance.bootstrap_servers, topic, "read_committed", expect=2) == [
            b"committed",
            b"pending",
        ]


@pytest.mark.parametrize("instance_id", [None, "etl-static"], ids=["dynamic", "static"])
def test_consume_transform_produce_with_consumer_group_protocol(broker, instance_id):
    """A KIP-848 consumer (group.protocol=consumer) in a consume-transform-produce loop: its
    TxnOffsetCommit carries its member id and member epoch, which the coordinator checks
    against the consumer group, so every transaction commits and the group's offset moves
    with the output (it used to be refused with ILLEGAL_GENERATION and aborted forever)."""
    source, sink, group = unique("in848"), unique("out848"), unique("group848")
    broker.create_topic(source, partitions=1)
    broker.create_topic(sink, partitions=1)
    produce(
        Producer({"bootstrap.servers": broker.bootstrap_servers}),
        source,
        [f"m{i}".encode() for i in range(9)],
    )
    config = {
        "bootstrap.servers": broker.bootstrap_servers,
        "group.id": group,
        "group.protocol": "consumer",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    }
    if instance_id is not None:
        instance_id = config["group.instance.id"] = unique(instance_id)
    consumer = Consumer(config)
    consumer.subscribe([source])
    producer = txn_producer(broker.bootstrap_servers, unique("etl848"))
    committed_after = []
    try:
        done, deadline = 0, time.monotonic() + 30
        while done < 9 and time.monotonic() < deadline:
            msgs = [m for m in consumer.consume(3, 0.5) if not m.error()]
            if not msgs:
                continue
            producer.begin_transaction()
            for msg in msgs:
                producer.produce(sink, msg.value().upper(), partition=0)
            producer.send_offsets_to_transaction(
                [TopicPartition(source, 0, msgs[-1].offset() + 1)],
                consumer.consumer_group_metadata(),
                10,
            )
            producer.commit_transaction(10)
            done += len(msgs)
            committed_after.append(consumer.committed([TopicPartition(source, 0)], 5)[0].offset)
        assert done == 9
        assert committed_after == sorted(committed_after) and committed_after[-1] == 9
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        described = admin.describe_consumer_groups([group])[group].result(timeout=10)
        assert str(described.type).endswith("CONSUMER")
        assert [m.group_instance_id for m in described.members] == [instance_id]
    finally:
        consumer.close()
    assert consume_all(broker.bootstrap_servers, sink, "read_committed", expect=9) == [
        f"M{i}".encode() for i in range(9)
    ]
