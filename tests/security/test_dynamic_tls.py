"""A listener's key store changed at run time, as Kafka's dynamic broker configs change it
(KIP-226): ``kafka-configs --entity-type brokers --entity-name <id> --alter --add-config
listener.name.<l>.ssl.keystore.location=<file>``. New connections get the new certificate at
once, open ones carry on with theirs; setting the same path again reads the file again; a
store whose certificate names another subject is refused with Kafka's answer; a key password
set with it is kept (never shown) and the store outlives a restart."""

from __future__ import annotations

import logging
import os
import socket
import ssl
import stat
import struct

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from compat_tests.reference import require_tools, run_tool
from wireserver.dynamic_configs import FILE_NAME
from wireserver.security.certs import Issued, issue, make_ca
from wireserver.testing import EmbeddedBroker

pytestmark = pytest.mark.integration

HOSTS = ("localhost", "127.0.0.1", "::1")
KEY = "listener.name.ssl.ssl.keystore.location"
KEY_PASSWORD = "listener.name.ssl.ssl.key.password"


def write_store(path: str, issued: Issued, password: bytes | None = None) -> int:
    """Write a PEM key store (chain + key, the key encrypted with ``password``): the
    certificate's serial."""
    encryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    key = issued.key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )
    with open(path, "wb") as handle:
        handle.write(issued.cert_pem + key)
    return issued.cert.serial_number


class Connection:
    """A TLS connection to the broker that checks its certificate against ``ca``."""

    def __init__(self, bootstrap: str, ca: str):
        host, _, port = bootstrap.rpartition(":")
        context = ssl.create_default_context(cafile=ca)
        raw = socket.create_connection((host, int(port)), timeout=10)
        self.sock = context.wrap_socket(raw, server_hostname=host)
        self.correlation = 0

    def serial(self) -> int:
        der = self.sock.getpeercert(binary_form=True)
        return x509.load_der_x509_certificate(der).serial_number

    def api_versions_ok(self) -> bool:
        """An ApiVersions v0 round trip answers with no error."""
        self.correlation += 1
        header = struct.pack(">hhih", 18, 0, self.correlation, -1)
        self.sock.sendall(struct.pack(">i", len(header)) + header)
        size = struct.unpack(">i", self._read(4))[0]
        body = self._read(size)
        correlation, error = struct.unpack(">ih", body[:6])
        return correlation == self.correlation and error == 0

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, "connection closed"
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def served_serial(broker: EmbeddedBroker, ca: str) -> int:
    connection = Connection(broker.bootstrap_servers, ca)
    try:
        assert connection.api_versions_ok()
        return connection.serial()
    finally:
        connection.close()


def kafka_configs(broker: EmbeddedBroker, client_properties, *args: str) -> str:
    """``kafka-configs --entity-type brokers --entity-name 1 ARGS`` over TLS: its output."""
    done = run_tool(
        "kafka-configs",
        [
            "--command-config",
            str(client_properties),
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            *args,
        ],
        bootstrap=broker.bootstrap_servers,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def alter(admin: AdminClient, configs: dict[str, str]) -> None:
    resource = ConfigResource(
        ConfigResource.Type.BROKER,
        "1",
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in configs.items()
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)


def test_keystore_changed_at_runtime(tmp_path, caplog):
    require_tools()
    caplog.set_level(logging.INFO)
    pki = tmp_path / "pki"
    pki.mkdir()
    ca = make_ca()
    ca_path = str(pki / "ca.pem")
    with open(ca_path, "wb") as handle:
        handle.write(ca.cert_pem)
    first, second = str(pki / "first.pem"), str(pki / "second.pem")
    first_serial = write_store(first, issue(ca, "localhost", hosts=HOSTS))
    second_serial = write_store(second, issue(ca, "localhost", hosts=HOSTS))
    client_properties = tmp_path / "client.properties"
    client_properties.write_text(
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={ca_path}\n"
    )
    broker = EmbeddedBroker(
        "thread",
        overrides={
            "node.id": "1",
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": first,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": ca_path,
        },
        data_dir=tmp_path / "data",
    )
    broker.start()
    try:
        old = Connection(broker.bootstrap_servers, ca_path)
        assert old.serial() == first_serial

        out = kafka_configs(broker, client_properties, "--alter", "--add-config", f"{KEY}={second}")
        assert "Completed updating config for broker 1." in out
        assert served_serial(broker, ca_path) == second_serial  # new connections: new store
        assert old.api_versions_ok() and old.serial() == first_serial  # the open one carries on

        admin = AdminClient(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "security.protocol": "SSL",
                "ssl.ca.location": ca_path,
            }
        )
        # A store whose key is encrypted, its password set with it (the file replaced in
        # place); then the same path set again reads the file again (Kafka reloads the stores
        # on every per-broker change).
        password = b"store-secret-7"
        write_store(second, issue(ca, "localhost", hosts=HOSTS), password)
        alter(admin, {KEY: second, KEY_PASSWORD: password.decode()})
        third_serial = write_store(second, issue(ca, "localhost", hosts=HOSTS), password)
        assert served_serial(broker, ca_path) != third_serial
        alter(admin, {KEY: second})
        assert served_serial(broker, ca_path) == third_serial

        # A certificate for another subject: refused, the store in use stays.
        other = str(pki / "other.pem")
        write_store(other, issue(ca, "somebody-else", hosts=HOSTS), password)
        with pytest.raises(KafkaException) as refused:
            alter(admin, {KEY: other, KEY_PASSWORD: password.decode()})
        error = refused.value.args[0]
        assert error.name() == "INVALID_REQUEST"
        assert error.str() == "Invalid dynamic configuration"
        assert (
            "Keystore DistinguishedName does not match:  existing={alias=kafka, "
            "DN=CN=localhost}, new={alias=kafka, DN=CN=somebody-else}" in caplog.text
        )
        assert served_serial(broker, ca_path) == third_serial

        # Described as Kafka describes it, the password hidden; kept in the data dir's file
        # that only its owner reads, and never logged.
        out = kafka_configs(broker, client_properties, "--describe")
        assert (
            f"{KEY}={second} sensitive=false synonyms={{DYNAMIC_BROKER_CONFIG:{KEY}={second}, "
            f"STATIC_BROKER_CONFIG:ssl.keystore.location={first}}}"
        ) in out
        assert f"{KEY_PASSWORD}=null sensitive=true" in out
        stored = tmp_path / "data" / FILE_NAME
        assert stat.S_IMODE(os.stat(stored).st_mode) == 0o600
        assert password.decode() not in caplog.text

        old.close()
        broker.restart()
        assert served_serial(broker, ca_path) == third_serial
    finally:
        broker.close()


def test_a_keystore_is_not_a_cluster_default():
    """Kafka refuses a listener's store as the cluster default, with its message."""
    require_tools()
    with EmbeddedBroker("thread", overrides={"node.id": "1"}) as broker:
        done = run_tool(
            "kafka-configs",
            [
                "--entity-type",
                "brokers",
                "--entity-default",
                "--alter",
                "--add-config",
                f"{KEY}=/x.pem",
            ],
            bootstrap=broker.bootstrap_servers,
            timeout=120,
        )
        assert done.returncode != 0
        assert (
            "InvalidRequestException: Cannot update these configs at default cluster level, "
            f"broker id must be specified: Set({KEY})"
        ) in done.stderr + done.stdout
