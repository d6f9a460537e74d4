"""Small helpers the transaction API handlers share."""

from __future__ import annotations

from twisted.internet import defer

from wireserver.protocol.errors import ErrorCode


def fenced_for_version(error: ErrorCode, version: int, first_version: int) -> ErrorCode:
    """KIP-588: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for request versions before
    ``first_version`` (the clients that predate the new error)."""
    if error == ErrorCode.PRODUCER_FENCED and version < first_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


@defer.inlineCallbacks
def once_replicated(ctx, transactional_id: str, error: ErrorCode):
    """``error``, answered once the coordinator's state change is committed when it is NONE:
    in a cluster the transaction APIs answer after the high watermark of the id's partition
    passes their record (at once on one node), NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE
    when it does not."""
    if error != ErrorCode.NONE:
        return error
    replicated = yield ctx.services.txn.replicated(transactional_id)
    return replicated
