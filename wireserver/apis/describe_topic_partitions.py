"""DescribeTopicPartitions (key 75), v0.

Kafka's ``DescribeTopicPartitionsRequestHandler`` and ``describeTopicResponse``: the named
topics (an empty list means every topic), sorted by name, starting at the cursor's topic and
partition, with at most ``response_partition_limit`` partitions in all (clamped to
1..``max.request.partition.size.limit`` = 2000). When the limit stops the walk inside a topic,
or before the next topic, ``next_cursor`` points there. A cursor whose topic is not among the
named ones, or with a negative partition, fails the request with INVALID_REQUEST. Unknown named
topics come back with UNKNOWN_TOPIC_OR_PARTITION (they use none of the partition budget).

Each partition's leader, leader epoch, replicas, ISR and offline replicas are what Metadata
reports (``wireserver.metadata``: this node alone on one node, the ZooKeeper view in cluster
mode, where topics appear once their creation has gone through ZooKeeper). A partition without
a live leader has leader -1 and error code NONE, as in Kafka's ``describeTopicResponse`` (Metadata
answers LEADER_NOT_AVAILABLE there). The eligible-leader-replica and last-known-ELR lists
(KIP-966) are always empty: there are no eligible leader replicas here (ISR and elections as in
Kafka's ZooKeeper era). Kafka leaves them empty too when ELR is off, and with ELR on (new 4.1
clusters) as long as no ISR shrank below ``min.insync.replicas``. Topic authorized operations
are those Kafka supports on a topic that the principal is allowed.

Authorization as Kafka's handler: topics without DESCRIBE are left out of an all-topics answer
and, when named, come after the others with TOPIC_AUTHORIZATION_FAILED and no topic id; they use
none of the partition budget.
"""

from __future__ import annotations

from wireserver.admin import ZERO_UUID
from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.topics import INTERNAL_TOPICS

API_KEY = 75
MAX_PARTITION_LIMIT = 2000  # Kafka's max.request.partition.size.limit default


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    response_class = ctx.request.spec.response_class
    topic_class = response_class.DescribeTopicPartitionsResponseTopic
    partition_class = topic_class.DescribeTopicPartitionsResponsePartition
    cursor_class = response_class.Cursor
    services = ctx.services
    topics = {
        name: info
        for name, info in services.logs.topics.items()
        if services.metadata.is_reported(info)
    }
    requested = {t.name for t in body.topics}
    fetch_all = not requested
    cursor = body.cursor
    if cursor is not None and (
        (not fetch_all and cursor.topic_name not in requested) or cursor.partition_index < 0
    ):
        # Kafka throws InvalidRequestException; the request's error response gives every
        # requested topic that error (DescribeTopicPartitionsRequest.getErrorResponse).
        return ctx.response(
            throttle_time_ms=0,
            next_cursor=None,
            topics=[
                topic_class(
                    error_code=ErrorCode.INVALID_REQUEST,
                    name=name,
                    topic_id=ZERO_UUID,
                    is_internal=False,
                    partitions=[],
                    topic_authorized_operations=-(2**31),
                )
                for name in sorted(requested)
            ],
        )
    names = sorted(topics) if fetch_all else sorted(requested)
    if cursor is not None:
        names = [name for name in names if name >= cursor.topic_name]
    denied = {name for name in names if checks.describe_topic(ctx, name)}  # as Metadata hides
    names = [name for name in names if name not in denied]
    remaining = max(min(MAX_PARTITION_LIMIT, body.response_partition_limit), 1)
    result, next_cursor = [], None
    for name in names:
        info = topics.get(name)
        if info is None:
            if not fetch_all:
                result.append(
                    topic_class(
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        name=name,
                        topic_id=ZERO_UUID,
                        is_internal=False,
                        partitions=[],
                        topic_authorized_operations=checks.bitfield(
                            checks.topic_operations(ctx, name)
                        ),
                    )
                )
            continue
        if remaining == 0:
            next_cursor = cursor_class(topic_name=name, partition_index=0)
            break
        start = cursor.partition_index if cursor is not None and cursor.topic_name == name else 0
        views = services.metadata.partition_views(info)
        end = min(len(views), start + remaining)
        partitions = [
            partition_class(
                error_code=ErrorCode.NONE,
                partition_index=view.partition,
                leader_id=view.leader,
                leader_epoch=view.leader_epoch,
                replica_nodes=view.replicas,
                isr_nodes=view.isr,
                eligible_leader_replicas=[],
                last_known_elr=[],
                offline_replicas=view.offline_replicas,
            )
            for view in views[start:end]
        ]
        result.append(
            topic_class(
                error_code=ErrorCode.NONE,
                name=name,
                topic_id=info.topic_id,
                is_internal=name in INTERNAL_TOPICS,
                partitions=partitions,
                topic_authorized_operations=checks.bitfield(checks.topic_operations(ctx, name)),
            )
        )
        if end < len(views):
            next_cursor = cursor_class(topic_name=name, partition_index=end)
            break
        remaining -= len(partitions)
    result += [
        topic_class(
            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            name=name,
            topic_id=ZERO_UUID,
            is_internal=False,
            partitions=[],
            topic_authorized_operations=-(2**31),
        )
        for name in sorted(denied)
        if not fetch_all
    ]
    return ctx.response(throttle_time_ms=0, topics=result, next_cursor=next_cursor)
