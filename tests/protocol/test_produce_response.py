"""The hand-written ProduceResponse encoder writes exactly the bytes kafka-python's generated
encoder writes, for every version we serve, whether the topics and partitions are
kafka-python's or the handler's light ``ProduceTopic`` and ``ProducePartition``, and
kafka-python's client reads them back."""

from __future__ import annotations

import uuid
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.protocol.kafka_python_reference import kafka_python_encoding
from tests.protocol.message_strategies import message_strategy
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.messages import encode_response_chunks
from wireserver.protocol.produce_response import (
    ProduceAnswer,
    ProducePartition,
    ProduceTopic,
    encode_produce_response,
)
from wireserver.protocol.served import SERVED

PRODUCE = SERVED.get(0)
VERSIONS = list(range(PRODUCE.min_version, PRODUCE.max_version + 1))
Response = PRODUCE.response_class
Topic = Response.TopicProduceResponse
Partition = Topic.PartitionProduceResponse
RecordError = Partition.BatchIndexAndErrorMessage
Leader = Partition.LeaderIdAndEpoch
Node = Response.NodeEndpoint


def _header_version(version: int) -> int:
    return PRODUCE.response_header_version(version)


def encoded(response, version: int, correlation_id: int) -> bytes:
    chunks = encode_produce_response(response, version, correlation_id, _header_version(version))
    assert all(isinstance(chunk, bytes) for chunk in chunks)
    return b"".join(chunks)


def _light(partition) -> ProducePartition:
    light = ProducePartition(
        index=partition.index,
        error_code=partition.error_code,
        base_offset=partition.base_offset,
        log_append_time_ms=partition.log_append_time_ms,
        log_start_offset=partition.log_start_offset,
        record_errors=partition.record_errors,
        error_message=partition.error_message,
    )
    light.current_leader = partition.current_leader
    return light


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_same_bytes_as_kafka_python(version, data, correlation_id):
    """Any answer, kafka-python's topics and partitions and then the handler's light ones in
    their place."""
    response = data.draw(message_strategy(Response, version))
    expected = kafka_python_encoding(PRODUCE, version, correlation_id, response)
    assert encoded(response, version, correlation_id) == expected
    response.responses = [
        ProduceTopic(
            name=topic.name,
            topic_id=topic.topic_id,
            partition_responses=[_light(p) for p in topic.partition_responses],
        )
        for topic in response.responses
    ]
    assert encoded(response, version, correlation_id) == expected


TOPIC_IDS = (uuid.UUID("0f3a6c1e-54d2-4b8e-9a77-2c5e1d9b0a41"), uuid.uuid5(uuid.NAMESPACE_DNS, "ü"))


def answer(version: int, light: bool) -> Response | ProduceAnswer:
    """An answer with what a Produce handler writes: appended partitions (one with a log append
    time), a batch refused with record errors and a message, an unknown partition, and a
    partition whose leader moved (with its leader and that leader's endpoint from v10). Made
    of the handler's light classes or of kafka-python's."""
    partition_type, topic_type = (ProducePartition, ProduceTopic) if light else (Partition, Topic)

    def partition(index, error_code, base_offset=-1, append_time=-1, start=-1, errors=(), msg=None):
        return partition_type(
            index=index,
            error_code=error_code,
            base_offset=base_offset,
            log_append_time_ms=append_time,
            log_start_offset=start,
            record_errors=[
                RecordError(batch_index=i, batch_index_error_message=m) for i, m in errors
            ],
            error_message=msg,
        )

    moved = partition(2, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    moved.current_leader = Leader(leader_id=3, leader_epoch=17)
    orders = [
        partition(0, ErrorCode.NONE, 41, -1, 0),
        partition(
            1,
            ErrorCode.INVALID_RECORD,
            errors=[
                (0, "Compacted topic cannot accept message without key in topic partition ü-1."),
                (4, None),
            ],
            msg="One or more records have been rejected",
        ),
        moved,
        partition(
            9,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            msg="This server does not host this topic-partition.",
        ),
    ]
    unicode = [partition(5, ErrorCode.NONE, 2**40, 1_700_000_000_123, 2**39, errors=[])]
    responses = [
        topic_type(name="orders", topic_id=TOPIC_IDS[0], partition_responses=orders),
        topic_type(name="zählung-日本-ü", topic_id=TOPIC_IDS[1], partition_responses=unicode),
    ]
    nodes = [
        Node(node_id=3, host="broker-3.example", port=9092, rack=None),
        Node(node_id=4, host="bröker-4", port=19092, rack="rack-ä"),
    ]
    if light:
        return ProduceAnswer(version, responses, 25, nodes)
    return Response(version=version, responses=responses, throttle_time_ms=25, node_endpoints=nodes)


def plain(value, version: int):
    """A message's fields of ``version``, nested, as tuples and lists of plain values."""
    struct = getattr(value, "_struct", None)
    if struct is not None:
        return tuple(
            (field.name, plain(getattr(value, field.name), version))
            for field in struct._fields
            if field.for_version_q(version)
        )
    if isinstance(value, list):
        return [plain(item, version) for item in value]
    return value


@pytest.mark.parametrize("version", VERSIONS)
def test_an_answer_of_every_kind_of_partition(version):
    """The handler's answer (light topics and partitions) is written as kafka-python writes the same
    answer made of its own classes, and kafka-python's client reads back what was sent."""
    expected = kafka_python_encoding(PRODUCE, version, 99, answer(version, light=False))
    light = answer(version, light=True)
    wire = encoded(light, version, 99)
    assert wire == expected
    assert b"".join(encode_response_chunks(PRODUCE, version, 99, light)) == wire

    decoded = Response.decode(wire, version=version, header=True, framed=True)
    assert decoded.header.correlation_id == 99
    assert decoded.throttle_time_ms == 25
    sent_topics, read_topics = light.responses, decoded.responses
    assert len(read_topics) == 2
    for sent, read in zip(sent_topics, read_topics):
        if version >= 13:
            assert read.topic_id == sent.topic_id
        else:
            assert read.name == sent.name
        assert plain(read.partition_responses, version) == plain(sent.partition_responses, version)
    moved = read_topics[0].partition_responses[2]
    if version >= 10:
        assert (moved.current_leader.leader_id, moved.current_leader.leader_epoch) == (3, 17)
        assert plain(decoded.node_endpoints, version) == plain(light.node_endpoints, version)
    else:
        assert moved.current_leader is None
    if version >= 8:
        refused = read_topics[0].partition_responses[1]
        assert refused.error_message == "One or more records have been rejected"
        assert [(e.batch_index, e.batch_index_error_message) for e in refused.record_errors] == [
            (0, "Compacted topic cannot accept message without key in topic partition ü-1."),
            (4, None),
        ]


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 8])
@pytest.mark.parametrize("leader", [False, True])
@pytest.mark.parametrize("record_errors", [[], None])
def test_the_one_pack_partition_and_its_ways_out(version, leader, record_errors):
    """A partition without record errors, message or leader is one pack; a leader (from v10)
    or a null record error list (kafka-python writes it as null) takes the general path."""
    fields = dict(
        index=7,
        error_code=0,
        base_offset=12,
        log_append_time_ms=-1,
        log_start_offset=3,
        record_errors=record_errors,
        error_message=None,
    )
    heavy, light = Partition(**fields), ProducePartition(**fields)
    if leader:
        heavy.current_leader = light.current_leader = Leader(leader_id=2, leader_epoch=5)

    def response(partition):
        topic = Topic(name="t", topic_id=TOPIC_IDS[0], partition_responses=[partition])
        return Response(version=version, responses=[topic], throttle_time_ms=0)

    expected = kafka_python_encoding(PRODUCE, version, 3, response(heavy))
    assert encoded(response(light), version, 3) == expected


def test_the_error_meters_and_the_request_log_read_light_entries():
    from wireserver.metrics import count_errors
    from wireserver.request_log import message_node

    light, heavy = answer(11, light=True), answer(11, light=False)
    assert message_node(light) == message_node(heavy)
    counts = []
    for message in (light, heavy):
        counted: defaultdict[tuple[str, str], int] = defaultdict(int)
        count_errors(message, "Produce", counted)
        counts.append(dict(counted))
    assert (
        counts[0]
        == counts[1]
        == {
            ("Produce", "NONE"): 2,
            ("Produce", "INVALID_RECORD"): 1,
            ("Produce", "NOT_LEADER_OR_FOLLOWER"): 1,
            ("Produce", "UNKNOWN_TOPIC_OR_PARTITION"): 1,
        }
    )


def test_the_error_code_is_set_again_after_replication():
    """acks=all: the handler sets a partition's code once replication has answered."""
    light = answer(11, light=True)
    entry = light.responses[1].partition_responses[0]
    entry.error_code = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    decoded = Response.decode(encoded(light, 11, 1), version=11, header=True, framed=True)
    assert decoded.responses[1].partition_responses[0].error_code == 20
