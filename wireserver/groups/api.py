"""Small helpers the group API handlers share."""

from __future__ import annotations

from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

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


def heartbeat_response(ctx, result):
    """A Consumer- or ShareGroupHeartbeat response (the same fields) from the coordinator's
    ``HeartbeatResult``; a failed check before the coordinator is ``HeartbeatResult(error)``."""
    assignment_class = ctx.request.spec.response_class.Assignment
    return ctx.response(
        **heartbeat_fields(result),
        assignment=heartbeat_assignment(assignment_class, result.assignment),
    )


def heartbeat_fields(result) -> dict:
    """How every modern group's heartbeat response begins, from the coordinator's result."""
    return dict(
        throttle_time_ms=0,
        error_code=int(result.error),
        error_message=result.message,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
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


def not_found_message(coordinator, group_id: str, kind: str) -> str:
    """A modern group describe's GROUP_ID_NOT_FOUND message, as Kafka's: the group is of
    another type, or there is none."""
    if group_id in coordinator.groups or coordinator.modern_group(group_id):
        return f"Group {group_id} is not a {kind} group."
    return f"Group {group_id} not found."


def authorized_operations(ctx, group_id: str) -> int:
    """A modern group describe's ``AuthorizedOperations``: the group's when asked, else
    "not requested"."""
    if ctx.body.include_authorized_operations:
        return checks.bitfield(checks.group_operations(ctx, group_id))
    return NOT_REQUESTED


class DescribedGroups:
    """The rows of a Consumer- or ShareGroupDescribe response (the same group fields), with
    the topic names their assignments carry, looked up once per request."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.group_class = ctx.request.spec.response_class.DescribedGroup
        self.member_class = self.group_class.Member
        self.names = ctx.services.groups.consumer.topic_names()

    def assignment(self, partitions):
        return described_assignment(self.member_class.Assignment, self.names, partitions)

    def failed(self, group_id: str, error, message: str | None = None):
        return failed_modern_group(self.group_class, group_id, error, message)

    def not_found(self, group_id: str, kind: str):
        message = not_found_message(self.ctx.services.groups, group_id, kind)
        return self.failed(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message)

    def described(self, group_id: str, group, assignor_name: str, members: list):
        return self.group_class(
            error_code=ErrorCode.NONE,
            error_message=None,
            group_id=group_id,
            **group.described(),
            assignor_name=assignor_name,
            members=members,
            authorized_operations=authorized_operations(self.ctx, group_id),
        )


def message(error: ErrorCode) -> str | None:
    if error == ErrorCode.NONE:
        return None
    return MESSAGES.get(error, error.name)
