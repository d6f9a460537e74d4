"""OffsetDelete (key 47), v0: removes committed offsets of a group (tombstones). GROUP_ID_NOT_FOUND
for an unknown group and a share group (which keeps no offsets); NON_EMPTY_GROUP for a non-empty group that is not a consumer group; per
partition GROUP_SUBSCRIBED_TO_TOPIC while members subscribe to the topic (unknown subscriptions
count as subscribed, as in Kafka), UNKNOWN_TOPIC_OR_PARTITION for a partition that does not
exist. Needs DELETE on the group (GROUP_AUTHORIZATION_FAILED) and READ on each topic
(TOPIC_AUTHORIZATION_FAILED per partition)."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 47


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    coordinator = ctx.services.groups
    topic_class = ctx.request.spec.response_class.OffsetDeleteResponseTopic
    partition_class = topic_class.OffsetDeleteResponsePartition
    error = checks.delete_group(ctx, body.group_id) or coordinator.ensure_ready(body.group_id)
    if error is not None:
        return ctx.response(error_code=error, throttle_time_ms=0, topics=[])
    denied = {t.name: checks.read_topic(ctx, t.name) for t in body.topics}  # READ per topic
    requested = [
        (t.name, p.partition_index) for t in body.topics for p in t.partitions if not denied[t.name]
    ]
    top, results = coordinator.offsets.delete_offsets(body.group_id, requested)
    results.update(
        {
            (t.name, p.partition_index): denied[t.name]
            for t in body.topics
            for p in t.partitions
            if denied[t.name]
        }
    )
    if top != ErrorCode.NONE:
        return ctx.response(error_code=top, throttle_time_ms=0, topics=[])
    return ctx.response(
        error_code=ErrorCode.NONE,
        throttle_time_ms=0,
        topics=[
            topic_class(
                name=t.name,
                partitions=[
                    partition_class(
                        partition_index=p.partition_index,
                        error_code=results[(t.name, p.partition_index)],
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ],
    )
