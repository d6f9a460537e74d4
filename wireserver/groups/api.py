"""Small helpers the group API handlers share."""

from __future__ import annotations

from wireserver.protocol.errors import ErrorCode

MESSAGES = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.INVALID_REQUEST: "Invalid coordinator key type.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist.",
}


def client_host(ctx) -> str:
    """The peer's address as Kafka reports it (``/127.0.0.1``)."""
    host = ctx.peer.rsplit(":", 1)[0] if ":" in ctx.peer else ctx.peer
    return "/" + host


def message(error: ErrorCode) -> str | None:
    if error == ErrorCode.NONE:
        return None
    return MESSAGES.get(error, error.name)
