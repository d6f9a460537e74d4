"""OffsetCommit (key 8), v2-10 (v0-1 were removed in Kafka 4).

Members commit with their generation and member id (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS while the group completes a rebalance); generation -1
with no member id is a "simple" commit, allowed only while the group has no members. For a group
that does not exist, a member commit gets GROUP_ID_NOT_FOUND from v9 and ILLEGAL_GENERATION
before. A share group's id answers GROUP_ID_NOT_FOUND on every partition, whatever the
generation (Kafka: "Group X is not a consumer group."; share groups keep no offsets). Each
partition: UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE past
``offset.metadata.max.bytes``. The commit is in ``__consumer_offsets`` before the response (in cluster mode: below the high
watermark, as Kafka appends commits with acks=-1).

v10 (KIP-848) names each topic by its id, not its name, and the response echoes the ids: the
Java consumer uses it when it knows every topic's id. An id not in the metadata answers
UNKNOWN_TOPIC_ID on each of its partitions (a group-level error still wins), as Kafka's
``KafkaApis`` does before the coordinator sees the commit.

Skipped: ``retention_time_ms`` (v2-4) is ignored, as Kafka 4 does.
"""

from __future__ import annotations

from typing import Any

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups.offsets import OffsetCommit
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 8


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    """The answer at once on one node; in cluster mode a Deferred of it, once the commit is
    replicated. A plain function, not an ``inlineCallbacks`` generator: on one node no commit
    waits, and the generator's machinery cost every commit."""
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    # v10 names topics by id; None stands for an id the metadata does not have.
    names = [t.name for t in body.topics]
    if version >= 10:
        by_id = ctx.services.metadata.topic_names()
        names = [by_id.get(t.topic_id) for t in body.topics]
    commits = [
        OffsetCommit(
            name,
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch if version >= 6 else -1,
            p.committed_metadata,
        )
        for name, t in zip(names, body.topics)
        if name is not None
        for p in t.partitions
    ]
    error = coordinator.ensure_ready()
    if error is None and body.group_id is None:
        error = ErrorCode.INVALID_GROUP_ID
    error = error or coordinator.ensure_ready(body.group_id)
    error = error or checks.read_group(ctx, body.group_id)
    if error is not None:
        return respond(ctx, names, {(c.topic, c.partition): error for c in commits}, error)
    denied = {(c.topic, c.partition): checks.read_topic(ctx, c.topic) for c in commits}
    results = coordinator.offsets.commit_offsets(
        body.group_id,
        body.generation_id_or_member_epoch,
        body.member_id or "",
        body.group_instance_id if version >= 7 else None,
        version,
        [c for c in commits if not denied[(c.topic, c.partition)]],
    )
    results.update({key: error for key, error in denied.items() if error})
    if ErrorCode.NONE not in results.values() or coordinator.committed_on_append:
        return respond(ctx, names, results)

    def replicated(code: ErrorCode) -> Any:
        # Cluster mode: answered once the commit is replicated (acks=-1, as Kafka).
        if code != ErrorCode.NONE:
            for key, result in results.items():
                if result == ErrorCode.NONE:
                    results[key] = code
        return respond(ctx, names, results)

    return coordinator.replicated(body.group_id).addCallback(replicated)


def respond(
    ctx: RequestContext,
    names: list[str | None],
    results: dict[tuple[str, int], ErrorCode],
    error: ErrorCode | None = None,
) -> Any:
    """The response: each partition's result; a topic id the metadata does not have answers
    ``error`` (a group-level one) or UNKNOWN_TOPIC_ID on each of its partitions."""
    topic_class = ctx.request.spec.response_class.OffsetCommitResponseTopic
    partition_class = topic_class.OffsetCommitResponsePartition
    return ctx.response(
        throttle_time_ms=0,
        topics=[
            topic_class(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    partition_class(
                        partition_index=p.partition_index,
                        error_code=(
                            error or ErrorCode.UNKNOWN_TOPIC_ID
                            if name is None
                            else results[(name, p.partition_index)]
                        ),
                    )
                    for p in t.partitions
                ],
            )
            for name, t in zip(names, ctx.body.topics)
        ],
    )
