"""AddOffsetsToTxn (key 25), v0-4: adds the group's ``__consumer_offsets`` partition to the
producer's transaction, so that TxnOffsetCommit may write there and EndTxn writes a marker
there. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588). Needs WRITE on the
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
(GROUP_AUTHORIZATION_FAILED). In cluster mode only the id's coordinator serves it
(NOT_COORDINATOR elsewhere) and it answers once the coordinator's record is committed."""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.security import checks
from wireserver.txn.api import fenced_for_version, once_replicated

API_KEY = 25


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    error = (
        checks.write_transactional_id(ctx, body.transactional_id)
        or checks.read_group(ctx, body.group_id)
        or ctx.services.txn.add_offsets(
            body.transactional_id, body.producer_id, body.producer_epoch, body.group_id
        )
    )
    error = yield once_replicated(ctx, body.transactional_id, error)
    return ctx.response(throttle_time_ms=0, error_code=fenced_for_version(error, ctx.version, 2))
