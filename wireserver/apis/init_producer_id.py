"""InitProducerId (key 22), v0-5 (Kafka 4.1 serves 0-5; v6, KIP-939 two-phase commit, is
unstable upstream and not served).

Idempotent producers (null transactional id) get a new producer id with epoch 0 from
``wireserver.producer_ids`` (blocks persisted before use: unique across restarts).

KIP-360 (v3+): a request may carry the producer id and epoch it had (both set, or both -1:
anything else is INVALID_REQUEST, as in Kafka). For an idempotent producer Kafka ignores them
and hands out a new id with epoch 0 (TransactionCoordinator.handleInitProducerId), and so do
we: either way the producer continues with a fresh (id, epoch) whose sequences start at 0.
Epoch bumps of the same id belong to transactional ids.

Transactional ids: as Kafka, an empty transactional id is INVALID_REQUEST and a timeout
outside (0, transaction.max.timeout.ms] is INVALID_TRANSACTION_TIMEOUT; the rest goes to the
transaction coordinator (``wireserver.txn``): a new producer id with epoch 0, or the next epoch
of the id's producer (fencing the previous one; an open transaction is aborted first and the
answer is CONCURRENT_TRANSACTIONS, so the client retries). PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH before v4 (KIP-588). In cluster mode a transactional id is served by
its coordinator only (NOT_COORDINATOR elsewhere, see ``wireserver.txn.coordinator``) and the
answer waits until the new epoch's record is committed.
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.txn.api import fenced_for_version, once_replicated

API_KEY = 22
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    services = ctx.services

    def answer(error: ErrorCode, producer_id: int = NO_PRODUCER_ID, epoch: int = NO_PRODUCER_EPOCH):
        return ctx.response(
            throttle_time_ms=0, error_code=error, producer_id=producer_id, producer_epoch=epoch
        )

    denied = checks.init_producer_id(ctx)
    if denied:
        return answer(denied)
    producer_id = NO_PRODUCER_ID
    epoch = NO_PRODUCER_EPOCH
    if ctx.version >= 3:
        producer_id, epoch = body.producer_id, body.producer_epoch
    if (producer_id == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        return answer(ErrorCode.INVALID_REQUEST)
    transactional_id = body.transactional_id
    if transactional_id is None:
        return answer(ErrorCode.NONE, services.producer_ids.generate(), 0)
    if transactional_id == "":
        return answer(ErrorCode.INVALID_REQUEST)
    timeout = body.transaction_timeout_ms
    if not 0 < timeout <= services.config["transaction.max.timeout.ms"]:
        return answer(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    error, producer_id, epoch = services.txn.init_producer_id(
        transactional_id, timeout, producer_id, epoch
    )
    error = yield once_replicated(ctx, transactional_id, error)
    if error != ErrorCode.NONE:
        producer_id, epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    return answer(fenced_for_version(error, ctx.version, 4), producer_id, epoch)
