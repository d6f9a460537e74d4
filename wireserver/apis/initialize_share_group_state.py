"""InitializeShareGroupState (key 83), v0: a share-partition's state starts over at
``StartOffset`` with ``StateEpoch`` (AlterShareGroupOffsets through the group coordinator, in
Kafka). Broker-internal; see ``wireserver.share.state_rpcs`` for what the share coordinator's
RPCs have in common. Answered once the snapshot is replicated."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.share.state_rpcs import state_response, store, written

API_KEY = 83


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    def answer(key, data):
        return written(store(ctx).serve_write(key, data.state_epoch, -1, data.start_offset, []))

    return state_response(ctx, answer)
