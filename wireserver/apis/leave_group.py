"""LeaveGroup (key 13), v0-5.

v0-2 name one member and report its error at the top level; v3+ name several (KIP-345) by
member id and/or group instance id (an empty member id removes a static member by instance id,
as the admin client does) with an error each. Needs READ on the group (GROUP_AUTHORIZATION_FAILED
at the top level).
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 13


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    if version >= 3:
        leaving = [(m.member_id or "", m.group_instance_id) for m in body.members]
    else:
        leaving = [(body.member_id or "", None)]
    error = checks.read_group(ctx, body.group_id) or coordinator.ensure_ready(body.group_id)
    errors: list[ErrorCode]
    if error is not None:
        top, errors = error, []
    else:
        top, errors = coordinator.leave_group(body.group_id, leaving)
    if version < 3:
        if top == ErrorCode.NONE and errors:
            top = errors[0]
        return ctx.response(throttle_time_ms=0, error_code=top, members=[])
    member_class = ctx.request.spec.response_class.MemberResponse
    return ctx.response(
        throttle_time_ms=0,
        error_code=top,
        members=[
            member_class(member_id=member_id, group_instance_id=instance_id, error_code=err)
            for (member_id, instance_id), err in zip(leaving, errors)
        ],
    )
