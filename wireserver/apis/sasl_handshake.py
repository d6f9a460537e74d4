"""SaslHandshake (key 17), v0-1.

On a SASL listener it picks the mechanism (``wireserver.security.sasl``): v0 switches the
connection to raw SASL tokens, v1 to SaslAuthenticate requests; after authentication a v1
handshake starts a re-authentication (KIP-368). An unknown mechanism answers
UNSUPPORTED_SASL_MECHANISM with the enabled ones and closes the connection, both after
``connection.failed.authentication.delay.ms``. On a listener without SASL the answer is
ILLEGAL_SASL_STATE, as Kafka's.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security.connection import delay_failure
from wireserver.security.sasl import IllegalSaslState

API_KEY = 17


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    authenticator = getattr(ctx.security, "authenticator", None)
    if authenticator is None:
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    try:
        code = authenticator.handshake(ctx.body.mechanism, ctx.version)
    except IllegalSaslState as exc:
        authenticator.fail(str(exc))
        code = ErrorCode.ILLEGAL_SASL_STATE
    return delay_failure(
        ctx, ctx.response(error_code=code, mechanisms=list(authenticator.settings.mechanisms))
    )
