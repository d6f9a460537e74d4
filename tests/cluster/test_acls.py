"""ACLs live in ZooKeeper in cluster mode: CreateAcls / DeleteAcls on one broker write Kafka's
layout (``/kafka-acl``, ``/kafka-acl-extended/prefixed``, change notifications) and every
broker's authorizer follows, across restarts."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.cluster.conftest import Cluster, wait_for, zk_client
from tests.cluster.topics import create, topic_error

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-acls"
# Every client is User:ANONYMOUS on these PLAINTEXT listeners; with no ACL on a resource it
# may do anything, so a DENY is what the test can see being enforced.
OVERRIDES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
DENY_DESCRIBE = dict(
    principal="User:ANONYMOUS",
    host="*",
    operation=AclOperation.DESCRIBE,
    permission_type=AclPermissionType.DENY,
)


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 2, CHROOT, OVERRIDES).start()
    yield nodes
    nodes.close()


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def listed(broker, topic: str) -> bool:
    """Does this broker itself (one connection to it, not the cluster) show ``topic`` in a
    Metadata answer? A DESCRIBE denial answers TOPIC_AUTHORIZATION_FAILED instead."""
    error = topic_error(broker, topic)
    assert error in (0, 29), error  # NONE, TOPIC_AUTHORIZATION_FAILED
    return error == 0


def test_acls_written_via_one_broker_are_enforced_by_the_other_and_survive_restarts(cluster, zk):
    first, second = cluster.brokers[1], cluster.brokers[2]
    create(cluster, "open", rf=1)
    create(cluster, "secret", rf=1)
    create(cluster, "hidden-1", rf=1)
    assert listed(second, "secret") and listed(second, "hidden-1")

    literal = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, **DENY_DESCRIBE)
    prefixed = AclBinding(
        ResourceType.TOPIC, "hidden-", ResourcePatternType.PREFIXED, **DENY_DESCRIBE
    )
    client = admin(first)  # kept alive until its futures are done
    for future in client.create_acls([literal, prefixed]).values():
        future.result(15)

    # Kafka's znodes and change notifications
    data, _ = zk.get("/kafka-acl/Topic/secret")
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {
                "principal": "User:ANONYMOUS",
                "permissionType": "Deny",
                "operation": "Describe",
                "host": "*",
            }
        ],
    }
    assert json.loads(zk.get("/kafka-acl-extended/prefixed/Topic/hidden-")[0])["acls"]
    changes = zk.get_children("/kafka-acl-changes")
    assert [zk.get(f"/kafka-acl-changes/{c}")[0] for c in changes] == [b"TOPIC:secret"]
    [prefixed_change] = zk.get_children("/kafka-acl-extended-changes")
    assert json.loads(zk.get(f"/kafka-acl-extended-changes/{prefixed_change}")[0]) == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "hidden-",
        "patternType": "PREFIXED",
    }

    # the other broker follows: it hides both topics and lists the ACLs
    wait_for(
        lambda: not listed(second, "secret") and not listed(second, "hidden-1"),
        what="broker 2 to apply the ACLs created on broker 1",
    )
    assert listed(second, "open")
    client = admin(second)
    described = client.describe_acls(
        AclBindingFilter(
            ResourceType.TOPIC,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
    ).result(15)
    assert sorted(b.name for b in described) == ["hidden-", "secret"]

    # both brokers restart and load them from ZooKeeper
    for broker in (first, second):
        broker.restart()
    for broker in (first, second):
        wait_for(lambda: listed(broker, "open"), what="a restarted broker to list the topics")
        assert not listed(broker, "secret") and not listed(broker, "hidden-1")

    # a deletion on broker 2 reaches broker 1, and the empty znode goes
    client = admin(second)
    [future] = client.delete_acls(
        [
            AclBindingFilter(
                ResourceType.TOPIC,
                "secret",
                ResourcePatternType.LITERAL,
                None,
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        ]
    ).values()
    assert len(future.result(15)) == 1
    assert not zk.exists("/kafka-acl/Topic/secret")
    wait_for(lambda: listed(first, "secret"), what="broker 1 to apply the deletion")
    assert not listed(first, "hidden-1")
