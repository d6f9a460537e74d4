"""SASL on the embedded broker: every mechanism with real clients, failures, framing, KIP-368."""

from __future__ import annotations

import base64
import concurrent.futures
import json
import struct
import time

import pytest
from kafka.protocol.admin.users import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
)
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from wireserver.security import scram
from wireserver.testing import EmbeddedBroker, KafkaWire, KafkaWireError

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def confluent_roundtrip(bootstrap, extra, topic):
    import confluent_kafka

    conf = {"bootstrap.servers": bootstrap, **extra}
    producer = confluent_kafka.Producer(conf)
    producer.produce(topic, b"v1")
    assert producer.flush(15) == 0
    consumer = confluent_kafka.Consumer(
        {**conf, "group.id": "g-" + topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                return msg.value()
    finally:
        consumer.close()
    raise AssertionError("no message consumed")


def kafka_python_roundtrip(bootstrap, mechanism, topic, **credentials):
    from kafka import KafkaConsumer, KafkaProducer

    opts = dict(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        **credentials,
    )
    producer = KafkaProducer(**opts)
    producer.send(topic, b"kp").get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=8000, **opts)
    values = [m.value for m in consumer]
    consumer.close()
    return values


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_mechanism_with_confluent_and_kafka_python(mechanism):
    with EmbeddedBroker(sasl=mechanism, users=USERS) as broker:
        broker.create_topic("t")
        extra = {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }
        assert confluent_roundtrip(broker.bootstrap_servers, extra, "t") == b"v1"
        assert b"kp" in kafka_python_roundtrip(
            broker.bootstrap_servers,
            mechanism,
            "t",
            sasl_plain_username="bob",
            sasl_plain_password="bob-secret",
        )


def test_oauthbearer_unsecured_token_with_confluent_and_kafka_python():
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class UnsecuredToken(AbstractTokenProvider):
        """kafka-python asks the application for the token; an unsecured JWT for bob."""

        def token(self):
            # Whole seconds, as librdkafka and Kafka's own login module write iat: a float
            # "now" lies in the future of a broker checking within the same millisecond.
            now = int(time.time())
            return unsecured_jwt({"sub": "bob", "iat": now, "exp": now + 3600})

    with EmbeddedBroker(sasl="OAUTHBEARER") as broker:
        # The chores cannot authenticate with OAUTHBEARER; auto-creation makes the topic.
        extra = {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=alice",
        }
        assert confluent_roundtrip(broker.bootstrap_servers, extra, "oauth") == b"v1"
        assert b"kp" in kafka_python_roundtrip(
            broker.bootstrap_servers,
            "OAUTHBEARER",
            "oauth",
            sasl_oauth_token_provider=UnsecuredToken(),
        )


def unsecured_jwt(claims):
    def enc(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{enc({'alg': 'none'})}.{enc(claims)}."


def test_oauthbearer_expired_token_fails_and_lifetime_follows_the_token():
    with EmbeddedBroker(
        sasl="OAUTHBEARER", overrides={"connections.max.reauth.ms": 3_600_000}
    ) as broker:
        now = time.time()
        for claims, ok in (
            ({"sub": "alice", "exp": now - 10}, False),
            ({"sub": "alice", "exp": now + 60, "iat": now}, True),
        ):
            with KafkaWire(broker.bootstrap_servers) as wire:
                wire.request(SaslHandshakeRequest(version=1, mechanism="OAUTHBEARER"))
                token = f"n,,\x01auth=Bearer {unsecured_jwt(claims)}\x01\x01".encode()
                response = wire.request(SaslAuthenticateRequest(version=1, auth_bytes=token))
                if ok:
                    assert response.error_code == 0
                    assert 50_000 < response.session_lifetime_ms <= 60_000
                else:
                    assert json.loads(bytes(response.auth_bytes))["status"] == "invalid_token"
                    response = wire.request(SaslAuthenticateRequest(version=1, auth_bytes=b"\x01"))
                    assert response.error_code == 58


def test_wrong_password_fails_and_closes_only_that_connection():
    with EmbeddedBroker(sasl="PLAIN", users=USERS) as broker:
        good = KafkaWire(broker.bootstrap_servers, sasl=("PLAIN", "alice", "alice-secret"))
        bad = KafkaWire(broker.bootstrap_servers)
        bad.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        response = bad.request(SaslAuthenticateRequest(version=1, auth_bytes=b"\0alice\0wrong"))
        assert response.error_code == 58  # SASL_AUTHENTICATION_FAILED
        assert "Invalid username or password" in response.error_message
        with pytest.raises((ConnectionError, OSError)):
            bad.request(MetadataRequest(version=1, topics=None))
        assert good.request(MetadataRequest(version=1, topics=None)).brokers
        good.close()


def test_failed_logins_wait_out_the_delay_without_stalling_other_clients():
    """connection.failed.authentication.delay.ms holds each failure's answer back (a lower
    bound, robust on a slow machine), on a timer: 12 concurrent failures take about one delay,
    not twelve, and a logged-in client is served all the while."""
    delay_s = 3.0
    # A broker process of its own: the clients' threads do not share its GIL.
    with EmbeddedBroker(
        "subprocess",
        sasl="SCRAM-SHA-256",
        users=USERS,
        overrides={"connection.failed.authentication.delay.ms": int(delay_s * 1000)},
    ) as broker:
        good = KafkaWire(broker.bootstrap_servers, sasl=("SCRAM-SHA-256", "alice", "alice-secret"))
        answered: list[float] = []

        def fail_once():
            started = time.monotonic()
            with pytest.raises(KafkaWireError) as failure:
                KafkaWire(
                    broker.bootstrap_servers, timeout=30, sasl=("SCRAM-SHA-256", "alice", "nope")
                )
            assert failure.value.error_code == 58  # SASL_AUTHENTICATION_FAILED
            answered.append(time.monotonic() - started)

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            failures = [pool.submit(fail_once) for _ in range(12)]
            latencies = []
            while not all(f.done() for f in failures):
                t0 = time.monotonic()
                good.request(MetadataRequest(version=1, topics=None))
                latencies.append(time.monotonic() - t0)
            for f in failures:
                f.result()
        total = time.monotonic() - started
        assert min(answered) >= delay_s * 0.95, answered
        assert total < delay_s * 6, f"12 failures took {total:.1f} s: the delay blocks"
        assert len(latencies) >= 3 and max(latencies) < delay_s * 0.75, latencies
        good.close()


def test_failed_login_closes_its_connection_after_the_answer():
    with EmbeddedBroker(sasl="PLAIN", users=USERS) as broker:  # the default delay, 100 ms
        with KafkaWire(broker.bootstrap_servers) as wire:
            wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
            started = time.monotonic()
            response = wire.request(
                SaslAuthenticateRequest(version=1, auth_bytes=b"\0alice\0wrong")
            )
            assert time.monotonic() - started >= 0.095
            assert response.error_code == 58
            with pytest.raises((ConnectionError, OSError)):
                wire.request(MetadataRequest(version=1, topics=None))


def test_requests_before_authentication_close_the_connection():
    with EmbeddedBroker(sasl="PLAIN", users=USERS) as broker:
        with KafkaWire(broker.bootstrap_servers) as wire:  # ApiVersions is allowed
            with pytest.raises((ConnectionError, OSError)):
                wire.request(MetadataRequest(version=1, topics=None))
        with KafkaWire(broker.bootstrap_servers) as wire:
            response = wire.request(SaslHandshakeRequest(version=1, mechanism="GSSAPI"))
            assert response.error_code == 33  # UNSUPPORTED_SASL_MECHANISM
            assert sorted(response.mechanisms) == ["PLAIN"]


def test_handshake_v0_uses_raw_sasl_tokens():
    with EmbeddedBroker(sasl="PLAIN", users=USERS) as broker:
        wire = KafkaWire(broker.bootstrap_servers, negotiate=False)
        assert wire.request(SaslHandshakeRequest(version=0, mechanism="PLAIN")).error_code == 0
        token = b"\0alice\0alice-secret"
        wire.send_raw(struct.pack(">i", len(token)) + token)
        assert wire.read_frame() == b""  # the (empty) PLAIN challenge, no Kafka header
        assert wire.request(MetadataRequest(version=1, topics=None)).brokers
        wire.close()


def test_session_lifetime_and_reauthentication():
    with EmbeddedBroker(
        sasl="PLAIN", users=USERS, overrides={"connections.max.reauth.ms": 1500}
    ) as broker:
        wire = KafkaWire(broker.bootstrap_servers)
        wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        response = wire.request(
            SaslAuthenticateRequest(version=1, auth_bytes=b"\0alice\0alice-secret")
        )
        assert response.session_lifetime_ms == 1500
        # Re-authenticate (KIP-368) before the session ends: the connection lives on.
        time.sleep(1.0)
        wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        response = wire.request(
            SaslAuthenticateRequest(version=2, auth_bytes=b"\0alice\0alice-secret")
        )
        assert response.error_code == 0 and response.session_lifetime_ms == 1500
        time.sleep(1.0)
        assert wire.request(MetadataRequest(version=1, topics=None)).brokers
        # A different principal may not take over the connection.
        wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        response = wire.request(SaslAuthenticateRequest(version=2, auth_bytes=b"\0bob\0bob-secret"))
        assert response.error_code == 58
        # Without re-authentication the session expires and the connection is closed.
        other = KafkaWire(broker.bootstrap_servers, sasl=("PLAIN", "alice", "alice-secret"))
        time.sleep(1.7)
        with pytest.raises((ConnectionError, OSError)):
            other.request(MetadataRequest(version=1, topics=None))
        wire.close()
        other.close()


def test_scram_credentials_are_managed_and_persisted():
    with EmbeddedBroker(sasl="SCRAM-SHA-256", users={"alice": "alice-secret"}) as broker:
        upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
        salt = b"0123456789abcdef"
        salted = scram.salted_password("SCRAM-SHA-256", "carol-secret", salt, 8192)
        with broker.wire() as wire:
            response = wire.request(
                AlterUserScramCredentialsRequest(
                    version=0,
                    deletions=[],
                    upsertions=[
                        upsert(
                            name="carol",
                            mechanism=1,
                            iterations=8192,
                            salt=salt,
                            salted_password=salted,
                        ),
                        upsert(
                            name="dave",
                            mechanism=1,
                            iterations=10,
                            salt=salt,
                            salted_password=salted,
                        ),
                    ],
                )
            )
            errors = {r.user: r.error_code for r in response.results}
            assert errors == {"carol": 0, "dave": 93}  # UNACCEPTABLE_CREDENTIAL
            users = DescribeUserScramCredentialsRequest.UserName
            described = wire.request(
                DescribeUserScramCredentialsRequest(
                    version=0, users=[users(name="carol"), users(name="nobody")]
                )
            )
            by_user = {r.user: r for r in described.results}
            assert [(c.mechanism, c.iterations) for c in by_user["carol"].credential_infos] == [
                (1, 8192)
            ]
            assert by_user["nobody"].error_code == 91  # RESOURCE_NOT_FOUND
        broker.restart()
        KafkaWire(broker.bootstrap_servers, sasl=("SCRAM-SHA-256", "carol", "carol-secret")).close()
        with pytest.raises(KafkaWireError):
            KafkaWire(broker.bootstrap_servers, sasl=("SCRAM-SHA-256", "carol", "wrong"))
