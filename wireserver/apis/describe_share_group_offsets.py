"""DescribeShareGroupOffsets (key 90), v0-1: each share-partition's start offset (the first
record a share group still has to deliver or finish) and leader epoch; v1 adds its lag (the
records up to the high watermark not yet acknowledged or archived). ``Topics`` null: every
partition the group has state for. A partition the group never fetched from answers start
offset -1 (and lag -1), as Kafka; so does one of an unknown topic, with
UNKNOWN_TOPIC_OR_PARTITION.

Served by the group's coordinator, as Kafka's ``GroupCoordinatorService``: the state comes
from each share-partition's share coordinator (ReadShareGroupStateSummary in a cluster), the
high watermark for the lag from the partition's leader (ListOffsets), all asked together. With
``Topics`` null, a cluster asks the share coordinators of every partition of every topic
(Kafka keeps the partitions it initialized in the group's metadata).

A share coordinator that cannot be reached answers as if it had no state (start offset -1,
leader epoch 0, lag -1), as Kafka; the lag is -1 when the partition's leader cannot be asked.

A group that is not a share group is GROUP_ID_NOT_FOUND. Authorization: DESCRIBE on the group
(GROUP_AUTHORIZATION_FAILED), DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED on its
partitions).
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.share import member_partitions, refused
from wireserver.share.manager import ZERO_UUID

API_KEY = 90


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    groups = yield defer.gatherResults([_group(ctx, requested) for requested in ctx.body.groups])
    return ctx.response(throttle_time_ms=0, groups=groups)


@defer.inlineCallbacks
def _group(ctx: RequestContext, requested):
    services = ctx.services
    coordinator = services.groups
    group_class = ctx.request.spec.response_class.DescribeShareGroupOffsetsResponseGroup
    group_id = requested.group_id
    error = (
        refused(ctx) or coordinator.ensure_ready(group_id) or checks.describe_group(ctx, group_id)
    )
    message = None
    if error is None and group_id not in coordinator.share.groups:
        error = ErrorCode.GROUP_ID_NOT_FOUND
        message = f"Group {group_id} is not a share group."
    if error is not None:
        return group_class(group_id=group_id, topics=[], error_code=error, error_message=message)
    wanted: dict[str, list[int]] = {}
    if requested.topics is None:
        found = yield services.share.partitions_of(group_id, member_partitions(services.metadata))
        for topic, index in sorted(found):
            wanted.setdefault(topic, []).append(index)
    else:
        for t in requested.topics:
            wanted.setdefault(t.topic_name, []).extend(t.partitions)
    topics = yield defer.gatherResults(
        [_topic(ctx, group_id, topic, indexes) for topic, indexes in wanted.items()]
    )
    return group_class(group_id=group_id, topics=topics, error_code=0, error_message=None)


@defer.inlineCallbacks
def _topic(ctx: RequestContext, group_id: str, topic: str, indexes: list[int]):
    services = ctx.services
    response_class = ctx.request.spec.response_class
    topic_class = (
        response_class.DescribeShareGroupOffsetsResponseGroup.DescribeShareGroupOffsetsResponseTopic
    )
    partition_class = topic_class.DescribeShareGroupOffsetsResponsePartition
    info = services.logs.topics.get(topic)
    denied = checks.describe_topic(ctx, topic)
    answers = yield defer.gatherResults(
        [_partition(ctx, group_id, topic, index, denied) for index in indexes]
    )
    rows = [
        partition_class(
            partition_index=index,
            start_offset=start,
            leader_epoch=epoch,
            lag=lag,
            error_code=failure,
            error_message=None,
        )
        for index, (failure, start, lag, epoch) in zip(indexes, answers)
    ]
    return topic_class(
        topic_name=topic,
        topic_id=info.topic_id if info is not None else ZERO_UUID,
        partitions=rows,
    )


@defer.inlineCallbacks
def _partition(ctx: RequestContext, group_id: str, topic: str, index: int, denied):
    """(error, start offset, lag, leader epoch) of one share-partition."""
    services = ctx.services
    if denied or services.metadata.partition_view(topic, index) is None:
        return denied or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1
    start, epoch, lag = yield services.share.start_and_lag(group_id, topic, index)
    return ErrorCode.NONE, start, lag, epoch
