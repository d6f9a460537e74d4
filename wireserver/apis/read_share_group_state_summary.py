"""ReadShareGroupStateSummary (key 87), v0-1: a share-partition's start offset, state epoch
and leader epoch, without its batches (DescribeShareGroupOffsets, in Kafka).
Broker-internal; see ``wireserver.share.state_rpcs``. A key never written answers start
offset -1. v1's DeliveryCompleteCount is counted from the state batches."""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.share.state import StateSummary
from wireserver.share.state_rpcs import read_answer, state_response

API_KEY = 87
EMPTY = {"state_epoch": 0, "leader_epoch": -1, "start_offset": -1, "delivery_complete_count": -1}


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    def answer(key, data):
        error, state = read_answer(ctx, key)
        if error != ErrorCode.NONE or state is None:
            return defer.succeed((error, dict(EMPTY)))
        summary = StateSummary.of(state)
        fields = {
            "state_epoch": summary.state_epoch,
            "leader_epoch": summary.leader_epoch,
            "start_offset": summary.start_offset,
            "delivery_complete_count": summary.delivery_complete_count,
        }
        return defer.succeed((ErrorCode.NONE, fields))

    return state_response(ctx, answer, EMPTY)
