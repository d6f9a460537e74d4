"""What ShareFetch and ShareAcknowledge do alike: check the request, find its share session,
apply its acknowledgements, and build each partition's answer."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.share import refused
from wireserver.share.manager import FINAL_EPOCH, SessionError, SessionPartition, ShareSession
from wireserver.share.partition import AcknowledgeError


@dataclass
class PartitionAnswer:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    ack_error: ErrorCode = ErrorCode.NONE
    ack_message: str | None = None
    records: bytes = b""
    #: acquired (first offset, last offset, delivery count)
    acquired: list[tuple[int, int, int]] = field(default_factory=list)


class ShareRequest:
    """One ShareFetch or ShareAcknowledge: ``error`` (top level) and ``message`` once
    ``open`` has run, then ``answers`` per (topic id, partition)."""

    def __init__(self, ctx: Any):
        self.ctx = ctx
        self.body = ctx.body
        self.services = ctx.services
        self.share = ctx.services.share
        self.group_id: str = self.body.group_id or ""
        self.member_id: str = self.body.member_id or ""
        self.epoch: int = self.body.share_session_epoch
        self.names: dict[uuid.UUID, str] = {
            info.topic_id: name for name, info in self.services.logs.topics.items()
        }
        self.answers: dict[SessionPartition, PartitionAnswer] = {}
        self.session: ShareSession | None = None
        self.error: ErrorCode | None = None
        self.message: str | None = None

    def check(self) -> bool:
        """The checks before the session: True if the request may go on."""
        if (error := refused(self.ctx)) is not None:
            self.error = error
        elif not self.group_id or not self.member_id:
            self.error = ErrorCode.INVALID_REQUEST
            self.message = "GroupId and MemberId must be set."
        else:
            self.error = checks.read_group(self.ctx, self.group_id)
        return self.error is None

    def open(self, added: list[SessionPartition], forgotten: list[SessionPartition]) -> bool:
        try:
            self.session = self.share.session_for(
                self.group_id, self.member_id, self.epoch, added, forgotten
            )
        except SessionError as exc:
            self.error, self.message = exc.error, exc.message
            return False
        return True

    def answer(self, tp: SessionPartition) -> PartitionAnswer:
        found = self.answers.get(tp)
        if found is None:
            found = self.answers[tp] = PartitionAnswer()
        return found

    def partition(self, tp: SessionPartition) -> tuple[ErrorCode | None, Any, Any]:
        """(error, share-partition, log) of a partition the request names."""
        name = self.names.get(tp[0])
        if name is None:
            return ErrorCode.UNKNOWN_TOPIC_ID, None, None
        if denied := checks.fetch_topic(self.ctx, name):
            return denied, None, None
        log = self.services.logs.get_log(name, tp[1])
        if log is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, None
        return None, self.share.partition(self.group_id, name, tp[1]), log

    def acknowledge(self, topics: Any, renew: bool) -> None:
        """Apply the acknowledgements of ``topics`` (the request's), partition by partition."""
        for topic in topics:
            for p in topic.partitions:
                if not p.acknowledgement_batches:
                    continue
                tp = (topic.topic_id, p.partition_index)
                answer = self.answer(tp)
                error, share_partition, _ = self.partition(tp)
                if error is not None:
                    answer.ack_error = error
                    continue
                batches = [
                    (b.first_offset, b.last_offset, list(b.acknowledge_types))
                    for b in p.acknowledgement_batches
                ]
                try:
                    share_partition.acknowledge(self.member_id, batches, renew)
                except AcknowledgeError as exc:
                    answer.ack_error, answer.ack_message = exc.error, exc.message

    def close_if_final(self) -> bool:
        """A final request (epoch -1) ends the session: what the member holds in its
        partitions goes back. True if it was final."""
        if self.epoch != FINAL_EPOCH or self.session is None:
            return False
        for tp in self.session.partitions:
            error, share_partition, _ = self.partition(tp)
            if error is None:
                share_partition.release_member(self.member_id)
        return True

    def lock_duration_ms(self) -> int:
        return self.services.group_configs.value(self.group_id, "share.record.lock.duration.ms")

    def leader(self, tp: SessionPartition, error: ErrorCode) -> tuple[int, int]:
        name = self.names.get(tp[0])
        if name is None or error != ErrorCode.NONE:
            return -1, -1
        _, epoch = self.services.replicas.check_leader(name, tp[1])
        return self.services.node_id, epoch

    def topic_responses(self, topic_class: Any, partition_for: Any) -> list:
        """The answer's topics: ``partition_for(tp, answer, leader)`` builds each partition."""
        by_topic: dict[uuid.UUID, Any] = {}
        for tp, answer in self.answers.items():
            entry = by_topic.get(tp[0])
            if entry is None:
                entry = by_topic[tp[0]] = topic_class(topic_id=tp[0], partitions=[])
            entry.partitions.append(partition_for(tp, answer, self.leader(tp, answer.error)))
        return list(by_topic.values())


def empty_share_group_error(
    ctx: Any, group_id: str, acl_check: Any
) -> tuple[ErrorCode | None, str | None]:
    """What Alter- and DeleteShareGroupOffsets answer for a group the principal may not act on
    (``acl_check``), or that is not an empty share group: GROUP_ID_NOT_FOUND, or
    NON_EMPTY_GROUP while it has members (Kafka's wording)."""
    coordinator = ctx.services.groups
    error = acl_check(ctx, group_id) or refused(ctx) or coordinator.ensure_ready(group_id)
    if error is not None:
        return error, None
    group = coordinator.share.groups.get(group_id)
    if group is None:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    if group.members:
        return ErrorCode.NON_EMPTY_GROUP, "The group is not empty."
    return None, None
