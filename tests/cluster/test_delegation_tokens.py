"""Delegation tokens in cluster mode live in ZooKeeper (Kafka's ZooKeeper-era
``/delegation_token`` layout): a token made through one broker logs in on every other, a
renewal or expiry through another broker reaches them all, and a broker that starts later
loads them."""

from __future__ import annotations

import json

import pytest

from tests.cluster.conftest import Cluster, wait_for, zk_client
from tests.security.delegation_tokens import (
    MECHANISM,
    NONE,
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
from wireserver.testing import KafkaWireError

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-tokens"
OVERRIDES = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": MECHANISM,
    **SECRET,
}


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, CHROOT, OVERRIDES, sasl=MECHANISM, users=USERS).start()
    yield nodes
    nodes.close()


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def logs_in(broker, made) -> bool:
    try:
        token_login(broker, made.token_id, bytes(made.hmac)).close()
    except KafkaWireError:
        return False
    return True


def test_a_token_made_on_one_broker_logs_in_on_every_broker(cluster, zk):
    one, two, three = (cluster.brokers[i] for i in sorted(cluster.brokers))
    with login(one, "alice") as alice:
        made = create(alice, renewers=["User:bob"])
        assert made.error_code == NONE
    data, _ = zk.get(f"/delegation_token/tokens/{made.token_id}")
    assert json.loads(data) == {
        "version": 3,
        "owner": "User%3Aalice",
        "tokenRequester": "User%3Aalice",
        "renewers": ["User%3Abob"],
        "issueTimestamp": made.issue_timestamp_ms,
        "maxTimestamp": made.max_timestamp_ms,
        "expiryTimestamp": made.expiry_timestamp_ms,
        "tokenId": made.token_id,
    }
    for broker in (one, two, three):
        wait_for(lambda broker=broker: logs_in(broker, made), timeout=15)
    with login(three, "bob") as bob:
        assert made.token_id in listed(bob)
        renewed = renew(bob, made.hmac, 60_000)
        assert renewed.error_code == NONE
    with login(two, "alice") as alice:
        wait_for(
            lambda: (
                [t.expiry_timestamp for t in alice_tokens(alice, made.token_id)]
                == [renewed.expiry_timestamp_ms]
            ),
            timeout=15,
        )
        assert expire(alice, made.hmac).error_code == NONE
    assert zk.exists(f"/delegation_token/tokens/{made.token_id}") is None
    for broker in (one, two, three):
        wait_for(lambda broker=broker: not logs_in(broker, made), timeout=15)


def alice_tokens(wire, token_id):
    return [t for t in describe(wire, ["alice"]).tokens if t.token_id == token_id]


def test_a_broker_that_restarts_loads_the_tokens(cluster):
    first = cluster.brokers[min(cluster.brokers)]
    last = cluster.brokers[max(cluster.brokers)]
    last.stop()
    with login(first, "alice") as alice:
        made = create(alice)  # while the last broker is down
    last.start()
    wait_for(lambda: logs_in(last, made), timeout=30)
