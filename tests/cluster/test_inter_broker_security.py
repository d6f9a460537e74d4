"""Brokers whose only listener is SASL_PLAINTEXT (SCRAM-SHA-512) replicate over it: each
follower logs in to the leader as the broker user of its JAAS config
(``security.inter.broker.protocol=SASL_PLAINTEXT``,
``sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512``), a super user, so its fetches pass the
authorizer's CLUSTER_ACTION check. acks=all produce succeeds, every broker's log holds the
records, the ISR is full and a leader kill fails over without loss. A broker whose login is
refused, or whose principal may not replicate, never gets the data and stays out of the ISR,
and its log says why. Over TLS (SSL with client certificates, and SASL_SSL) the brokers
verify each other's certificates against the listener's trust store and replicate too; one
that does not trust the leader's certificate stays out of the ISR. A broker's key store
changed at run time is served at once and after a restart (kept in ZooKeeper)."""

from __future__ import annotations

import socket
import ssl

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from cryptography import x509

from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.topics import records_on_disk
from wireserver.protocol.errors import ErrorCode
from wireserver.security.certs import issue, load_ca, write_test_pki
from wireserver.testing import KafkaWire
from wireserver.testing.cluster import cluster_metadata as metadata
from wireserver.testing.wire import fetch_request

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-inter-broker-security"
MECHANISM = "SCRAM-SHA-512"
BROKER_USER, BROKER_PASSWORD = "broker", "broker-secret"
APP_USER, APP_PASSWORD = "app", "app-secret"
OUTSIDER_USER, OUTSIDER_PASSWORD = "outsider", "outsider-secret"  # may log in, not replicate
LOGIN_KEY = "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"


def broker_login(user: str, password: str) -> str:
    """The broker's own login: the JAAS config of its inter-broker listener and mechanism."""
    return (
        f"org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";'
    )


OVERRIDES = {
    "security.inter.broker.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism.inter.broker.protocol": MECHANISM,
    LOGIN_KEY: broker_login(BROKER_USER, BROKER_PASSWORD),
}


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(
        zookeeper,
        3,
        CHROOT,
        OVERRIDES,
        sasl=MECHANISM,
        users={
            BROKER_USER: BROKER_PASSWORD,
            APP_USER: APP_PASSWORD,
            OUTSIDER_USER: OUTSIDER_PASSWORD,
        },
        authorizer=True,
        super_users=[f"User:{BROKER_USER}", f"User:{APP_USER}"],
    )
    for broker in nodes.brokers.values():  # the only listener: no PLAINTEXT way around
        assert broker.overrides["listeners"] == "SASL_PLAINTEXT://127.0.0.1:0"
    yield nodes.start()
    nodes.close()


def client_config(cluster: Cluster) -> dict:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": MECHANISM,
        "sasl.username": APP_USER,
        "sasl.password": APP_PASSWORD,
    }


def partition_state(cluster: Cluster, topic: str, partition: int = 0):
    """(leader, leader epoch, replicas, isr) as a running broker reports it."""
    running = next(b for b in cluster.brokers.values() if b.running)
    _, _, partitions = metadata(
        running.bootstrap_servers, topic, sasl=(MECHANISM, APP_USER, APP_PASSWORD)
    )
    return partitions.get(partition)


def create(cluster: Cluster, topic: str, replicas: list[int] | None = None) -> None:
    admin = AdminClient(client_config(cluster))
    new = (
        NewTopic(topic, 1, replica_assignment=[replicas])
        if replicas
        else NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})
    )
    admin.create_topics([new])[topic].result(30)
    wait_for(
        lambda: (partition_state(cluster, topic) or (-1,))[0] >= 0, 30, what=f"a leader of {topic}"
    )


def produce(config: dict, topic: str, values: range) -> None:
    """Send ``values`` to partition 0 with acks=all (``config``: the client's security)."""
    producer = Producer({**config, "acks": "all", "linger.ms": 5, "message.timeout.ms": 60000})
    errors: list = []
    for value in values:
        producer.produce(
            topic,
            str(value).encode(),
            partition=0,
            on_delivery=lambda err, msg: err and errors.append(err),
        )
    assert producer.flush(90) == 0
    assert errors == []


def consume_all(cluster: Cluster, topic: str) -> list[int]:
    consumer = Consumer(
        {**client_config(cluster), "group.id": f"check-{topic}", "enable.auto.commit": False}
    )
    try:
        partition = TopicPartition(topic, 0, 0)
        consumer.assign([partition])
        _, high = consumer.get_watermark_offsets(partition, timeout=20)
        values: list[int] = []
        misses = 0
        while len(values) < high and misses < 10:
            message = consumer.poll(3)
            if message is None:
                misses += 1
            elif not message.error():
                values.append(int(message.value()))
        return values
    finally:
        consumer.close()


def fetch_as_replica(
    broker, topic: str, replica_id: int, offset: int, login: tuple[str, str]
) -> int:
    """The partition error of a follower's Fetch of partition 0 sent to ``broker``."""
    request = fetch_request(topic, offset, replica_id=replica_id)
    with KafkaWire(broker.bootstrap_servers, sasl=(MECHANISM, *login)) as wire:
        response = wire.request(request)
    return response.responses[0].partitions[0].error_code


def test_sasl_only_cluster_replicates_and_fails_over_without_loss(cluster):
    topic = "sasl-replicated"
    create(cluster, topic)
    leader, epoch, replicas, isr = partition_state(cluster, topic)
    assert sorted(replicas) == [1, 2, 3]
    produce(client_config(cluster), topic, range(500))
    for broker in cluster.brokers.values():
        wait_for(
            lambda: records_on_disk(broker.data_dir, topic, 0) == 500,
            30,
            what=f"broker {broker.node_id} to hold the records",
        )
    wait_for(lambda: sorted(partition_state(cluster, topic)[3]) == [1, 2, 3], 30, what="a full ISR")

    victim = cluster.brokers[leader]
    victim.kill()

    def new_leader():
        state = partition_state(cluster, topic)
        return state if state[0] not in (-1, leader) else None

    assert wait_for(new_leader, 60, what="a new leader")[1] > epoch
    produce(client_config(cluster), topic, range(500, 1000))  # acks=all with the two survivors
    assert consume_all(cluster, topic) == list(range(1000))

    # The killed broker logs in to the new leader, catches up and rejoins the ISR.
    victim.start()
    wait_for(
        lambda: leader in partition_state(cluster, topic)[3],
        60,
        what="the restarted broker to rejoin the ISR",
    )
    wait_for(
        lambda: records_on_disk(victim.data_dir, topic, 0) == 1000,
        30,
        what="the restarted broker to hold every record",
    )


@pytest.mark.parametrize(
    "login, why",
    [
        (
            (BROKER_USER, "not-the-password"),
            "refused this replica fetcher: SASL login to 127.0.0.1:",
        ),
        ((OUTSIDER_USER, OUTSIDER_PASSWORD), "TOPIC_AUTHORIZATION_FAILED"),
    ],
    ids=["wrong-password", "not-a-super-user"],
)
def test_a_broker_that_may_not_replicate_stays_out_of_the_isr(cluster, login, why):
    outcast = cluster.brokers[3]
    outcast.stop()
    outcast.overrides[LOGIN_KEY] = broker_login(*login)
    logged_before = len(outcast.log_text())
    try:
        outcast.start()
        topic = f"without-{login[0]}"
        create(cluster, topic, replicas=[1, 2, 3])
        produce(client_config(cluster), topic, range(100))
        for broker_id in (1, 2):
            wait_for(
                lambda: records_on_disk(cluster.brokers[broker_id].data_dir, topic, 0) == 100,
                30,
                what=f"broker {broker_id} to hold the records",
            )
        # Its fetches are refused: it never reaches the ISR (or leaves it after
        # replica.lag.time.max.ms), never holds a record, and its log says why.
        wait_for(
            lambda: sorted(partition_state(cluster, topic)[3]) == [1, 2],
            30,
            what="an ISR without broker 3",
        )
        wait_for(
            lambda: why in outcast.log_text()[logged_before:], 30, what=f"{why!r} in broker 3's log"
        )
        assert records_on_disk(outcast.data_dir, topic, 0) == 0
        if login[0] == OUTSIDER_USER:
            # Nor does a Fetch that only claims to come from replica 3 move the ISR.
            error = fetch_as_replica(cluster.brokers[1], topic, 3, 100, login)
            assert error == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            assert 3 not in partition_state(cluster, topic)[3]
    finally:
        outcast.stop()
        outcast.overrides[LOGIN_KEY] = broker_login(BROKER_USER, BROKER_PASSWORD)
        outcast.start()


# ---- TLS between brokers ---------------------------------------------------------------------


@pytest.fixture(scope="module", params=["SSL", "SASL_SSL"])
def tls_cluster(zookeeper, tmp_path_factory, request):
    """Three brokers whose only listener is ``request.param``, with one CA and one server
    certificate (CN=localhost, for 127.0.0.1) that they present to clients and each other.
    SSL asks for client certificates: the brokers' principal is their certificate's DN."""
    protocol = request.param
    pki = write_test_pki(str(tmp_path_factory.mktemp("pki")))
    overrides = {
        "listeners": f"{protocol}://127.0.0.1:0",
        "security.inter.broker.protocol": protocol,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki.server,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki.ca,
    }
    options: dict = {"authorizer": True}
    if protocol == "SSL":
        overrides.update(
            {
                "ssl.client.auth": "required",
                "super.users": f"User:CN=localhost;User:{pki.client_dn}",
            }
        )
    else:
        overrides.update(
            {
                "sasl.mechanism.inter.broker.protocol": MECHANISM,
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": broker_login(
                    BROKER_USER, BROKER_PASSWORD
                ),
            }
        )
        options.update(
            sasl=MECHANISM,
            users={BROKER_USER: BROKER_PASSWORD, APP_USER: APP_PASSWORD},
            super_users=[f"User:{BROKER_USER}", f"User:{APP_USER}"],
        )
    nodes = Cluster(zookeeper, 3, f"{CHROOT}-{protocol.lower()}", overrides, **options)
    nodes.protocol, nodes.pki = protocol, pki
    yield nodes.start()
    nodes.close()


def tls_client_config(cluster: Cluster) -> dict:
    config = {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": cluster.protocol,
        "ssl.ca.location": cluster.pki.ca,
    }
    if cluster.protocol == "SSL":
        config.update(
            {
                "ssl.certificate.location": cluster.pki.client_cert,
                "ssl.key.location": cluster.pki.client_key,
            }
        )
    else:
        config.update(
            {"sasl.mechanism": MECHANISM, "sasl.username": APP_USER, "sasl.password": APP_PASSWORD}
        )
    return config


def tls_isr(cluster: Cluster, topic: str) -> list[int]:
    context = ssl.create_default_context(cafile=cluster.pki.ca)
    options: dict = {"ssl_context": context}
    if cluster.protocol == "SSL":
        context.load_cert_chain(cluster.pki.client_cert, cluster.pki.client_key)
    else:
        options["sasl"] = (MECHANISM, APP_USER, APP_PASSWORD)
    state = metadata(cluster.brokers[1].bootstrap_servers, topic, **options)[2].get(0)
    return sorted(state[3]) if state and state[0] >= 0 else []


def test_tls_only_cluster_replicates(tls_cluster):
    topic = f"over-{tls_cluster.protocol.lower()}"
    admin = AdminClient(tls_client_config(tls_cluster))
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    wait_for(lambda: tls_isr(tls_cluster, topic) == [1, 2, 3], 30, what="a full ISR")
    produce(tls_client_config(tls_cluster), topic, range(300))
    for broker in tls_cluster.brokers.values():
        wait_for(
            lambda: records_on_disk(broker.data_dir, topic, 0) == 300,
            30,
            what=f"broker {broker.node_id} to hold the records",
        )
    wait_for(lambda: tls_isr(tls_cluster, topic) == [1, 2, 3], 30, what="a full ISR")


def test_a_broker_that_does_not_trust_the_leaders_certificate_stays_out_of_the_isr(
    tls_cluster, tmp_path
):
    outcast = tls_cluster.brokers[3]
    outcast.stop()
    trusted = outcast.overrides["ssl.truststore.location"]
    outcast.overrides["ssl.truststore.location"] = write_test_pki(str(tmp_path)).ca
    logged_before = len(outcast.log_text())
    try:
        outcast.start()
        topic = f"untrusted-{tls_cluster.protocol.lower()}"
        admin = AdminClient(tls_client_config(tls_cluster))
        admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1, 2, 3]])])[topic].result(30)
        produce(tls_client_config(tls_cluster), topic, range(100))
        for broker_id in (1, 2):
            wait_for(
                lambda: records_on_disk(tls_cluster.brokers[broker_id].data_dir, topic, 0) == 100,
                30,
                what=f"broker {broker_id} to hold the records",
            )
        wait_for(lambda: tls_isr(tls_cluster, topic) == [1, 2], 30, what="an ISR without broker 3")
        wait_for(
            lambda: "certificate verify failed" in outcast.log_text()[logged_before:],
            30,
            what="the TLS failure in broker 3's log",
        )
        assert records_on_disk(outcast.data_dir, topic, 0) == 0
    finally:
        outcast.stop()
        outcast.overrides["ssl.truststore.location"] = trusted
        outcast.start()


def served_serial(cluster: Cluster, broker_id: int) -> int:
    """The serial of the certificate a new TLS connection to ``broker_id`` gets."""
    context = ssl.create_default_context(cafile=cluster.pki.ca)
    if cluster.protocol == "SSL":
        context.load_cert_chain(cluster.pki.client_cert, cluster.pki.client_key)
    host, _, port = cluster.brokers[broker_id].bootstrap_servers.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=host) as conn:
            der = conn.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der).serial_number


def test_a_brokers_keystore_changes_at_runtime(tls_cluster, tmp_path):
    """Set for broker 2 (the AlterConfigs goes to it), the new key store of its only listener,
    the inter-broker one, is checked with a handshake against the old one, served to new
    connections, used between the brokers (a full ISR with broker 2 leading), kept in
    ZooKeeper, and served again after a restart. A store password cannot be set in cluster
    mode (Kafka's ZooKeeper-era brokers needed password.encoder.secret)."""
    prefix = f"listener.name.{tls_cluster.protocol.lower()}."
    issued = issue(load_ca(tls_cluster.pki), "localhost", hosts=("localhost", "127.0.0.1", "::1"))
    store = str(tmp_path / "broker-2.pem")
    with open(store, "wb") as handle:
        handle.write(issued.cert_pem + issued.key_pem)
    admin = AdminClient(tls_client_config(tls_cluster))

    def alter(name: str, value: str | None, op=AlterConfigOpType.SET) -> None:
        entry = ConfigEntry(name, value, incremental_operation=op)
        resource = ConfigResource(ConfigResource.Type.BROKER, "2", incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(30)

    with pytest.raises(KafkaException) as refused:
        alter(prefix + "ssl.key.password", "secret")
    assert refused.value.args[0].str() == "Password encoder secret not configured"

    alter(prefix + "ssl.keystore.location", store)
    try:
        assert served_serial(tls_cluster, 2) == issued.cert.serial_number
        assert served_serial(tls_cluster, 1) != issued.cert.serial_number
        topic = f"rotated-{tls_cluster.protocol.lower()}"
        admin.create_topics([NewTopic(topic, 1, replica_assignment=[[2, 1, 3]])])[topic].result(30)
        produce(tls_client_config(tls_cluster), topic, range(50))
        wait_for(lambda: tls_isr(tls_cluster, topic) == [1, 2, 3], 30, what="a full ISR")
        tls_cluster.brokers[2].restart()
        assert served_serial(tls_cluster, 2) == issued.cert.serial_number
    finally:
        alter(prefix + "ssl.keystore.location", None, AlterConfigOpType.DELETE)
    assert served_serial(tls_cluster, 2) != issued.cert.serial_number
