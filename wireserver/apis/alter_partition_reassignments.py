"""AlterPartitionReassignments (key 45), v0-1 — what ``kafka-reassign-partitions --execute``
and ``--cancel`` send.

ALTER on the cluster is required (CLUSTER_AUTHORIZATION_FAILED at the top level). Per
partition, as Kafka's controller checks it: UNKNOWN_TOPIC_OR_PARTITION; an empty list, a
broker that is not registered or one named twice get INVALID_REPLICA_ASSIGNMENT with Kafka's
message; a cancel (null replicas) with no reassignment in progress gets
NO_REASSIGNMENT_IN_PROGRESS; the partition's current replicas with none in progress are
accepted at once (nothing to move).

Cluster mode: any broker that receives the request writes the reassignment to the topic's
znode, as CreatePartitions does (``wireserver.cluster.topic_admin.reassign``: RS = TRS + ORS
with adding/removing replicas, Kafka's ``reassignTo``), and answers once it is written; the
controller completes it when every target replica is in the ISR. A cancel reassigns to the
original replicas. On one node no broker but this one is registered, so nothing can move.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.metadata import TopicError
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.security.acls import Operation

API_KEY = 45


def _check(services, topic: str, partition: int, replicas: list[int] | None):
    """(error, message) for one partition's target replicas."""
    view = services.metadata.partition_view(topic, partition)
    if view is None:
        return (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"Unable to find partition {topic}:{partition}.",
        )
    if replicas is None:
        return ErrorCode.NONE, None
    if not replicas:
        invalid = "The manual partition assignment includes an empty replica list."
        return ErrorCode.INVALID_REPLICATION_ASSIGNMENT, invalid
    live = set(services.metadata.live_broker_ids())
    previous = None
    for broker in sorted(replicas):
        if broker not in live:
            return ErrorCode.INVALID_REPLICATION_ASSIGNMENT, (
                f"The manual partition assignment includes broker {broker}, "
                "but no such broker is registered."
            )
        if broker == previous:
            return ErrorCode.INVALID_REPLICATION_ASSIGNMENT, (
                f"The manual partition assignment includes the broker {broker} more than once."
            )
        previous = broker
    return ErrorCode.NONE, None


def _reassign(services, topic: str, partition: int, replicas: list[int] | None):
    """(error, message): the checks, then the reassignment written."""
    error, message = _check(services, topic, partition, replicas)
    if error != ErrorCode.NONE:
        return error, message
    try:
        started = services.metadata.reassign(
            topic, partition, None if replicas is None else list(replicas)
        )
    except TopicError as exc:
        return exc.code, exc.message
    if not started:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."
    return ErrorCode.NONE, None


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    response_class = ctx.request.spec.response_class
    topic_class = response_class.ReassignableTopicResponse
    partition_class = topic_class.ReassignablePartitionResponse
    denied = checks.cluster(ctx, Operation.ALTER)
    topics = []
    for topic in ctx.body.topics:
        partitions = []
        for target in topic.partitions:
            if denied:
                error, message = denied, None
            else:
                error, message = _reassign(
                    ctx.services, topic.name, target.partition_index, target.replicas
                )
            partitions.append(
                partition_class(
                    partition_index=target.partition_index,
                    error_code=error,
                    error_message=message,
                )
            )
        topics.append(topic_class(name=topic.name, partitions=partitions))
    fields = {
        "throttle_time_ms": 0,
        "error_code": denied or ErrorCode.NONE,
        "error_message": None,
        "responses": [] if denied else topics,
    }
    if ctx.version >= 1:
        fields["allow_replication_factor_change"] = ctx.body.allow_replication_factor_change
    return ctx.response(**fields)
