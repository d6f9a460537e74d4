"""The connection layer on an in-memory transport and a fake clock: responses in request order
even when handlers finish out of order, acks=0 silence, back-pressure, and one bad connection
closed without touching the others."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from twisted.internet.testing import MemoryReactorClock

from tests.wireserver.connection import connect, responses, send
from wireserver.broker import Broker
from wireserver.config import BrokerConfig
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.records import RecordBatchBuilder


@pytest.fixture
def broker(tmp_path):
    config = BrokerConfig.load(
        None,
        {
            "log.dirs": str(tmp_path),
            "queued.max.requests": "3",
            "listeners": "PLAINTEXT://127.0.0.1:0",
        },
    )
    reactor = MemoryReactorClock()
    instance = Broker(config, reactor)
    instance.start()
    yield instance
    instance.logs.close()


def correlation(frame) -> int:
    return int.from_bytes(bytes(frame[:4]), "big", signed=True)


def metadata(topics=None):
    return MetadataRequest(version=12, topics=topics, allow_auto_topic_creation=True)


def long_poll_fetch(topic, wait_ms=5000):
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=1 << 20
    )
    return FetchRequest(
        version=12,
        replica_id=-1,
        max_wait_ms=wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
        forgotten_topics_data=[],
        rack_id="",
    )


def produce(topic, acks=1):
    builder = RecordBatchBuilder()
    builder.append(broker_time_ms(), b"k", b"v")
    data = ProduceRequest.TopicProduceData.PartitionProduceData(
        index=0, records=bytes(builder.build())
    )
    return ProduceRequest(
        version=9,
        transactional_id=None,
        acks=acks,
        timeout_ms=1000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[data])],
    )


def broker_time_ms() -> int:
    return 0  # MemoryReactorClock starts at 0 s


def test_responses_leave_in_request_order(broker):
    """A Fetch waiting for data holds back the Metadata response pipelined behind it."""
    broker.logs.create_topic("orders", 1)
    connection, transport = connect(broker)
    send(connection, long_poll_fetch("orders"), 1)
    send(connection, metadata(), 2)
    assert responses(transport) == []
    broker.reactor.advance(5)
    assert [correlation(f) for f in responses(transport)] == [1, 2]


def test_long_poll_woken_by_append_on_another_connection(broker):
    broker.logs.create_topic("orders", 1)
    consumer, consumer_transport = connect(broker)
    producer, producer_transport = connect(broker)
    send(consumer, long_poll_fetch("orders"), 7)
    assert responses(consumer_transport) == []
    send(producer, produce("orders"), 8)
    assert [correlation(f) for f in responses(producer_transport)] == [8]
    frames = responses(consumer_transport)
    assert [correlation(f) for f in frames] == [7]
    assert broker.reactor.seconds() == 0  # answered without waiting for the timeout


def test_acks_zero_sends_nothing_but_keeps_order(broker):
    broker.logs.create_topic("orders", 1)
    connection, transport = connect(broker)
    send(connection, metadata(), 1)
    send(connection, produce("orders", acks=0), 2)
    send(connection, metadata(), 3)
    assert [correlation(f) for f in responses(transport)] == [1, 3]
    assert broker.logs.get_log("orders", 0).log_end_offset == 1


def test_reading_pauses_when_too_many_requests_are_queued(broker):
    broker.logs.create_topic("orders", 1)
    connection, transport = connect(broker)
    for correlation_id in range(3):
        send(connection, long_poll_fetch("orders"), correlation_id)
    assert transport.producerState == "paused"
    broker.reactor.advance(5)
    assert [correlation(f) for f in responses(transport)] == [0, 1, 2]
    assert transport.producerState == "producing"


@pytest.mark.parametrize(
    "garbage",
    [
        b"\xff\xff\xff\xff",  # negative size
        b"\x7f\x00\x00\x00",  # above socket.request.max.bytes
        b"\x00\x00\x00\x0a" + b"\x03\xe7\x00\x00\x00\x00\x00\x01\xff\xff",  # unknown API key
        b"\x00\x00\x00\x06" + b"\x00\x03\x00\x0c\x00\x00",  # truncated header
    ],
)
def test_bad_input_closes_only_that_connection(broker, garbage):
    bad, bad_transport = connect(broker)
    good, good_transport = connect(broker)
    bad.dataReceived(garbage)
    assert bad_transport.disconnecting
    send(good, metadata(), 11)
    assert [correlation(f) for f in responses(good_transport)] == [11]
    assert not good_transport.disconnecting


def test_api_versions_above_ours_answers_v0_with_unsupported_version(broker):
    connection, transport = connect(broker)
    body = b"\x00\x12\x00\x09\x00\x00\x00\x05\x00\x01c\x00"  # ApiVersions v9, header v2
    connection.dataReceived(len(body).to_bytes(4, "big") + body)
    [frame] = responses(transport)
    response = ApiVersionsResponse.decode(bytes(frame), version=0, header=True)
    assert response.header.correlation_id == 5
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    served = {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}
    assert served == {spec.key: (spec.advertised_min, spec.max_version) for spec in broker.registry}


def test_produce_validation_is_per_partition(broker):
    """A batch with a bad CRC fails its own partition; the other partition is written."""
    broker.logs.create_topic("orders", 2)
    good = RecordBatchBuilder()
    good.append(0, b"k", b"v")
    bad = bytearray(good.build())
    bad[-1] ^= 0xFF
    data_class = ProduceRequest.TopicProduceData.PartitionProduceData
    request = ProduceRequest(
        version=9,
        transactional_id=None,
        acks=1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="orders",
                partition_data=[
                    data_class(index=0, records=bytes(bad)),
                    data_class(index=1, records=bytes(good.build())),
                ],
            )
        ],
    )
    connection, transport = connect(broker)
    send(connection, request, 3)
    [frame] = responses(transport)
    response = ProduceResponse.decode(bytes(frame), version=9, header=True)
    errors = {p.index: p.error_code for p in response.responses[0].partition_responses}
    assert errors == {0: ErrorCode.CORRUPT_MESSAGE, 1: ErrorCode.NONE}
    assert broker.logs.get_log("orders", 0).log_end_offset == 0
    assert broker.logs.get_log("orders", 1).log_end_offset == 1


def test_metadata_auto_creates_and_advertises_listener(broker):
    connection, transport = connect(broker)
    send(connection, metadata([MetadataRequest.MetadataRequestTopic(name="fresh")]), 4)
    [frame] = responses(transport)
    response = MetadataResponse.decode(bytes(frame), version=12, header=True)
    assert [(t.name, t.error_code, len(t.partitions)) for t in response.topics] == [("fresh", 0, 1)]
    assert [(b.node_id, b.host) for b in response.brokers] == [(0, "127.0.0.1")]
