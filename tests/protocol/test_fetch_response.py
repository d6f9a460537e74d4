"""The hand-written FetchResponse encoder writes exactly the bytes kafka-python's generated
encoder writes, for every version we serve, and passes records through without copying."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.protocol.message_strategies import message_strategy
from wireserver.protocol.fetch_response import encode_fetch_response
from wireserver.protocol.messages import encode_response
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
    expected = encode_response(FETCH, version, correlation_id, response)
    assert b"".join(encode_fetch_response(response, version, correlation_id)) == expected


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
