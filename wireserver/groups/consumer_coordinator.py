"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat, ConsumerGroupDescribe, and
the member-epoch checks of OffsetCommit, TxnOffsetCommit and OffsetFetch for groups of
type "consumer".

One heartbeat does, in order (Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``):
validate the request; find or create the group and the member (epoch 0 joins, -1 leaves, -2 is
a static member's temporary leave, anything else must match the member's epoch, or be its
previous epoch with owned partitions it still holds); record what changed (subscription,
assignor, the subscribed topics' partitions) and bump the group epoch if anything did;
compute a new target assignment when the group epoch is ahead of the assignment epoch; move
the member one reconciliation step (``ConsumerGroup.reconcile``); re-arm its session timer;
answer with its epoch and, when it changed or was asked for, its assignment.

Timers run on the injected reactor: a member that does not heartbeat within the group's
``consumer.session.timeout.ms`` (a group config, else the broker's
``group.consumer.session.timeout.ms``) is removed; a member that does not revoke within its
rebalance timeout is removed too (Kafka fences both the same way). Heartbeat answers carry the
group's ``consumer.heartbeat.interval.ms`` (else ``group.consumer.heartbeat.interval.ms``); a
changed group config applies from the next heartbeat.

Persistence: the group's epoch is written to ``__consumer_offsets`` (ConsumerGroupMetadata
records) and committed offsets as for classic groups. After a restart a group comes back
Empty with its epoch and offsets; its members get UNKNOWN_MEMBER_ID on their next heartbeat
and rejoin with epoch 0 (Kafka also restores members and assignments; we do not).

Coexistence with classic groups: a ConsumerGroupHeartbeat for an empty classic group turns it
into a consumer group (keeping its offsets); for a classic group with members it answers
GROUP_ID_NOT_FOUND (Kafka's online upgrade of a live classic group is not done). The
classic coordinator answers JoinGroup on a non-empty consumer group with
INCONSISTENT_GROUP_PROTOCOL and takes over an empty one.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wireserver.groups import assignors
from wireserver.groups.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    TopicPartitions,
)
from wireserver.groups.modern_coordinator import (
    HeartbeatError,
    ModernGroupCoordinator,
    check_ids,
    invalid,
)
from wireserver.groups.modern_group import JOIN_EPOCH, STATIC_LEAVE_EPOCH
from wireserver.groups.records import (
    ConsumerGroupKey,
    ConsumerGroupValue,
    encode_consumer_group_value,
)
from wireserver.protocol.errors import ErrorCode

C = ConsumerGroupState

#: Kafka's ``group.consumer.regex.refresh.interval.ms`` (an internal config there): a group's
#: regular expressions are resolved again at least this often.
REGEX_REFRESH_INTERVAL_MS = 600_000


@dataclass
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: TopicPartitions | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1
    #: Whether the requester may DESCRIBE a topic (None: no authorizer, every topic).
    describable: Callable[[str], bool] | None = None


@dataclass
class HeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicPartitions | None = None


class TopicPartitionHeartbeats:
    """The heartbeat answers of the groups whose members are assigned topic partitions
    (consumer and share groups): a ``HeartbeatResult``, with the member's partitions when
    ``_beat`` says to send them. Streams groups answer tasks instead."""

    def _failed(self, req: Any, exc: HeartbeatError) -> HeartbeatResult:
        return HeartbeatResult(exc.error, exc.message, member_id=req.member_id or None)

    def _heartbeat(self, req: Any) -> HeartbeatResult:
        group, member, send = self._beat(req, self.now_ms())
        return HeartbeatResult(
            ErrorCode.NONE,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self._heartbeat_interval_ms(req.group_id),
            assignment=member.assigned if send else None,
        )

    def _held(self, member: Any) -> TopicPartitions:
        return {t: set(ps) for t, ps in member.assigned.items()}

    def _left(self, req: Any) -> HeartbeatResult:
        return HeartbeatResult(
            ErrorCode.NONE, member_id=req.member_id, member_epoch=req.member_epoch
        )


class ConsumerGroupCoordinator(TopicPartitionHeartbeats, ModernGroupCoordinator):
    """The consumer's own: its validation, subscriptions (names, regular expressions), the
    subscribed topics' metadata, the server assignors, and the member-epoch checks of the
    offset APIs."""

    kind = "consumer"
    group_class = ConsumerGroup
    member_class = ConsumerGroupMember
    dead_state = C.DEAD
    not_found = "Group {} not found."

    # -- configuration ----------------------------------------------------------------------

    def _assignor_names(self) -> list[str]:
        return [assignors.assignor_name(n) for n in self.config["group.consumer.assignors"]]

    def default_assignor(self) -> str:
        return self._assignor_names()[0]

    # -- ConsumerGroupHeartbeat -------------------------------------------------------------

    def _validate(self, req: HeartbeatRequest) -> None:
        check_ids(req)
        if req.member_epoch < STATIC_LEAVE_EPOCH:
            raise invalid(f"MemberEpoch is invalid: {req.member_epoch}.")
        if not req.member_id and (req.api_version >= 1 or req.member_epoch != JOIN_EPOCH):
            raise invalid("MemberId can't be empty.")
        if req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
                )
        if req.member_epoch == STATIC_LEAVE_EPOCH and req.instance_id is None:
            raise invalid("InstanceId can't be null.")
        if req.subscribed_topic_regex is not None:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                raise HeartbeatError(
                    ErrorCode.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is "
                    f"not a valid regular expression: {exc}.",
                ) from None
        if req.server_assignor is not None:
            try:
                name = assignors.assignor_name(req.server_assignor)
            except assignors.UnsupportedAssignor:
                name = None
            if name not in self._assignor_names():
                raise HeartbeatError(
                    ErrorCode.UNSUPPORTED_ASSIGNOR,
                    f"ServerAssignor {req.server_assignor} is not supported. "
                    f"Supported assignors: "
                    f"{', '.join(self._assignor_names())}.",
                )

    def _reported(self, req: HeartbeatRequest) -> TopicPartitions | None:
        return req.owned

    def _may_be_behind(self, member: ConsumerGroupMember, req: HeartbeatRequest) -> bool:
        return _is_subset(req.owned, member.assigned)

    def _fence_other_instance(self, group: ConsumerGroup, req: HeartbeatRequest) -> None:
        """A static member whose instance id another member id has taken since is fenced."""
        current_id = group.static_members.get(req.instance_id or "")
        if current_id is not None and current_id != req.member_id:
            raise HeartbeatError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {req.member_id} with instance id "
                f"{req.instance_id} was fenced by member {current_id}.",
            )

    def _known_member(self, group: ConsumerGroup, req: HeartbeatRequest) -> ConsumerGroupMember:
        if req.instance_id is not None:
            self._fence_other_instance(group, req)
        return super()._known_member(group, req)

    def _update_member(
        self, group: ConsumerGroup, member: ConsumerGroupMember, req: HeartbeatRequest, now: int
    ) -> bool:
        """Apply the fields the request carries and resolve the group's regular expressions
        again if due; True if the assignment depends on a change."""
        changed = member.member_id not in group.target
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.client_id:
            member.client_id = req.client_id
        if req.client_host:
            member.client_host = req.client_host
        if req.subscribed_topic_names is not None and sorted(req.subscribed_topic_names) != sorted(
            member.subscribed_topic_names
        ):
            member.subscribed_topic_names = sorted(set(req.subscribed_topic_names))
            changed = True
        if req.subscribed_topic_regex is not None:
            regex = req.subscribed_topic_regex or None
            if regex != member.subscribed_topic_regex:
                member.subscribed_topic_regex = regex
                changed = True
        if req.server_assignor is not None:
            name = assignors.assignor_name(req.server_assignor)
            if name != member.server_assignor:
                member.server_assignor = name
                changed = True
        self._refresh_regexes(group, req.describable, now)
        return changed

    # -- leaving ----------------------------------------------------------------------------

    def _leaving_member(self, group: ConsumerGroup, req: HeartbeatRequest) -> ConsumerGroupMember:
        if req.instance_id is not None:
            if req.instance_id not in group.static_members:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown."
                )
            self._fence_other_instance(group, req)
        return super()._leaving_member(group, req)

    # -- target assignment ------------------------------------------------------------------

    def _refresh_regexes(
        self, group: ConsumerGroup, describable: Callable[[str], bool] | None, now: int
    ) -> None:
        """Resolve the members' regular expressions to topic names as Kafka 4.1's coordinator
        does (``GroupMetadataManager.refreshRegularExpressions``): every topic whose whole name
        matches, internal ones included, that the principal of the heartbeat doing the refresh
        may DESCRIBE. The resolution is kept in the group (a member whose session expires is
        reassigned with no request to authorize) and redone when a regex comes or goes, when
        topics are created or deleted, or after ``REGEX_REFRESH_INTERVAL_MS`` (which is when
        an ACL change shows), as Kafka's ``maybeUpdateRegularExpressions`` (it resolves in the
        background, at most every 10 s; we do it at once, in the heartbeat)."""
        regexes = {
            m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex
        }
        if not regexes and not group.resolved_regexes:
            return
        names_changed = self.logs.topic_names_changed
        if (
            regexes == group.resolved_regexes.keys()
            and names_changed == group.regex_topics_changed
            and now - group.regex_refreshed_ms <= REGEX_REFRESH_INTERVAL_MS
        ):
            return
        topics = self.logs.topics
        matched = {regex: {t for t in topics if re.fullmatch(regex, t)} for regex in regexes}
        denied = {
            t
            for names in matched.values()
            for t in names
            if describable is not None and not describable(t)
        }
        group.resolved_regexes = {regex: names - denied for regex, names in matched.items()}
        group.regex_topics_changed = names_changed
        group.regex_refreshed_ms = now

    def _subscriptions(self, group: ConsumerGroup) -> dict[str, set[str]]:
        topics = self.logs.topics
        out = {}
        for member_id, member in group.members.items():
            names = {n for n in member.subscribed_topic_names if n in topics}
            if member.subscribed_topic_regex:
                names.update(
                    n
                    for n in group.resolved_regexes.get(member.subscribed_topic_regex, ())
                    if n in topics
                )
            out[member_id] = names
        return out

    def _refresh(self, group: ConsumerGroup) -> bool:
        metadata = self._refresh_metadata(group)
        assignor = self._refresh_assignor(group)
        return metadata or assignor

    def _refresh_metadata(self, group: ConsumerGroup) -> bool:
        return refresh_subscription_metadata(self.logs.topics, group, self._subscriptions(group))

    def _refresh_assignor(self, group: ConsumerGroup) -> bool:
        """The assignor most members ask for, else the first configured one."""
        votes = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
        name = votes.most_common(1)[0][0] if votes else self._assignor_names()[0]
        if name != group.assignor_name:
            group.assignor_name = name
            return True
        return False

    def _maybe_assign(self, group: ConsumerGroup) -> None:
        if group.group_epoch <= group.assignment_epoch:
            return
        assign = assignors.ASSIGNORS[group.assignor_name or self._assignor_names()[0]]
        group.target = assign(self._subscriptions(group), group.subscription_metadata, group.target)
        group.assignment_epoch = group.group_epoch
        group.update_state(self.now_ms())

    # -- persistence ------------------------------------------------------------------------

    def metadata_key(self, group_id: str) -> ConsumerGroupKey:
        return ConsumerGroupKey(group_id)

    def metadata_value(self, epoch: int) -> bytes:
        return encode_consumer_group_value(ConsumerGroupValue(epoch))

    # -- offsets ----------------------------------------------------------------------------

    @staticmethod
    def validate_offset_commit(
        group: ConsumerGroup,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        api_version: int | None,
    ) -> ErrorCode | None:
        """Kafka's ``ConsumerGroup.validateOffsetCommit`` (4.1), for OffsetCommit and
        TxnOffsetCommit. Taken without a member: a negative epoch while the group has no
        members (the admin client, a consumer outside the group), and a TxnOffsetCommit that
        names nobody (epoch -1, no member id, no instance id: v0-2, or a producer whose consumer
        is in no group). Otherwise the member id must be a member (UNKNOWN_MEMBER_ID; a static
        member's instance id is not checked) at exactly its current epoch: STALE_MEMBER_EPOCH,
        which TxnOffsetCommit up to v5 answers as ILLEGAL_GENERATION, the error its clients
        know (KIP-447); v6 answers it as is (KIP-1319). ``api_version`` is OffsetCommit's (below v9 a member of this group cannot
        use it: UNSUPPORTED_VERSION), None for TxnOffsetCommit."""
        transactional = api_version is None
        if member_epoch < 0 and not group.members:
            return None
        if transactional and member_epoch == -1 and not member_id and instance_id is None:
            return None
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if api_version is not None and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    @staticmethod
    def validate_offset_fetch(
        group: ConsumerGroup, member_id: str | None, member_epoch: int
    ) -> ErrorCode | None:
        """Kafka's ``ConsumerGroup.validateOffsetFetch``: only a fetch that names a member
        is checked (the admin client's is not)."""
        if member_epoch < 0 and member_id is None:
            return None
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    # -- describe ---------------------------------------------------------------------------

    def topic_names(self) -> Mapping[uuid.UUID, str]:
        return self.logs.topic_names_by_id


def refresh_subscription_metadata(
    topics: Any, group: Any, subscriptions: dict[str, set[str]]
) -> bool:
    """Update the group's view of its subscribed topics (name -> topic id and partition
    count) from ``topics`` (the broker's); True if it changed."""
    names = set().union(*subscriptions.values()) if group.members else set()
    metadata = {n: (topics[n].topic_id, topics[n].num_partitions) for n in sorted(names)}
    if metadata != group.subscription_metadata:
        group.subscription_metadata = metadata
        return True
    return False


def _is_subset(owned: TopicPartitions | None, assigned: TopicPartitions) -> bool:
    if owned is None:
        return False
    return all(ps <= assigned.get(t, set()) for t, ps in owned.items() if ps)
