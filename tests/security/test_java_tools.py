"""Apache Kafka's console producer and consumer (the Java client) over SASL and TLS, with a
client config file, as users run them."""

from __future__ import annotations

import os

import pytest

from compat_tests.reference import run_tool
from wireserver.testing import EmbeddedBroker

USERS = {"alice": "alice-secret"}


def write_config(path, lines):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def roundtrip(broker, config_path, topic):
    lines = [f"{topic}-{i}" for i in range(3)]
    produced = run_tool(
        "kafka-console-producer",
        ["--topic", topic, "--producer.config", config_path],
        input="\n".join(lines) + "\n",
        bootstrap=broker.bootstrap_servers,
        timeout=90,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = run_tool(
        "kafka-console-consumer",
        [
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            "3",
            "--timeout-ms",
            "30000",
            "--consumer.config",
            config_path,
        ],
        bootstrap=broker.bootstrap_servers,
        timeout=90,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == lines


LOGIN_MODULES = {
    "PLAIN": 'plain.PlainLoginModule required username="alice" password="alice-secret";',
    "SCRAM-SHA-256": 'scram.ScramLoginModule required username="alice" password="alice-secret";',
    "SCRAM-SHA-512": 'scram.ScramLoginModule required username="alice" password="alice-secret";',
    # An unsecured token (alg none) the client makes itself; the broker's unsecured validator
    # takes "sub" as the principal.
    "OAUTHBEARER": "oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="alice";',
}


@pytest.mark.parametrize("mechanism", list(LOGIN_MODULES))
def test_console_tools_over_sasl_ssl(tmp_path, mechanism):
    with EmbeddedBroker(sasl=mechanism, users=USERS, tls=True) as broker:
        if mechanism != "OAUTHBEARER":  # no admin login for the chores: auto-creation makes it
            broker.create_topic("java")
        config = write_config(
            os.path.join(tmp_path, "client.properties"),
            [
                "security.protocol=SASL_SSL",
                f"sasl.mechanism={mechanism}",
                "sasl.jaas.config=org.apache.kafka.common.security." + LOGIN_MODULES[mechanism],
                "ssl.truststore.type=PEM",
                f"ssl.truststore.location={broker.ca_path}",
            ],
        )
        roundtrip(broker, config, "java")


def test_console_producer_with_a_wrong_password_fails(tmp_path):
    with EmbeddedBroker(sasl="PLAIN", users=USERS) as broker:
        broker.create_topic("java")
        config = write_config(
            os.path.join(tmp_path, "client.properties"),
            [
                "security.protocol=SASL_PLAINTEXT",
                "sasl.mechanism=PLAIN",
                "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                'required username="alice" password="wrong";',
            ],
        )
        out = run_tool(
            "kafka-topics",
            ["--list", "--command-config", config],
            bootstrap=broker.bootstrap_servers,
            timeout=90,
        )
        assert out.returncode != 0
        assert "Authentication failed" in out.stderr + out.stdout
