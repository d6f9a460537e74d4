"""JoinGroup (key 11), v0-9 — see ``wireserver.groups.coordinator`` for the rebalance logic.

The response waits (a Deferred) until the group's join phase completes. v4+: a new member
without a member id gets MEMBER_ID_REQUIRED and its id first (KIP-394); v5+ static members
(``group_instance_id``, KIP-345); v9 ``skip_assignment`` for a static leader rejoining a stable
group (KIP-814). v0 has no rebalance timeout: the session timeout stands in, as in Kafka.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups import JoinRequest, JoinResult
from wireserver.groups.api import client_host
from wireserver.security import checks

API_KEY = 11


def build(ctx, result: JoinResult):
    version = ctx.version
    member_class = ctx.request.spec.response_class.JoinGroupResponseMember
    protocol_name = result.protocol_name
    if protocol_name is None and version < 7:
        protocol_name = ""
    return ctx.response(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader_id,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            member_class(member_id=m, group_instance_id=i, metadata=md)
            for m, i, md in result.members
        ],
    )


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    error = coordinator.ensure_ready(body.group_id) or checks.read_group(ctx, body.group_id)
    if error is not None:
        return build(ctx, JoinResult(error, body.member_id))
    request = JoinRequest(
        group_id=body.group_id,
        member_id=body.member_id or "",
        group_instance_id=body.group_instance_id if version >= 5 else None,
        require_known_member_id=version >= 4,
        client_id=ctx.client_id or "",
        client_host=client_host(ctx),
        rebalance_timeout_ms=body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms,
        session_timeout_ms=body.session_timeout_ms,
        protocol_type=body.protocol_type or "",
        protocols=[(p.name, bytes(p.metadata or b"")) for p in body.protocols],
        api_version=version,
        reason=body.reason if version >= 8 else None,
    )
    return coordinator.join_group(request).addCallback(lambda result: build(ctx, result))
