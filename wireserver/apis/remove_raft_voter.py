"""RemoveRaftVoter (key 81), v0: remove a controller from the KRaft quorum
(``kafka-metadata-quorum remove-controller``). wireserver has no quorum, so this is refused
(``wireserver.kraft``)."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.kraft import refuse

API_KEY = 81


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    return refuse(ctx, f"controller {ctx.body.voter_id} cannot be removed from it")
