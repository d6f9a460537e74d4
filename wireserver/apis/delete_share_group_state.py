"""DeleteShareGroupState (key 86), v0: a share-partition's state is deleted (tombstones),
answered once replicated; a key with no state is deleted already. Broker-internal; see
``wireserver.share.state_rpcs``."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.share.state_rpcs import state_response, store, written

API_KEY = 86


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    return state_response(ctx, lambda key, data: written(store(ctx).serve_delete(key)))
