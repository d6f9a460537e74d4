"""DescribeTransactions (key 65), v0: state, timeout, start time, producer id and epoch and
the partitions of each transactional id (TRANSACTIONAL_ID_NOT_FOUND for an id we don't know).
Each id needs DESCRIBE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); topics the principal may not
DESCRIBE are left out. In cluster mode only the id's coordinator knows it: NOT_COORDINATOR
elsewhere, COORDINATOR_LOAD_IN_PROGRESS while it loads."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 65


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    coordinator = ctx.services.txn
    state_class = ctx.request.spec.response_class.TransactionState
    topic_class = state_class.TopicData
    out = []
    for transactional_id in ctx.body.transactional_ids:
        txn = coordinator.txns.get(transactional_id)
        denied = checks.describe_transactional_id(
            ctx, transactional_id
        ) or coordinator.runtime.coordinator_error(coordinator.partition_for(transactional_id))
        if denied or txn is None:
            out.append(
                state_class(
                    error_code=denied or ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
                    transactional_id=transactional_id,
                    transaction_state="",
                    transaction_timeout_ms=0,
                    transaction_start_time_ms=-1,
                    producer_id=-1,
                    producer_epoch=-1,
                    topics=[],
                )
            )
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(txn.partitions):
            if checks.describe_topic(ctx, topic):  # only topics the principal may describe
                continue
            by_topic.setdefault(topic, []).append(partition)
        out.append(
            state_class(
                error_code=ErrorCode.NONE,
                transactional_id=transactional_id,
                transaction_state=txn.state.display,
                transaction_timeout_ms=txn.txn_timeout_ms,
                transaction_start_time_ms=txn.txn_start_timestamp,
                producer_id=txn.producer_id,
                producer_epoch=txn.producer_epoch,
                topics=[topic_class(topic=t, partitions=ps) for t, ps in by_topic.items()],
            )
        )
    return ctx.response(throttle_time_ms=0, transaction_states=out)
