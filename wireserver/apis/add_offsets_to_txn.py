"""AddOffsetsToTxn (key 25), v0-4: adds the group's ``__consumer_offsets`` partition to the
producer's transaction, so that TxnOffsetCommit may write there and EndTxn writes a marker
there. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588)."""

from __future__ import annotations

from wireserver.apis import handles
from wireserver.txn.api import fenced_for_version

API_KEY = 25


@handles(API_KEY)
def handle(ctx):
    body = ctx.body
    error = ctx.broker.txn.add_offsets(body.transactional_id, body.producer_id,
                                       body.producer_epoch, body.group_id)
    return ctx.response(throttle_time_ms=0,
                        error_code=fenced_for_version(error, ctx.version, 2))
