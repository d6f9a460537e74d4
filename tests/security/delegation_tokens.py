"""Delegation tokens as the token tests use them: the SCRAM users and signing secret a broker is
started with, logins with a password or a token, and Create/Renew/Expire/DescribeDelegationToken
sent on a raw connection."""

from __future__ import annotations

import base64

from wireserver.protocol.messages_tokens import (
    CreateDelegationTokenRequest,
    DescribeDelegationTokenRequest,
    ExpireDelegationTokenRequest,
    RenewDelegationTokenRequest,
)
from wireserver.testing import KafkaWire

MECHANISM = "SCRAM-SHA-512"
USERS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
SECRET = {"delegation.token.secret.key": "token-signing-secret"}
NONE, NOT_FOUND, OWNER_MISMATCH, NOT_ALLOWED, AUTHORIZATION_FAILED, EXPIRED = (
    0,
    62,
    63,
    64,
    65,
    66,
)


def login(broker, user: str) -> KafkaWire:
    return KafkaWire(broker.bootstrap_servers, sasl=(MECHANISM, user, USERS[user]))


def token_login(broker, token_id: str, hmac: bytes) -> KafkaWire:
    wire = KafkaWire(broker.bootstrap_servers)
    wire.authenticate(MECHANISM, token_id, base64.b64encode(hmac).decode(), token=True)
    return wire


def create(wire, renewers=(), owner=None, max_lifetime_ms=-1, version=3):
    renewer = CreateDelegationTokenRequest.CreatableRenewers
    return wire.request(
        CreateDelegationTokenRequest(
            version=version,
            owner_principal_type=owner and owner.split(":")[0],
            owner_principal_name=owner and owner.split(":")[1],
            renewers=[
                renewer(principal_type=p.split(":")[0], principal_name=p.split(":")[1])
                for p in renewers
            ],
            max_lifetime_ms=max_lifetime_ms,
        )
    )


def renew(wire, hmac, period=-1):
    return wire.request(RenewDelegationTokenRequest(version=2, hmac=hmac, renew_period_ms=period))


def expire(wire, hmac, period=-1):
    return wire.request(
        ExpireDelegationTokenRequest(version=2, hmac=hmac, expiry_time_period_ms=period)
    )


def describe(wire, owners=None):
    owner = DescribeDelegationTokenRequest.DescribeDelegationTokenOwner
    request = DescribeDelegationTokenRequest(
        version=3,
        owners=None
        if owners is None
        else [owner(principal_type="User", principal_name=name) for name in owners],
    )
    return wire.request(request)


def listed(wire, owners=None) -> set[str]:
    response = describe(wire, owners)
    assert response.error_code == NONE
    return {token.token_id for token in response.tokens}
