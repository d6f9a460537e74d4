"""AlterReplicaLogDirs (key 34), v1-2 (v0 was removed in Kafka 4, KIP-896).

Moves this broker's replicas of the named partitions into the named log dirs (KIP-113), as
Kafka's ``ReplicaManager.alterReplicaLogDirs``: the answer comes once each move has started (a
future log made in the destination dir); ``wireserver.replica.alter_log_dirs`` copies and swaps
in the background, and DescribeLogDirs shows the future log until then
(``kafka-reassign-partitions --verify`` polls it). Per partition, Kafka's errors:

- LOG_DIR_NOT_FOUND: the dir is not in ``log.dirs``; KAFKA_STORAGE_ERROR: it is offline, or the
  partition's current dir is, or the future log cannot be made there;
- the dir is remembered for the partition's next log (Kafka's preferred log dir) before the
  partition is looked up, so a partition created later lands there. Then a partition this broker
  has no replica of answers REPLICA_NOT_AVAILABLE when the topic has it, UNKNOWN_TOPIC_OR_PARTITION
  otherwise;
- INVALID_TOPIC_EXCEPTION when the future log's dir name would pass 255 characters;
- a move to the dir the replica is in, or is moving to, changes nothing; a move to another dir
  gives up the one under way (its future log is deleted) and starts again.

Needs ALTER on the cluster: without it every partition answers CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.security.acls import Operation
from wireserver.storage.errors import KafkaStorageError, LogDirNotFoundError

API_KEY = 34
log = logging.getLogger(__name__)

#: ``<topic>-<partition>.<32 hex digits>-future`` must fit a file name (Kafka: KAFKA-4893).
MAX_DIR_NAME = 255
FUTURE_NAME_EXTRA = len(".") + 32 + len("-future")


def alter(ctx: RequestContext, topic: str, partition: int, path: str) -> ErrorCode:
    """Start moving one replica to ``path``; the partition's error code."""
    logs = ctx.services.logs
    tp = (topic, partition)
    try:
        if len(f"{topic}-{partition}") + FUTURE_NAME_EXTRA > MAX_DIR_NAME:
            log.warning("Unable to alter log dirs for %s-%d: The topic name is too long.", *tp)
            return ErrorCode.INVALID_TOPIC_EXCEPTION
        destination = logs.check_log_dir(path)
        current = logs.get_log(topic, partition)
        hosted = current is not None and ctx.services.metadata.hosts_replica(topic, partition)
        if current is not None and hosted and current.failures.is_offline(current.log_dir):
            raise KafkaStorageError(f"Partition {topic}-{partition} is offline", current.log_dir)
        logs.prefer_log_dir(tp, destination)
        if not hosted:
            if ctx.services.metadata.partition_view(topic, partition) is None:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return ErrorCode.REPLICA_NOT_AVAILABLE
        if logs.move_log(tp, destination) is not None:
            ctx.services.log_dir_mover.wake()
        return ErrorCode.NONE
    except LogDirNotFoundError as exc:
        log.warning("Unable to alter log dirs for %s-%d: %s", topic, partition, exc)
        return ErrorCode.LOG_DIR_NOT_FOUND
    except KafkaStorageError as exc:
        log.warning("Unable to alter log dirs for %s-%d: %s", topic, partition, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    denied = checks.cluster(ctx, Operation.ALTER)
    topic_class = ctx.request.spec.response_class.AlterReplicaLogDirTopicResult
    partition_class = topic_class.AlterReplicaLogDirPartitionResult
    results: dict[str, list] = {}
    for entry in ctx.body.dirs:
        for topic in entry.topics:
            for partition in topic.partitions:
                code = denied or alter(ctx, topic.name, partition, entry.path)
                results.setdefault(topic.name, []).append(
                    partition_class(partition_index=partition, error_code=code)
                )
    return ctx.response(
        throttle_time_ms=0,
        results=[topic_class(topic_name=name, partitions=parts) for name, parts in results.items()],
    )
