"""EndTxn (key 26), v0-5.

Commits or aborts the producer's open transaction: on one node markers are written to every
partition in it before the response goes out; in a cluster the answer comes once the
PrepareCommit/PrepareAbort record is committed and the markers follow (as Kafka), so the next
transaction's first request may get CONCURRENT_TRANSACTIONS until they are written.

v5 is transaction protocol v2 (KIP-890 part 2): the coordinator bumps the producer's epoch at
every end and answers the new producer id and epoch (a new producer id at epoch 0 when the
epoch is exhausted); the markers carry the new epoch, which fences a late batch of the ended
transaction. A retried v5 EndTxn (the epoch before the bump) gets the same answer again.
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588). Needs WRITE on the
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.txn.api import fenced_for_version, once_replicated
from wireserver.txn.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

API_KEY = 26
#: The first EndTxn version of transaction protocol v2.
TRANSACTION_V2 = 5


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    txn = ctx.services.txn
    error = checks.write_transactional_id(ctx, body.transactional_id) or txn.end_txn(
        body.transactional_id,
        body.producer_id,
        body.producer_epoch,
        bool(body.committed),
        2 if ctx.version >= TRANSACTION_V2 else 0,
    )
    error = yield once_replicated(ctx, body.transactional_id, error)
    producer_id, producer_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    if error == ErrorCode.NONE:
        producer_id, producer_epoch = txn.producer_of(body.transactional_id)
    return ctx.response(
        throttle_time_ms=0,
        error_code=fenced_for_version(error, ctx.version, 2),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
