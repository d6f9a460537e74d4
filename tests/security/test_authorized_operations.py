"""Authorized operations (KIP-430) as confluent-kafka's AdminClient reports them with
``include_authorized_operations=True``: describe_topics and describe_cluster (Metadata),
describe_consumer_groups (DescribeGroups for a classic group, ConsumerGroupDescribe for a
consumer-protocol one). Without an authorizer every operation Kafka supports on the resource is
listed (8 for a topic, 7 for the cluster, 5 for a group); with ACLs, those the principal is
allowed (an ALLOW of READ or ALTER implies DESCRIBE, of ALTER_CONFIGS DESCRIBE_CONFIGS), and no
cluster operation at all without DESCRIBE on the cluster. The values are the ones Kafka 4.1.1
reports in the same setups (compat_tests/scenarios_security.py runs this against both)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition
from confluent_kafka.admin import AclOperation as Op
from confluent_kafka.admin import AdminClient
from kafka.protocol.admin.acl import CreateAclsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from wireserver.security.acls import CLUSTER_NAME, Operation, PatternType, Permission
from wireserver.security.acls import ResourceType as R
from wireserver.testing import EmbeddedBroker, KafkaWire

TOPIC_OPS = {
    Op.READ,
    Op.WRITE,
    Op.CREATE,
    Op.DESCRIBE,
    Op.DELETE,
    Op.ALTER,
    Op.DESCRIBE_CONFIGS,
    Op.ALTER_CONFIGS,
}
CLUSTER_OPS = {
    Op.CREATE,
    Op.CLUSTER_ACTION,
    Op.DESCRIBE_CONFIGS,
    Op.ALTER_CONFIGS,
    Op.IDEMPOTENT_WRITE,
    Op.ALTER,
    Op.DESCRIBE,
}
GROUP_OPS = {Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def operations(found):
    return None if found is None else set(found)


def describe(client: dict, topic: str, groups: list[str]) -> dict:
    """What the admin client reports for ``topic``, the cluster and ``groups``."""
    admin = AdminClient(client)
    [topic_future] = admin.describe_topics(
        TopicCollection([topic]), include_authorized_operations=True
    ).values()
    cluster = admin.describe_cluster(include_authorized_operations=True).result(30)
    described = admin.describe_consumer_groups(groups, include_authorized_operations=True)
    return {
        "topic": operations(topic_future.result(30).authorized_operations),
        "cluster": operations(cluster.authorized_operations),
        **{
            group: operations(future.result(30).authorized_operations)
            for group, future in described.items()
        },
    }


def commit_offset(client: dict, group: str, topic: str) -> None:
    """Makes ``group`` an Empty classic group with one committed offset."""
    consumer = Consumer({**client, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()


def test_without_an_authorizer_every_supported_operation():
    with EmbeddedBroker() as broker:
        broker.create_topic("t")
        client = {"bootstrap.servers": broker.bootstrap_servers}
        commit_offset(client, "classic", "t")
        member = Consumer({**client, "group.id": "kip848", "group.protocol": "consumer"})
        try:
            member.subscribe(["t"])
            deadline = time.monotonic() + 30
            while not member.assignment() and time.monotonic() < deadline:
                member.poll(0.1)
            assert member.assignment(), "the consumer-protocol member got no assignment"
            found = describe(client, "t", ["classic", "kip848"])
        finally:
            member.close()
    assert found == {
        "topic": TOPIC_OPS,
        "cluster": CLUSTER_OPS,
        "classic": GROUP_OPS,
        "kip848": GROUP_OPS,
    }


@pytest.fixture(scope="module")
def secured():
    with EmbeddedBroker(sasl="PLAIN", users=USERS, authorizer=True) as broker:
        broker.create_topic("t")
        acl = CreateAclsRequest.AclCreation
        grants = [
            (R.TOPIC, "t", Operation.READ),
            (R.TOPIC, "t", Operation.ALTER_CONFIGS),
            (R.CLUSTER, CLUSTER_NAME, Operation.ALTER),
            (R.GROUP, "g", Operation.READ),
            (R.TOPIC, "t", Operation.WRITE, "bob"),
        ]
        with broker.wire() as wire:
            response = wire.request(
                CreateAclsRequest(
                    version=3,
                    creations=[
                        acl(
                            resource_type=kind,
                            resource_name=name,
                            resource_pattern_type=PatternType.LITERAL,
                            principal=f"User:{user[0] if user else 'alice'}",
                            host="*",
                            operation=operation,
                            permission_type=Permission.ALLOW,
                        )
                        for kind, name, operation, *user in grants
                    ],
                )
            )
            assert [r.error_code for r in response.results] == [0] * len(grants)
        commit_offset(client(broker, "alice"), "g", "t")
        yield broker


def client(broker, user: str) -> dict:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def test_operations_the_acls_allow(secured):
    assert describe(client(secured, "alice"), "t", ["g"]) == {
        "topic": {Op.READ, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS},
        "cluster": {Op.ALTER, Op.DESCRIBE},
        "g": {Op.READ, Op.DESCRIBE},
    }


def test_no_cluster_operations_without_describe_on_the_cluster(secured):
    admin = AdminClient(client(secured, "bob"))
    [future] = admin.describe_topics(
        TopicCollection(["t"]), include_authorized_operations=True
    ).values()
    assert operations(future.result(30).authorized_operations) == {Op.WRITE, Op.DESCRIBE}
    # librdkafka shows 0 and "not requested" alike (None): the raw answer tells them apart.
    with KafkaWire(secured.bootstrap_servers, sasl=("PLAIN", "bob", USERS["bob"])) as wire:
        for version in (8, 10):
            response = wire.request(
                MetadataRequest(
                    version=version,
                    topics=[],
                    allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=True,
                    include_topic_authorized_operations=False,
                )
            )
            assert response.authorized_operations == set()
        response = wire.request(
            MetadataRequest(  # v11 dropped the field: INT32_MIN
                version=11,
                topics=[],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        assert response.authorized_operations is None
