"""ACLs (StandardAuthorizer semantics) and TLS listeners on the embedded broker."""

from __future__ import annotations

import ssl
import time

import pytest
from kafka.protocol.admin.acl import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.security.acls import acl, produce_with_client_certificate
from wireserver.security.acls import Operation, PatternType, Permission, ResourceType
from wireserver.testing import EmbeddedBroker, KafkaWire

USERS = {"alice": "alice-secret", "bob": "bob-secret", "root": "root-secret"}


@pytest.fixture(scope="module")
def secured():
    with EmbeddedBroker(
        sasl="PLAIN", users=USERS, authorizer=True, super_users=["User:root"]
    ) as broker:
        for topic in ("t", "app-1", "app-2", "secret"):
            broker.create_topic(topic)
        with broker.wire() as wire:
            response = wire.request(
                CreateAclsRequest(
                    version=3,
                    creations=[
                        acl("User:alice", Operation.WRITE),
                        acl("User:alice", Operation.READ),
                        acl("User:alice", Operation.READ, ResourceType.GROUP, "g"),
                        acl("User:bob", Operation.WRITE, name="app-", pattern=PatternType.PREFIXED),
                        acl("User:bob", Operation.ALL, name="app-2", permission=Permission.DENY),
                        acl("User:bob", Operation.READ, ResourceType.GROUP, "g"),
                    ],
                )
            )
            assert [r.error_code for r in response.results] == [0] * 6
        yield broker


def client(broker, user, **extra):
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
        **extra,
    }


def produce(broker, user, topic):
    import confluent_kafka

    producer = confluent_kafka.Producer(client(broker, user, **{"message.timeout.ms": 5000}))
    errors = []
    producer.produce(topic, b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    return errors[0]


def metadata_topics(broker, user):
    with KafkaWire(broker.bootstrap_servers, sasl=("PLAIN", user, USERS[user])) as wire:
        response = wire.request(
            MetadataRequest(version=9, topics=None, allow_auto_topic_creation=False)
        )
        return sorted(t.name for t in response.topics)


def test_write_needs_write_acl_prefixed_acls_and_deny_beats_allow(secured):
    assert produce(secured, "alice", "t") is None
    assert produce(secured, "bob", "app-1") is None  # PREFIXED app-
    assert produce(secured, "bob", "app-2").code() == 29  # DENY ALL beats the prefix ALLOW
    assert produce(secured, "bob", "t").code() == 29  # TOPIC_AUTHORIZATION_FAILED
    assert produce(secured, "root", "secret") is None  # super user


def test_unauthorized_topics_are_hidden_from_metadata(secured):
    assert metadata_topics(secured, "alice") == ["t"]
    assert metadata_topics(secured, "bob") == ["app-1"]  # WRITE implies DESCRIBE; app-2 denied
    assert set(metadata_topics(secured, "root")) >= {"t", "app-1", "app-2", "secret"}
    with KafkaWire(secured.bootstrap_servers, sasl=("PLAIN", "bob", "bob-secret")) as wire:
        topic = MetadataRequest.MetadataRequestTopic
        response = wire.request(
            MetadataRequest(
                version=9, topics=[topic(name="secret")], allow_auto_topic_creation=True
            )
        )
        assert response.topics[0].error_code == 29


def test_consuming_and_committing_need_read(secured):
    import confluent_kafka

    assert produce(secured, "alice", "t") is None
    for user in ("alice", "bob"):
        consumer = confluent_kafka.Consumer(
            client(
                secured,
                user,
                **{"group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False},
            )
        )
        consumer.subscribe(["t"])
        got = None
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and got is None:
            got = consumer.poll(0.5)
        assert got is not None
        if user == "alice":
            assert got.error() is None
            committed = consumer.commit(message=got, asynchronous=False)
            assert committed[0].error is None
        else:  # no READ (not even DESCRIBE) on t
            assert got.error().code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
        consumer.close()
    # bob may use group g but not read t: his commit is refused per partition.
    from kafka.protocol.consumer.group import OffsetCommitRequest

    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    partition = topic.OffsetCommitRequestPartition
    with KafkaWire(secured.bootstrap_servers, sasl=("PLAIN", "bob", "bob-secret")) as wire:
        response = wire.request(
            OffsetCommitRequest(
                version=7,
                group_id="g",
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=[
                    topic(
                        name="t",
                        partitions=[
                            partition(
                                partition_index=0,
                                committed_offset=1,
                                committed_leader_epoch=-1,
                                committed_metadata="",
                            )
                        ],
                    )
                ],
            )
        )
        assert response.topics[0].partitions[0].error_code == 29
    with KafkaWire(secured.bootstrap_servers, sasl=("PLAIN", "bob", "bob-secret")) as wire:
        response = wire.request(
            OffsetCommitRequest(
                version=7,
                group_id="other",
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=[
                    topic(
                        name="app-1",
                        partitions=[
                            partition(
                                partition_index=0,
                                committed_offset=1,
                                committed_leader_epoch=-1,
                                committed_metadata="",
                            )
                        ],
                    )
                ],
            )
        )
        assert response.topics[0].partitions[0].error_code == 30  # GROUP_AUTHORIZATION_FAILED


def test_describe_and_delete_acls(secured):
    with secured.wire() as wire:
        described = wire.request(
            DescribeAclsRequest(
                version=3,
                resource_type_filter=ResourceType.TOPIC,
                resource_name_filter="app-2",
                pattern_type_filter=PatternType.MATCH,
                principal_filter=None,
                host_filter=None,
                operation=Operation.ANY,
                permission_type=Permission.ANY,
            )
        )
        patterns = {(r.resource_name, r.pattern_type) for r in described.resources}
        assert patterns == {("app-", PatternType.PREFIXED), ("app-2", PatternType.LITERAL)}
        filter_class = DeleteAclsRequest.DeleteAclsFilter
        deleted = wire.request(
            DeleteAclsRequest(
                version=3,
                filters=[
                    filter_class(
                        resource_type_filter=ResourceType.TOPIC,
                        resource_name_filter="app-2",
                        pattern_type_filter=PatternType.LITERAL,
                        principal_filter="User:bob",
                        host_filter=None,
                        operation=Operation.ANY,
                        permission_type=Permission.ANY,
                    )
                ],
            )
        )
        assert len(deleted.filter_results[0].matching_acls) == 1
    assert produce(secured, "bob", "app-2") is None  # the DENY is gone
    # Non-super users may not manage ACLs.
    with KafkaWire(secured.bootstrap_servers, sasl=("PLAIN", "alice", "alice-secret")) as wire:
        response = wire.request(
            CreateAclsRequest(
                version=3, creations=[acl("User:alice", Operation.ALL, name="secret")]
            )
        )
        assert response.results[0].error_code == 31  # CLUSTER_AUTHORIZATION_FAILED


def test_acls_survive_a_restart(secured):
    secured.restart()
    assert produce(secured, "alice", "t") is None
    assert produce(secured, "alice", "secret").code() == 29


# ---- TLS -----------------------------------------------------------------------------------


def test_tls_without_client_certificates():
    with EmbeddedBroker(tls=True) as broker:
        broker.create_topic("t")
        context = ssl.create_default_context(cafile=broker.ca_path)
        with KafkaWire(broker.bootstrap_servers, ssl_context=context) as wire:
            assert [
                t.name for t in wire.request(MetadataRequest(version=1, topics=None)).topics
            ] == ["t"]
        with pytest.raises(OSError):  # a plaintext client gets no Kafka answer
            KafkaWire(broker.bootstrap_servers, timeout=2).close()


def test_tls_client_certificate_is_the_principal():
    with EmbeddedBroker(tls=True, client_auth="required", authorizer=True) as broker:
        broker.create_topic("t")
        principal = "User:" + broker.pki.client_dn
        assert principal == "User:CN=client,O=wireserver"
        with broker.wire() as wire:
            response = wire.request(
                CreateAclsRequest(version=3, creations=[acl(principal, Operation.WRITE)])
            )
            assert response.results[0].error_code == 0
        assert produce_with_client_certificate(broker, "t") == [None]
        # Without a certificate the handshake itself is refused (ssl.client.auth=required).
        context = ssl.create_default_context(cafile=broker.ca_path)
        with pytest.raises(OSError):
            with KafkaWire(broker.bootstrap_servers, ssl_context=context, timeout=3):
                pass


@pytest.mark.parametrize("mode", ["subprocess"])
def test_tls_listener_in_a_serve_process(mode):
    """``wireserver serve`` hides pyOpenSSL from the reactor only when no listener uses TLS;
    a TLS listener in a serve process still handshakes and answers."""
    with EmbeddedBroker(mode, tls=True) as broker:
        broker.create_topic("t")
        context = ssl.create_default_context(cafile=broker.ca_path)
        with KafkaWire(broker.bootstrap_servers, ssl_context=context) as wire:
            assert [
                t.name for t in wire.request(MetadataRequest(version=1, topics=None)).topics
            ] == ["t"]
