"""SCRAM credentials live in ZooKeeper in cluster mode: AlterUserScramCredentials on one
broker writes Kafka's ``/config/users/<user>`` znode and a ``/config/changes`` notification,
and every broker's logins follow, across restarts; Kafka's ``kafka-configs`` tool creates users
the same way, and Kafka's own code agrees with the znodes. Users seeded into a broker's log dir
(``EmbeddedBroker(sasl=..., users=...)``) keep logging in to that broker."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import time

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from compat_tests.reference import require_tools, resolve, run_tool, which_java
from compat_tests.reference.resolve import KAFKA_VERSION, classpath
from tests.cluster.conftest import Cluster, wait_for, zk_client

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-scram"
SEEDED = {"ops": "ops-secret"}  # written to each broker's log dir before it starts
# Clients log in on SASL_PLAINTEXT (listed first: the test helpers' address); the brokers
# replicate over PLAINTEXT, the inter-broker listener.
OVERRIDES = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
}
USER, PASSWORD = "carol@example.com", "carol-secret"
KAFKA_VERSION_TUPLE = tuple(int(p) for p in KAFKA_VERSION.split(".")[:2])
ZNODE = "/config/users/carol%40example.com"  # Kafka's Sanitizer: URL-encoded
SALT, ITERATIONS = b"a-salt-the-client-chose", 8192
INVALID = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
)


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, CHROOT, OVERRIDES, sasl="SCRAM-SHA-256", users=SEEDED).start()
    yield nodes
    nodes.close()


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def client_config(broker, user: str, password: str, mechanism: str) -> dict:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def admin(broker, user: str = "ops", mechanism: str = "SCRAM-SHA-256") -> AdminClient:
    return AdminClient(client_config(broker, user, SEEDED.get(user, PASSWORD), mechanism))


def login(broker, user: str, password: str, mechanism: str = "SCRAM-SHA-256"):
    """Log in to this one broker with confluent-kafka and list the topics: None when that
    works, else the authentication error the client reports."""
    errors: list[KafkaError] = []
    client = AdminClient(
        {
            **client_config(broker, user, password, mechanism),
            "error_cb": errors.append,
            "log_level": 0,
        }
    )
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
    return (
        f"salt={b64(salt)},stored_key={b64(hashlib.sha256(client_key).digest())},"
        f"server_key={b64(server_key)},iterations={iterations}"
    )


def test_seeded_users_keep_logging_in_to_their_broker(cluster, zk):
    for broker in cluster.brokers.values():
        assert logs_in(broker, "ops", "ops-secret")
        assert refused(broker, "ops", "not-the-secret")
    # broker-local, not the cluster's: not in ZooKeeper, and not the admin APIs' to delete
    assert zk.exists("/config/users/ops") is None
    client = admin(cluster.brokers[2])
    [future] = client.alter_user_scram_credentials(
        [UserScramCredentialDeletion("ops", ScramMechanism.SCRAM_SHA_256)]
    ).values()
    with pytest.raises(KafkaException) as deletion:
        future.result(30)
    assert deletion.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
    assert logs_in(cluster.brokers[2], "ops", "ops-secret")


def test_user_created_on_one_broker_logs_in_everywhere_until_deleted_and_survives_restarts(
    cluster, zk
):
    first, second, third = (cluster.brokers[i] for i in (1, 2, 3))
    alter(
        first,
        UserScramCredentialUpsertion(
            USER,
            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, ITERATIONS),
            PASSWORD.encode(),
            SALT,
        ),
    )

    # Kafka's znode, byte for byte, and its change notification
    data, _ = zk.get(ZNODE)
    assert (
        data
        == json.dumps(
            {
                "version": 1,
                "config": {"SCRAM-SHA-256": kafka_credential(PASSWORD, SALT, ITERATIONS)},
            },
            separators=(",", ":"),
        ).encode()
    )
    notifications = [
        json.loads(zk.get(f"/config/changes/{child}")[0])
        for child in zk.get_children("/config/changes")
    ]
    assert {"version": 2, "entity_path": "users/carol%40example.com"} in notifications

    # the other brokers follow the notification
    for broker in (second, third):
        wait_for(
            lambda: logs_in(broker, USER, PASSWORD),
            what=f"broker {broker.node_id} to accept the user created on broker 1",
        )
        assert refused(broker, USER, "wrong-password")
    client = admin(third)
    [description] = client.describe_user_scram_credentials([USER]).values()
    infos = description.result(30).scram_credential_infos
    assert [(info.mechanism, info.iterations) for info in infos] == [
        (ScramMechanism.SCRAM_SHA_256, ITERATIONS)
    ]

    # a second mechanism through broker 3 joins the first in the same znode
    alter(
        third,
        UserScramCredentialUpsertion(
            USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), PASSWORD.encode()
        ),
    )
    assert sorted(json.loads(zk.get(ZNODE)[0])["config"]) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]

    # every broker stops, then all start again and load the credentials from ZooKeeper
    for broker in (first, second, third):
        broker.stop()
    for broker in (first, second, third):
        broker.start()
    for broker in (first, second, third):
        wait_for(
            lambda: logs_in(broker, USER, PASSWORD),
            what=f"restarted broker {broker.node_id} to accept the user",
        )
    assert logs_in(first, USER, PASSWORD, "SCRAM-SHA-512")

    # deleting SCRAM-SHA-256 through broker 2 refuses it on broker 1; SCRAM-SHA-512 stays
    alter(second, UserScramCredentialDeletion(USER, ScramMechanism.SCRAM_SHA_256))
    assert list(json.loads(zk.get(ZNODE)[0])["config"]) == ["SCRAM-SHA-512"]
    wait_for(
        lambda: refused(first, USER, PASSWORD),
        what="broker 1 to refuse the credential deleted on broker 2",
    )
    assert logs_in(first, USER, PASSWORD, "SCRAM-SHA-512")


# Kafka's own code computes, for a user, a password and the znode value we wrote, what its
# ZooKeeper-era brokers would have written: the znode name (Sanitizer) and the value
# (credentialToString of the credential ScramFormatter derives with the stored salt).
KAFKA_FORMAT = """
import org.apache.kafka.common.security.scram.ScramCredential;
import org.apache.kafka.common.security.scram.internals.ScramCredentialUtils;
import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;
import org.apache.kafka.common.utils.SANITIZER_PACKAGESanitizer;

public class KafkaScramFormat {
    public static void main(String[] args) throws Exception {
        String user = args[0], value = args[1], password = args[2];
        ScramFormatter formatter = new ScramFormatter(ScramMechanism.forMechanismName(args[3]));
        ScramCredential stored = ScramCredentialUtils.credentialFromString(value);
        byte[] salted = formatter.saltedPassword(password, stored.salt(), stored.iterations());
        System.out.println(Sanitizer.sanitize(user));
        System.out.println(ScramCredentialUtils.credentialToString(
            formatter.generateCredential(stored.salt(), salted, stored.iterations())));
    }
}
"""


def test_kafka_configs_creates_a_user_whose_znode_is_what_kafka_writes(cluster, zk, tmp_path):
    """Kafka's ``kafka-configs`` (the Java admin client) creates the user through broker 2;
    Kafka's own Sanitizer and ScramCredentialUtils agree with the znode; the user logs in on
    broker 1."""
    require_tools()
    user, password = "dave smith*", "dave-secret"
    config = tmp_path / "ops.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule"
        ' required username="ops" password="ops-secret";\n'
    )
    done = run_tool(
        "kafka-configs",
        [
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            user,
            "--add-config",
            f"SCRAM-SHA-512=[iterations=8192,password={password}]",
            "--command-config",
            str(config),
        ],
        bootstrap=cluster.brokers[2].bootstrap_servers,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    [child] = [c for c in zk.get_children("/config/users") if c.startswith("dave")]
    value = json.loads(zk.get(f"/config/users/{child}")[0])["config"]["SCRAM-SHA-512"]
    source = tmp_path / "KafkaScramFormat.java"
    # Kafka 4.4 moved Sanitizer to common.utils.internals.
    moved = KAFKA_VERSION_TUPLE >= (4, 4)
    source.write_text(KAFKA_FORMAT.replace("SANITIZER_PACKAGE", "internals." if moved else ""))
    kafka = subprocess.run(
        [
            which_java(),
            "-cp",
            classpath(resolve()),
            str(source),
            user,
            value,
            password,
            "SCRAM-SHA-512",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert kafka.returncode == 0, kafka.stderr
    assert kafka.stdout.split("\n")[:2] == [child, value]
    assert child == "dave%20smith%2A"
    assert value.startswith("salt=") and value.endswith(",iterations=8192")

    wait_for(
        lambda: logs_in(cluster.brokers[1], user, password, "SCRAM-SHA-512"),
        what="broker 1 to accept the user kafka-configs created on broker 2",
    )
