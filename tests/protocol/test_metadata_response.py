"""The Metadata encoder that keeps topic entries' bytes writes exactly the bytes kafka-python's
generated encoder writes, for every version we serve, and reuses what it kept."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.protocol.kafka_python_reference import kafka_python_encoding
from tests.protocol.message_strategies import message_strategy
from wireserver.protocol.metadata_response import PartitionEntries, encode_metadata_response
from wireserver.protocol.served import SERVED

METADATA = SERVED.get(3)
VERSIONS = list(range(METADATA.min_version, METADATA.max_version + 1))


def _untagged(response):
    response.unknown_tags = None
    for topic in response.topics:
        topic.unknown_tags = None
        for partition in topic.partitions:
            partition.unknown_tags = None
    return response


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1), kept=st.booleans())
def test_same_bytes_as_kafka_python(version, data, correlation_id, kept):
    response = _untagged(data.draw(message_strategy(METADATA.response_class, version)))
    expected = kafka_python_encoding(METADATA, version, correlation_id, response)
    if kept:
        for topic in response.topics:
            topic.partitions = PartitionEntries(topic.partitions)
    assert (
        b"".join(encode_metadata_response(response, version, correlation_id, int(version >= 9)))
        == expected
    )
    # and again, from the kept bytes
    assert (
        b"".join(encode_metadata_response(response, version, correlation_id, int(version >= 9)))
        == expected
    )


@pytest.mark.parametrize("version", [4, 12])
def test_a_topic_entry_is_encoded_once_per_version_and_fields(version):
    response_class = METADATA.response_class
    topic_class = response_class.MetadataResponseTopic
    partitions = PartitionEntries(
        topic_class.MetadataResponsePartition(
            error_code=0,
            partition_index=i,
            leader_id=1,
            leader_epoch=0,
            replica_nodes=[1],
            isr_nodes=[1],
            offline_replicas=[],
        )
        for i in range(1000)
    )

    def response(authorized_operations=None):
        topic = topic_class(
            error_code=0,
            name="t",
            is_internal=False,
            partitions=partitions,
            authorized_operations=authorized_operations,
        )
        return response_class(
            version=version, brokers=[], cluster_id="c", controller_id=1, topics=[topic]
        )

    first = encode_metadata_response(response(), version, 1, int(version >= 9))
    second = encode_metadata_response(response(), version, 2, int(version >= 9))
    assert second[3] is first[3]  # the topic entry's kept bytes, not a new encoding
    assert len(partitions.encoded) == 1
    other = encode_metadata_response(response({2, 3}), version, 3, int(version >= 9))
    assert len(partitions.encoded) == 2
    assert (other[3] != first[3]) == (version >= 8)  # topic operations are answered from v8


def test_the_error_meters_count_kept_entries_like_any_others():
    from collections import defaultdict

    from wireserver.metrics import count_errors

    response_class = METADATA.response_class
    topic_class = response_class.MetadataResponseTopic

    def partition(i, code):
        return topic_class.MetadataResponsePartition(
            error_code=code, partition_index=i, leader_id=-1, replica_nodes=[], isr_nodes=[]
        )

    def counted(kept):
        entries = [partition(0, 0), partition(1, 5), partition(2, 5)]
        topic = topic_class(
            error_code=0, name="t", partitions=PartitionEntries(entries) if kept else entries
        )
        counts = defaultdict(int)
        count_errors(response_class(version=4, topics=[topic]), "Metadata", counts)
        count_errors(response_class(version=4, topics=[topic]), "Metadata", counts)
        return dict(counts)

    assert (
        counted(True)
        == counted(False)
        == {
            ("Metadata", "NONE"): 6,  # the response, the topic and one partition, twice
            ("Metadata", "LEADER_NOT_AVAILABLE"): 4,
        }
    )
