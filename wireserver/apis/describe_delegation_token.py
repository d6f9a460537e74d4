"""DescribeDelegationToken (key 41), v1-3: the tokens of the owners asked for (null: every
token; an empty list: none), each with its HMAC, as Kafka's ``DelegationTokenManager.
filterToken`` chooses them: a token is listed when its owner or a renewer is among the owners
asked for, and the requester is its owner or a renewer, or has DESCRIBE on the
DELEGATION_TOKEN or DESCRIBE_TOKENS on the owner's USER."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import Operation, ResourceType
from wireserver.security.tokens import (
    TokenInformation,
    principal_of,
    requests_allowed,
    split_principal,
)

API_KEY = 41


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    response = ctx.request.spec.response_class
    described = response.DescribedDelegationToken
    renewer_class = described.DescribedDelegationTokenRenewer
    if not requests_allowed(ctx.security):
        return ctx.response(
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, tokens=[], throttle_time_ms=0
        )
    tokens = ctx.services.security.tokens
    if not tokens.enabled:
        return ctx.response(
            error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, tokens=[], throttle_time_ms=0
        )
    owners = ctx.body.owners
    wanted = (
        None
        if owners is None
        else [principal_of(o.principal_type, o.principal_name) for o in owners]
    )
    assert ctx.security is not None  # requests_allowed refuses connections without security
    requester = ctx.security.principal

    def eligible(info: TokenInformation) -> bool:
        if wanted is not None and not any(info.owner_or_renewer(o) for o in wanted):
            return False
        return (
            info.owner_or_renewer(requester)
            or authorize(ctx, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, info.token_id)
            or authorize(ctx, Operation.DESCRIBE_TOKENS, ResourceType.USER, info.owner)
        )

    listed = []
    for info, hmac in [] if wanted == [] else tokens.tokens():
        if not eligible(info):
            continue
        owner_type, owner_name = split_principal(info.owner)
        requester_type, requester_name = split_principal(info.requester)
        listed.append(
            described(
                principal_type=owner_type,
                principal_name=owner_name,
                token_requester_principal_type=requester_type,
                token_requester_principal_name=requester_name,
                issue_timestamp=info.issue_ms,
                expiry_timestamp=info.expiry_ms,
                max_timestamp=info.max_ms,
                token_id=info.token_id,
                hmac=hmac,
                renewers=[
                    renewer_class(principal_type=t, principal_name=n)
                    for t, n in map(split_principal, info.renewers)
                ],
            )
        )
    return ctx.response(error_code=ErrorCode.NONE, tokens=listed, throttle_time_ms=0)
