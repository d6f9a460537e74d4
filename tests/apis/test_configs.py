"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs through confluent-kafka's and
kafka-python's admin clients."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigSource
from kafka import KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import MessageSizeTooLargeError
from kafka.protocol.admin.configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

from tests.apis.configs import alter, describe, op, raw_describe
from tests.apis.conftest import wait


def test_describe_topic_and_broker(cadmin, kadmin, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 1, 1, topic_configs={"retention.ms": "12345"})])
    configs = describe(cadmin, "topic", topic_name)
    assert configs["retention.ms"].value == "12345"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    synonyms = configs["retention.ms"].synonyms
    assert list(synonyms)[0] == "retention.ms"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].value == "1073741824"
    broker_configs = describe(cadmin, "broker", "1")
    assert broker_configs["num.partitions"].value == "1"
    assert broker_configs["listeners"].is_read_only
    assert not broker_configs["log.retention.bytes"].is_read_only
    missing = describe(cadmin, "topic", topic_name + "-none")
    assert missing.args[0].name() == "UNKNOWN_TOPIC_OR_PART"


def test_incremental_alter_topic_takes_effect(broker, cadmin, kadmin, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 1, 1)])
    assert alter(cadmin, "topic", topic_name, [op("max.message.bytes", "200")]) is None
    configs = describe(cadmin, "topic", topic_name)
    assert configs["max.message.bytes"].value == "200"
    assert configs["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, enable_idempotence=False, retries=0
    )
    with pytest.raises(MessageSizeTooLargeError):
        producer.send(topic_name, b"x" * 1000).get(10)
    producer.close()
    assert (
        alter(
            cadmin, "topic", topic_name, [op("cleanup.policy", "compact", AlterConfigOpType.APPEND)]
        )
        is None
    )
    assert describe(cadmin, "topic", topic_name)["cleanup.policy"].value == "delete,compact"
    assert (
        alter(
            cadmin,
            "topic",
            topic_name,
            [op("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)],
        )
        is None
    )
    assert describe(cadmin, "topic", topic_name)["cleanup.policy"].value == "compact"
    assert (
        alter(
            cadmin, "topic", topic_name, [op("max.message.bytes", None, AlterConfigOpType.DELETE)]
        )
        is None
    )
    assert (
        describe(cadmin, "topic", topic_name)["max.message.bytes"].source
        == ConfigSource.DEFAULT_CONFIG.value
    )
    errors = [
        alter(cadmin, "topic", topic_name, [op("retention.ms", "5", AlterConfigOpType.APPEND)]),
        alter(cadmin, "topic", topic_name, [op("no.such.key", "1")]),
        alter(cadmin, "topic", topic_name, [op("retention.ms", "soon")]),
    ]
    assert [e.args[0].name() for e in errors] == ["INVALID_CONFIG"] * 3
    unknown = alter(cadmin, "topic", topic_name + "-none", [op("retention.ms", "5")])
    assert unknown.args[0].name() == "UNKNOWN_TOPIC_OR_PART"
    assert alter(cadmin, "topic", topic_name, [op("retention.ms", "5")], validate_only=True) is None
    assert describe(cadmin, "topic", topic_name)["retention.ms"].value != "5"


def test_legacy_alter_replaces_overrides(cadmin, kadmin, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 1, 1, topic_configs={"retention.ms": "1000"})])
    assert alter(cadmin, "topic", topic_name, {"segment.ms": "60000"}, incremental=False) is None
    configs = describe(cadmin, "topic", topic_name)
    assert configs["segment.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


DELETE = 1


def raw_alter(raw, name, key, value, operation=0):
    request = IncrementalAlterConfigsRequest
    resource = request.AlterConfigsResource
    response = raw.send(
        request,
        IncrementalAlterConfigsResponse,
        1,
        validate_only=False,
        resources=[
            resource(
                resource_type=4,
                resource_name=name,
                configs=[
                    resource.AlterableConfig(name=key, config_operation=operation, value=value)
                ],
            )
        ],
    )
    return response.responses[0].error_code


def test_describe_other_broker_is_invalid(raw):
    raw_describe(raw, "7", expect_error=42)
    raw_describe(raw, "x", expect_error=42)
    configs = {c.name: c for c in raw_describe(raw, "1")}
    assert configs["num.partitions"].documentation
    assert configs["num.partitions"].config_type == 3  # INT
    loggers = {c.name: c.value for c in raw_describe(raw, "1", kind=8)}  # BROKER_LOGGER
    assert "root" in loggers


def test_broker_dynamic_config_reaches_topics(cadmin, kadmin, raw, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 1, 1)])
    assert alter(cadmin, "broker", "1", [op("log.retention.bytes", "777")]) is None
    broker_configs = describe(cadmin, "broker", "1")
    assert broker_configs["log.retention.bytes"].value == "777"
    assert broker_configs["log.retention.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    topic = describe(cadmin, "topic", topic_name)["retention.bytes"]
    assert topic.value == "777" and topic.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert raw_alter(raw, "", "log.retention.bytes", "888") == 0
    defaults = raw_describe(raw, "")
    assert [(c.name, c.value, c.config_source) for c in defaults] == [
        ("log.retention.bytes", "888", 3)
    ]  # DYNAMIC_DEFAULT_BROKER_CONFIG
    assert (
        alter(cadmin, "broker", "1", [op("log.retention.bytes", None, AlterConfigOpType.DELETE)])
        is None
    )
    assert describe(cadmin, "topic", topic_name)["retention.bytes"].value == "888"
    read_only = alter(cadmin, "broker", "1", [op("listeners", "PLAINTEXT://:1")])
    assert read_only.args[0].name() == "INVALID_REQUEST"
    assert raw_alter(raw, "", "log.retention.bytes", None, DELETE) == 0
    assert describe(cadmin, "topic", topic_name)["retention.bytes"].value == "-1"


def test_segment_bytes_is_at_least_one_mebibyte(cadmin, topic_name):
    """Kafka 4.1's minimum for the topic key, with its error and message, through CreateTopics,
    IncrementalAlterConfigs and AlterConfigs; internal.segment.bytes (Kafka 4.1's test-only
    key) takes any size, and DescribeConfigs lists it only where a topic sets it."""
    from confluent_kafka.admin import NewTopic as CNewTopic

    message = (
        "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"
    )
    [future] = cadmin.create_topics(
        [CNewTopic(topic_name, 1, 1, config={"segment.bytes": "1048575"})]
    ).values()
    with pytest.raises(Exception) as refused:
        future.result(10)
    assert (refused.value.args[0].name(), refused.value.args[0].str()) == (
        "INVALID_CONFIG",
        message,
    )
    wait(
        cadmin.create_topics(
            [
                CNewTopic(
                    topic_name,
                    1,
                    1,
                    config={"segment.bytes": "1048576", "internal.segment.bytes": "200"},
                )
            ]
        )
    )
    for incremental in (True, False):
        ops = [op("segment.bytes", "1048575")] if incremental else {"segment.bytes": "1048575"}
        error = alter(cadmin, "topic", topic_name, ops, incremental=incremental)
        assert (error.args[0].name(), error.args[0].str()) == ("INVALID_CONFIG", message)
    configs = describe(cadmin, "topic", topic_name)
    assert configs["segment.bytes"].value == "1048576"
    assert configs["internal.segment.bytes"].value == "200"
    assert configs["internal.segment.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert (
        alter(
            cadmin,
            "topic",
            topic_name,
            [op("internal.segment.bytes", None, AlterConfigOpType.DELETE)],
        )
        is None
    )
    assert "internal.segment.bytes" not in describe(cadmin, "topic", topic_name)


def test_kafka_broker_keys_we_do_not_use_are_accepted_and_described(broker, cadmin, raw):
    """Kafka 4.1.1's broker keys round-trip as on Kafka (a client suite sets
    sasl.kerberos.min.time.before.relogin): dynamic per broker where Kafka's are, refused
    where Kafka refuses them, described with Kafka's defaults."""
    from kafka.admin import ConfigResource as KafkaResource
    from kafka.admin import ConfigResourceType

    key = "sasl.kerberos.min.time.before.relogin"
    assert alter(cadmin, "broker", "1", [op(key, "70000")]) is None
    entry = describe(cadmin, "broker", "1")[key]
    assert (entry.value, entry.source, entry.is_read_only) == (
        "70000",
        ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        False,
    )
    synonyms = {c.name: c for c in raw_describe(raw, "1")}[key].synonyms
    assert [(s.value, s.source) for s in synonyms] == [("70000", 2), ("60000", 5)]
    # the legacy AlterConfigs through kafka-python replaces the broker's dynamic set
    from kafka import KafkaAdminClient

    kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        result = kadmin.alter_configs(
            [
                KafkaResource(
                    ConfigResourceType.BROKER, "1", {key: "80000", "background.threads": "5"}
                )
            ],
            incremental=False,
        )
        assert result == {"broker": {"1": "OK"}}, result
    finally:
        kadmin.close()
    configs = describe(cadmin, "broker", "1")
    assert configs[key].value == "80000" and configs["background.threads"].value == "5"
    assert raw_alter(raw, "", key, "1") == 42  # per broker: not as the cluster default
    assert raw_alter(raw, "", "background.threads", "6") == 0  # cluster-wide: fine
    refused = [
        alter(cadmin, "broker", "1", [op(name, value)])
        for name, value in (
            ("process.roles", "broker"),  # read-only in Kafka too
            ("ssl.keystore.location", "/tmp/ks"),  # only per listener
            (key, "soon"),
        )
    ]
    assert [e.args[0].name() for e in refused] == ["INVALID_REQUEST"] * 3
    rows = {c.name: c for c in raw_describe(raw, "1")}
    assert rows["process.roles"].read_only and rows["process.roles"].value is None
    assert rows["log.cleaner.io.max.bytes.per.second"].value == "1.7976931348623157E308"
    assert rows["delegation.token.secret.key"].is_sensitive
    assert "group.share.enable" not in rows  # Kafka's internal keys are not described
    assert raw_alter(raw, "", "background.threads", None, DELETE) == 0
    for name in (key, "background.threads"):
        assert alter(cadmin, "broker", "1", [op(name, None, AlterConfigOpType.DELETE)]) is None
    assert describe(cadmin, "broker", "1")[key].source == ConfigSource.DEFAULT_CONFIG.value


def test_bad_values_are_reported_with_kafkas_messages(cadmin, kadmin, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 1, 1)])
    messages = [
        alter(cadmin, "topic", topic_name, [op(name, value)]).args[0].str()
        for name, value in (
            ("retention.ms", "soon"),
            ("preallocate", "yes"),
            ("min.cleanable.dirty.ratio", "x"),
            ("segment.index.bytes", "99999999999"),
        )
    ]
    assert messages == [  # as Kafka 4.1.1 words them
        "Invalid value soon for configuration retention.ms: Not a number of type LONG",
        "Invalid value yes for configuration preallocate: Expected value to be either true or "
        "false",
        "Invalid value x for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE",
        "Invalid value 99999999999 for configuration segment.index.bytes: Not a number of type INT",
    ]


def test_client_metrics_resources_are_refused_by_name(raw):
    """kafka-configs --entity-type client-metrics and kafka-client-metrics print the broker's
    message: it names what wireserver does not serve (Kafka serves KIP-714 subscriptions)."""
    from tests.apis.configs import raw_group_alter

    unserved = "wireserver does not serve client metrics subscriptions (KIP-714)"
    assert raw_group_alter(raw, "metrics", "interval.ms", "5000", kind=16) == (42, unserved)
    request = DescribeConfigsRequest
    response = raw.send(
        request,
        DescribeConfigsResponse,
        4,
        include_synonyms=False,
        include_documentation=False,
        resources=[
            request.DescribeConfigsResource(
                resource_type=16, resource_name="metrics", configuration_keys=None
            )
        ],
    )
    assert (response.results[0].error_code, response.results[0].error_message) == (42, unserved)


def test_replication_throttle_configs(cadmin, kadmin, topic_name):
    """kafka-reassign-partitions --throttle sets these: the topic's throttled replicas are
    ``*`` or ``partition:broker`` entries (Kafka's ThrottledReplicaListValidator), the broker
    rates are longs of at least 0."""
    kadmin.create_topics([NewTopic(topic_name, 1, 1)])
    for name in (
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    ):
        error = alter(cadmin, "topic", topic_name, [op(name, "0:1,one")])
        assert error.args[0].name() == "INVALID_CONFIG"
        assert (
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        ) in error.args[0].str()
        for value in ("*", "0:1,0:2"):
            assert alter(cadmin, "topic", topic_name, [op(name, value)]) is None
            assert describe(cadmin, "topic", topic_name)[name].value == value
    for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
        error = alter(cadmin, "broker", "1", [op(name, "-1")])
        assert error.args[0].name() == "INVALID_REQUEST"
        assert alter(cadmin, "broker", "1", [op(name, "1000")]) is None
        assert describe(cadmin, "broker", "1")[name].value == "1000"
        assert alter(cadmin, "broker", "1", [op(name, None, AlterConfigOpType.DELETE)]) is None
        assert describe(cadmin, "broker", "1")[name].value == str(2**63 - 1)
