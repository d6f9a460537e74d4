"""ExpireDelegationToken (key 40), v1-2: move a token's expiry to now + the period (never
past its max timestamp), or with a negative period remove it at once. Only its owner or a
renewer may; the errors and their order are Kafka 4.4's (``security.tokens``)."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.security.tokens import change_expiry

API_KEY = 40


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    return change_expiry(ctx, "expire", ctx.body.expiry_time_period_ms)
