"""OffsetFetch (key 9), v1-10.

Null topics (v2+) mean every offset the group has. v8+ fetch several groups at once. A partition
with no committed offset answers offset -1, leader epoch -1, empty metadata, no error (also for
a group that does not exist). ``require_stable`` (v7+): a partition with transactional offsets
awaiting their commit or abort answers UNSTABLE_OFFSET_COMMIT (retriable) and offset -1.

v9 names the member (member id, member epoch): for a consumer-protocol (KIP-848) group it must
be a member (UNKNOWN_MEMBER_ID) at its current epoch (STALE_MEMBER_EPOCH), as in Kafka; a fetch
without a member id (the admin client's) is not checked, nor is any fetch for a classic group.
A share group has no committed offsets: every partition answers -1 and no error, whoever asks
(Kafka's ``fetchOffsets`` treats the share group's GROUP_ID_NOT_FOUND as "nothing committed").

v10 (KIP-848) names topics by id in the request and the response, as Kafka's ``KafkaApis``
does it: an id the metadata does not have answers UNKNOWN_TOPIC_ID on each partition asked for
(offset -1), and a fetch of every offset leaves out the topics the metadata no longer has.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 9


def _fetch(coordinator, group_id, requested, require_stable=False):
    """The committed offsets of ``requested`` ([(topic, partitions)], None: all of them)."""
    found = coordinator.offsets.fetch_offsets(group_id, requested)
    if not require_stable or not coordinator.offsets.pending_txn:
        return found
    return [
        (
            topic,
            [
                (p, UNSTABLE if coordinator.offsets.has_pending(group_id, topic, p) else c)
                for p, c in parts
            ],
        )
        for topic, parts in found
    ]


UNSTABLE = object()  # stands for "pending transactional offsets" in _fetch's answer


def _member_epoch_error(coordinator, g, version):
    group = coordinator.modern_group(g.group_id) if version >= 9 else None
    if group is None or coordinator.is_share_group(g.group_id):
        return ErrorCode.NONE
    return (
        coordinator.consumer.validate_offset_fetch(group, g.member_id, g.member_epoch)
        or ErrorCode.NONE
    )


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    response_class = ctx.request.spec.response_class
    error = coordinator.ensure_ready() or ErrorCode.NONE

    if version >= 8:
        group_class = response_class.OffsetFetchResponseGroup
        topic_class = group_class.OffsetFetchResponseTopics
        partition_class = topic_class.OffsetFetchResponsePartitions
        groups = []
        metadata = ctx.services.metadata
        by_id = metadata.topic_names() if version >= 10 else {}  # v10+ names topics by id
        for g in body.groups:
            group_error = (
                error
                or coordinator.ensure_ready(g.group_id)
                or checks.describe_group(ctx, g.group_id)
                or _member_epoch_error(coordinator, g, version)
                or ErrorCode.NONE
            )
            requested, unknown = None, []
            if g.topics is not None:
                names = [by_id.get(t.topic_id) if version >= 10 else t.name for t in g.topics]
                requested = [
                    (n, list(t.partition_indexes)) for n, t in zip(names, g.topics) if n is not None
                ]
                unknown = [t for n, t in zip(names, g.topics) if n is None]
            found = []
            if not group_error:
                for topic, parts in _fetch(coordinator, g.group_id, requested, body.require_stable):
                    topic_id = metadata.topic_id(topic) if version >= 10 else None
                    if checks.describe_topic(ctx, topic) or (version >= 10 and topic_id is None):
                        continue
                    found.append((topic, topic_id, parts))
            topics = [
                topic_class(
                    name=topic,
                    topic_id=topic_id,
                    partitions=[_partition(partition_class, p, c) for p, c in parts],
                )
                for topic, topic_id, parts in found
            ]
            if not group_error:
                topics += [
                    topic_class(
                        topic_id=t.topic_id,
                        partitions=[
                            _partition(partition_class, p, None, ErrorCode.UNKNOWN_TOPIC_ID)
                            for p in t.partition_indexes
                        ],
                    )
                    for t in unknown
                ]
            groups.append(group_class(group_id=g.group_id, error_code=group_error, topics=topics))
        return ctx.response(throttle_time_ms=0, groups=groups)

    topic_class = response_class.OffsetFetchResponseTopic
    partition_class = topic_class.OffsetFetchResponsePartition
    error = (
        error
        or coordinator.ensure_ready(body.group_id)
        or checks.describe_group(ctx, body.group_id)
        or ErrorCode.NONE
    )
    if error:
        if version >= 2:
            return ctx.response(throttle_time_ms=0, topics=[], error_code=error)
        # v1 has no top-level error: report it on every partition.
        return ctx.response(
            throttle_time_ms=0,
            topics=[
                topic_class(
                    name=t.name,
                    partitions=[
                        _partition(partition_class, p, None, error) for p in t.partition_indexes
                    ],
                )
                for t in body.topics or []
            ],
        )
    requested = None
    if body.topics is not None:
        requested = [(t.name, list(t.partition_indexes)) for t in body.topics]
    found = _fetch(coordinator, body.group_id, requested, version >= 7 and body.require_stable)
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        topics=[
            topic_class(
                name=topic, partitions=[_partition(partition_class, p, c) for p, c in parts]
            )
            for topic, parts in found
        ],
    )


def _partition(partition_class, partition, committed, error=ErrorCode.NONE):
    if committed is UNSTABLE:
        committed, error = None, ErrorCode.UNSTABLE_OFFSET_COMMIT
    if committed is None:
        return partition_class(
            partition_index=partition,
            committed_offset=-1,
            committed_leader_epoch=-1,
            metadata="",
            error_code=error,
        )
    return partition_class(
        partition_index=partition,
        committed_offset=committed.offset,
        committed_leader_epoch=committed.leader_epoch,
        metadata=committed.metadata,
        error_code=error,
    )
