"""The delegation token messages (KIP-48), which kafka-python does not ship, at the versions a
Kafka 4.4 broker serves, transcribed from Kafka's message definitions and built with
``protocol.messages_extra``'s machinery (so they are compared with Kafka's in the conformance
tests like the others written here).

- CreateDelegationToken (38) v1-3: v2 is flexible; v3 lets the requester name the owner and
  answers who requested the token (KIP-373).
- RenewDelegationToken (39) and ExpireDelegationToken (40) v1-2: the token's HMAC and a period.
- DescribeDelegationToken (41) v1-3: owners (null = every token); v3 answers the requester.
"""

from __future__ import annotations

from wireserver.protocol.messages_extra import _define, _field, _nullable_string
from wireserver.protocol.messages_extra import _message as _any_message


def _message(key: int, kind: str, name: str, valid: str, fields: list[dict]) -> dict:
    """The token messages became flexible at v2."""
    return _any_message(key, kind, name, valid, fields, flexible="2+")


def _principal(prefix: str = "", versions: str = "0+") -> list[dict]:
    return [
        _field(f"{prefix}PrincipalType", "string", versions),
        _field(f"{prefix}PrincipalName", "string", versions),
    ]


def _hmac_and_period(period: str) -> list[dict]:
    return [_field("Hmac", "bytes"), _field(period, "int64")]


def _expiry_answer() -> list[dict]:
    return [
        _field("ErrorCode", "int16"),
        _field("ExpiryTimestampMs", "int64"),
        _field("ThrottleTimeMs", "int32"),
    ]


CREATE_REQUEST = _message(
    38,
    "request",
    "CreateDelegationToken",
    "1-3",
    [
        _nullable_string("OwnerPrincipalType", "3+"),
        _nullable_string("OwnerPrincipalName", "3+"),
        _field("Renewers", "[]CreatableRenewers", fields=_principal()),
        _field("MaxLifetimeMs", "int64"),
    ],
)
CREATE_RESPONSE = _message(
    38,
    "response",
    "CreateDelegationToken",
    "1-3",
    [
        _field("ErrorCode", "int16"),
        *_principal(),
        *_principal("TokenRequester", "3+"),
        _field("IssueTimestampMs", "int64"),
        _field("ExpiryTimestampMs", "int64"),
        _field("MaxTimestampMs", "int64"),
        _field("TokenId", "string"),
        _field("Hmac", "bytes"),
        _field("ThrottleTimeMs", "int32"),
    ],
)
RENEW_REQUEST = _message(
    39, "request", "RenewDelegationToken", "1-2", _hmac_and_period("RenewPeriodMs")
)
RENEW_RESPONSE = _message(39, "response", "RenewDelegationToken", "1-2", _expiry_answer())
EXPIRE_REQUEST = _message(
    40, "request", "ExpireDelegationToken", "1-2", _hmac_and_period("ExpiryTimePeriodMs")
)
EXPIRE_RESPONSE = _message(40, "response", "ExpireDelegationToken", "1-2", _expiry_answer())
DESCRIBE_REQUEST = _message(
    41,
    "request",
    "DescribeDelegationToken",
    "1-3",
    [
        _field(
            "Owners",
            "[]DescribeDelegationTokenOwner",
            nullableVersions="0+",
            fields=_principal(),
        )
    ],
)
DESCRIBE_RESPONSE = _message(
    41,
    "response",
    "DescribeDelegationToken",
    "1-3",
    [
        _field("ErrorCode", "int16"),
        _field(
            "Tokens",
            "[]DescribedDelegationToken",
            fields=[
                *_principal(),
                *_principal("TokenRequester", "3+"),
                _field("IssueTimestamp", "int64"),
                _field("ExpiryTimestamp", "int64"),
                _field("MaxTimestamp", "int64"),
                _field("TokenId", "string"),
                _field("Hmac", "bytes"),
                _field("Renewers", "[]DescribedDelegationTokenRenewer", fields=_principal()),
            ],
        ),
        _field("ThrottleTimeMs", "int32"),
    ],
)

CreateDelegationTokenRequest = _define(CREATE_REQUEST)
CreateDelegationTokenResponse = _define(CREATE_RESPONSE)
RenewDelegationTokenRequest = _define(RENEW_REQUEST)
RenewDelegationTokenResponse = _define(RENEW_RESPONSE)
ExpireDelegationTokenRequest = _define(EXPIRE_REQUEST)
ExpireDelegationTokenResponse = _define(EXPIRE_RESPONSE)
DescribeDelegationTokenRequest = _define(DESCRIBE_REQUEST)
DescribeDelegationTokenResponse = _define(DESCRIBE_RESPONSE)
