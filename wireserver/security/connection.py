"""The connection-side hooks of security, kept out of ``server.py``: what happens to a frame
before it is dispatched (the SASL gate, raw SASL tokens, expired sessions) and after a response
(closing a connection whose authentication failed).

A failed authentication is answered, and its connection closed, only after
``connection.failed.authentication.delay.ms`` (Kafka's default 100 ms), as Kafka's ``Selector``
delays the close of such a channel: a password guesser gets fewer tries per second. The wait
is a timer on the broker's reactor, so other connections are served meanwhile; frames that
arrive on the failed connection in the meantime are dropped (Kafka mutes the channel)."""

from __future__ import annotations

import logging
import struct
from typing import Any

from wireserver.protocol.errors import DecodeError
from wireserver.protocol.messages import peek_header
from wireserver.security.sasl import AuthState, IllegalSaslState, SaslFailure

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")


def admit(connection: Any, frame: memoryview) -> bool:
    """Decide whether ``frame`` goes on to normal dispatch. False means it was consumed here
    (a raw SASL token) or the connection is being closed."""
    security = connection.security
    if security is None:
        return True
    if security.uses_tls and not security.tls_principal_done:
        security.tls_principal_done = True
        if not security.uses_sasl:
            from wireserver.security import tls  # pyOpenSSL only where TLS is configured
            from wireserver.security.principals import NoMatchingRule

            mapper = connection.services.security.principal_mappers.get(security.listener)
            try:
                principal = tls.peer_principal(connection.transport, mapper)
            except NoMatchingRule as exc:
                connection.close(f"SSL authentication failed: {exc}")
                return False
            if principal is not None:
                security.principal = principal
    authenticator = security.authenticator
    if authenticator is None:
        return True
    if authenticator.state is AuthState.FAILED:
        return False  # closing after the failed-authentication delay
    if authenticator.state is AuthState.AUTHENTICATE and authenticator.raw_tokens:
        _raw_token(connection, authenticator, bytes(frame))
        return False
    try:
        api_key = peek_header(frame)[0]
    except DecodeError as exc:
        connection.close(f"malformed request: {exc}")
        return False
    if authenticator.expired() and api_key not in (17, 36):
        connection.close(f"SASL session of {security.principal} expired without re-authentication")
        return False
    if not authenticator.allows(api_key):
        authenticator.fail(
            f"unexpected request (API key {api_key}) in SASL state {authenticator.state.name}"
        )
        connection.close(
            f"unexpected Kafka request of API key {api_key} during SASL authentication"
        )
        return False
    return True


def _raw_token(connection: Any, authenticator: Any, token: bytes) -> None:
    """SaslHandshake v0 framing: a length-prefixed token in, a length-prefixed one out."""
    try:
        challenge = authenticator.authenticate(token)
    except (SaslFailure, IllegalSaslState) as exc:
        # v0 has no error answer: the connection just closes, after the delay
        authenticator.fail(str(exc))
        connection.services.metrics.failed_authentications[connection.listener_name] += 1
        delay_s = authenticator.settings.failed_authentication_delay_ms / 1000
        connection.services.reactor.callLater(
            delay_s, connection.close, f"SASL authentication failed: {exc}"
        )
        return
    if authenticator.state is AuthState.COMPLETE:
        connection.security.principal = authenticator.principal
    connection.writer.write([_SIZE.pack(len(challenge)) + challenge])


def delay_failure(ctx: Any, response: Any) -> Any:
    """A SaslHandshake / SaslAuthenticate ``response``: at once, or, when the authentication
    has just failed, a Deferred that fires with it after the failed-authentication delay."""
    authenticator = getattr(ctx.security, "authenticator", None)
    if authenticator is None or authenticator.state is not AuthState.FAILED:
        return response
    delay_ms = authenticator.settings.failed_authentication_delay_ms
    if delay_ms <= 0:
        return response
    from twisted.internet import task

    return task.deferLater(ctx.services.reactor, delay_ms / 1000, lambda: response)


def after_response(connection: Any) -> None:
    """Close a connection whose authentication just failed (its error response is written)."""
    authenticator = connection.security.authenticator
    if authenticator is not None and authenticator.state is AuthState.FAILED:
        if not connection.closed:
            connection.services.metrics.failed_authentications[connection.listener_name] += 1
        connection.close(f"SASL authentication failed: {authenticator.failure}")
