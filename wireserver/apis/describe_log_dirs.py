"""DescribeLogDirs (key 35), v1-5.

Every log dir with the partitions it holds (all of them, or those named in the request; names
or partitions we don't have are left out, as in Kafka) and their sizes on disk. In cluster mode
those are the partitions this broker is an assigned replica of (leader or follower), the ones
it keeps logs for (a replica just assigned may not have its log yet). A
replica moving to another dir (AlterReplicaLogDirs, ``storage.log_move``) is listed twice, as
in Kafka: its current log, and its future log in the destination dir with ``is_future_key``
true and ``offset_lag`` the current log end offset minus the future one. A current log's lag is
Kafka's max(high watermark - log end offset, 0), which is 0.
v3 adds the top-level error code, v4 the dir's total and usable bytes from ``os.statvfs``, v5
``is_cordoned`` (Kafka 4.3: a dir the operator closed to new replicas, announced in BrokerHeartbeat
v2; nothing cordons a dir here, so always false). A dir that failed (``storage.log_dir_failure``)
or cannot be read reports KAFKA_STORAGE_ERROR with no partitions and -1 bytes, as Kafka.

Needs DESCRIBE on the cluster: without it the answer has no dirs and (v3+) the top-level error
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import os

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.security.acls import Operation
from wireserver.storage.errors import KafkaStorageError

API_KEY = 35


def disk_bytes(directory: str) -> tuple[int, int]:
    stats = os.statvfs(directory)
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    denied = checks.cluster(ctx, Operation.DESCRIBE)  # CLUSTER_AUTHORIZATION_FAILED, no dirs
    if denied:
        return ctx.response(throttle_time_ms=0, error_code=denied, results=[])
    logs = ctx.services.logs
    result_class = ctx.request.spec.response_class.DescribeLogDirsResult
    topic_class = result_class.DescribeLogDirsTopic
    partition_class = topic_class.DescribeLogDirsPartition
    wanted = None
    if ctx.body.topics is not None:
        wanted = {(t.topic, p) for t in ctx.body.topics for p in t.partitions}
    by_dir: dict[str, dict[str, list]] = {d: {} for d in logs.log_dirs}
    for (topic, partition), log in sorted(logs.logs()):
        if wanted is not None and (topic, partition) not in wanted:
            continue
        if not ctx.services.metadata.hosts_replica(topic, partition):
            continue
        replicas = [(log.log_dir, log.size_bytes, 0, False)]
        move = logs.moves.get((topic, partition))
        if move is not None:
            replicas.append((move.destination, move.future.size_bytes, move.lag, True))
        for directory, size, lag, future in replicas:
            by_dir.setdefault(directory, {}).setdefault(topic, []).append(
                partition_class(
                    partition_index=partition,
                    partition_size=size,
                    offset_lag=lag,
                    is_future_key=future,
                )
            )
    results = []
    for directory, topics in by_dir.items():
        try:
            logs.failures.check(directory)
            total, usable = disk_bytes(directory)
            error = ErrorCode.NONE
        except (OSError, KafkaStorageError):
            total, usable, error = -1, -1, ErrorCode.KAFKA_STORAGE_ERROR
            topics = {}
        results.append(
            result_class(
                error_code=error,
                log_dir=directory,
                topics=[topic_class(name=name, partitions=parts) for name, parts in topics.items()],
                total_bytes=total,
                usable_bytes=usable,
                is_cordoned=False,
            )
        )
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, results=results)
