"""ShareAcknowledge (key 79), v1-2: a share group member (KIP-932) acknowledges records it
acquired (accept, release, reject; v2 with ``IsRenewAck`` also renew) without fetching more,
within its share session: epoch 0 cannot open one (INVALID_SHARE_SESSION_EPOCH), -1 applies
the acknowledgements and closes it (what the member still holds goes back), any other epoch
must be the session's next one. Each partition's acknowledgements apply all or nothing
(INVALID_RECORD_STATE for a record the member does not hold). v2 answers the lock duration.

Authorization, leadership and persistence as ShareFetch's.
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.share.manager import INITIAL_EPOCH
from wireserver.share.requests import ShareRequest

API_KEY = 79


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    req = ShareRequest(ctx)
    if req.check():
        if req.epoch == INITIAL_EPOCH:
            req.error = ErrorCode.INVALID_SHARE_SESSION_EPOCH
            req.message = "A share session cannot be opened by ShareAcknowledge."
        elif req.open([], []):
            yield req.load(body.topics)
            yield req.acknowledge(body.topics, version >= 2 and body.is_renew_ack)
            req.close_if_final()
    return req.response(ctx.request.spec.response_class.ShareAcknowledgeTopicResponse, _partition)


def _partition(partition_class, tp, answer, leader):
    return partition_class(
        partition_index=tp[1],
        error_code=answer.ack_error,
        error_message=answer.ack_message,
        current_leader=leader,
    )
