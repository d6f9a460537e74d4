"""DescribeShareGroupOffsets (key 90), v0-1: each share-partition's start offset (the first
record a share group still has to deliver or finish) and leader epoch; v1 adds its lag (the
records up to the high watermark not yet acknowledged or archived). ``Topics`` null: every
partition the group has state for. A partition the group never fetched from answers start
offset -1 (and lag -1), as Kafka; so does one of an unknown topic, with
UNKNOWN_TOPIC_OR_PARTITION.

A group that is not a share group is GROUP_ID_NOT_FOUND. Authorization: DESCRIBE on the group
(GROUP_AUTHORIZATION_FAILED), DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED on its
partitions). In cluster mode every group is UNSUPPORTED_VERSION (not built there yet,
``refused_offsets``).
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.share import refused_offsets
from wireserver.share.manager import ZERO_UUID

API_KEY = 90


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    services = ctx.services
    coordinator = services.groups
    share = services.share
    response_class = ctx.request.spec.response_class
    group_class = response_class.DescribeShareGroupOffsetsResponseGroup
    topic_class = group_class.DescribeShareGroupOffsetsResponseTopic
    partition_class = topic_class.DescribeShareGroupOffsetsResponsePartition
    topics = services.logs.topics
    names = services.metadata.topic_names()
    out = []
    for requested in ctx.body.groups:
        group_id = requested.group_id
        error = (
            refused_offsets(ctx)
            or coordinator.ensure_ready(group_id)
            or checks.describe_group(ctx, group_id)
        )
        message = None
        if error is None and group_id not in coordinator.share.groups:
            error = ErrorCode.GROUP_ID_NOT_FOUND
            message = f"Group {group_id} is not a share group."
        if error is not None:
            out.append(
                group_class(group_id=group_id, topics=[], error_code=error, error_message=message)
            )
            continue
        wanted: dict[str, list[int]] = {}
        if requested.topics is None:
            for topic, index in sorted(share.partitions_of(group_id, names)):
                wanted.setdefault(topic, []).append(index)
        else:
            for t in requested.topics:
                wanted.setdefault(t.topic_name, []).extend(t.partitions)
        answered = []
        for topic, indexes in wanted.items():
            info = topics.get(topic)
            denied = checks.describe_topic(ctx, topic)
            rows = []
            for index in indexes:
                log = services.logs.get_log(topic, index) if info is not None else None
                if denied or log is None:
                    failure = denied or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    start, lag, epoch = -1, -1, -1
                else:
                    failure = ErrorCode.NONE
                    start, lag = share.start_and_lag(group_id, topic, index, log)
                    epoch = services.replicas.check_leader(topic, index)[1]
                rows.append(
                    partition_class(
                        partition_index=index,
                        start_offset=start,
                        leader_epoch=epoch,
                        lag=lag,
                        error_code=failure,
                        error_message=None,
                    )
                )
            answered.append(
                topic_class(
                    topic_name=topic,
                    topic_id=info.topic_id if info is not None else ZERO_UUID,
                    partitions=rows,
                )
            )
        out.append(
            group_class(group_id=group_id, topics=answered, error_code=0, error_message=None)
        )
    return ctx.response(throttle_time_ms=0, groups=out)
