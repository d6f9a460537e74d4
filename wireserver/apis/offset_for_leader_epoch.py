"""OffsetForLeaderEpoch (key 23), v2-4.

For each partition, the largest leader epoch at or below the requested one and the end offset
of that epoch (the start of the next higher epoch, or the log end offset for the latest one),
from the partition's leader epoch cache (KIP-101/279); (-1, -1) for an undefined epoch or one
above every known epoch. This node became leader of every partition at epoch 0 at the start of
its log, so an empty cache answers as if it held (0, log end offset) — what Kafka's
``makeLeader`` would have written.

``current_leader_epoch`` fences as in Fetch: older than ours → FENCED_LEADER_EPOCH, newer →
UNKNOWN_LEADER_EPOCH; -1 skips the check. Unknown partitions → UNKNOWN_TOPIC_OR_PARTITION.

Only the partition's leader answers (NOT_LEADER_OR_FOLLOWER elsewhere) and fencing is against
its leader epoch (``wireserver.replica``); followers ask before fetching from a new leader.

Authorization: CLUSTER_ACTION on the cluster (followers), else DESCRIBE on each topic (consumers,
KIP-320); TOPIC_AUTHORIZATION_FAILED on every partition of a topic without either.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 23
LEADER_EPOCH = 0
UNDEFINED = -1


def end_offset_for(log, epoch: int) -> tuple[int, int]:
    if epoch == UNDEFINED:
        return UNDEFINED, UNDEFINED
    if log.latest_epoch is None:
        if epoch == LEADER_EPOCH:
            return LEADER_EPOCH, log.log_end_offset
        return UNDEFINED, UNDEFINED
    return log.end_offset_for_epoch(epoch)


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    topic_class = ctx.request.spec.response_class.OffsetForLeaderTopicResult
    partition_class = topic_class.EpochEndOffset
    logs = ctx.services.logs
    replicas = ctx.services.replicas
    topics = []
    for topic in ctx.body.topics:
        partitions = []
        denied = checks.offset_for_leader_epoch(ctx, topic.topic)
        for requested in topic.partitions:
            if denied:
                partitions.append(
                    partition_class(
                        error_code=denied,
                        partition=requested.partition,
                        leader_epoch=UNDEFINED,
                        end_offset=UNDEFINED,
                    )
                )
                continue
            log = logs.get_log(topic.topic, requested.partition)
            epoch, offset = UNDEFINED, UNDEFINED
            if log is None:
                error = replicas.missing_error(topic.topic, requested.partition)
            else:
                not_leader, _ = replicas.check_leader(
                    topic.topic, requested.partition, requested.current_leader_epoch
                )
                error = ErrorCode.NONE if not_leader is None else not_leader
                if not_leader is None:
                    epoch, offset = end_offset_for(log, requested.leader_epoch)
            partitions.append(
                partition_class(
                    error_code=error,
                    partition=requested.partition,
                    leader_epoch=epoch,
                    end_offset=offset,
                )
            )
        topics.append(topic_class(topic=topic.topic, partitions=partitions))
    return ctx.response(throttle_time_ms=0, topics=topics)
