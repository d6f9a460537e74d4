"""AlterPartitionReassignments (key 45), v0-1 — what ``kafka-reassign-partitions --execute``
and ``--cancel`` send.

wireserver does not move replicas yet (issue #21). Served so the tool ends with a clear
error instead of the admin client's "does not support ALTER_PARTITION_REASSIGNMENTS" stack
trace. ALTER on the cluster is required (CLUSTER_AUTHORIZATION_FAILED at the top level).
Per partition, as Kafka 4.4's controller (``ReplicationControlManager``) checks it:
UNKNOWN_TOPIC_OR_PARTITION; a cancel (null replicas) gets NO_REASSIGNMENT_IN_PROGRESS, since
none ever is; an empty list, a broker that is not registered or one named twice get
INVALID_REPLICA_ASSIGNMENT with Kafka's message; the partition's current replicas are
accepted (NONE: there is nothing to move, as Kafka completes it at once); any real move gets
INVALID_REQUEST naming what wireserver does not do.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.security.acls import Operation

API_KEY = 45
NOT_MOVED = "wireserver does not move partition replicas (reassignment is issue #21)"


def _check(services, topic: str, partition: int, replicas: list[int] | None):
    """(error, message) for one partition's target replicas."""
    view = services.metadata.partition_view(topic, partition)
    if view is None:
        return (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"Unable to find partition {topic}:{partition}.",
        )
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."
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
    if list(replicas) == list(view.replicas):
        return ErrorCode.NONE, None
    return ErrorCode.INVALID_REQUEST, NOT_MOVED


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
                error, message = _check(
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
