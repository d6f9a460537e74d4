"""ShareGroupDescribe (key 77), v1: a share group's (KIP-932) state, epochs, assignor
(``simple``) and members, each with its assignment (topic id and name).

A group that does not exist is GROUP_ID_NOT_FOUND ("Group X not found."), one of another type
too ("Group X is not a share group.", as Kafka). Each group needs DESCRIBE
(GROUP_AUTHORIZATION_FAILED). Authorized operations, when asked, are those of each group
answered without an error; the others keep "not requested" (INT32_MIN). In cluster mode the group
coordinator (the leader of its ``__consumer_offsets`` partition) answers, as for consumer groups.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups.api import DescribedGroups
from wireserver.security import checks
from wireserver.share import refused

API_KEY = 77


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    coordinator = ctx.services.groups
    share = coordinator.share
    rows = DescribedGroups(ctx)
    ready_error = refused(ctx) or coordinator.ensure_ready()
    described = []
    for group_id in ctx.body.group_ids:
        group = share.groups.get(group_id)
        error = (
            ready_error
            or coordinator.ensure_ready(group_id)
            or checks.describe_group(ctx, group_id)
        )
        if error is not None:
            described.append(rows.failed(group_id, error))
        elif group is None:
            described.append(rows.not_found(group_id, "share"))
        else:
            members = [
                rows.member_class(
                    member_id=m.member_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    assignment=rows.assignment(m.assigned),
                )
                for m in group.members.values()
            ]
            described.append(rows.described(group_id, group, share.assignor_name(), members))
    return ctx.response(throttle_time_ms=0, groups=described)
