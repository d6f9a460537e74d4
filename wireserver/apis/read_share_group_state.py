"""ReadShareGroupState (key 84), v0: a share-partition's leader reads its state (start offset,
state epoch, state batches) from the share coordinator, when it becomes the partition's leader.
Broker-internal; see ``wireserver.share.state_rpcs``. A key never written answers start offset
-1 and no batches (the leader initializes the share-partition as ``share.auto.offset.reset``
says); a newer leader epoch than the state's is recorded (replicated) before the answer, an
older one is FENCED_LEADER_EPOCH (``ShareStateStore.serve_read``)."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.share.state_rpcs import state_response, store

API_KEY = 84
EMPTY = {"state_epoch": 0, "start_offset": -1, "state_batches": []}


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    batch_class = ctx.request.spec.response_class.ReadStateResult.PartitionResult.StateBatch

    def answer(key, data):
        return store(ctx).serve_read(key, data.leader_epoch).addCallback(fields_of)

    def fields_of(answer):
        error, state = answer
        if error is not None or state is None:
            return error or ErrorCode.NONE, dict(EMPTY)
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
        return ErrorCode.NONE, fields

    return state_response(ctx, answer, EMPTY)
