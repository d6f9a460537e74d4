"""ReadShareGroupState (key 84), v0: a share-partition's leader reads its state (start offset,
state epoch, state batches) from the share coordinator, when it becomes the partition's leader.
Broker-internal; see ``wireserver.share.state_rpcs``. A key never written answers start offset
-1 and no batches (the leader initializes the share-partition as ``share.auto.offset.reset``
says); a leader epoch older than the one the state was written with is FENCED_LEADER_EPOCH."""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.share.state_rpcs import read_answer, state_response

API_KEY = 84
EMPTY = {"state_epoch": 0, "start_offset": -1, "state_batches": []}


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    batch_class = ctx.request.spec.response_class.ReadStateResult.PartitionResult.StateBatch

    def answer(key, data):
        error, state = read_answer(ctx, key)
        if error != ErrorCode.NONE or state is None:
            return defer.succeed((error, dict(EMPTY)))
        if 0 <= data.leader_epoch < state.leader_epoch:
            return defer.succeed((ErrorCode.FENCED_LEADER_EPOCH, dict(EMPTY)))
        batches = [
            batch_class(
                first_offset=first, last_offset=last, delivery_state=kind, delivery_count=count
            )
            for first, last, kind, count in state.batches
        ]
        fields = {
            "state_epoch": state.state_epoch,
            "start_offset": state.start_offset,
            "state_batches": batches,
        }
        return defer.succeed((ErrorCode.NONE, fields))

    return state_response(ctx, answer, EMPTY)
