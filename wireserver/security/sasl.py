"""SASL authentication on SASL_PLAINTEXT / SASL_SSL listeners, as Kafka's
``SaslServerAuthenticator`` does it.

Per connection one ``SaslAuthenticator`` with an explicit state machine::

    HANDSHAKE ──SaslHandshake──► AUTHENTICATE ──last token ok──► COMPLETE
        │                            │                              │  SaslHandshake v1
        └────────── failure ─────────┴──► FAILED ◄──── failure ─────┤  (re-authentication,
                                                                    ▼   KIP-368)
                                                                AUTHENTICATE

Before COMPLETE only ApiVersions, SaslHandshake and SaslAuthenticate are allowed; anything else
closes the connection (Kafka: IllegalSaslStateException). SaslHandshake v0 switches the
connection to raw SASL tokens (length-prefixed, no Kafka header); v1 carries the tokens in
SaslAuthenticate requests. A failure answers SASL_AUTHENTICATION_FAILED (framed mode) and closes
that connection only.

Mechanisms: PLAIN (users from the PlainLoginModule's ``user_<name>="<password>"`` options),
SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802; salted credentials from ``scram.ScramStore``, or
with the ``tokenauth=true`` extension a delegation token's from ``tokens.DelegationTokens``:
the principal is then the token's owner),
OAUTHBEARER with unsecured JWS tokens (``alg: none``), validated as Kafka's
``OAuthBearerUnsecuredValidatorCallbackHandler`` does (``exp`` required and in the future, the
principal claim ``sub`` by default, required scopes). GSSAPI is not supported.

With ``connections.max.reauth.ms`` > 0, or a credential that expires (an OAUTHBEARER or a
delegation token), SaslAuthenticate v1+ returns the session lifetime (the sooner of the two,
as Kafka); a connection whose session has expired is closed on its next request unless that
request re-authenticates.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.security import scram

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class SaslFailure(Exception):
    """Authentication failed; the message goes to the client (SaslAuthenticate error_message)."""


class IllegalSaslState(Exception):
    """A request that the authentication state does not allow."""


# ----------------------------------------------------------------------------------------------
# JAAS configuration


@dataclass
class JaasModule:
    class_name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


_JAAS_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))')


def parse_jaas(text: str) -> list[JaasModule]:
    """Parse a ``sasl.jaas.config`` value: ``<LoginModule class> <flag> key=value ... ;``
    (values quoted or bare), one or more modules."""
    tokens: list[tuple[str, str]] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        match = _JAAS_TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"malformed JAAS config near {text[pos : pos + 20]!r}")
        pos = match.end()
        quoted, bare, equals, semicolon = match.groups()
        if quoted is not None:
            tokens.append(("value", re.sub(r"\\(.)", r"\1", quoted)))
        elif bare is not None:
            tokens.append(("word", bare))
        elif equals:
            tokens.append(("=", "="))
        elif semicolon:
            tokens.append((";", ";"))
        if pos < len(text) and text[pos:].strip() == "":
            break
    modules: list[JaasModule] = []
    index = 0
    while index < len(tokens):
        if index + 1 >= len(tokens) or tokens[index][0] != "word" or tokens[index + 1][0] != "word":
            raise ValueError("a JAAS entry starts with a login module class and a control flag")
        module = JaasModule(tokens[index][1], tokens[index + 1][1].lower())
        if module.flag not in ("required", "requisite", "sufficient", "optional"):
            raise ValueError(f"unknown JAAS control flag {module.flag!r}")
        index += 2
        while index < len(tokens) and tokens[index][0] != ";":
            if (
                index + 2 >= len(tokens)
                or tokens[index][0] != "word"
                or tokens[index + 1][0] != "="
                or tokens[index + 2][0] not in ("word", "value")
            ):
                raise ValueError("JAAS options are key=value pairs")
            module.options[tokens[index][1]] = tokens[index + 2][1]
            index += 3
        if index >= len(tokens):
            raise ValueError("a JAAS entry must end with ';'")
        index += 1
        modules.append(module)
    if not modules:
        raise ValueError("empty JAAS config")
    return modules


# ----------------------------------------------------------------------------------------------
# Mechanisms: evaluate(token) → challenge; ``complete`` and ``authorization_id`` once done.


class Mechanism:
    name = ""
    complete = False
    authorization_id: str | None = None
    #: when the credential itself expires (OAUTHBEARER and delegation tokens), in ms since
    #: the epoch
    credential_expiry_ms: int | None = None
    #: logged in with a delegation token (SCRAM ``tokenauth=true``): such a connection may not
    #: create, renew, expire or describe tokens
    token_authenticated = False

    def evaluate(self, token: bytes) -> bytes:
        raise NotImplementedError


class PlainMechanism(Mechanism):
    name = "PLAIN"

    def __init__(self, users: dict[str, str]):
        self.users = users

    def evaluate(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslFailure("Invalid SASL/PLAIN response: expected 3 tokens")
        try:
            authzid, username, password = (part.decode("utf-8") for part in parts)
        except UnicodeDecodeError:
            raise SaslFailure("Invalid SASL/PLAIN response: not UTF-8") from None
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        expected = self.users.get(username)
        if expected is None or not scram.same_bytes(expected.encode(), password.encode()):
            raise SaslFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id "
                "that is different from username"
            )
        self.authorization_id = username
        self.complete = True
        return b""


def _scram_name(text: str) -> str:
    if re.search(r"=(?!2C|3D)", text):
        raise SaslFailure("Invalid username in SCRAM client first message")
    return text.replace("=2C", ",").replace("=3D", "=")


class ScramMechanism(Mechanism):
    _CLIENT_FIRST = re.compile(
        r"^n,(?:a=(?P<authzid>[^,]*))?,(?P<bare>n=(?P<name>[^,]*),r=(?P<nonce>[^,]+)"
        r"(?P<extensions>(?:,[^,]*)*))$"
    )
    _CLIENT_FINAL = re.compile(
        r"^(?P<without_proof>c=(?P<binding>[^,]*),r=(?P<nonce>[^,]*)(?:,[^,]*)*?),"
        r"p=(?P<proof>[^,]*)$"
    )

    def __init__(self, mechanism: str, store: scram.ScramStore, tokens: Any = None):
        self.name = mechanism
        self.store = store
        self.tokens = tokens  # security.tokens.DelegationTokens
        self.step = 0
        self.credential: scram.ScramCredential | None = None

    def evaluate(self, token: bytes) -> bytes:
        """Every SCRAM failure (an unknown user, a bad proof, a malformed message) reaches
        the client as one message, as Kafka's ``SaslServerAuthenticator`` reports any
        ``SaslException``: it does not tell an unknown user from a wrong password."""
        try:
            return self._evaluate(token)
        except SaslFailure as exc:
            raise SaslFailure(
                f"Authentication failed during authentication due to invalid "
                f"credentials with SASL mechanism {self.name}"
            ) from exc

    def _evaluate(self, token: bytes) -> bytes:
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("Invalid SCRAM message: not UTF-8") from None
        if self.step == 0:
            return self._first(message)
        if self.step == 1:
            return self._final(message)
        raise SaslFailure("Unexpected SCRAM message after authentication completed")

    def _first(self, message: str) -> bytes:
        match = self._CLIENT_FIRST.match(message)
        if match is None:
            raise SaslFailure("Invalid SCRAM client first message")
        extensions = {
            item.partition("=")[0]: item.partition("=")[2]
            for item in match["extensions"].split(",")
            if item
        }
        username = _scram_name(match["name"])
        if extensions.get("tokenauth", "false").lower() == "true":
            # A delegation token: the user name is the token id, the principal its owner.
            token = self.tokens.token(username) if self.tokens is not None else None
            if token is None:
                raise SaslFailure(f"Token Authentication failed: Invalid tokenId : {username}")
            self.credential = self.tokens.credential(username, self.name)
            self.authorized_as = token.owner.partition(":")[2]
            self.credential_expiry_ms = token.expiry_ms
            self.token_authenticated = True
        else:
            self.credential = self.store.for_login(username, self.name)
            self.authorized_as = username
        if self.credential is None:
            raise SaslFailure("Authentication failed: Invalid user credentials")
        authzid = match["authzid"]
        if authzid and _scram_name(authzid) != username:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id "
                "that is different from username"
            )
        self.username = username
        self.gs2_header = message[: message.index(match["bare"])]
        self.nonce = match["nonce"] + scram.nonce()
        salt = base64.b64encode(self.credential.salt).decode()
        self.server_first = f"r={self.nonce},s={salt},i={self.credential.iterations}"
        self.client_first_bare = match["bare"]
        self.step = 1
        return self.server_first.encode()

    def _final(self, message: str) -> bytes:
        self.step = 2
        match = self._CLIENT_FINAL.match(message)
        if match is None:
            raise SaslFailure("Invalid SCRAM client final message")
        try:
            binding = base64.b64decode(match["binding"], validate=True)
            proof = base64.b64decode(match["proof"], validate=True)
        except (binascii.Error, ValueError):
            raise SaslFailure("Invalid SCRAM client final message: bad base64") from None
        if binding != self.gs2_header.encode():
            raise SaslFailure("Invalid SCRAM client final message: channel binding mismatch")
        if match["nonce"] != self.nonce:
            raise SaslFailure("Invalid SCRAM client final message: nonce mismatch")
        auth_message = ",".join(
            (self.client_first_bare, self.server_first, match["without_proof"])
        ).encode()
        credential = self.credential
        assert credential is not None
        signature = scram.hmac_of(self.name, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslFailure("Invalid client proof length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not scram.same_bytes(scram.digest(self.name, client_key), credential.stored_key):
            raise SaslFailure("Invalid client credentials")
        server_signature = scram.hmac_of(self.name, credential.server_key, auth_message)
        self.authorization_id = self.authorized_as
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class OAuthBearerMechanism(Mechanism):
    """RFC 7628 with Kafka's unsecured validator (JWS ``alg: none``)."""

    name = "OAUTHBEARER"
    _RESPONSE = re.compile(r"^n,(?:a=(?P<authzid>[^,]*))?,\x01(?P<kvs>.*)\x01$", re.DOTALL)

    def __init__(self, options: dict[str, str], now_ms: Callable[[], int]):
        self.options = options
        self.now_ms = now_ms
        self.error_sent: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.error_sent is not None:
            # The client acknowledges our error challenge with a lone 0x01 (RFC 7628 3.2.3).
            raise SaslFailure(f"Authentication failed: {self.error_sent}")
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("Invalid OAUTHBEARER client response: not UTF-8") from None
        match = self._RESPONSE.match(message)
        if match is None:
            raise SaslFailure("Invalid OAUTHBEARER client response")
        values = {}
        for item in match["kvs"].split("\x01"):
            if item:
                key, _, value = item.partition("=")
                values[key] = value
        auth = values.get("auth", "")
        if not auth.lower().startswith("bearer "):
            raise SaslFailure("Invalid OAUTHBEARER client response: no bearer token")
        try:
            principal, expiry_ms = self._validate(auth[7:].strip())
        except SaslFailure as exc:
            self.error_sent = str(exc)
            scope = self.options.get("unsecuredValidatorRequiredScope", "")
            return json.dumps({"status": "invalid_token", "scope": scope}).encode()
        if match["authzid"] and match["authzid"] != principal:
            raise SaslFailure(
                "Authentication failed: authorization id differs from the token's principal"
            )
        self.authorization_id = principal
        self.credential_expiry_ms = expiry_ms
        self.complete = True
        return b""

    def _validate(self, token: str) -> tuple[str, int]:
        parts = token.split(".")
        if len(parts) != 3:
            raise SaslFailure("the token is not a JWS compact serialization")
        try:
            header = json.loads(_b64url(parts[0]))
            claims = json.loads(_b64url(parts[1]))
        except (ValueError, binascii.Error):
            raise SaslFailure("the token's header or claims are not base64url JSON") from None
        if not isinstance(header, dict) or header.get("alg") != "none" or parts[2]:
            raise SaslFailure("only unsecured tokens (alg none, no signature) are accepted")
        if not isinstance(claims, dict):
            raise SaslFailure("the token's claims are not a JSON object")
        skew_ms = int(self.options.get("unsecuredValidatorAllowableClockSkewMs", "0") or 0)
        now = self.now_ms()
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise SaslFailure("the token has no numeric exp claim")
        expiry_ms = int(exp * 1000)
        if now - skew_ms >= expiry_ms:
            raise SaslFailure("the token has expired")
        iat = claims.get("iat")
        if (
            isinstance(iat, (int, float))
            and not isinstance(iat, bool)
            and iat * 1000 > now + skew_ms
        ):
            raise SaslFailure("the token was issued in the future")
        principal_claim = self.options.get("unsecuredValidatorPrincipalClaimName", "sub")
        principal = claims.get(principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise SaslFailure(f"the token has no {principal_claim} claim")
        required = self.options.get("unsecuredValidatorRequiredScope", "").split()
        if required:
            scope_claim = self.options.get("unsecuredValidatorScopeClaimName", "scope")
            scope = claims.get(scope_claim, [])
            granted = set(scope.split() if isinstance(scope, str) else scope or [])
            missing = [item for item in required if item not in granted]
            if missing:
                raise SaslFailure(f"the token lacks the required scope {missing}")
        return principal, expiry_ms


# ----------------------------------------------------------------------------------------------
# Per-listener settings


@dataclass
class SaslListenerSettings:
    """What a SASL listener's connections need: the mechanisms and their credentials."""

    listener: str
    mechanisms: list[str]
    plain_users: dict[str, str]
    oauth_options: dict[str, str]
    max_reauth_ms: int
    scram_store: scram.ScramStore | None
    #: ``connection.failed.authentication.delay.ms``: how long a failure's answer waits
    failed_authentication_delay_ms: int = 0
    #: the broker's delegation tokens (``security.tokens.DelegationTokens``), for SCRAM logins
    #: with ``tokenauth=true``
    tokens: Any = None

    @classmethod
    def from_config(
        cls,
        config: Any,
        listener: str,
        scram_store: scram.ScramStore | None,
        tokens: Any = None,
    ) -> SaslListenerSettings:
        enabled = [
            m.strip().upper()
            for m in config.listener_value(listener, "sasl.enabled.mechanisms") or []
        ]
        mechanisms = [m for m in enabled if m in SUPPORTED_MECHANISMS]
        plain_users: dict[str, str] = {}
        oauth_options: dict[str, str] = {}
        if "PLAIN" in mechanisms:
            for module in _modules(config, listener, "PLAIN"):
                plain_users.update(
                    {
                        key[5:]: value
                        for key, value in module.options.items()
                        if key.startswith("user_")
                    }
                )
        if "OAUTHBEARER" in mechanisms:
            for module in _modules(config, listener, "OAUTHBEARER"):
                oauth_options.update(module.options)
        return cls(
            listener,
            mechanisms,
            plain_users,
            oauth_options,
            config.listener_value(listener, "connections.max.reauth.ms") or 0,
            scram_store,
            config.get("connection.failed.authentication.delay.ms") or 0,
            tokens,
        )

    def mechanism(self, name: str, now_ms: Callable[[], int]) -> Mechanism:
        if name == "PLAIN":
            return PlainMechanism(self.plain_users)
        if name in scram.MECHANISMS:
            assert self.scram_store is not None
            return ScramMechanism(name, self.scram_store, self.tokens)
        if name == "OAUTHBEARER":
            return OAuthBearerMechanism(self.oauth_options, now_ms)
        raise ValueError(name)


def _modules(config: Any, listener: str, mechanism: str) -> list[JaasModule]:
    text = config.listener_value(listener, "sasl.jaas.config", mechanism=mechanism)
    return parse_jaas(text) if text else []


# ----------------------------------------------------------------------------------------------
# The client side (the broker's own logins to other brokers; the test helpers' KafkaWire):
# ``initial()`` is the first token, ``respond(challenge)`` the next one, None once done.

#: what a broker can log in to another broker with (sasl.mechanism.inter.broker.protocol)
CLIENT_MECHANISMS = ("PLAIN",) + tuple(scram.MECHANISMS)


class PlainClient:
    def __init__(self, username: str, password: str):
        self.username, self.password = username, password

    def initial(self) -> bytes:
        return b"\0" + self.username.encode() + b"\0" + self.password.encode()

    def respond(self, challenge: bytes) -> bytes | None:
        return None


class ScramClient:
    """RFC 5802's client: the proof is computed with the same ``scram`` primitives the server
    checks it with, and the server's signature is verified (a broker that does not know the
    password cannot pass for the leader)."""

    def __init__(self, mechanism: str, username: str, password: str, token: bool = False):
        self.mechanism, self.password = mechanism, password
        self.nonce = scram.nonce()
        name = username.replace("=", "=3D").replace(",", "=2C")
        # A delegation token logs in with the tokenauth extension (token id and base64 HMAC).
        extension = ",tokenauth=true" if token else ""
        self.client_first_bare = f"n={name},r={self.nonce}{extension}"
        self.server_key: bytes | None = None
        self.auth_message = b""

    def initial(self) -> bytes:
        return ("n,," + self.client_first_bare).encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if self.server_key is None:
            return self._final(challenge.decode("utf-8"))
        fields = dict(
            item.split("=", 1) for item in challenge.decode("utf-8").split(",") if "=" in item
        )
        if "e" in fields:
            raise SaslFailure(f"SCRAM server error: {fields['e']}")
        expected = scram.hmac_of(self.mechanism, self.server_key, self.auth_message)
        if not scram.same_bytes(base64.b64decode(fields.get("v", "")), expected):
            raise SaslFailure("Invalid server signature in SCRAM server final message")
        return None

    def _final(self, server_first: str) -> bytes:
        fields = dict(item.split("=", 1) for item in server_first.split(",") if "=" in item)
        if not fields.get("r", "").startswith(self.nonce) or "s" not in fields:
            raise SaslFailure("Invalid SCRAM server first message")
        salted = scram.salted_password(
            self.mechanism, self.password, base64.b64decode(fields["s"]), int(fields["i"])
        )
        without_proof = f"c=biws,r={fields['r']}"
        self.auth_message = ",".join((self.client_first_bare, server_first, without_proof)).encode()
        client_key = scram.hmac_of(self.mechanism, salted, b"Client Key")
        signature = scram.hmac_of(
            self.mechanism, scram.digest(self.mechanism, client_key), self.auth_message
        )
        self.server_key = scram.hmac_of(self.mechanism, salted, b"Server Key")
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
        return f"{without_proof},p={proof}".encode()


def client_mechanism(
    mechanism: str, username: str, password: str, token: bool = False
) -> PlainClient | ScramClient:
    """The client side of ``mechanism`` (ValueError for one we cannot log in with); ``token``:
    a SCRAM login with a delegation token."""
    if mechanism == "PLAIN" and not token:
        return PlainClient(username, password)
    if mechanism in scram.MECHANISMS:
        return ScramClient(mechanism, username, password, token)
    raise ValueError(f"cannot log in with SASL mechanism {mechanism}")


# ----------------------------------------------------------------------------------------------
# The per-connection state machine


class AuthState(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


_TRANSITIONS = {
    AuthState.HANDSHAKE: {AuthState.AUTHENTICATE, AuthState.FAILED},
    AuthState.AUTHENTICATE: {AuthState.COMPLETE, AuthState.FAILED},
    AuthState.COMPLETE: {AuthState.AUTHENTICATE, AuthState.FAILED},
    AuthState.FAILED: set(),
}


class SaslAuthenticator:
    """One connection's SASL authentication (see the module docstring)."""

    def __init__(self, settings: SaslListenerSettings, now_ms: Callable[[], int]):
        self.settings = settings
        self.now_ms = now_ms
        self.state = AuthState.HANDSHAKE
        self.mechanism: Mechanism | None = None
        self.mechanism_name: str | None = None
        self.raw_tokens = False
        self.reauthenticating = False
        self.principal: str | None = None
        self.session_lifetime_ms = 0
        self.expires_at_ms: int | None = None
        self.failure: str | None = None

    def transition(self, new: AuthState) -> None:
        if new not in _TRANSITIONS[self.state]:
            raise IllegalSaslState(f"illegal SASL state transition {self.state.name} -> {new.name}")
        self.state = new

    def allows(self, api_key: int) -> bool:
        """May a request of ``api_key`` be processed now?"""
        if self.state is AuthState.COMPLETE or (
            self.state is AuthState.AUTHENTICATE and self.reauthenticating
        ):
            return True
        if self.state is AuthState.HANDSHAKE:
            return api_key in (API_VERSIONS, SASL_HANDSHAKE)
        if self.state is AuthState.AUTHENTICATE:
            return api_key == SASL_AUTHENTICATE
        return False

    @property
    def token_authenticated(self) -> bool:
        """Did the session log in with a delegation token?"""
        return self.mechanism is not None and self.mechanism.token_authenticated

    def expired(self) -> bool:
        """The session has run out and no re-authentication is under way."""
        return (
            self.state is AuthState.COMPLETE
            and self.expires_at_ms is not None
            and self.now_ms() >= self.expires_at_ms
        )

    def handshake(self, mechanism: str, version: int) -> ErrorCode:
        """SaslHandshake: choose the mechanism (or start a re-authentication)."""
        if self.state is AuthState.COMPLETE:
            if version < 1:
                raise IllegalSaslState("re-authentication needs SaslHandshake v1")
            if mechanism != self.mechanism_name:
                self.fail(
                    f"SASL mechanism {mechanism} differs from the one the session "
                    f"authenticated with ({self.mechanism_name})"
                )
                return ErrorCode.ILLEGAL_SASL_STATE
            self.reauthenticating = True
        elif self.state is not AuthState.HANDSHAKE:
            raise IllegalSaslState(f"SaslHandshake in state {self.state.name}")
        if mechanism not in self.settings.mechanisms:
            if not self.reauthenticating:
                self.fail(f"Unsupported SASL mechanism {mechanism}")
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism_name = mechanism
        self.mechanism = self.settings.mechanism(mechanism, self.now_ms)
        self.raw_tokens = version == 0
        self.transition(AuthState.AUTHENTICATE)
        return ErrorCode.NONE

    def authenticate(self, token: bytes) -> bytes:
        """One client token in, the server's challenge out. Raises ``SaslFailure`` (and moves
        to FAILED) when authentication fails."""
        if self.state is not AuthState.AUTHENTICATE or self.mechanism is None:
            raise IllegalSaslState(f"SaslAuthenticate in state {self.state.name}")
        try:
            challenge = self.mechanism.evaluate(token)
        except SaslFailure as exc:
            self.fail(str(exc))
            raise
        if self.mechanism.complete:
            principal = f"User:{self.mechanism.authorization_id}"
            if self.reauthenticating and principal != self.principal:
                message = (
                    f"Cannot change principals during re-authentication from "
                    f"{self.principal} to {principal}"
                )
                self.fail(message)
                raise SaslFailure(message)
            self.principal = principal
            self._start_session()
            self.reauthenticating = False
            self.transition(AuthState.COMPLETE)
        return challenge

    def fail(self, why: str) -> None:
        self.failure = why
        if self.state is not AuthState.FAILED:
            self.transition(AuthState.FAILED)

    def _start_session(self) -> None:
        now = self.now_ms()
        limits = []
        if self.settings.max_reauth_ms > 0:
            limits.append(self.settings.max_reauth_ms)
        # As Kafka's SaslServerAuthenticator: a credential that expires (an OAUTHBEARER or a
        # delegation token) ends the session then, with or without connections.max.reauth.ms.
        expiry = self.mechanism.credential_expiry_ms if self.mechanism else None
        if expiry is not None:
            limits.append(max(0, expiry - now))
        self.session_lifetime_ms = min(limits) if limits else 0
        self.expires_at_ms = now + self.session_lifetime_ms if limits else None
