"""Heartbeat (key 12), v0-4: keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to
rejoin, UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION / FENCED_INSTANCE_ID that it lost its place.
Needs READ on the group (GROUP_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.security import checks

API_KEY = 12


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    error = checks.read_group(ctx, body.group_id) or coordinator.ensure_ready(body.group_id)
    if error is None:
        error = coordinator.heartbeat(
            body.group_id,
            body.generation_id,
            body.member_id,
            body.group_instance_id if version >= 3 else None,
        )
    return ctx.response(throttle_time_ms=0, error_code=error)
