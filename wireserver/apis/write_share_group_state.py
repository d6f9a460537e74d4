"""WriteShareGroupState (key 85), v0-1: a share-partition's leader writes its whole state to
the share coordinator (on acknowledgement, release and lock expiry), answered once the
ShareSnapshot record is replicated. Broker-internal; see ``wireserver.share.state_rpcs``.
FENCED_LEADER_EPOCH for a leader epoch older than the state's, FENCED_STATE_EPOCH for a state
epoch older than the state's (reset since). v1's DeliveryCompleteCount is not kept."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.share.state_rpcs import state_response, store, written

API_KEY = 85


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    def answer(key, data):
        batches = [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in data.state_batches
        ]
        return written(
            store(ctx).serve_write(
                key, data.state_epoch, data.leader_epoch, data.start_offset, batches
            )
        )

    return state_response(ctx, answer)
