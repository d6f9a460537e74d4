"""CreateDelegationToken (key 38), v1-3: a token for the requester, or (v3, KIP-373) for an
owner it names, with renewers and a max lifetime (``security.tokens``).

Checks in the order of Kafka 4.4's broker and controller: a connection that may not ask for
tokens (PLAINTEXT, SSL without a certificate, logged in with a token) is
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; a token for another owner needs CREATE_TOKENS on that
USER (DELEGATION_TOKEN_AUTHORIZATION_FAILED); a renewer that is not a ``User`` is
INVALID_PRINCIPAL_TYPE; without ``delegation.token.secret.key`` DELEGATION_TOKEN_AUTH_DISABLED.
Those refused by the broker answer -1 timestamps, those refused by Kafka's controller
(disabled) 0, as Kafka does.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import Operation, ResourceType
from wireserver.security.tokens import (
    USER_TYPE,
    principal_of,
    requests_allowed,
    split_principal,
)

API_KEY = 38


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    requester = ctx.security.principal if ctx.security is not None else "User:ANONYMOUS"
    owner = requester
    if ctx.version >= 3 and body.owner_principal_name:
        owner = principal_of(body.owner_principal_type, body.owner_principal_name)

    def answer(error: ErrorCode, timestamp: int = -1, **token) -> HandlerResult:
        owner_type, owner_name = split_principal(owner)
        requester_type, requester_name = split_principal(requester)
        return ctx.response(
            error_code=error,
            principal_type=owner_type,
            principal_name=owner_name,
            token_requester_principal_type=requester_type,
            token_requester_principal_name=requester_name,
            issue_timestamp_ms=token.get("issue", timestamp),
            expiry_timestamp_ms=token.get("expiry", timestamp),
            max_timestamp_ms=token.get("max", timestamp),
            token_id=token.get("token_id", ""),
            hmac=token.get("hmac", b""),
            throttle_time_ms=0,
        )

    if not requests_allowed(ctx.security):
        return answer(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if owner != requester and not authorize(ctx, Operation.CREATE_TOKENS, ResourceType.USER, owner):
        return answer(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
    if any(renewer.principal_type != USER_TYPE for renewer in body.renewers):
        return answer(ErrorCode.INVALID_PRINCIPAL_TYPE)
    tokens = ctx.services.security.tokens
    if not tokens.enabled:
        return answer(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0)
    renewers = [principal_of(r.principal_type, r.principal_name) for r in body.renewers]
    info, hmac = tokens.create(owner, requester, renewers, body.max_lifetime_ms)
    return answer(
        ErrorCode.NONE,
        issue=info.issue_ms,
        expiry=info.expiry_ms,
        max=info.max_ms,
        token_id=info.token_id,
        hmac=hmac,
    )
