"""The hand-written FetchResponse encoder writes exactly the bytes kafka-python's generated
encoder writes, for every version we serve, and passes records through without copying."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.protocol.kafka_python_reference import kafka_python_encoding
from tests.protocol.message_strategies import message_strategy
from wireserver.protocol.fetch_response import FetchPartition, encode_fetch_response
from wireserver.protocol.served import SERVED

FETCH = SERVED.get(1)
VERSIONS = list(range(FETCH.min_version, FETCH.max_version + 1))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_same_bytes_as_kafka_python(version, data, correlation_id):
    response = data.draw(message_strategy(FETCH.response_class, version))
    for topic in response.responses:
        for partition in topic.partitions:
            partition.unknown_tags = None
    response.unknown_tags = None
    expected = kafka_python_encoding(FETCH, version, correlation_id, response)
    assert b"".join(encode_fetch_response(response, version, correlation_id)) == expected


def _light(partition) -> FetchPartition:
    light = FetchPartition(
        partition_index=partition.partition_index,
        error_code=partition.error_code,
        high_watermark=partition.high_watermark,
        last_stable_offset=partition.last_stable_offset,
        log_start_offset=partition.log_start_offset,
        aborted_transactions=partition.aborted_transactions,
        records=partition.records,
        preferred_read_replica=partition.preferred_read_replica,
    )
    light.diverging_epoch = partition.diverging_epoch
    light.current_leader = partition.current_leader
    light.snapshot_id = partition.snapshot_id
    return light


@pytest.mark.parametrize("version", [VERSIONS[0], 12, VERSIONS[-1]])
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_handlers_light_partitions_encode_as_kafka_pythons(version, data):
    """``FetchPartition`` (what the Fetch handler answers with) in place of kafka-python's
    ``PartitionData``: the same bytes."""
    response = data.draw(message_strategy(FETCH.response_class, version))
    for topic in response.responses:
        for partition in topic.partitions:
            partition.unknown_tags = None
    response.unknown_tags = None
    expected = kafka_python_encoding(FETCH, version, 7, response)
    for topic in response.responses:
        topic.partitions = [_light(p) for p in topic.partitions]
    assert b"".join(encode_fetch_response(response, version, 7)) == expected


def test_the_error_meters_and_the_request_log_read_light_partitions():
    from collections import defaultdict

    from kafka.protocol.consumer.fetch import FetchResponse

    from wireserver.metrics import count_errors
    from wireserver.request_log import message_node

    def response(partition_type):
        partition = partition_type(
            partition_index=3,
            error_code=6,
            high_watermark=-1,
            last_stable_offset=-1,
            log_start_offset=-1,
            aborted_transactions=None,
            preferred_read_replica=-1,
            records=b"abc",
        )
        topic = FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])
        return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[topic])

    light, heavy = (
        response(FetchPartition),
        response(FetchResponse.FetchableTopicResponse.PartitionData),
    )
    assert message_node(light) == message_node(heavy)
    counts = {}
    for message in (light, heavy):
        counted = defaultdict(int)
        count_errors(message, "Fetch", counted)
        counts[type(message.responses[0].partitions[0])] = dict(counted)
    assert list(counts.values())[0] == list(counts.values())[1]
    assert list(counts.values())[0][("Fetch", "NOT_LEADER_OR_FOLLOWER")] == 1


def test_records_are_passed_through_not_copied():
    from kafka.protocol.consumer.fetch import FetchResponse

    records = b"r" * 100_000
    partition = FetchResponse.FetchableTopicResponse.PartitionData(
        partition_index=0,
        error_code=0,
        high_watermark=5,
        last_stable_offset=5,
        log_start_offset=0,
        aborted_transactions=None,
        preferred_read_replica=-1,
        records=records,
    )
    response = FetchResponse(
        version=16,
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])],
    )
    chunks = encode_fetch_response(response, 16, 1)
    assert any(chunk is records for chunk in chunks)
    assert all(isinstance(chunk, bytes) for chunk in chunks)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 12])
@pytest.mark.parametrize("leader_hint", [False, True])
@pytest.mark.parametrize("aborted", [None, []], ids=["read_uncommitted", "read_committed"])
def test_a_partition_with_nothing_to_send_encodes_as_kafka_pythons(version, leader_hint, aborted):
    """The one-pack path for an empty partition, and its way out when a tagged field is set;
    a read_committed answer's empty aborted list (not null) takes it too."""
    from kafka.protocol.consumer.fetch import FetchResponse

    partition_class = FetchResponse.FetchableTopicResponse.PartitionData
    fields = dict(
        partition_index=7,
        error_code=0,
        high_watermark=12,
        last_stable_offset=11,
        log_start_offset=3,
        aborted_transactions=aborted,
        preferred_read_replica=-1,
        records=b"",
    )
    heavy = partition_class(**fields)
    light = FetchPartition(**fields)
    if leader_hint:
        heavy.current_leader = light.current_leader = partition_class.LeaderIdAndEpoch(
            leader_id=2, leader_epoch=5
        )

    def response(partition):
        topic = FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])
        return FetchResponse(throttle_time_ms=0, error_code=0, session_id=9, responses=[topic])

    expected = kafka_python_encoding(FETCH, version, 3, response(heavy))
    assert b"".join(encode_fetch_response(response(light), version, 3)) == expected
