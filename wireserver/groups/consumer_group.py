"""A consumer-protocol group (KIP-848) and its members: bookkeeping and reconciliation, no
timers or I/O (those are in ``consumer_coordinator``).

Epochs. The *group epoch* is bumped whenever what the assignment depends on changes (members,
their subscriptions, the chosen assignor, the subscribed topics' partitions). The *assignment
epoch* is the group epoch the current target assignment was computed for. A *member epoch* is
the assignment epoch a member has caught up with.

Reconciliation (Kafka's CurrentAssignmentBuilder). A member moves towards its target in steps
and is never given a partition another member still owns:

1. If its current assignment holds partitions that are not in its target (and its heartbeat
   does not already show them gone), it must revoke them first: it keeps the intersection,
   the rest is *pending revocation*, its epoch stays (``UNREVOKED_PARTITIONS``). The
   coordinator waits for a heartbeat whose owned partitions no longer include them, for at
   most the member's rebalance timeout.
2. Otherwise it gets every target partition that is free (no member owns it nor is revoking
   it) and moves to the assignment epoch; partitions still held by others stay out until they
   are released (``UNRELEASED_PARTITIONS``) and come with a later heartbeat.
3. When it holds its whole target at the assignment epoch it is ``STABLE``.

Group state is derived from the members and epochs after every change (Kafka's
``ConsumerGroup.maybeUpdateGroupState``) and applied through the one ``transition_to``, which
refuses a move the table does not allow.
"""

from __future__ import annotations

import enum
import uuid

from wireserver.groups.group import CommittedOffset
from wireserver.groups.state import IllegalStateTransition

TopicPartitions = dict[uuid.UUID, set[int]]

#: Member epochs with a meaning of their own in a ConsumerGroupHeartbeat request.
JOIN_EPOCH = 0
LEAVE_EPOCH = -1


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


C = ConsumerGroupState

#: state -> the states it may be entered from.
VALID_PREVIOUS: dict[ConsumerGroupState, frozenset[ConsumerGroupState]] = {
    # The last member left (or was fenced), whatever the group was doing.
    C.EMPTY: frozenset({C.ASSIGNING, C.RECONCILING, C.STABLE}),
    # The group epoch was bumped: a new target assignment is due.
    C.ASSIGNING: frozenset({C.EMPTY, C.RECONCILING, C.STABLE}),
    # A target assignment exists that some member has not caught up with.
    C.RECONCILING: frozenset({C.ASSIGNING, C.STABLE}),
    # Every member holds its target at the assignment epoch.
    C.STABLE: frozenset({C.ASSIGNING, C.RECONCILING}),
    C.DEAD: frozenset({C.EMPTY, C.ASSIGNING, C.RECONCILING, C.STABLE, C.DEAD}),
}


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


def _copy(partitions: TopicPartitions) -> TopicPartitions:
    return {t: set(ps) for t, ps in partitions.items() if ps}


def _count(partitions: TopicPartitions) -> int:
    return sum(len(ps) for ps in partitions.values())


class ConsumerGroupMember:
    __slots__ = (
        "member_id",
        "instance_id",
        "rack_id",
        "client_id",
        "client_host",
        "rebalance_timeout_ms",
        "subscribed_topic_names",
        "subscribed_topic_regex",
        "server_assignor",
        "member_epoch",
        "previous_member_epoch",
        "state",
        "assigned",
        "pending_revocation",
        "session_timer",
        "revocation_timer",
    )

    def __init__(self, member_id: str, client_id: str = "", client_host: str = ""):
        self.member_id = member_id
        self.instance_id: str | None = None
        self.rack_id: str | None = None
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = 300000
        self.subscribed_topic_names: list[str] = []
        self.subscribed_topic_regex: str | None = None
        self.server_assignor: str | None = None
        self.member_epoch = 0
        self.previous_member_epoch = 0
        self.state = MemberState.STABLE
        self.assigned: TopicPartitions = {}
        self.pending_revocation: TopicPartitions = {}
        self.session_timer = None
        self.revocation_timer = None

    def owns_any(self, owned: TopicPartitions | None, partitions: TopicPartitions) -> bool:
        """Whether the member still owns any of ``partitions``, by the owned partitions it
        reported; a heartbeat that reports nothing is taken to still own everything."""
        if owned is None:
            return _count(partitions) > 0
        return any(owned.get(t, set()) & ps for t, ps in partitions.items())


class ConsumerGroup:
    """Group type "consumer". ``offsets`` has the same shape as a classic group's, so the
    offset code serves both."""

    def __init__(self, group_id: str, now_ms: int):
        self.group_id = group_id
        self._state = C.EMPTY
        self.current_state_timestamp = now_ms
        # A new group starts at epoch 1 with an empty target assignment, so its first computed
        # assignment (and its first member's epoch) is 2, as in Kafka 4.4 (KAFKA-20268).
        self.group_epoch = 1
        self.assignment_epoch = 1
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target: dict[str, TopicPartitions] = {}  # member id -> target partitions
        #: (topic id, partition) -> epoch of the member that owns it or is revoking it.
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        #: The subscribed topics as the last target assignment saw them:
        #: name -> (topic id, partitions).
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.assignor_name = ""
        #: The members' regular expressions resolved to topic names, the topic names they
        #: were resolved against, and when (see ``ConsumerGroupCoordinator._refresh_regexes``).
        self.resolved_regexes: dict[str, set[str]] = {}
        self.regex_topics: frozenset[str] = frozenset()
        self.regex_refreshed_ms = -1
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}
        self.protocol_type = "consumer"

    # -- state ------------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        return self._state

    def transition_to(self, target: ConsumerGroupState, now_ms: int) -> None:
        if target is self._state and target is not C.DEAD:
            return
        if self._state not in VALID_PREVIOUS[target]:
            raise IllegalStateTransition(
                f"consumer group {self.group_id!r} cannot move from {self._state} to {target}"
            )
        self._state = target
        self.current_state_timestamp = now_ms

    def is_in(self, *states: ConsumerGroupState) -> bool:
        return self._state in states

    def derived_state(self) -> ConsumerGroupState:
        if not self.members:
            return C.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return C.ASSIGNING
        for member in self.members.values():
            if (
                member.state is not MemberState.STABLE
                or member.member_epoch != self.assignment_epoch
            ):
                return C.RECONCILING
        return C.STABLE

    def update_state(self, now_ms: int) -> None:
        if not self.is_in(C.DEAD):
            self.transition_to(self.derived_state(), now_ms)

    # -- members ----------------------------------------------------------------------------

    def add(self, member: ConsumerGroupMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if (
            member.instance_id is not None
            and self.static_members.get(member.instance_id) == member_id
        ):
            del self.static_members[member.instance_id]
        self._release(member)
        self.target.pop(member_id, None)
        return member

    def subscribed_topic_names(self) -> set[str]:
        names: set[str] = set()
        for member in self.members.values():
            names.update(member.subscribed_topic_names)
        return names

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscription_metadata

    # -- partition ownership ----------------------------------------------------------------

    def _release(self, member: ConsumerGroupMember) -> None:
        for partitions in (member.assigned, member.pending_revocation):
            for topic_id, ps in partitions.items():
                for p in ps:
                    self.partition_epochs.pop((topic_id, p), None)

    def _claim(self, member: ConsumerGroupMember) -> None:
        for partitions in (member.assigned, member.pending_revocation):
            for topic_id, ps in partitions.items():
                for p in ps:
                    self.partition_epochs[(topic_id, p)] = member.member_epoch

    def is_free(self, topic_id: uuid.UUID, partition: int) -> bool:
        return (topic_id, partition) not in self.partition_epochs

    # -- reconciliation ---------------------------------------------------------------------

    def reconcile(self, member: ConsumerGroupMember, owned: TopicPartitions | None) -> None:
        """Move ``member`` one step towards its target (see the module docstring).
        ``owned`` is what the member reported owning in this heartbeat (None: not sent)."""
        self._release(member)
        if member.state is MemberState.UNREVOKED_PARTITIONS and member.owns_any(
            owned, member.pending_revocation
        ):
            self._claim(member)  # still revoking: nothing changes
            return
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            member.pending_revocation = {}
        target = self.target.get(member.member_id, {})
        keep: TopicPartitions = {}
        revoke: TopicPartitions = {}
        for topic_id, ps in member.assigned.items():
            wanted = target.get(topic_id, set())
            if ps & wanted:
                keep[topic_id] = ps & wanted
            if ps - wanted:
                revoke[topic_id] = ps - wanted
        if revoke and member.owns_any(owned, revoke):
            member.assigned = keep
            member.pending_revocation = revoke
            member.state = MemberState.UNREVOKED_PARTITIONS
            self._claim(member)
            return
        assigned = _copy(keep)
        unreleased = False
        for topic_id, ps in target.items():
            for p in ps:
                if p in assigned.get(topic_id, ()):
                    continue
                if self.is_free(topic_id, p):
                    assigned.setdefault(topic_id, set()).add(p)
                else:
                    unreleased = True
        if member.member_epoch != self.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = self.assignment_epoch
        member.assigned = assigned
        member.pending_revocation = {}
        member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        self._claim(member)

    def reset_member_assignment(self, member: ConsumerGroupMember) -> None:
        """The member (re)joins with epoch 0: it has given up everything it owned."""
        self._release(member)
        member.assigned = {}
        member.pending_revocation = {}
        member.state = MemberState.STABLE
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = 0
