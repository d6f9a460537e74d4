"""Produce answers for idempotent batches on a real broker: the original offsets for a
retried batch, Kafka's error codes for gaps and fenced epochs, nothing written on error."""

from __future__ import annotations

import time

import pytest
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from tests.idempotence.conftest import RawClient, create_topic, read_all
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.records import RecordBatchBuilder


def batch(seq, count=2, pid=77, epoch=0, tag="x"):
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    now = int(time.time() * 1000)
    for i in range(count):
        builder.append(now, None, f"{tag}-{seq + i}".encode())
    return bytes(builder.build())


def produce(client, topic, records, version=9):
    topic_class = ProduceRequest.TopicProduceData
    data = topic_class(
        name=topic, partition_data=[topic_class.PartitionProduceData(index=0, records=records)]
    )
    r = client.send(
        ProduceRequest,
        ProduceResponse,
        version,
        transactional_id=None,
        acks=-1,
        timeout_ms=5000,
        topic_data=[data],
    )
    p = r.responses[0].partition_responses[0]
    return ErrorCode(p.error_code).name, p.base_offset


@pytest.fixture
def setup(broker, topic_name):
    create_topic(broker.bootstrap, topic_name)
    client = RawClient(broker.port)
    yield broker, client, topic_name
    client.close()


def test_retry_gets_original_offsets(setup):
    broker, client, topic = setup
    assert produce(client, topic, batch(0)) == ("NONE", 0)
    assert produce(client, topic, batch(2)) == ("NONE", 2)
    assert produce(client, topic, batch(0)) == ("NONE", 0)
    assert produce(client, topic, batch(2)) == ("NONE", 2)
    assert produce(client, topic, batch(4)) == ("NONE", 4)
    assert read_all(broker.bootstrap, topic) == [f"x-{i}".encode() for i in range(6)]


def test_gap_and_old_epoch(setup):
    broker, client, topic = setup
    assert produce(client, topic, batch(0, epoch=1)) == ("NONE", 0)
    assert produce(client, topic, batch(5, epoch=1))[0] == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert produce(client, topic, batch(2, epoch=0))[0] == "INVALID_PRODUCER_EPOCH"
    assert produce(client, topic, batch(3, epoch=2))[0] == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert produce(client, topic, batch(0, epoch=2, tag="y")) == ("NONE", 2)
    assert read_all(broker.bootstrap, topic) == [b"x-0", b"x-1", b"y-0", b"y-1"]


def test_producer_id_without_sequence_is_invalid(setup):
    _, client, topic = setup
    assert produce(client, topic, batch(-1))[0] == "INVALID_RECORD"


def test_dedup_survives_restart(setup):
    broker, client, topic = setup
    for seq in range(0, 10, 2):
        produce(client, topic, batch(seq))
    client.close()
    broker.kill()
    broker.start()
    again = RawClient(broker.port)
    try:
        for seq in range(0, 10, 2):  # all five in-flight batches are still known
            assert produce(again, topic, batch(seq)) == ("NONE", seq)
        assert produce(again, topic, batch(10)) == ("NONE", 10)
    finally:
        again.close()
