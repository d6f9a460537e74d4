"""RenewDelegationToken (key 39), v1-2: push a token's expiry to now + the renew period (at
most ``delegation.token.expiry.time.ms``, never past its max timestamp). Only its owner or a
renewer may; the errors and their order are Kafka 4.4's (``security.tokens``)."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.security.tokens import change_expiry

API_KEY = 39


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    return change_expiry(ctx, "renew", ctx.body.renew_period_ms)
