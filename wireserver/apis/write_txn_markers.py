"""WriteTxnMarkers (key 27), v1-2 (v0 was removed by KIP-896). v2 (KIP-1228) says which
transaction protocol the transaction used: at 2 the marker's producer epoch must be above the
partition's (every v2 transaction ends with an epoch bump), else INVALID_PRODUCER_EPOCH.

Inter-broker: the transaction coordinator asks partition leaders to write COMMIT/ABORT markers.
One node writes its own markers directly, so there clients never need this; it is served for
tools and tests and writes the markers through the same path. In a cluster it is how the
coordinator reaches the leaders (``wireserver.cluster.txn_markers``): a partition this broker
does not lead answers NOT_LEADER_OR_FOLLOWER, and the answer waits, as Kafka's acks=-1 append,
until the high watermark passes each marker (NOT_ENOUGH_REPLICAS_AFTER_APPEND,
REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER otherwise). Needs ALTER or CLUSTER_ACTION on the
cluster (CLUSTER_AUTHORIZATION_FAILED on every partition otherwise). A marker for a
``__consumer_offsets`` partition completes the producer's pending transactional offsets there.
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.coordinator_runtime import REQUEST_TIMEOUT_MS
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 27


@defer.inlineCallbacks
def _replicated(ctx, results: dict):
    """Each written marker's answer once the high watermark has passed it (Kafka's acks=-1
    append of markers, bounded by its ``request.timeout.ms`` default)."""
    services = ctx.services
    written = [tp for tp, error in results.items() if error == ErrorCode.NONE]

    def committed(topic: str, partition: int) -> defer.Deferred:
        last_offset = services.logs.get_log(topic, partition).log_end_offset - 1
        d = services.replicas.wait_for_replication(
            [(topic, partition, last_offset)], REQUEST_TIMEOUT_MS
        )
        return d.addCallback(lambda answers: answers[(topic, partition)])

    waits = [committed(topic, partition) for topic, partition in written]
    answers = yield defer.gatherResults(waits)
    results.update(zip(written, answers))
    return results


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    response_class = ctx.request.spec.response_class
    result_class = response_class.WritableTxnMarkerResult
    topic_class = result_class.WritableTxnMarkerTopicResult
    partition_class = topic_class.WritableTxnMarkerPartitionResult
    out = []
    denied = checks.write_txn_markers(ctx)  # ALTER or CLUSTER_ACTION on the cluster
    for marker in ctx.body.markers:
        partitions = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        if denied:
            results = {tp: denied for tp in partitions}
        else:
            results = ctx.services.txn.write_markers(
                marker.producer_id,
                marker.producer_epoch,
                bool(marker.transaction_result),
                partitions,
                marker.coordinator_epoch,
                marker.transaction_version if ctx.version >= 2 else 0,
            )
            results = yield _replicated(ctx, results)
        by_topic: dict[str, list] = {}
        for (topic, partition), error in results.items():
            by_topic.setdefault(topic, []).append(
                partition_class(partition_index=partition, error_code=error)
            )
        out.append(
            result_class(
                producer_id=marker.producer_id,
                topics=[topic_class(name=t, partitions=ps) for t, ps in by_topic.items()],
            )
        )
    return ctx.response(markers=out)
