"""ElectLeaders (key 43), v0-2 (KIP-183 preferred, KIP-460 unclean).

ALTER on the cluster is required (CLUSTER_AUTHORIZATION_FAILED on every partition and at the
top level otherwise). In cluster mode the controller elects (``Controller.elect``); any other
broker answers NOT_CONTROLLER for each partition, as a ZooKeeper-era broker whose controller is
elsewhere did (clients send the request to the controller). Per partition: NONE once the new
leader is written to ZooKeeper, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE (the
preferred replica is dead or out of sync), ELIGIBLE_LEADERS_NOT_AVAILABLE,
UNKNOWN_TOPIC_OR_PARTITION. Null ``topic_partitions`` means every partition, and then
partitions that need no election are left out of the answer (as Kafka's controller does).

On one node this broker leads every partition and is its only replica: ELECTION_NOT_NEEDED.
v0 has no election type (preferred) and no top-level error.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, Operation, ResourceType

API_KEY = 43
PREFERRED, UNCLEAN = 0, 1
#: the partition's error message, as Kafka's controller words it (ApiError: the error's own)
MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
    ErrorCode.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
}


def _message(services, topic: str, partition: int, error: ErrorCode) -> str | None:
    """Kafka's error message for one partition (kafka-leader-election prints it)."""
    if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        if services.metadata.partition_view(topic, 0) is None:
            return f"No such topic as {topic}"
        return f"No such partition as {topic}-{partition}"
    return MESSAGES.get(error, None if error == ErrorCode.NONE else error.name)


def _requested(services, body) -> list[tuple[str, int]] | None:
    if body.topic_partitions is None:
        return None
    return [(t.topic, p) for t in body.topic_partitions for p in t.partitions]


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    services = ctx.services
    election_type = body.election_type if version >= 1 else PREFERRED
    requested = _requested(services, body)
    top = ErrorCode.NONE
    results: dict[tuple[str, int], ErrorCode] = {}
    if not authorize(ctx, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        top = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        results = {tp: top for tp in requested or []}
    elif election_type not in (PREFERRED, UNCLEAN):
        top = ErrorCode.INVALID_REQUEST
        results = {tp: top for tp in requested or []}
    else:
        for tp in requested if requested is not None else services.metadata.all_partitions():
            if tp in results:
                continue
            error = services.metadata.elect(tp, election_type)
            if requested is None and error == ErrorCode.ELECTION_NOT_NEEDED:
                continue
            results[tp] = error
    response_class = ctx.request.spec.response_class
    result_class = response_class.ReplicaElectionResult
    partition_class = result_class.PartitionResult
    by_topic: dict[str, list] = {}
    for (topic, partition), error in results.items():
        by_topic.setdefault(topic, []).append(
            partition_class(
                partition_id=partition,
                error_code=error,
                error_message=_message(services, topic, partition, error),
            )
        )
    fields = {
        "throttle_time_ms": 0,
        "replica_election_results": [
            result_class(topic=topic, partition_result=parts) for topic, parts in by_topic.items()
        ],
    }
    if version >= 1:
        fields["error_code"] = top
    return ctx.response(**fields)
