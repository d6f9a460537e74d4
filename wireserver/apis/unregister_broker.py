"""UnregisterBroker (key 64), v0: KRaft's way to drop a broker's registration from the
controller. wireserver's brokers register in ZooKeeper and are gone when their session ends,
so this is refused (``wireserver.kraft``); ``kafka-cluster unregister`` reports that the
cluster does not support broker unregistration."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.kraft import refuse

API_KEY = 64


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    return refuse(
        ctx,
        f"broker {ctx.body.broker_id} cannot be unregistered; a broker leaves the cluster "
        f"when its ZooKeeper session ends",
    )
