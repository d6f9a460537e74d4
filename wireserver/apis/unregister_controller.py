"""UnregisterController (key 94, new in Kafka 4.4), v0: drop a KRaft controller's
registration. wireserver has no KRaft controllers, so this is refused (``wireserver.kraft``);
``kafka-cluster unregister-controller`` reports that the cluster does not support it."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.kraft import refuse

API_KEY = 94


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    return refuse(ctx, f"there is no controller {ctx.body.controller_id} to unregister")
