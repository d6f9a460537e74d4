"""AddRaftVoter (key 80), v0-1: add a controller to the KRaft quorum (``kafka-metadata-quorum
add-controller``). wireserver has no quorum, so this is refused (``wireserver.kraft``)."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.kraft import refuse

API_KEY = 80


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    return refuse(ctx, f"controller {ctx.body.voter_id} cannot be added to it")
