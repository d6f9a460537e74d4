"""Dead-letter queues of share groups (KIP-1191) with Kafka's Java ``KafkaShareConsumer``
(``ShareClient.java``, run as ``test_share_groups`` runs it) against wireserver: a record the
member rejects, and one it releases until the delivery count limit, appear in the group's DLQ
topic, read back by an ordinary consumer, with Kafka 4.4's context headers, the source key and
value when the group copies records (none otherwise) and the time of writing as timestamp; a
DLQ topic Kafka would refuse (a name starting ``__``, a topic without
``errors.deadletterqueue.group.enable``, a missing topic while auto-creation is off, a name
outside the broker's prefix) gets nothing, and the records are archived all the same; with
``errors.deadletterqueue.auto.create.topics.enable`` the broker creates the topic, DLQ enabled."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from compat_tests import reference as kafka_reference
from compat_tests.share_members import ShareMember, compiled_share_client, set_group_configs
from wireserver.testing import EmbeddedBroker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def classpath() -> str:
    return compiled_share_client()


def group_configs(kafka, group: str, **configs: object) -> None:
    set_group_configs(kafka.bootstrap_servers, group, **configs)


#: the timestamp of the source records: far from now, so that a copy keeping it would show
SOURCE_TIMESTAMP = 1_500_000_000_000

REJECTED = "Offset rejected by client."
EXCEEDED = "Offset delivery count exceeded the threshold."


@pytest.fixture(scope="module")
def kafka():
    with EmbeddedBroker() as broker:
        yield broker


def create_topic(kafka, name: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    topic = NewTopic(
        name, partitions, 1, config={k.replace("_", "."): v for k, v in configs.items()}
    )
    admin.create_topics([topic])[name].result(timeout=30)


def topic_names(kafka) -> set[str]:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    return set(admin.list_topics(timeout=30).topics)


def produce(kafka, topic: str, values: list[str]) -> None:
    """One batch per record, each with a key, a header and ``SOURCE_TIMESTAMP``."""
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 0})
    for value in values:
        producer.produce(
            topic,
            key=f"key-{value}".encode(),
            value=value.encode(),
            headers=[("origin", f"header-{value}".encode())],
            timestamp=SOURCE_TIMESTAMP,
        )
        producer.flush(30)


def read_all(kafka, topic: str, count: int, partition: int = 0, timeout: float = 30.0) -> list:
    """The first ``count`` records of ``topic``-``partition`` (fewer once ``timeout`` passed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    got: list = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message)
    finally:
        consumer.close()
    return got


def run_member(classpath, kafka, topic: str, group: str) -> dict[str, list[int]]:
    """A ShareClient that rejects "reject*", releases "release*", accepts the rest and leaves
    when idle: the delivery counts it saw, by value."""
    got = ShareMember(classpath, kafka.bootstrap_servers, topic, group).finish()
    by_value: dict[str, list[int]] = {}
    for _, count, value in got:
        by_value.setdefault(value, []).append(count)
    return by_value


def context_headers(topic: str, offset: int, group: str, count: int, cause: str) -> list:
    return [
        ("__dlq.errors.topic", topic.encode()),
        ("__dlq.errors.partition", b"0"),
        ("__dlq.errors.offset", str(offset).encode()),
        ("__dlq.errors.group", group.encode()),
        ("__dlq.errors.delivery.count", str(count).encode()),
        ("__dlq.errors.message", cause.encode()),
    ]


def names() -> tuple[str, str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"share-{suffix}", f"g-{suffix}", f"dlq.{suffix}"


def test_rejected_and_over_the_limit_records_go_to_the_dlq(kafka, classpath):
    topic, group, dlq = names()
    create_topic(kafka, topic)
    create_topic(kafka, dlq, errors_deadletterqueue_group_enable="true")
    group_configs(
        kafka,
        group,
        share_auto_offset_reset="earliest",
        share_delivery_count_limit=2,
        errors_deadletterqueue_topic_name=dlq,
        errors_deadletterqueue_copy_record_enable="true",
    )
    produce(kafka, topic, ["a", "reject-1", "release-1", "b"])
    started_ms = time.time() * 1000
    assert run_member(classpath, kafka, topic, group) == {
        "a": [1],
        "reject-1": [1],
        "release-1": [1, 2],
        "b": [1],
    }
    letters = read_all(kafka, dlq, 3, timeout=10)
    assert [(m.key(), m.value(), m.headers()) for m in letters] == [
        (b"key-reject-1", b"reject-1", context_headers(topic, 1, group, 1, REJECTED)),
        (b"key-release-1", b"release-1", context_headers(topic, 2, group, 2, EXCEEDED)),
    ]
    # stamped when written (CreateTime), not with the source record's time; its headers are
    # Kafka's context headers only, as Kafka 4.4 copies key and value alone
    for message in letters:
        kind, stamp = message.timestamp()
        assert kind == 1 and started_ms - 5000 <= stamp <= time.time() * 1000 + 5000


def test_without_copy_the_dlq_records_carry_the_context_headers_only(kafka, classpath):
    topic, group, dlq = names()
    create_topic(kafka, topic)
    create_topic(kafka, dlq, errors_deadletterqueue_group_enable="true")
    group_configs(
        kafka, group, share_auto_offset_reset="earliest", errors_deadletterqueue_topic_name=dlq
    )
    produce(kafka, topic, ["reject-1", "a"])
    assert run_member(classpath, kafka, topic, group) == {"reject-1": [1], "a": [1]}
    letters = read_all(kafka, dlq, 2, timeout=10)
    assert [(m.key(), m.value(), m.headers()) for m in letters] == [
        (None, None, context_headers(topic, 0, group, 1, REJECTED))
    ]


def test_a_dlq_kafka_would_refuse_gets_nothing_and_the_records_are_archived(kafka, classpath):
    # a name starting "__" is refused as a group config, as Kafka's GroupConfig.validate does
    refused = kafka_reference.run_tool(
        "kafka-configs",
        [
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            f"g-{uuid.uuid4().hex[:8]}",
            "--add-config",
            "errors.deadletterqueue.topic.name=__dlq",
        ],
        bootstrap=kafka.bootstrap_servers,
    )
    assert refused.returncode != 0
    assert "DLQ topic name must not start with '__'" in refused.stdout + refused.stderr
    # a topic without errors.deadletterqueue.group.enable, a missing topic (auto-creation is
    # off by default) and a name outside the broker's "dlq." prefix
    topic, _, disabled = names()
    missing, outside = f"dlq.missing-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, topic)
    create_topic(kafka, disabled)
    create_topic(kafka, outside, errors_deadletterqueue_group_enable="true")
    produce(kafka, topic, ["reject-1", "a"])
    for dlq in (disabled, missing, outside):
        group = f"g-{uuid.uuid4().hex[:8]}"
        group_configs(
            kafka, group, share_auto_offset_reset="earliest", errors_deadletterqueue_topic_name=dlq
        )
        assert run_member(classpath, kafka, topic, group) == {"reject-1": [1], "a": [1]}, dlq
        # archived all the same: a second member gets nothing
        again = ShareMember(
            classpath, kafka.bootstrap_servers, topic, group, first_record_wait_ms=3000
        )
        assert again.finish() == [], dlq
    assert read_all(kafka, disabled, 1, timeout=3) == []
    assert read_all(kafka, outside, 1, timeout=3) == []
    assert missing not in topic_names(kafka)


def test_a_missing_dlq_topic_is_created_when_the_broker_allows(classpath):
    with EmbeddedBroker(
        overrides={"errors.deadletterqueue.auto.create.topics.enable": "true"}
    ) as kafka:
        topic, group, dlq = names()
        create_topic(kafka, topic, partitions=2)
        group_configs(
            kafka, group, share_auto_offset_reset="earliest", errors_deadletterqueue_topic_name=dlq
        )
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 0})
        producer.produce(topic, value=b"reject-1", partition=1)
        producer.flush(30)
        assert run_member(classpath, kafka, topic, group) == {"reject-1": [1]}
        assert dlq in topic_names(kafka)
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        resource = ConfigResource("topic", dlq)
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        assert configs["errors.deadletterqueue.group.enable"].value == "true"
        # one partition (num.partitions): source partition 1 goes to 1 % 1 = 0
        letters = read_all(kafka, dlq, 2, timeout=10)
        assert [m.headers()[:3] for m in letters] == [
            [
                ("__dlq.errors.topic", topic.encode()),
                ("__dlq.errors.partition", b"1"),
                ("__dlq.errors.offset", b"0"),
            ]
        ]


def test_records_beyond_the_dlq_topics_message_size_go_in_several_batches(kafka, classpath):
    topic, group, dlq = names()
    create_topic(kafka, topic)
    create_topic(kafka, dlq, errors_deadletterqueue_group_enable="true", max_message_bytes="1200")
    group_configs(
        kafka,
        group,
        share_auto_offset_reset="earliest",
        errors_deadletterqueue_topic_name=dlq,
        errors_deadletterqueue_copy_record_enable="true",
    )
    # one batch for all three: the member gets them in one fetch and rejects them together
    values = [f"reject-{i}-" + "x" * 500 for i in range(3)]
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 1000})
    for value in values:
        producer.produce(topic, value=value.encode())
    producer.flush(30)
    assert run_member(classpath, kafka, topic, group) == {value: [1] for value in values}
    letters = read_all(kafka, dlq, 4, timeout=10)
    assert [m.value().decode() for m in letters] == values
