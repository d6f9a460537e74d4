"""SyncGroup (key 14), v0-5.

The leader's assignment is stored in ``__consumer_offsets`` and handed to every member; the
followers' responses wait (a Deferred) until it arrives. v5 checks the protocol type and name
against the group's (INCONSISTENT_GROUP_PROTOCOL). Needs READ on the group
(GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups import SyncResult
from wireserver.security import checks

API_KEY = 14


def build(ctx, result: SyncResult):
    return ctx.response(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    error = checks.read_group(ctx, body.group_id) or coordinator.ensure_ready(body.group_id)
    if error is not None:
        return build(ctx, SyncResult(error))
    assignments = {a.member_id: bytes(a.assignment or b"") for a in body.assignments}
    d = coordinator.sync_group(
        body.group_id,
        body.generation_id,
        body.member_id,
        body.group_instance_id if version >= 3 else None,
        body.protocol_type if version >= 5 else None,
        body.protocol_name if version >= 5 else None,
        assignments,
    )
    return d.addCallback(lambda result: build(ctx, result))
