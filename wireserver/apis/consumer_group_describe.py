"""ConsumerGroupDescribe (key 69), v0-1: a consumer-protocol group's state, epochs, assignor and
members, each with its current and target assignment (topic id and name). v1 adds the member
type (1: a consumer-protocol member; there are no classic members in our consumer groups).

A group that does not exist, or is of another type, is GROUP_ID_NOT_FOUND ("Group X is not a
consumer group." for the latter, as Kafka). Each group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED);
a group whose members' current or target assignments name a topic the principal may not
DESCRIBE is TOPIC_AUTHORIZATION_FAILED without members, as in Kafka. Authorized operations, when
asked, are those of each group answered without an error; the others keep "not requested"
(INT32_MIN), as Kafka's ``handleConsumerGroupDescribe``.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups.api import DescribedGroups
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 69
CONSUMER_MEMBER_TYPE = 1


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    coordinator = ctx.services.groups
    rows = DescribedGroups(ctx)
    names = rows.names
    ready_error = coordinator.ensure_ready()
    described = []
    for group_id in ctx.body.group_ids:
        group = coordinator.consumer.groups.get(group_id)
        group_error = ready_error or coordinator.ensure_ready(group_id)
        if denied := checks.describe_group(ctx, group_id):  # GROUP_AUTHORIZATION_FAILED
            described.append(rows.failed(group_id, denied))
        elif (
            group is not None
            and group_error is None
            and checks.describe_topics(
                ctx,
                {
                    names[topic_id]
                    for m in group.members.values()
                    for assigned in (m.assigned, group.target.get(m.member_id, {}))
                    for topic_id in assigned
                    if topic_id in names
                },
            )
        ):  # every assigned topic needs DESCRIBE
            described.append(
                rows.failed(
                    group_id,
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "The group has described topic(s) that the client is not "
                    "authorized to describe.",
                )
            )
        elif group_error is not None:
            described.append(rows.failed(group_id, group_error))
        elif group is None:
            described.append(rows.not_found(group_id, "consumer"))
        else:
            members = [
                rows.member_class(
                    **m.described(),
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=rows.assignment(m.assigned),
                    target_assignment=rows.assignment(group.target.get(m.member_id, {})),
                    member_type=CONSUMER_MEMBER_TYPE,
                )
                for m in group.members.values()
            ]
            assignor = group.assignor_name or coordinator.consumer.default_assignor()
            described.append(rows.described(group_id, group, assignor, members))
    return ctx.response(throttle_time_ms=0, groups=described)
