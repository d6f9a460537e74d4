"""CreateTopics through kafka-python's and confluent-kafka's admin clients and raw requests."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import NewTopic as CNewTopic
from kafka.admin import NewTopic
from kafka.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    TopicAlreadyExistsError,
)
from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse

from tests.apis.conftest import wait


def test_create_and_list(kadmin, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 3, 1, topic_configs={"retention.ms": "1000"})])
    described = kadmin.describe_topics([topic_name])[0]
    assert described["error_code"] == 0
    assert len(described["partitions"]) == 3
    assert topic_name in kadmin.list_topics()


def test_kafka_python_errors(kadmin, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 1, 1)])
    with pytest.raises(TopicAlreadyExistsError):
        kadmin.create_topics([NewTopic(topic_name, 1, 1)])
    with pytest.raises(InvalidReplicationFactorError):
        kadmin.create_topics([NewTopic(topic_name + "x", 1, 3)])
    with pytest.raises(InvalidPartitionsError):
        kadmin.create_topics([NewTopic(topic_name + "y", 0, 1)])
    with pytest.raises(InvalidConfigurationError):
        kadmin.create_topics([NewTopic(topic_name + "z", 1, 1, topic_configs={"nope": "1"})])
    assert not {topic_name + s for s in "xyz"} & set(kadmin.list_topics())


def test_confluent_defaults_assignment_and_validate_only(cadmin, kadmin, topic_name):
    results = wait(cadmin.create_topics([CNewTopic(topic_name)]))  # -1/-1: broker defaults
    assert results[topic_name] is None
    results = wait(
        cadmin.create_topics(
            [CNewTopic(topic_name + "-a", num_partitions=2, replica_assignment=[[1], [1]])]
        )
    )
    assert results[topic_name + "-a"] is None
    results = wait(
        cadmin.create_topics(
            [CNewTopic(topic_name + "-b", num_partitions=1, replica_assignment=[[7]])]
        )
    )
    assert results[topic_name + "-b"].args[0].name() == "INVALID_REPLICA_ASSIGNMENT"
    results = wait(cadmin.create_topics([CNewTopic(topic_name + "-v", 2, 1)], validate_only=True))
    assert results[topic_name + "-v"] is None
    topics = cadmin.list_topics(timeout=10).topics
    assert len(topics[topic_name].partitions) == 1
    assert len(topics[topic_name + "-a"].partitions) == 2
    assert topic_name + "-v" not in topics and topic_name + "-b" not in topics


def create_raw(raw, version, topics, validate_only=False):
    return raw.send(
        CreateTopicsRequest,
        CreateTopicsResponse,
        version,
        topics=topics,
        timeout_ms=1000,
        validate_only=validate_only,
    )


def creatable(name, partitions=-1, rf=-1, configs=()):
    topic = CreateTopicsRequest.CreatableTopic
    return topic(
        name=name,
        num_partitions=partitions,
        replication_factor=rf,
        assignments=[],
        configs=[topic.CreatableTopicConfig(name=k, value=v) for k, v in configs],
    )


def test_v7_result_carries_configs_and_id(raw, kadmin, topic_name):
    response = create_raw(raw, 7, [creatable(topic_name, 2, 1, [("retention.ms", "5000")])])
    (result,) = response.topics
    assert result.error_code == 0 and result.error_message is None
    assert result.num_partitions == 2 and result.replication_factor == 1
    assert result.topic_id.int != 0
    configs = {c.name: c for c in result.configs}
    assert configs["retention.ms"].value == "5000"
    assert configs["retention.ms"].config_source == 1  # DYNAMIC_TOPIC_CONFIG
    assert configs["segment.bytes"].config_source == 5  # DEFAULT_CONFIG
    described = kadmin.describe_topics([topic_name])[0]
    assert str(described["topic_id"]) == str(result.topic_id)


def test_duplicates_and_validate_only_raw(raw, kadmin, topic_name):
    response = create_raw(
        raw,
        5,
        [creatable(topic_name), creatable(topic_name), creatable(topic_name + "-ok")],
        validate_only=True,
    )
    by_name = {r.name: r for r in response.topics}
    assert by_name[topic_name].error_code == 42  # INVALID_REQUEST
    assert by_name[topic_name].error_message == "Duplicate topic name."
    assert by_name[topic_name + "-ok"].error_code == 0
    assert by_name[topic_name + "-ok"].num_partitions == 1
    assert topic_name + "-ok" not in kadmin.list_topics()
    response = create_raw(raw, 2, [creatable("bad/name")])
    assert response.topics[0].error_code == 17  # INVALID_TOPIC_EXCEPTION
