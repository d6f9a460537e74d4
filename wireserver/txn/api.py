"""Small helpers the transaction API handlers share."""

from __future__ import annotations

from protocol.errors import ErrorCode


def fenced_for_version(error: ErrorCode, version: int, first_version: int) -> ErrorCode:
    """KIP-588: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for request versions before
    ``first_version`` (the clients that predate the new error)."""
    if error == ErrorCode.PRODUCER_FENCED and version < first_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
