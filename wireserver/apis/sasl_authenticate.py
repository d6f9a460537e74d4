"""SaslAuthenticate (key 36), v0-2: one SASL token each way after a v1 SaslHandshake.

A failed authentication answers SASL_AUTHENTICATION_FAILED with the reason and closes that
connection (only that one), both after ``connection.failed.authentication.delay.ms``. The last
answer of a successful one carries, from v1 on, the session lifetime
(``connections.max.reauth.ms``, or less for an OAUTHBEARER token that expires sooner; 0 = no
limit). Outside an authentication the answer is ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security.connection import delay_failure
from wireserver.security.sasl import AuthState, IllegalSaslState, SaslFailure

API_KEY = 36


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    authenticator = getattr(ctx.security, "authenticator", None)

    def answer(code, message=None, token=b"", lifetime=0):
        return delay_failure(
            ctx,
            ctx.response(
                error_code=code,
                error_message=message,
                auth_bytes=token,
                session_lifetime_ms=lifetime,
            ),
        )

    if (
        authenticator is None
        or authenticator.state is not AuthState.AUTHENTICATE
        or authenticator.raw_tokens
    ):
        return answer(
            ErrorCode.ILLEGAL_SASL_STATE,
            "SaslAuthenticate request received outside a SASL authentication",
        )
    try:
        challenge = authenticator.authenticate(bytes(ctx.body.auth_bytes or b""))
    except SaslFailure as exc:
        return answer(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc))
    except IllegalSaslState as exc:
        authenticator.fail(str(exc))
        return answer(ErrorCode.ILLEGAL_SASL_STATE, str(exc))
    if authenticator.state is AuthState.COMPLETE:
        ctx.security.principal = authenticator.principal
        return answer(ErrorCode.NONE, None, challenge, authenticator.session_lifetime_ms)
    return answer(ErrorCode.NONE, None, challenge)
