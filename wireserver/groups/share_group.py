"""A share group (KIP-932) and its members: bookkeeping, no timers or I/O (those are in
``share_coordinator``).

Epochs are those of every modern group (``modern_group``): the group epoch moves when what the
assignment depends on changes (members, their subscriptions, the subscribed topics'
partitions), the assignment epoch is the group epoch the target was computed for, and a
member's epoch is the assignment epoch it caught up with. What differs is reconciliation:
the members of a share group *share* partitions (records, not partitions, are handed to one
consumer at a time, by the share-partition leader), so nothing is revoked or waited for; a
member takes its whole target at once, as Kafka's ``ShareGroup`` members do. Its states are
Kafka's ``ShareGroup.ShareGroupState``: Empty, Stable, Dead.
"""

from __future__ import annotations

import enum
import uuid
from typing import Any

from wireserver.groups.modern_group import (
    Assignment,
    MemberState,
    ModernGroup,
    ModernGroupMember,
    copy_assignment,
)
from wireserver.groups.state import IllegalStateTransition

TopicPartitions = dict[uuid.UUID, set[int]]


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


class ShareGroupMember(ModernGroupMember):
    """``assigned``: the partitions it fetches from (others may fetch from them too)."""

    __slots__ = ("subscribed_topic_names",)

    def __init__(self, member_id: str, client_id: str = "", client_host: str = ""):
        super().__init__(member_id, client_id, client_host)
        self.subscribed_topic_names: list[str] = []


class ShareGroup(ModernGroup):
    """Group type "share"."""

    State = ShareGroupState
    protocol_type = "share"

    def __init__(self, group_id: str, now_ms: int):
        super().__init__(group_id, now_ms)
        self.target: dict[str, TopicPartitions] = {}
        #: The subscribed topics as the last target assignment saw them:
        #: name -> (topic id, partitions).
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}

    def _check_transition(self, target: Any) -> None:
        if self._state is ShareGroupState.DEAD:
            raise IllegalStateTransition(
                f"share group {self.group_id!r} cannot move from {self._state} to {target}"
            )

    def derived_state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def exclusive_target(self, member_id: str) -> Assignment:
        return {}

    def reconcile(self, member: ModernGroupMember, owned: Assignment | None) -> None:
        """The member takes its whole target and the assignment epoch: nothing it held needs
        to be given up first, since members share partitions."""
        member.assigned = copy_assignment(self.target.get(member.member_id, {}))
        member.pending_revocation = {}
        member.state = MemberState.STABLE
        if member.member_epoch != self.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = self.assignment_epoch
