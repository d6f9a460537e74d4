"""DescribeGroups (key 15), v0-6.

Member metadata and assignments are reported only for a Stable group (as Kafka). An unknown
group is a "Dead" group: GROUP_ID_NOT_FOUND from v6 (KIP-1043), no error before; so is a group
of another type (consumer, Streams, share: "Group X is not a classic group.", as Kafka). Each
group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED). Authorized operations, when asked (v3+),
are those of each group answered without an error (a "Dead" one before v6 too), as Kafka's
``handleDescribeGroupsRequest``; the others keep "not requested" (INT32_MIN).
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups import GroupState
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 15


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    group_class = ctx.request.spec.response_class.DescribedGroup
    member_class = group_class.DescribedGroupMember
    ready_error = coordinator.ensure_ready()
    described = []
    for group_id in body.groups:
        if denied := checks.describe_group(ctx, group_id):  # GROUP_AUTHORIZATION_FAILED
            described.append(
                group_class(
                    error_code=denied,
                    error_message=checks.message(denied),
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=None,
                )
            )
            continue
        group_error = ready_error or coordinator.ensure_ready(group_id)
        group = coordinator.groups.get(group_id) if group_error is None else None
        if group_error is not None or group is None:
            error = group_error or (
                ErrorCode.GROUP_ID_NOT_FOUND if version >= 6 else ErrorCode.NONE
            )
            other_type = group_error is None and coordinator.modern_group(group_id) is not None
            described.append(
                group_class(
                    error_code=error,
                    error_message=(
                        f"Group {group_id} is not a classic group."
                        if other_type
                        else f"Group {group_id} not found."
                    )
                    if error
                    else None,
                    group_id=group_id,
                    group_state=str(GroupState.DEAD) if group_error is None else "",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=None,
                )
            )
            continue
        stable = group.is_in(GroupState.STABLE)
        members = [
            member_class(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata_for(group.protocol_name) if stable else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ]
        described.append(
            group_class(
                error_code=ErrorCode.NONE,
                error_message=None,
                group_id=group_id,
                group_state=str(group.state),
                protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol_name or "") if stable else "",
                members=members,
                authorized_operations=None,
            )
        )
    if version >= 3 and body.include_authorized_operations:
        for group in described:
            if group.error_code == ErrorCode.NONE:
                group.authorized_operations = checks.group_operations(ctx, group.group_id)
    return ctx.response(throttle_time_ms=0, groups=described)
