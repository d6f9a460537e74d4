"""ListPartitionReassignments (key 46), v0 — what ``kafka-reassign-partitions --execute``
and ``--verify`` ask first.

The partitions with a reassignment in progress (their replicas RS = ORS + TRS, adding and
removing replicas), of the topics and partitions asked for or of every topic (null
``topics``); in cluster mode read from ZooKeeper at the time of the request. A partition asked
for that is not being reassigned is left out, as Kafka does. DESCRIBE on the cluster is
required (CLUSTER_AUTHORIZATION_FAILED), as Kafka checks it.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.security.acls import Operation

API_KEY = 46


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    denied = checks.cluster(ctx, Operation.DESCRIBE)
    if denied:
        return ctx.response(throttle_time_ms=0, error_code=denied, error_message=None, topics=[])
    asked = ctx.body.topics
    wanted = None if asked is None else {(t.name, p) for t in asked for p in t.partition_indexes}
    names = None if asked is None else sorted({t.name for t in asked})
    topic_class = ctx.request.spec.response_class.OngoingTopicReassignment
    partition_class = topic_class.OngoingPartitionReassignment
    by_topic: dict[str, list] = {}
    for found in ctx.services.metadata.reassignments(names):
        if wanted is not None and (found.topic, found.partition) not in wanted:
            continue
        by_topic.setdefault(found.topic, []).append(
            partition_class(
                partition_index=found.partition,
                replicas=found.replicas,
                adding_replicas=found.adding,
                removing_replicas=found.removing,
            )
        )
    topics = [topic_class(name=name, partitions=parts) for name, parts in by_topic.items()]
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, topics=topics
    )
