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


def heartbeat_assignment(assignment_class, assignment):
    """A heartbeat response's ``Assignment`` (topic id -> partitions), None when not sent."""
    if assignment is None:
        return None
    return assignment_class(
        topic_partitions=[
            assignment_class.TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
            for topic_id, partitions in sorted(assignment.items(), key=lambda i: str(i[0]))
            if partitions
        ]
    )


def described_assignment(assignment_class, names, partitions):
    """A describe response's ``Assignment``: topic id and name (``names``: id -> name) and
    partitions, by topic name."""
    return assignment_class(
        topic_partitions=[
            assignment_class.TopicPartitions(
                topic_id=topic_id, topic_name=names.get(topic_id, ""), partitions=sorted(ps)
            )
            for topic_id, ps in sorted(partitions.items(), key=lambda i: names.get(i[0], ""))
            if ps
        ]
    )


#: "not requested" authorized operations (INT32_MIN)
NOT_REQUESTED = -(2**31)


def failed_modern_group(group_class, group_id, error, message):
    """A ConsumerGroupDescribe / ShareGroupDescribe row for a group answered with ``error``."""
    return group_class(
        error_code=error,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        assignor_name="",
        members=[],
        authorized_operations=NOT_REQUESTED,
    )


def message(error: ErrorCode) -> str | None:
    if error == ErrorCode.NONE:
        return None
    return MESSAGES.get(error, error.name)
