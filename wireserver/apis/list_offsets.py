"""ListOffsets (key 2), v1-11.

Special timestamps: -1 latest (the high watermark; with isolation_level read_committed the last
stable offset, and lookups by timestamp find nothing at or past it), -2 earliest (the log start
offset), -3 the record with the largest timestamp (v7+), -4 earliest local (v8+: the log start,
as nothing is tiered), -5 latest tiered (v9+: none, so -1), -6 earliest pending upload (v11+,
KIP-1023: Kafka answers offset -1 for a topic without remote storage, and nothing is tiered
here). Asking for one of these below its version answers UNSUPPORTED_VERSION on that partition,
as Kafka's ``ReplicaManager.isListOffsetsTimestampUnsupported``. Any other timestamp finds the
first record at or after it through the time index; none → offset -1. Only the partition's
leader answers (NOT_LEADER_OR_FOLLOWER elsewhere; ``wireserver.replica``); ``leader_epoch`` is
its current leader epoch for -1 (latest) and, as Kafka's ``fetchOffsetByTimestamp``, the epoch
that wrote the offset found otherwise (from the leader epoch cache; -1 when unknown). Each topic
needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED on every partition otherwise).
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 2
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
EARLIEST_PENDING_UPLOAD = -6
#: The first version each special timestamp may be asked for at (Kafka's
#: ``timestampMinSupportedVersion``).
FIRST_VERSION = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9, EARLIEST_PENDING_UPLOAD: 11}


def lookup(log, timestamp: int, read_committed: bool = False) -> tuple[int, int, ErrorCode]:
    """(timestamp, offset, error) for one partition."""
    hw = log.last_stable_offset if read_committed else log.high_watermark
    if timestamp == LATEST:
        return -1, hw, ErrorCode.NONE
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset, ErrorCode.NONE
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):  # nothing is tiered
        return -1, -1, ErrorCode.NONE
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp()
        if found is None or found.offset >= hw:
            return -1, -1, ErrorCode.NONE
        return found.timestamp, found.offset, ErrorCode.NONE
    if timestamp < 0:
        return -1, -1, ErrorCode.INVALID_REQUEST
    found = log.offset_for_timestamp(timestamp, upper_bound=hw)
    if found is None:
        return -1, -1, ErrorCode.NONE
    return found.timestamp, found.offset, ErrorCode.NONE


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    response_class = ctx.request.spec.response_class
    topic_class = response_class.ListOffsetsTopicResponse
    partition_class = topic_class.ListOffsetsPartitionResponse
    logs = ctx.services.logs
    replicas = ctx.services.replicas
    topics = []
    for topic in ctx.body.topics:
        partitions = []
        denied = checks.describe_topic(ctx, topic.name)  # TOPIC_AUTHORIZATION_FAILED
        for requested in topic.partitions:
            if denied:
                partitions.append(
                    partition_class(
                        partition_index=requested.partition_index,
                        error_code=denied,
                        timestamp=-1,
                        offset=-1,
                        leader_epoch=-1,
                    )
                )
                continue
            log = logs.get_log(topic.name, requested.partition_index)
            epoch = requested.current_leader_epoch if ctx.version >= 4 else -1
            leader_error, leader_epoch = None, -1
            if log is not None:
                leader_error, leader_epoch = replicas.check_leader(
                    topic.name, requested.partition_index, epoch
                )
            if ctx.version < FIRST_VERSION.get(requested.timestamp, 0):
                ts, offset, error = -1, -1, ErrorCode.UNSUPPORTED_VERSION
            elif log is None:
                error = replicas.missing_error(topic.name, requested.partition_index)
                ts, offset = -1, -1
            elif leader_error is not None:
                ts, offset, error = -1, -1, leader_error
            else:
                ts, offset, error = lookup(
                    log, requested.timestamp, ctx.version >= 2 and ctx.body.isolation_level == 1
                )
                if requested.timestamp != LATEST and offset >= 0:
                    found_epoch = log.leader_epoch_for_offset(offset)
                    leader_epoch = found_epoch if found_epoch is not None else -1
            partitions.append(
                partition_class(
                    partition_index=requested.partition_index,
                    error_code=error,
                    timestamp=ts,
                    offset=offset,
                    leader_epoch=leader_epoch if offset >= 0 else -1,
                )
            )
        topics.append(topic_class(name=topic.name, partitions=partitions))
    return ctx.response(throttle_time_ms=0, topics=topics)
