"""Transactions with kafka-python 3.x as the producer (``transactional_id``): commit visible to
read_committed consumers, abort hidden from them (read_uncommitted sees everything),
consume-transform-produce with ``send_offsets_to_transaction``, and a zombie fenced by a new
producer with the same transactional id."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from tests.txn.helpers import broker_overrides, consume_all, unique
from wireserver.testing import EmbeddedBroker


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(overrides=broker_overrides()) as instance:
        yield instance


def kp_producer(bootstrap: str, transactional_id: str) -> KafkaProducer:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id=transactional_id,
        request_timeout_ms=10000,
        max_block_ms=20000,
        client_id="txn-kafka-python",
    )
    producer.init_transactions()
    return producer


def send(producer: KafkaProducer, topic: str, values: list[bytes]) -> None:
    futures = [producer.send(topic, value=v, partition=0) for v in values]
    producer.flush(10)
    for future in futures:
        future.get(10)


def kp_read(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level=isolation,
        enable_auto_commit=False,
        group_id=None,
        consumer_timeout_ms=2000,
        request_timeout_ms=10000,
    )
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [record.value for record in consumer]
    finally:
        consumer.close()


def end_offsets(bootstrap: str, topic: str, isolation: str) -> int:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level=isolation,
        group_id=None,
        request_timeout_ms=10000,
    )
    try:
        tp = TopicPartition(topic, 0)
        return consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()


def test_commit_visible_abort_hidden(broker):
    topic = unique("kp-txn")
    broker.create_topic(topic, partitions=1)
    producer = kp_producer(broker.bootstrap_servers, unique("tid"))
    try:
        producer.begin_transaction()
        send(producer, topic, [b"c1", b"c2"])
        producer.commit_transaction()
        producer.begin_transaction()
        send(producer, topic, [b"a1", b"a2", b"a3"])
        producer.abort_transaction()
        producer.begin_transaction()
        send(producer, topic, [b"c3"])
        producer.commit_transaction()
    finally:
        producer.close(5)
    bootstrap = broker.bootstrap_servers
    assert kp_read(bootstrap, topic, "read_committed") == [b"c1", b"c2", b"c3"]
    assert kp_read(bootstrap, topic, "read_uncommitted") == [
        b"c1",
        b"c2",
        b"a1",
        b"a2",
        b"a3",
        b"c3",
    ]
    assert consume_all(bootstrap, topic, "read_committed", expect=3) == [b"c1", b"c2", b"c3"]
    # 6 records and 3 control records (commit, abort, commit): the high watermark and,
    # with nothing open, the last stable offset are both 9.
    assert end_offsets(bootstrap, topic, "read_uncommitted") == 9
    assert end_offsets(bootstrap, topic, "read_committed") == 9


def test_open_transaction_holds_back_the_lso(broker):
    topic = unique("kp-lso")
    broker.create_topic(topic, partitions=1)
    producer = kp_producer(broker.bootstrap_servers, unique("tid"))
    try:
        producer.begin_transaction()
        send(producer, topic, [b"open"])
        assert end_offsets(broker.bootstrap_servers, topic, "read_committed") == 0
        assert end_offsets(broker.bootstrap_servers, topic, "read_uncommitted") == 1
        assert kp_read(broker.bootstrap_servers, topic, "read_committed") == []
        producer.commit_transaction()
    finally:
        producer.close(5)
    assert kp_read(broker.bootstrap_servers, topic, "read_committed") == [b"open"]


def test_consume_transform_produce(broker):
    bootstrap = broker.bootstrap_servers
    source, sink, group = unique("kp-in"), unique("kp-out"), unique("kp-group")
    broker.create_topic(source, partitions=1)
    broker.create_topic(sink, partitions=1)
    plain = KafkaProducer(bootstrap_servers=bootstrap)
    send(plain, source, [f"m{i}".encode() for i in range(6)])
    plain.close(5)
    consumer = KafkaConsumer(
        source,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        request_timeout_ms=10000,
    )
    producer = kp_producer(bootstrap, unique("etl"))
    tp = TopicPartition(source, 0)
    try:
        records = []
        deadline = time.monotonic() + 20
        while len(records) < 6 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=300).values():
                records.extend(batch)
        assert len(records) == 6
        # Aborted: neither the output nor the offsets count.
        producer.begin_transaction()
        send(producer, sink, [r.value.upper() for r in records[:3]])
        producer.send_offsets_to_transaction(
            {tp: OffsetAndMetadata(records[2].offset + 1, "", -1)}, consumer.group_metadata()
        )
        producer.abort_transaction()
        assert consumer.committed(tp) is None
        # Committed together with the offsets.
        producer.begin_transaction()
        send(producer, sink, [r.value.upper() for r in records])
        producer.send_offsets_to_transaction(
            {tp: OffsetAndMetadata(records[-1].offset + 1, "", -1)}, consumer.group_metadata()
        )
        producer.commit_transaction()
        assert consumer.committed(tp) == 6
    finally:
        producer.close(5)
        consumer.close()
    assert kp_read(bootstrap, sink, "read_committed") == [f"M{i}".encode() for i in range(6)]


def test_zombie_is_fenced(broker):
    bootstrap = broker.bootstrap_servers
    topic, tid = unique("kp-fence"), unique("tid")
    broker.create_topic(topic, partitions=1)
    zombie = kp_producer(bootstrap, tid)
    zombie.begin_transaction()
    send(zombie, topic, [b"zombie"])
    live = kp_producer(bootstrap, tid)  # bumps the epoch, aborts the zombie's transaction
    try:
        # The zombie's next Produce carries the old epoch: INVALID_PRODUCER_EPOCH (as Kafka
        # answers since KIP-588); the client then tries to bump its epoch with InitProducerId,
        # which answers PRODUCER_FENCED, and committing raises that.
        with pytest.raises(KafkaError) as info:
            send(zombie, topic, [b"late"])
        assert type(info.value).__name__ == "InvalidProducerEpochError", repr(info.value)
        deadline = time.monotonic() + 10  # the client's epoch bump runs in its sender thread
        while not zombie._transaction_manager.has_fatal_error() and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(KafkaError) as info:
            zombie.commit_transaction()
        assert "ProducerFencedError" in str(info.value), repr(info.value)
        live.begin_transaction()
        send(live, topic, [b"live"])
        live.commit_transaction()
    finally:
        live.close(5)
        zombie.close(1)
    assert kp_read(bootstrap, topic, "read_committed") == [b"live"]
