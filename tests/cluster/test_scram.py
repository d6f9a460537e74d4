"""SCRAM credentials live in ZooKeeper in cluster mode: AlterUserScramCredentials on one
broker writes Kafka's ``/config/users/<user>`` znode and a ``/config/changes`` notification,
and every broker's logins follow, across restarts. Users seeded into a broker's log dir
(``EmbeddedBroker(sasl=..., users=...)``) keep logging in to that broker."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)
from tests.cluster.conftest import Cluster, wait_for, zk_client

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-scram"
SEEDED = {"ops": "ops-secret"}  # written to each broker's log dir before it starts
# Clients log in on SASL_PLAINTEXT (listed first: the test helpers' address); the brokers
# replicate over PLAINTEXT, the inter-broker listener.
OVERRIDES = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
             "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512"}
USER, PASSWORD = "carol@example.com", "carol-secret"
ZNODE = "/config/users/carol%40example.com"  # Kafka's Sanitizer: URL-encoded
SALT, ITERATIONS = b"a-salt-the-client-chose", 8192
INVALID = "Authentication failed during authentication due to invalid credentials with SASL " \
          "mechanism {}"


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, CHROOT, OVERRIDES, sasl="SCRAM-SHA-256",
                    users=SEEDED).start()
    yield nodes
    nodes.close()


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def client_config(broker, user: str, password: str, mechanism: str) -> dict:
    return {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def admin(broker, user: str = "ops", mechanism: str = "SCRAM-SHA-256") -> AdminClient:
    return AdminClient(client_config(broker, user, SEEDED.get(user, PASSWORD), mechanism))


def login(broker, user: str, password: str, mechanism: str = "SCRAM-SHA-256"):
    """Log in to this one broker with confluent-kafka and list the topics: None when that
    works, else the authentication error the client reports."""
    errors: list[KafkaError] = []
    client = AdminClient({**client_config(broker, user, password, mechanism),
                          "error_cb": errors.append, "log_level": 0})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            client.list_topics(timeout=2)
            return None
        except KafkaException:
            client.poll(0.1)  # serves the error callback
            failed = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
            if failed:
                return failed[0]
    raise AssertionError(f"neither a login nor an authentication error in 30 s: {errors}")


def logs_in(broker, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> bool:
    return login(broker, user, password, mechanism) is None


def refused(broker, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> bool:
    error = login(broker, user, password, mechanism)
    return error is not None and INVALID.format(mechanism) in error.str()


def alter(broker, *changes) -> None:
    client = admin(broker)  # kept alive until its futures are done
    for future in client.alter_user_scram_credentials(list(changes)).values():
        future.result(30)


def kafka_credential(password: str, salt: bytes, iterations: int) -> str:
    """RFC 5802's StoredKey and ServerKey for SCRAM-SHA-256, as Kafka's
    ``ScramCredentialUtils.credentialToString`` writes them."""
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    b64 = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
    return (f"salt={b64(salt)},stored_key={b64(hashlib.sha256(client_key).digest())},"
            f"server_key={b64(server_key)},iterations={iterations}")


def test_seeded_users_keep_logging_in_to_their_broker(cluster, zk):
    for broker in cluster.brokers.values():
        assert logs_in(broker, "ops", "ops-secret")
        assert refused(broker, "ops", "not-the-secret")
    # broker-local, not the cluster's: not in ZooKeeper, and not the admin APIs' to delete
    assert zk.exists("/config/users/ops") is None
    client = admin(cluster.brokers[2])
    [future] = client.alter_user_scram_credentials([UserScramCredentialDeletion(
        "ops", ScramMechanism.SCRAM_SHA_256)]).values()
    with pytest.raises(KafkaException) as deletion:
        future.result(30)
    assert deletion.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
    assert logs_in(cluster.brokers[2], "ops", "ops-secret")


def test_user_created_on_one_broker_logs_in_everywhere_until_deleted_and_survives_restarts(
        cluster, zk):
    first, second, third = (cluster.brokers[i] for i in (1, 2, 3))
    alter(first, UserScramCredentialUpsertion(
        USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, ITERATIONS),
        PASSWORD.encode(), SALT))

    # Kafka's znode, byte for byte, and its change notification
    data, _ = zk.get(ZNODE)
    assert data == json.dumps({"version": 1, "config": {
        "SCRAM-SHA-256": kafka_credential(PASSWORD, SALT, ITERATIONS)}},
        separators=(",", ":")).encode()
    notifications = [json.loads(zk.get(f"/config/changes/{child}")[0])
                     for child in zk.get_children("/config/changes")]
    assert {"version": 2, "entity_path": "users/carol%40example.com"} in notifications

    # the other brokers follow the notification
    for broker in (second, third):
        wait_for(lambda: logs_in(broker, USER, PASSWORD),
                 what=f"broker {broker.node_id} to accept the user created on broker 1")
        assert refused(broker, USER, "wrong-password")
    client = admin(third)
    [description] = client.describe_user_scram_credentials([USER]).values()
    infos = description.result(30).scram_credential_infos
    assert [(info.mechanism, info.iterations) for info in infos] == [
        (ScramMechanism.SCRAM_SHA_256, ITERATIONS)]

    # a second mechanism through broker 3 joins the first in the same znode
    alter(third, UserScramCredentialUpsertion(
        USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), PASSWORD.encode()))
    assert sorted(json.loads(zk.get(ZNODE)[0])["config"]) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]

    # every broker stops, then all start again and load the credentials from ZooKeeper
    for broker in (first, second, third):
        broker.stop()
    for broker in (first, second, third):
        broker.start()
    for broker in (first, second, third):
        wait_for(lambda: logs_in(broker, USER, PASSWORD),
                 what=f"restarted broker {broker.node_id} to accept the user")
    assert logs_in(first, USER, PASSWORD, "SCRAM-SHA-512")

    # deleting SCRAM-SHA-256 through broker 2 refuses it on broker 1; SCRAM-SHA-512 stays
    alter(second, UserScramCredentialDeletion(USER, ScramMechanism.SCRAM_SHA_256))
    assert list(json.loads(zk.get(ZNODE)[0])["config"]) == ["SCRAM-SHA-512"]
    wait_for(lambda: refused(first, USER, PASSWORD),
             what="broker 1 to refuse the credential deleted on broker 2")
    assert logs_in(first, USER, PASSWORD, "SCRAM-SHA-512")
