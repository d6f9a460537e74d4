"""ListGroups (key 16), v0-5: every group, with its state from v4 (and the v4+ states filter)
and its type from v5 (``classic``, or ``consumer`` for a KIP-848 group, whose protocol type is
``consumer`` and whose states are Empty, Assigning, Reconciling and Stable; ``streams`` for a
KIP-1071 group, protocol type ``streams``, states Empty, NotReady, Assigning, Reconciling and
Stable; ``share`` for a KIP-932 group, protocol type ``share``, states Empty and Stable; the
v5 types filter). Both filters compare case-insensitively, as Kafka does. A principal with DESCRIBE on
the cluster sees every group, any other only the groups it may DESCRIBE. While a partition of
``__consumer_offsets`` loads here, COORDINATOR_LOAD_IN_PROGRESS (its groups are not known yet),
as Kafka answers."""

from __future__ import annotations

from typing import Any

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 16
GROUP_TYPE = "classic"
CONSUMER_GROUP_TYPE = "consumer"
STREAMS_GROUP_TYPE = "streams"
SHARE_GROUP_TYPE = "share"


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    listed_class = ctx.request.spec.response_class.ListedGroup
    error = coordinator.ensure_ready() or coordinator.runtime.loading_error()
    if error is not None:
        return ctx.response(throttle_time_ms=0, error_code=error, groups=[])
    states = (
        {s.lower() for s in body.states_filter} if version >= 4 and body.states_filter else None
    )
    types = {t.lower() for t in body.types_filter} if version >= 5 and body.types_filter else None
    listed = []
    for group in coordinator.list_groups():
        state = str(group.state)
        if states is not None and state.lower() not in states:
            continue
        if types is not None and GROUP_TYPE not in types:
            continue
        if not checks.list_group(ctx, group.group_id):
            continue
        listed.append(
            listed_class(
                group_id=group.group_id,
                protocol_type=group.protocol_type or "",
                group_state=state,
                group_type=GROUP_TYPE,
            )
        )
    modern: list[tuple[str, Any]] = [
        (CONSUMER_GROUP_TYPE, g) for g in coordinator.consumer.groups.values()
    ]
    modern += [(STREAMS_GROUP_TYPE, g) for g in coordinator.streams.groups.values()]
    modern += [(SHARE_GROUP_TYPE, g) for g in coordinator.share.groups.values()]
    for group_type, modern_group in modern:
        state = str(modern_group.state)
        if states is not None and state.lower() not in states:
            continue
        if types is not None and group_type not in types:
            continue
        if not checks.list_group(ctx, modern_group.group_id):
            continue
        listed.append(
            listed_class(
                group_id=modern_group.group_id,
                protocol_type=group_type,
                group_state=state,
                group_type=group_type,
            )
        )
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, groups=listed)
