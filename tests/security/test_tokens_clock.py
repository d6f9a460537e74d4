"""Delegation token lifetimes on an injected clock (``security.tokens.DelegationTokens`` as the
broker builds it, persisting to a real directory): Kafka 4.4's arithmetic of create, renew,
expire and the expiry sweep, at the exact millisecond."""

from __future__ import annotations

from twisted.internet.task import Clock

from wireserver.config import BrokerConfig
from wireserver.protocol.errors import ErrorCode
from wireserver.security.tokens import DelegationTokens

ALICE, BOB = "User:alice", "User:bob"
CONFIG = {
    "delegation.token.secret.key": "s",
    "delegation.token.max.lifetime.ms": "10000",
    "delegation.token.expiry.time.ms": "4000",
}


def tokens(tmp_path, clock):
    config = BrokerConfig.load(None, CONFIG)
    return DelegationTokens(config, str(tmp_path), lambda: int(clock.seconds() * 1000))


def test_lifetimes_follow_kafka(tmp_path):
    clock = Clock()
    store = tokens(tmp_path, clock)
    info, hmac = store.create(ALICE, ALICE, [BOB], max_lifetime_ms=-1)
    assert (info.issue_ms, info.expiry_ms, info.max_ms) == (0, 4000, 10000)
    clock.advance(3)  # 3000 ms
    assert store.renew(BOB, hmac, 60_000) == (ErrorCode.NONE, 7000)  # min(asked, 4000)
    assert store.renew(BOB, hmac, 1000) == (ErrorCode.NONE, 4000)
    clock.advance(0.5)
    assert store.renew(ALICE, hmac, -1) == (ErrorCode.NONE, 7500)  # the default period
    clock.advance(3.5)
    assert store.renew(ALICE, hmac, -1) == (ErrorCode.NONE, 10000)  # never past max
    assert store.expire(ALICE, hmac, 500) == (ErrorCode.NONE, 7500)
    clock.advance(0.5)  # 7500: not yet past the expiry
    assert store.remove_expired() == []
    clock.advance(0.001)
    assert store.renew(ALICE, hmac, -1) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
    assert store.expire(BOB, hmac, 10) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
    assert store.credential(info.token_id, "SCRAM-SHA-256") is not None  # until swept
    assert store.remove_expired() == [info.token_id]
    assert store.credential(info.token_id, "SCRAM-SHA-256") is None
    assert store.expire(ALICE, hmac, -1) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)


def test_shorter_max_lifetime_and_restart(tmp_path):
    clock = Clock()
    store = tokens(tmp_path, clock)
    info, hmac = store.create(ALICE, BOB, [], max_lifetime_ms=2500)
    assert (info.expiry_ms, info.max_ms) == (2500, 2500)
    again = tokens(tmp_path, clock)
    assert again.token(info.token_id) == info
    assert again.hmac(info.token_id) == hmac
    assert again.renew(BOB, hmac, -1) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
