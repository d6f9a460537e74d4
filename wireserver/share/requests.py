"""What ShareFetch and ShareAcknowledge do alike: check the request, find its share session,
apply its acknowledgements, and build each partition's answer."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer

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
        self.names: Mapping[uuid.UUID, str] = self.services.metadata.topic_names()
        self.answers: dict[SessionPartition, PartitionAnswer] = {}
        #: partitions whose share-partition could not be made here (``load``)
        self.unloaded: dict[SessionPartition, ErrorCode] = {}
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
                self.group_id, self.member_id, self.epoch, added, forgotten, self.ctx.peer
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

    def _log(self, tp: SessionPartition) -> tuple[ErrorCode | None, str | None, Any]:
        name = self.names.get(tp[0])
        if name is None:
            return ErrorCode.UNKNOWN_TOPIC_ID, None, None
        if denied := checks.fetch_topic(self.ctx, name):
            return denied, None, None
        log = self.services.logs.get_log(name, tp[1])
        if log is None:
            return self.services.replicas.missing_error(name, tp[1]), None, None
        return None, name, log

    @defer.inlineCallbacks
    def load(self, topics: Any = ()):
        """Make the share-partitions of the session and of ``topics`` (the request's, with
        acknowledgements) here, reading their state from their share coordinators
        (``SharePartitionManager.load``); those that fail answer the error (for one this
        broker does not lead, NOT_LEADER_OR_FOLLOWER: the client finds the leader)."""
        wanted = dict.fromkeys(self.session.partitions if self.session is not None else ())
        for topic in topics:
            for p in topic.partitions:
                wanted.setdefault((topic.topic_id, p.partition_index), None)
        for tp in wanted:
            error, name, _ = self._log(tp)
            if error is None:
                error = yield self.share.load(self.group_id, name, tp[1])
            if error is not None:
                self.unloaded[tp] = error

    def partition(self, tp: SessionPartition) -> tuple[ErrorCode | None, Any, Any]:
        """(error, share-partition, log) of a partition the request names."""
        error, name, log = self._log(tp)
        if error is None:
            error = self.unloaded.get(tp)
        if error is None:
            found = self.share.partition(self.group_id, name, tp[1])
            leader_error, epoch = self.share.leader(name, tp[1])
            if leader_error is not None or epoch != found.leader_epoch:
                # Leadership moved while the request waited.
                error = leader_error or ErrorCode.NOT_LEADER_OR_FOLLOWER
        if error is not None:
            return error, None, None
        return None, found, log

    @defer.inlineCallbacks
    def acknowledge(self, topics: Any, renew: bool):
        """Apply the acknowledgements of ``topics`` (the request's), partition by partition,
        and fire once their state is persisted (replicated, in a cluster): an
        acknowledgement the share coordinator did not take answers its error."""
        applied = {}
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
                else:
                    applied[tp] = self.share.persisted(share_partition)
        for tp, written in applied.items():
            error = yield written
            if error != ErrorCode.NONE:
                self.answer(tp).ack_error = error

    def close_if_final(self) -> bool:
        """A final request (epoch -1) ends the session: what the member holds in its
        partitions goes back. True if it was final."""
        if self.epoch != FINAL_EPOCH or self.session is None:
            return False
        for tp in self.session.partitions:
            error, share_partition, _ = self.partition(tp)
            if error is None:
                share_partition.release_member(self.member_id)
        self.share.group_may_be_empty(self.group_id)
        return True

    def leader(self, tp: SessionPartition, error: ErrorCode) -> tuple[int, int]:
        name = self.names.get(tp[0])
        if name is None or error != ErrorCode.NONE:
            return -1, -1
        _, epoch = self.services.replicas.check_leader(name, tp[1])
        return self.services.node_id, epoch

    def response(self, topic_class: Any, partition_for: Any) -> Any:
        """The ShareFetch or ShareAcknowledge response (the same top-level fields): the
        request's error and no topics, or every partition's answer, which
        ``partition_for(partition_class, tp, answer, current_leader)`` builds."""
        if self.error is not None:
            lock_ms, responses = 0, []
        else:
            lock_ms = self.services.group_configs.value(
                self.group_id, "share.record.lock.duration.ms"
            )
            responses = self._topic_responses(topic_class, partition_for)
        return self.ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.NONE if self.error is None else self.error,
            error_message=self.message,
            acquisition_lock_timeout_ms=lock_ms,
            responses=responses,
            node_endpoints=[],
        )

    def _topic_responses(self, topic_class: Any, partition_for: Any) -> list:
        partition_class = topic_class.PartitionData
        leader_class = partition_class.LeaderIdAndEpoch
        by_topic: dict[uuid.UUID, Any] = {}
        for tp, answer in self.answers.items():
            entry = by_topic.get(tp[0])
            if entry is None:
                entry = by_topic[tp[0]] = topic_class(topic_id=tp[0], partitions=[])
            leader_id, leader_epoch = self.leader(tp, answer.error)
            leader = leader_class(leader_id=leader_id, leader_epoch=leader_epoch)
            entry.partitions.append(partition_for(partition_class, tp, answer, leader))
        return list(by_topic.values())


@defer.inlineCallbacks
def empty_group_response(ctx: Any, acl_check: Any, responses_for: Any, create: bool = False):
    """Alter- and DeleteShareGroupOffsets' response: the topics ``responses_for()`` fires
    with, unless the principal may not act on the group (``acl_check``) or it is not an empty
    share group: GROUP_ID_NOT_FOUND, or NON_EMPTY_GROUP while it has members (Kafka's
    wording). With ``create`` (AlterShareGroupOffsets) a share group that does not exist is
    made first."""
    error, message = _empty_group_error(ctx, ctx.body.group_id, acl_check, create)
    responses = [] if error is not None else (yield responses_for())
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE if error is None else error,
        error_message=message,
        responses=responses,
    )


def _empty_group_error(
    ctx: Any, group_id: str, acl_check: Any, create: bool
) -> tuple[ErrorCode | None, str | None]:
    coordinator = ctx.services.groups
    error = acl_check(ctx, group_id) or refused(ctx) or coordinator.ensure_ready(group_id)
    if error is not None:
        return error, None
    if create:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, None
        error, message = coordinator.share.ensure_group(group_id)
        if error is not None:
            return error, message
    group = coordinator.share.groups.get(group_id)
    if group is None:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    if group.members:
        return ErrorCode.NON_EMPTY_GROUP, "The group is not empty."
    return None, None
