"""StreamsGroupTopologyDescriptionUpdate (key 93), v0 (KIP-1331): a member hands the broker the
description of its topology (its processors, stores and topics), which StreamsGroupDescribe
v1 shows when asked. READ on the group (GROUP_AUTHORIZATION_FAILED); the group must be a
Streams group (GROUP_ID_NOT_FOUND), the member one of its members (UNKNOWN_MEMBER_ID) and the
topology epoch the group's (STALE_MEMBER_EPOCH otherwise).

The description is kept in memory with the group; Kafka hands it to the configured
``group.streams.topology.description.plugin.class`` instead (see docs/compatibility.md).
"""

from __future__ import annotations

from typing import Any

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 93


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    coordinator = ctx.services.groups
    error = coordinator.ensure_ready(body.group_id) or checks.read_group(ctx, body.group_id)
    message = checks.message(error) if error is not None else None
    group = coordinator.streams.groups.get(body.group_id)
    if error is not None:
        pass
    elif group is None:
        error, message = ErrorCode.GROUP_ID_NOT_FOUND, f"Group {body.group_id} not found."
    elif body.member_id not in group.members:
        error = ErrorCode.UNKNOWN_MEMBER_ID
        message = f"Member {body.member_id} is not a member of group {body.group_id}."
    elif group.topology is None or body.topology_epoch != group.topology.epoch:
        error = ErrorCode.STALE_MEMBER_EPOCH
        message = f"Topology epoch {body.topology_epoch} is not the group's."
    else:
        group.description = _as_describe(ctx, body.topology_description)
    return ctx.response(
        throttle_time_ms=0, error_code=error or ErrorCode.NONE, error_message=message
    )


def _as_describe(ctx: RequestContext, value: Any, cls: Any = None) -> Any:
    """The description in StreamsGroupDescribe's classes (the same fields and type names)."""
    if cls is None:
        cls = _describe_class()
    fields = {}
    for name in type(value).fields:
        v = getattr(value, name)
        if isinstance(v, list) and v and hasattr(v[0], "fields"):
            v = [_as_describe(ctx, x, getattr(cls, type(x).__name__)) for x in v]
        elif hasattr(v, "fields"):
            v = _as_describe(ctx, v, getattr(cls, type(v).__name__))
        fields[name] = v
    return cls(**fields)


def _describe_class() -> Any:
    from wireserver.protocol.messages_streams import StreamsGroupDescribeResponse

    return StreamsGroupDescribeResponse.DescribedGroup.TopologyDescription
