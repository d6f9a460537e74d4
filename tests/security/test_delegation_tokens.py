"""Delegation tokens (KIP-48) on a SASL_PLAINTEXT broker: created, renewed, expired and
described by Kafka's ``kafka-delegation-tokens`` tool and by raw requests, and used to log in
(SCRAM with ``tokenauth=true``) by Kafka's console producer and consumer; the errors of Kafka
4.4 for every refusal; expiry by the broker's sweep; tokens kept across a restart.

kafka-python and confluent-kafka (librdkafka) have no way to send the ``tokenauth`` SCRAM
extension, so the Java client is the stock client that logs in with a token here."""

from __future__ import annotations

import base64
import os
import re
import time

import pytest
from kafka.protocol.admin.acl import CreateAclsRequest

from compat_tests.reference import run_tool
from tests.security.acls import acl
from tests.security.delegation_tokens import (
    AUTHORIZATION_FAILED,
    MECHANISM,
    NONE,
    NOT_ALLOWED,
    NOT_FOUND,
    OWNER_MISMATCH,
    SECRET,
    USERS,
    create,
    describe,
    expire,
    listed,
    login,
    renew,
    token_login,
)
from wireserver.security.acls import Operation, ResourceType
from wireserver.testing import EmbeddedBroker, KafkaWireError

ALICE = "User:alice"
AUTH_DISABLED, INVALID_PRINCIPAL_TYPE, SASL_FAILED = 61, 67, 58


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(sasl=MECHANISM, users=USERS, overrides=SECRET) as broker:
        broker.create_topic("with-token")
        yield broker


# ---- the Java tool and the Java client --------------------------------------------------------


def client_config(path, username, password, token=False):
    extra = " tokenauth=true" if token else ""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            "security.protocol=SASL_PLAINTEXT\n"
            f"sasl.mechanism={MECHANISM}\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
            f'required username="{username}" password="{password}"{extra};\n'
        )
    return str(path)


def tokens_tool(broker, *args):
    done = run_tool("kafka-delegation-tokens", list(args), bootstrap=broker.bootstrap_servers)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_java_tool_manages_a_token_the_java_client_logs_in_with(broker, tmp_path):
    alice = client_config(tmp_path / "alice.properties", "alice", USERS["alice"])
    bob = client_config(tmp_path / "bob.properties", "bob", USERS["bob"])
    out = tokens_tool(
        broker,
        "--create",
        "--max-life-time-period",
        "-1",
        "--renewer-principal",
        "User:bob",
        "--command-config",
        alice,
    )
    token_id = re.search(r"Created delegation token with tokenId : (\S+)", out)[1]
    row = next(line.split() for line in out.splitlines() if line.startswith(token_id))
    hmac_b64, owner, requester, renewers = row[1:5]
    assert (owner, requester, renewers) == ("User:alice", "User:alice", "[User:bob]")

    described = tokens_tool(
        broker, "--describe", "--owner-principal", "User:alice", "--command-config", bob
    )
    assert "Total number of tokens : 1" in described and hmac_b64 in described

    renewed = tokens_tool(
        broker, "--renew", "--hmac", hmac_b64, "--renew-time-period", "-1", "--command-config", bob
    )
    assert "Completed renew operation" in renewed, renewed

    # The token logs in as its owner: Kafka's console producer and consumer use it.
    with_token = client_config(tmp_path / "token.properties", token_id, hmac_b64, token=True)
    lines = ["one", "two", "three"]
    produced = run_tool(
        "kafka-console-producer",
        ["--topic", "with-token", "--command-config", with_token],
        input="\n".join(lines) + "\n",
        bootstrap=broker.bootstrap_servers,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = run_tool(
        "kafka-console-consumer",
        ["--topic", "with-token", "--from-beginning", "--max-messages", "3"]
        + ["--timeout-ms", "30000", "--command-config", with_token],
        bootstrap=broker.bootstrap_servers,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == lines

    # A connection that logged in with a token may not ask for tokens.
    refused = run_tool(
        "kafka-delegation-tokens",
        ["--create", "--max-life-time-period", "-1", "--command-config", with_token],
        bootstrap=broker.bootstrap_servers,
    )
    assert refused.returncode != 0
    assert (
        "UnsupportedByAuthenticationException: Delegation Token requests are not allowed on "
        "PLAINTEXT/1-way SSL channels and on delegation token authenticated channels."
    ) in refused.stderr

    expired = tokens_tool(
        broker,
        "--expire",
        "--hmac",
        hmac_b64,
        "--expiry-time-period",
        "-1",
        "--command-config",
        alice,
    )
    assert "Completed expire operation" in expired, expired
    with pytest.raises(KafkaWireError) as failure:
        token_login(broker, token_id, base64.b64decode(hmac_b64))
    assert failure.value.error_code == SASL_FAILED


# ---- the rules, with raw requests ---------------------------------------------------------------


def test_a_token_logs_in_as_its_owner_and_cannot_ask_for_tokens(broker):
    with login(broker, "alice") as alice:
        made = create(alice)
        assert made.error_code == NONE
        assert (made.principal_name, made.token_requester_principal_name) == ("alice", "alice")
        assert made.expiry_timestamp_ms - made.issue_timestamp_ms == 24 * 3600 * 1000
        assert made.max_timestamp_ms - made.issue_timestamp_ms == 7 * 24 * 3600 * 1000
    with token_login(broker, made.token_id, bytes(made.hmac)) as wire:
        refused = create(wire)
        assert refused.error_code == NOT_ALLOWED
        assert (refused.principal_name, refused.issue_timestamp_ms) == ("alice", -1)
        assert renew(wire, made.hmac).error_code == NOT_ALLOWED
        assert expire(wire, made.hmac).expiry_timestamp_ms == -1
        assert describe(wire).error_code == NOT_ALLOWED
    with pytest.raises(KafkaWireError):  # a wrong HMAC is a wrong password
        token_login(broker, made.token_id, bytes(made.hmac)[::-1])


def test_only_the_owner_or_a_renewer_renews_or_expires(broker):
    with (
        login(broker, "alice") as alice,
        login(broker, "bob") as bob,
        login(broker, "carol") as carol,
    ):
        made = create(alice, renewers=["User:bob"])
        assert renew(carol, made.hmac).error_code == OWNER_MISMATCH
        assert expire(carol, made.hmac, 1000).error_code == OWNER_MISMATCH
        renewed = renew(bob, made.hmac, 60_000)
        assert renewed.error_code == NONE
        assert renewed.expiry_timestamp_ms < made.expiry_timestamp_ms  # min(asked, default)
        moved = expire(bob, made.hmac, 5_000)
        assert moved.error_code == NONE and moved.expiry_timestamp_ms < renewed.expiry_timestamp_ms
        # Owners and renewers see their tokens (others too here: there is no authorizer).
        assert made.token_id in listed(alice) and made.token_id in listed(bob)
        assert made.token_id in listed(bob, owners=["alice"])
        assert listed(alice, owners=[]) == set()
        assert listed(alice, owners=["carol"]) == set()
        assert expire(alice, made.hmac).error_code == NONE
        assert renew(alice, made.hmac).error_code == NOT_FOUND
        assert made.token_id not in listed(alice)


def test_create_refusals(broker):
    with login(broker, "alice") as alice:
        group = create(alice, renewers=["Group:ops"])
        assert group.error_code == INVALID_PRINCIPAL_TYPE
        assert group.issue_timestamp_ms == -1 and group.token_id == ""
        # Without an authorizer a requester may name another owner (KIP-373).
        for_bob = create(alice, owner="User:bob")
        assert for_bob.error_code == NONE
        assert (for_bob.principal_name, for_bob.token_requester_principal_name) == ("bob", "alice")
        short = create(alice, max_lifetime_ms=60_000)
        assert short.max_timestamp_ms - short.issue_timestamp_ms == 60_000
        assert short.expiry_timestamp_ms == short.max_timestamp_ms
        old = create(alice, version=1)
        assert old.error_code == NONE and old.principal_name == "alice"


def test_plaintext_connections_may_not_ask_for_tokens():
    with EmbeddedBroker(overrides=SECRET) as broker, broker.wire() as wire:
        refused = create(wire)
        assert (refused.error_code, refused.principal_name) == (NOT_ALLOWED, "ANONYMOUS")
        assert describe(wire).error_code == NOT_ALLOWED
        assert renew(wire, b"x").error_code == NOT_ALLOWED


def test_without_a_secret_tokens_are_disabled():
    with EmbeddedBroker(sasl=MECHANISM, users=USERS) as broker, login(broker, "alice") as alice:
        refused = create(alice)
        assert (refused.error_code, refused.issue_timestamp_ms) == (AUTH_DISABLED, 0)
        assert renew(alice, b"x").error_code == AUTH_DISABLED
        assert expire(alice, b"x").error_code == AUTH_DISABLED
        assert describe(alice).error_code == AUTH_DISABLED


def test_acls_decide_who_makes_and_sees_tokens_of_others():
    with EmbeddedBroker(sasl=MECHANISM, users=USERS, authorizer=True, overrides=SECRET) as broker:
        with login(broker, "alice") as alice, login(broker, "carol") as carol:
            assert create(alice, owner="User:bob").error_code == AUTHORIZATION_FAILED
            own = create(alice)
            assert own.error_code == NONE  # for oneself no ACL is needed
            assert own.token_id not in listed(carol)
            with broker.wire() as admin:
                granted = admin.request(
                    CreateAclsRequest(
                        version=3,
                        creations=[
                            acl(
                                "User:alice", Operation.CREATE_TOKENS, ResourceType.USER, "User:bob"
                            ),
                            acl("User:carol", Operation.DESCRIBE_TOKENS, ResourceType.USER, ALICE),
                        ],
                    )
                )
                assert [result.error_code for result in granted.results] == [0, 0]
            assert create(alice, owner="User:bob").error_code == NONE
            assert own.token_id in listed(carol)


def test_tokens_expire_at_their_max_lifetime(tmp_path):
    overrides = {
        **SECRET,
        "delegation.token.max.lifetime.ms": 1500,
        "delegation.token.expiry.check.interval.ms": 200,
    }
    with EmbeddedBroker(sasl=MECHANISM, users=USERS, overrides=overrides) as broker:
        with login(broker, "alice") as alice:
            made = create(alice, max_lifetime_ms=-1)
            assert made.max_timestamp_ms - made.issue_timestamp_ms == 1500
            # A session that logged in with the token ends when the token expires (Kafka's
            # SaslServerAuthenticator), re-authentication aside.
            kept = token_login(broker, made.token_id, bytes(made.hmac))
            assert kept.topics() is not None
            deadline = time.monotonic() + 15
            while made.token_id in listed(alice) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert made.token_id not in listed(alice)
            assert renew(alice, made.hmac).error_code == NOT_FOUND
        with pytest.raises((OSError, KafkaWireError)):
            kept.topics()
        with pytest.raises(KafkaWireError):
            token_login(broker, made.token_id, bytes(made.hmac))


def test_tokens_outlive_a_restart(tmp_path):
    data = tmp_path / "data"
    with EmbeddedBroker(sasl=MECHANISM, users=USERS, overrides=SECRET, data_dir=data) as broker:
        with login(broker, "alice") as alice:
            made = create(alice, renewers=["User:bob"])
    with EmbeddedBroker(sasl=MECHANISM, users=USERS, overrides=SECRET, data_dir=data) as broker:
        token_login(broker, made.token_id, bytes(made.hmac)).close()
        with login(broker, "bob") as bob:
            assert made.token_id in listed(bob)
    assert os.path.exists(data / "delegation-tokens.json")
