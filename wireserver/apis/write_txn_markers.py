"""WriteTxnMarkers (key 27), v1 (Kafka 4.1 serves v1 only; v0 was removed by KIP-896).

Inter-broker in Kafka: the transaction coordinator asks partition leaders to write COMMIT/ABORT
markers. One node writes its own markers directly, so clients never need this; it is served
for tools and tests and writes the markers through the same path. Needs ALTER or CLUSTER_ACTION
on the cluster (CLUSTER_AUTHORIZATION_FAILED on every partition otherwise). A marker for a ``__consumer_offsets`` partition completes the
producer's pending transactional offsets there.
"""

from __future__ import annotations

from wireserver.apis import handles
from wireserver.security import checks

API_KEY = 27


@handles(API_KEY)
def handle(ctx):
    response_class = ctx.request.spec.response_class
    result_class = response_class.WritableTxnMarkerResult
    topic_class = result_class.WritableTxnMarkerTopicResult
    partition_class = topic_class.WritableTxnMarkerPartitionResult
    out = []
    denied = checks.write_txn_markers(ctx)  # ALTER or CLUSTER_ACTION on the cluster
    for marker in ctx.body.markers:
        partitions = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        results = {tp: denied for tp in partitions} if denied else ctx.broker.txn.write_markers(marker.producer_id, marker.producer_epoch,
                                               bool(marker.transaction_result), partitions,
                                               marker.coordinator_epoch)
        by_topic: dict[str, list] = {}
        for (topic, partition), error in results.items():
            by_topic.setdefault(topic, []).append(partition_class(partition_index=partition,
                                                                  error_code=error))
        out.append(result_class(producer_id=marker.producer_id, topics=[
            topic_class(name=t, partitions=ps) for t, ps in by_topic.items()]))
    return ctx.response(markers=out)
