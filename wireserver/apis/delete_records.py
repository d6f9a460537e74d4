"""DeleteRecords (key 21), v0-2.

Moves each partition's log start offset up to the requested offset (-1 = the high watermark)
and deletes the segments wholly below it; the response's ``low_watermark`` is the new log start
offset. An offset below the current log start changes nothing; one above the high watermark
(or negative other than -1) fails with OFFSET_OUT_OF_RANGE; an unknown partition with
UNKNOWN_TOPIC_OR_PARTITION (low watermark -1). Each topic needs DELETE
(TOPIC_AUTHORIZATION_FAILED, low watermark -1).

In cluster mode only the leader deletes (NOT_LEADER_OR_FOLLOWER elsewhere, as Kafka's
``deleteRecordsOnLeader``); followers move their log start to the leader's from their fetch
responses.

Skipped: ``timeout_ms`` — the answer does not wait for the followers' log starts (Kafka's
``DelayedDeleteRecords`` waits until every live replica's log start passed the offset and
answers their minimum as ``low_watermark``); here it is the leader's new log start.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from storage.errors import OffsetOutOfRange
from wireserver.apis import handles
from wireserver.security import checks

API_KEY = 21
HIGH_WATERMARK = -1


def delete_before(log, offset: int) -> tuple[int, ErrorCode]:
    if offset == HIGH_WATERMARK:
        offset = log.high_watermark
    try:
        return log.delete_records_before(offset), ErrorCode.NONE
    except OffsetOutOfRange:
        return -1, ErrorCode.OFFSET_OUT_OF_RANGE


@handles(API_KEY)
def handle(ctx):
    topic_class = ctx.request.spec.response_class.DeleteRecordsTopicResult
    partition_class = topic_class.DeleteRecordsPartitionResult
    logs = ctx.broker.logs
    cluster = ctx.broker.cluster
    topics = []
    for topic in ctx.body.topics:
        partitions = []
        denied = checks.delete_records(ctx, topic.name)  # DELETE on the topic
        for requested in topic.partitions:
            log = logs.get_log(topic.name, requested.partition_index)
            not_leader = None
            if cluster is not None and log is not None:
                not_leader, _ = cluster.check_leader(topic.name, requested.partition_index)
            if denied:
                low, error = -1, denied
            elif log is None:
                low, error = -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not_leader is not None:
                low, error = -1, not_leader
            else:
                low, error = delete_before(log, requested.offset)
            partitions.append(partition_class(partition_index=requested.partition_index,
                                              low_watermark=low, error_code=error))
        topics.append(topic_class(name=topic.name, partitions=partitions))
    return ctx.response(throttle_time_ms=0, topics=topics)
