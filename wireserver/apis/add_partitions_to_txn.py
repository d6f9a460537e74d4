"""AddPartitionsToTxn (key 24), v0-5 (Kafka 4.1's range).

v0-3 are what clients send: one transactional id and its partitions. v4+ batch several
transactional ids; Kafka reserves them for brokers (KIP-890 part 1 verification) and, with
``verify_only``, only checks that each partition is already in the open transaction
(INVALID_TXN_STATE when not); without it, a partition leader adds the partitions of a Produce
for transaction protocol v2 (KIP-890 part 2, ``wireserver.cluster.txn_markers``). We serve
both forms the same way without inter-broker
authorization. Unknown partitions answer UNKNOWN_TOPIC_OR_PARTITION and the rest of the request
OPERATION_NOT_ATTEMPTED. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588). In
cluster mode only the id's coordinator serves it (NOT_COORDINATOR elsewhere) and added
partitions answer once the coordinator's record is committed.

Authorization as ``KafkaApis``: v0-3 need WRITE on the transactional id (every partition
TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise) and on each topic (TOPIC_AUTHORIZATION_FAILED,
always for internal topics; the other partitions OPERATION_NOT_ATTEMPTED); v4+ need
CLUSTER_ACTION on the cluster (top-level CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.txn.api import fenced_for_version, once_replicated

API_KEY = 24


def _results(topic_class, results: dict, version: int):
    partition_class = topic_class.AddPartitionsToTxnPartitionResult
    by_topic: dict[str, list] = {}
    for (topic, partition), error in results.items():
        by_topic.setdefault(topic, []).append(
            partition_class(
                partition_index=partition,
                partition_error_code=fenced_for_version(error, version, 2),
            )
        )
    return [
        topic_class(name=topic, results_by_partition=parts) for topic, parts in by_topic.items()
    ]


def _partitions(topics) -> list[tuple[str, int]]:
    return [(topic.name, p) for topic in topics for p in topic.partitions]


@defer.inlineCallbacks
def _replicated(ctx, transactional_id: str, results: dict):
    """The partitions added (NONE) answer once the coordinator's record is committed."""
    if ErrorCode.NONE not in results.values():
        return results
    error = yield once_replicated(ctx, transactional_id, ErrorCode.NONE)
    return {tp: error if code == ErrorCode.NONE else code for tp, code in results.items()}


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.txn
    response_class = ctx.request.spec.response_class
    if version <= 3:
        partitions = _partitions(body.v3_and_below_topics)
        results = checks.add_partitions_to_txn(  # WRITE on the transactional id and topics
            ctx, body.v3_and_below_transactional_id, partitions
        ) or coordinator.add_partitions(
            body.v3_and_below_transactional_id,
            body.v3_and_below_producer_id,
            body.v3_and_below_producer_epoch,
            partitions,
        )
        results = yield _replicated(ctx, body.v3_and_below_transactional_id, results)
        return ctx.response(
            throttle_time_ms=0,
            results_by_topic_v3_and_below=_results(
                response_class.AddPartitionsToTxnTopicResult, results, version
            ),
        )
    denied = checks.cluster_action(ctx)  # v4+ come from brokers
    if denied:
        return ctx.response(throttle_time_ms=0, error_code=denied, results_by_transaction=[])
    result_class = response_class.AddPartitionsToTxnResult
    topic_class = result_class.AddPartitionsToTxnTopicResult
    out = []
    for txn in body.transactions:
        partitions = _partitions(txn.topics)
        if txn.verify_only:
            results = coordinator.verify_partitions(
                txn.transactional_id, txn.producer_id, txn.producer_epoch, partitions
            )
        else:
            # A partition leader's implicit add: transaction protocol v2 (KIP-890 part 2).
            results = coordinator.add_partitions(
                txn.transactional_id,
                txn.producer_id,
                txn.producer_epoch,
                partitions,
                transaction_version=2,
            )
            results = yield _replicated(ctx, txn.transactional_id, results)
        out.append(
            result_class(
                transactional_id=txn.transactional_id,
                topic_results=_results(topic_class, results, version),
            )
        )
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, results_by_transaction=out)
