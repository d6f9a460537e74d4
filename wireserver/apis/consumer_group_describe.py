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
from wireserver.groups.api import NOT_REQUESTED, described_assignment, failed_modern_group
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 69
CONSUMER_MEMBER_TYPE = 1


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    coordinator = ctx.services.groups
    group_class = ctx.request.spec.response_class.DescribedGroup
    member_class = group_class.Member
    assignment_class = member_class.Assignment
    ready_error = coordinator.ensure_ready()
    names = coordinator.consumer.topic_names()

    def assignment(partitions):
        return described_assignment(assignment_class, names, partitions)

    def failed(group_id, error, message):
        return failed_modern_group(group_class, group_id, error, message)

    described = []
    for group_id in body.group_ids:
        group = coordinator.consumer.groups.get(group_id)
        group_error = ready_error or coordinator.ensure_ready(group_id)
        if denied := checks.describe_group(ctx, group_id):  # GROUP_AUTHORIZATION_FAILED
            described.append(failed(group_id, denied, None))
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
                failed(
                    group_id,
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "The group has described topic(s) that the client is not "
                    "authorized to describe.",
                )
            )
        elif group_error is not None:
            described.append(failed(group_id, group_error, None))
        elif group is None:
            message = (
                f"Group {group_id} is not a consumer group."
                if group_id in coordinator.groups or coordinator.modern_group(group_id)
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
                    assignor_name=group.assignor_name or coordinator.consumer.default_assignor(),
                    members=[
                        member_class(
                            **m.described(),
                            subscribed_topic_names=m.subscribed_topic_names,
                            subscribed_topic_regex=m.subscribed_topic_regex,
                            assignment=assignment(m.assigned),
                            target_assignment=assignment(group.target.get(m.member_id, {})),
                            member_type=CONSUMER_MEMBER_TYPE,
                        )
                        for m in group.members.values()
                    ],
                    authorized_operations=checks.bitfield(checks.group_operations(ctx, group_id))
                    if body.include_authorized_operations
                    else NOT_REQUESTED,
                )
            )
    return ctx.response(throttle_time_ms=0, groups=described)
