"""EndTxn (key 26), v0-4.

Commits or aborts the producer's open transaction: on one node markers are written to every
partition in it before the response goes out; in a cluster the answer comes once the
PrepareCommit/PrepareAbort record is committed and the markers follow (as Kafka), so the next
transaction's first request may get CONCURRENT_TRANSACTIONS until they are written. v5 (Kafka
4.x, KIP-890 transaction protocol v2: the coordinator bumps the epoch at every commit and
answers the new one) is not served, as the ``transaction.version`` feature is not advertised.
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588). Needs WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.security import checks
from wireserver.txn.api import fenced_for_version, once_replicated

API_KEY = 26


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    error = checks.write_transactional_id(ctx, body.transactional_id) or ctx.services.txn.end_txn(
        body.transactional_id, body.producer_id, body.producer_epoch, bool(body.committed)
    )
    error = yield once_replicated(ctx, body.transactional_id, error)
    return ctx.response(throttle_time_ms=0, error_code=fenced_for_version(error, ctx.version, 2))
