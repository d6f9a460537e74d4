"""ShareGroupDescribe (key 77), v1: a share group's (KIP-932) state, epochs, assignor
(``simple``) and members, each with its assignment (topic id and name).

A group that does not exist is GROUP_ID_NOT_FOUND ("Group X not found."), one of another type
too ("Group X is not a share group.", as Kafka). Each group needs DESCRIBE
(GROUP_AUTHORIZATION_FAILED). Authorized operations, when asked, are those of each group
answered without an error; the others keep "not requested" (INT32_MIN). In cluster mode every
group is UNSUPPORTED_VERSION (share groups are served on one node only).
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups.api import NOT_REQUESTED, described_assignment, failed_modern_group
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.share import refused

API_KEY = 77


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    coordinator = ctx.services.groups
    share = coordinator.share
    group_class = ctx.request.spec.response_class.DescribedGroup
    member_class = group_class.Member
    assignment_class = member_class.Assignment
    ready_error = refused(ctx) or coordinator.ensure_ready()
    names = coordinator.consumer.topic_names()

    def assignment(partitions):
        return described_assignment(assignment_class, names, partitions)

    def failed(group_id, error, message):
        return failed_modern_group(group_class, group_id, error, message)

    described = []
    for group_id in body.group_ids:
        group = share.groups.get(group_id)
        error = (
            ready_error
            or coordinator.ensure_ready(group_id)
            or checks.describe_group(ctx, group_id)
        )
        if error is not None:
            described.append(failed(group_id, error, None))
        elif group is None:
            other = group_id in coordinator.groups or coordinator.modern_group(group_id)
            message = (
                f"Group {group_id} is not a share group."
                if other
                else f"Group {group_id} not found."
            )
            described.append(failed(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message))
        else:
            described.append(
                group_class(
                    error_code=ErrorCode.NONE,
                    error_message=None,
                    group_id=group_id,
                    **group.described(),
                    assignor_name=share.assignor_name(),
                    members=[
                        member_class(
                            member_id=m.member_id,
                            rack_id=m.rack_id,
                            member_epoch=m.member_epoch,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            subscribed_topic_names=m.subscribed_topic_names,
                            assignment=assignment(m.assigned),
                        )
                        for m in group.members.values()
                    ],
                    authorized_operations=checks.bitfield(checks.group_operations(ctx, group_id))
                    if body.include_authorized_operations
                    else NOT_REQUESTED,
                )
            )
    return ctx.response(throttle_time_ms=0, groups=described)
