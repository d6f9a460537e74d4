"""Delegation tokens (KIP-48) as a Kafka 4.4 cluster keeps them: what the token APIs change and
what SCRAM logins with ``tokenauth=true`` read.

A token is its information (id, owner, requester, renewers, issue / expiry / max timestamps);
its HMAC is HMAC-SHA512 of the token id, keyed with ``delegation.token.secret.key`` (UTF-8),
as Kafka's ``DelegationTokenControlManager.createHmac``. It is never stored: it is computed
again from the secret. A client logs in with SCRAM-SHA-256/512 using the token id as user name
and the base64 HMAC as password; the broker holds for each token a SCRAM credential of that
password (4096 iterations, a random salt), as Kafka's ``DelegationTokenManager`` does.

The rules are those of Kafka 4.4's controller (``DelegationTokenControlManager``): creation
takes the smaller of the requested and configured max lifetime, renewal and expiry need the
owner or a renewer, an expired token can be neither renewed nor have its expiry moved (but can
be expired at once with a negative period), and a sweep every
``delegation.token.expiry.check.interval.ms`` removes tokens past their expiry or max time.
Until swept, an expired token still logs in, as in Kafka.

``DelegationTokens`` keeps them in ``<first log dir>/delegation-tokens.json`` on one node; in
cluster mode ``use_shared`` hands them to ZooKeeper (``wireserver.cluster.delegation_tokens``).
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.security import scram
from wireserver.storage.checkpoint import atomic_write

FILE_NAME = "delegation-tokens.json"
USER_TYPE = "User"


@dataclass(frozen=True)
class TokenInformation:
    """Kafka's ``TokenInformation``; principals are ``Type:name`` strings."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int

    def owner_or_renewer(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms


def new_token_id() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: URL-safe base64 of 16 random bytes, without
    padding, never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


def _plus(now: int, duration: int) -> int:
    """``now + duration``, capped at Long.MAX_VALUE as Kafka's ``sum``."""
    return min(now + duration, 2**63 - 1)


@dataclass
class _Token:
    info: TokenInformation
    hmac: bytes
    credentials: dict[str, scram.ScramCredential] = field(default_factory=dict)


class DelegationTokens:
    """Every token this broker knows, by id and by HMAC."""

    def __init__(self, config: Any, directory: str | None, now_ms: Callable[[], int]):
        secret = config.get("delegation.token.secret.key")
        self.secret: bytes | None = secret.encode("utf-8") if secret else None
        self.max_lifetime_ms: int = config["delegation.token.max.lifetime.ms"]
        self.renew_ms: int = config["delegation.token.expiry.time.ms"]
        self.now_ms = now_ms
        self.path = os.path.join(directory, FILE_NAME) if directory else None
        self.shared: Any = None  # the ZooKeeper store in cluster mode
        self._tokens: dict[str, _Token] = {}
        self._by_hmac: dict[bytes, str] = {}
        if self.enabled and self.path and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as handle:
                for item in json.load(handle).get("tokens", []):
                    item["renewers"] = tuple(item["renewers"])
                    self.apply(TokenInformation(**item))

    @property
    def enabled(self) -> bool:
        """Kafka's ``tokenAuthEnabled``: a non-empty ``delegation.token.secret.key``."""
        return bool(self.secret)

    def hmac(self, token_id: str) -> bytes:
        import hmac

        assert self.secret is not None
        return hmac.new(self.secret, token_id.encode("utf-8"), "sha512").digest()

    # -- the cache ------------------------------------------------------------------------

    def use_shared(self, shared: Any) -> None:
        """Keep the tokens in ``shared`` from now on (``load()`` gives them all, ``put(info)``
        and ``remove(token_id)`` change one and tell every broker)."""
        self.shared = shared
        for token_id in list(self._tokens):
            self.forget(token_id)
        for info in shared.load():
            self.apply(info)

    def apply(self, info: TokenInformation) -> None:
        """Add or replace a token in this broker's cache (no persistence)."""
        known = self._tokens.get(info.token_id)
        if known is not None:
            known.info = info
            return
        token = _Token(info, self.hmac(info.token_id))
        self._tokens[info.token_id] = token
        self._by_hmac[token.hmac] = info.token_id

    def forget(self, token_id: str) -> None:
        token = self._tokens.pop(token_id, None)
        if token is not None:
            self._by_hmac.pop(token.hmac, None)

    def tokens(self) -> list[tuple[TokenInformation, bytes]]:
        return [(token.info, token.hmac) for token in self._tokens.values()]

    def token(self, token_id: str) -> TokenInformation | None:
        token = self._tokens.get(token_id)
        return token.info if token else None

    def credential(self, token_id: str, mechanism: str) -> scram.ScramCredential | None:
        """The SCRAM credential a login with ``token_id`` is checked against (made once per
        token and mechanism: the password is the base64 HMAC)."""
        token = self._tokens.get(token_id)
        if token is None:
            return None
        if mechanism not in token.credentials:
            password = base64.b64encode(token.hmac).decode("ascii")
            token.credentials[mechanism] = scram.ScramCredential.from_password(mechanism, password)
        return token.credentials[mechanism]

    # -- what the APIs do -----------------------------------------------------------------

    def create(
        self, owner: str, requester: str, renewers: Iterable[str], max_lifetime_ms: int
    ) -> tuple[TokenInformation, bytes]:
        now = self.now_ms()
        lifetime = self.max_lifetime_ms
        if max_lifetime_ms > 0:
            lifetime = min(lifetime, max_lifetime_ms)
        max_ms = _plus(now, lifetime)
        info = TokenInformation(
            new_token_id(),
            owner,
            requester,
            tuple(renewers),
            now,
            max_ms,
            min(max_ms, _plus(now, self.renew_ms)),
        )
        self._store(info)
        return info, self._tokens[info.token_id].hmac

    def renew(self, principal: str, hmac: bytes, period_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry timestamp); the checks in Kafka 4.4's order."""
        info = self._for_hmac(hmac)
        now = self.now_ms()
        if info is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        if info.expired(now):
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        if not info.owner_or_renewer(principal):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        renew = min(self.renew_ms, period_ms) if period_ms > 0 else self.renew_ms
        expiry = min(info.max_ms, now + renew)
        self._store(replace(info, expiry_ms=expiry))
        return ErrorCode.NONE, expiry

    def expire(self, principal: str, hmac: bytes, period_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry timestamp); a negative period removes the token at once."""
        info = self._for_hmac(hmac)
        now = self.now_ms()
        if info is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        if not info.owner_or_renewer(principal):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        if period_ms < 0:
            self._remove(info.token_id)
            return ErrorCode.NONE, now
        if info.expired(now):
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        expiry = min(info.max_ms, _plus(now, period_ms))
        self._store(replace(info, expiry_ms=expiry))
        return ErrorCode.NONE, expiry

    def remove_expired(self) -> list[str]:
        """The periodic sweep: remove every token past its expiry or max time."""
        now = self.now_ms()
        gone = [token.info.token_id for token in self._tokens.values() if token.info.expired(now)]
        for token_id in gone:
            self._remove(token_id)
        return gone

    # -- persistence ----------------------------------------------------------------------

    def _for_hmac(self, hmac: bytes) -> TokenInformation | None:
        token_id = self._by_hmac.get(bytes(hmac))
        return self._tokens[token_id].info if token_id is not None else None

    def _store(self, info: TokenInformation) -> None:
        self.apply(info)
        if self.shared is not None:
            self.shared.put(info)
        else:
            self._save()

    def _remove(self, token_id: str) -> None:
        self.forget(token_id)
        if self.shared is not None:
            self.shared.remove(token_id)
        else:
            self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        data = {"version": 1, "tokens": [asdict(token.info) for token in self._tokens.values()]}
        atomic_write(self.path, json.dumps(data, indent=1, sort_keys=True))


def requests_allowed(security: Any) -> bool:
    """Kafka's ``allowTokenRequests``: token APIs need an authenticated connection that did
    not itself log in with a token (not PLAINTEXT, not SSL without a client certificate)."""
    if security is None or security.protocol == "PLAINTEXT":
        return False
    if security.protocol == "SSL" and security.principal == "User:ANONYMOUS":
        return False
    authenticator = security.authenticator
    return not (authenticator is not None and authenticator.token_authenticated)


def principal_of(principal_type: str, name: str) -> str:
    return f"{principal_type}:{name}"


def split_principal(principal: str) -> tuple[str, str]:
    """``Type:name`` -> (type, name), as Kafka's ``SecurityUtils.parseKafkaPrincipal``."""
    principal_type, _, name = principal.partition(":")
    return principal_type, name


def change_expiry(ctx: Any, action: str, period_ms: int) -> Any:
    """RenewDelegationToken / ExpireDelegationToken (``action`` names the method): the same
    checks before, the same answer after."""
    if not requests_allowed(ctx.security):
        error, expiry = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1
    elif not ctx.services.security.tokens.enabled:
        error, expiry = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0
    else:
        change = getattr(ctx.services.security.tokens, action)
        error, expiry = change(ctx.security.principal, bytes(ctx.body.hmac), period_ms)
    return ctx.response(error_code=error, expiry_timestamp_ms=expiry, throttle_time_ms=0)
