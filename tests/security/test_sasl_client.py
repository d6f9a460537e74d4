"""The client side of SASL (a broker logging in to another broker, KafkaWire) against the
broker's own server mechanisms, and the broker's inter-broker login read from its JAAS config."""

from __future__ import annotations

import base64

import pytest

from wireserver.config import BrokerConfig
from wireserver.security import scram
from wireserver.security.sasl import (
    PlainMechanism,
    SaslFailure,
    SaslListenerSettings,
    ScramMechanism,
    client_mechanism,
)


def exchange(client, server) -> None:
    """Run the client's tokens through ``server`` until the client is done."""
    token = client.initial()
    while token is not None:
        token = client.respond(server.evaluate(token))


@pytest.mark.parametrize("mechanism", sorted(scram.MECHANISMS))
def test_scram_client_logs_in_and_checks_the_server(mechanism):
    store = scram.ScramStore(None)
    store.alter("broker", {mechanism: scram.ScramCredential.from_password(mechanism, "s3cret")})
    server = ScramMechanism(mechanism, store)
    exchange(client_mechanism(mechanism, "broker", "s3cret"), server)
    assert server.complete and server.authorization_id == "broker"

    with pytest.raises(SaslFailure, match="invalid credentials"):
        exchange(client_mechanism(mechanism, "broker", "wrong"), ScramMechanism(mechanism, store))

    # A server that does not know the password cannot pass for the other broker: its final
    # message carries a signature the client checks.
    client = client_mechanism(mechanism, "broker", "s3cret")
    server = ScramMechanism(mechanism, store)
    final = client.respond(server.evaluate(client.initial()))
    server_final = server.evaluate(final)
    forged = b"v=" + base64.b64encode(bytes(len(base64.b64decode(server_final[2:]))))
    with pytest.raises(SaslFailure, match="Invalid server signature"):
        client.respond(forged)
    with pytest.raises(SaslFailure, match="SCRAM server error: other-error"):
        client.respond(b"e=other-error")
    assert client.respond(server_final) is None


def test_plain_client_logs_in():
    server = PlainMechanism({"broker": "s3cret"})
    exchange(client_mechanism("PLAIN", "broker", "s3cret"), server)
    assert server.authorization_id == "broker"
    with pytest.raises(SaslFailure, match="Invalid username or password"):
        exchange(client_mechanism("PLAIN", "broker", "nope"), PlainMechanism({"broker": "x"}))
    with pytest.raises(ValueError, match="GSSAPI"):
        client_mechanism("GSSAPI", "broker", "s3cret")


def test_plain_jaas_holds_the_server_users_and_the_brokers_own_login():
    config = BrokerConfig(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "zookeeper.connect": "127.0.0.1:2181",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="broker" password="broker-secret" user_broker="broker-secret" '
            'user_alice="alice-secret";',
        }
    )
    security = config.inter_broker_security
    assert (security.mechanism, security.username, security.password) == (
        "PLAIN",
        "broker",
        "broker-secret",
    )
    server_side = SaslListenerSettings.from_config(config, "SASL_PLAINTEXT", None)
    assert server_side.plain_users == {"broker": "broker-secret", "alice": "alice-secret"}
    exchange(security.sasl_client(), server_side.mechanism("PLAIN", lambda: 0))
