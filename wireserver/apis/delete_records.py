"""DeleteRecords (key 21), v0-2.

Moves each partition's log start offset up to the requested offset (-1 = the high watermark)
and deletes the segments wholly below it; the response's ``low_watermark`` is the new log start
offset. An offset below the current log start changes nothing; one above the high watermark
(or negative other than -1) fails with OFFSET_OUT_OF_RANGE; an unknown partition with
UNKNOWN_TOPIC_OR_PARTITION (low watermark -1). Each topic needs DELETE
(TOPIC_AUTHORIZATION_FAILED, low watermark -1).

Only the partition's leader deletes (NOT_LEADER_OR_FOLLOWER elsewhere, as Kafka's
``deleteRecordsOnLeader``); followers move their log start to the leader's from their fetch
responses and report theirs in their next fetch. The answer waits, as Kafka's
``DelayedDeleteRecords``, until the low watermark (the smallest log start over the leader and
its live followers) reached the leader's new log start, and gives that low watermark;
REQUEST_TIMED_OUT after ``timeout_ms``, NOT_LEADER_OR_FOLLOWER if leadership moved meanwhile.
With one replica the new log start is final at once.
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.storage.errors import KafkaStorageError, OffsetOutOfRange

API_KEY = 21
HIGH_WATERMARK = -1


def delete_before(log, offset: int) -> tuple[int, ErrorCode]:
    if offset == HIGH_WATERMARK:
        offset = log.high_watermark
    try:
        return log.delete_records_before(offset), ErrorCode.NONE
    except (OffsetOutOfRange, KafkaStorageError) as exc:  # a failed log dir: its error too
        return -1, exc.error_code


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    topic_class = ctx.request.spec.response_class.DeleteRecordsTopicResult
    partition_class = topic_class.DeleteRecordsPartitionResult
    logs = ctx.services.logs
    topics = []
    replicating = []  # (topic, partition, response entry) deleted on the leader
    for topic in ctx.body.topics:
        partitions = []
        denied = checks.delete_records(ctx, topic.name)  # DELETE on the topic
        for requested in topic.partitions:
            log = logs.get_log(topic.name, requested.partition_index)
            not_leader = None
            if log is not None:
                not_leader, _ = ctx.services.replicas.check_leader(
                    topic.name, requested.partition_index
                )
            if denied:
                low, error = -1, denied
            elif log is None:
                low = -1
                error = ctx.services.replicas.missing_error(topic.name, requested.partition_index)
            elif not_leader is not None:
                low, error = -1, not_leader
            else:
                low, error = delete_before(log, requested.offset)
            partitions.append(
                partition_class(
                    partition_index=requested.partition_index, low_watermark=low, error_code=error
                )
            )
            if error == ErrorCode.NONE:
                replicating.append((topic.name, requested.partition_index, partitions[-1]))
        topics.append(topic_class(name=topic.name, partitions=partitions))
    if replicating:
        return await_low_watermarks(ctx, replicating, topics)
    return ctx.response(throttle_time_ms=0, topics=topics)


@defer.inlineCallbacks
def await_low_watermarks(ctx, waiting, topics):
    """Hold the answer until each (topic, partition, response entry)'s low watermark reached
    the leader's new log start (the entry's ``low_watermark``): every follower on a live broker
    has deleted up to it too (at once when the partition has no follower)."""
    services = ctx.services
    deadline = services.reactor.seconds() + max(0, ctx.body.timeout_ms) / 1000.0
    while True:
        still = []
        for name, index, entry in waiting:
            low = services.replicas.low_watermark((name, index))
            if low is None:
                entry.low_watermark, entry.error_code = -1, ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif low >= entry.low_watermark:
                entry.low_watermark = low
            else:
                still.append((name, index, entry))
        waiting = still
        remaining = deadline - services.reactor.seconds()
        if not waiting or remaining <= 0:
            break
        yield services.purgatory.watch(
            [(key, name, index) for name, index, _ in waiting for key in ("low_watermark", "hw")],
            remaining,
        )
    for _, _, entry in waiting:
        entry.error_code = ErrorCode.REQUEST_TIMED_OUT
    return ctx.response(throttle_time_ms=0, topics=topics)
