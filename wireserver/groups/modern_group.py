"""What consumer-protocol (KIP-848) and Streams (KIP-1071) groups keep alike, so that it is
written once: the group epoch and the target assignment's epoch, the members by id and the
static ones by instance id, the state derived from them, and reconciliation.

Reconciliation (Kafka's two ``CurrentAssignmentBuilder``). What a member holds exclusively
(a consumer's partitions, a Streams member's active tasks: ``assigned``, keyed by topic id or
subtopology id) moves towards its target in steps, and a member is never given a partition
or task another member still owns:

1. If ``assigned`` holds some that are not in its target (and its heartbeat does not already
   show them gone), it must revoke them first: it keeps the intersection, the rest is
   *pending revocation*, its epoch stays (``MemberState.UNREVOKED``). The coordinator waits
   for a heartbeat that no longer reports them, for at most the member's rebalance timeout.
2. Otherwise it gets every target one that is free (no member owns it nor is revoking it) and
   moves to the assignment epoch; those still held by others stay out until they are
   released (``MemberState.UNRELEASED``) and come with a later heartbeat.
3. When it holds its whole target at the assignment epoch it is ``STABLE``.

The group's state is derived from the members and epochs after every change (Kafka's
``maybeUpdateGroupState``) and applied through the one ``transition_to``.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Self

from wireserver.groups.group import CommittedOffset

#: Member epochs with a meaning of their own in a heartbeat request (KIP-848, KIP-1071).
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
#: A static member's temporary leave.
STATIC_LEAVE_EPOCH = -2

#: What a member holds or is given: topic id (or subtopology id) -> partitions.
Assignment = dict[Any, set[int]]


class MemberState(enum.Enum):
    """Kafka's ``MemberState``: UNREVOKED_PARTITIONS / UNREVOKED_TASKS and
    UNRELEASED_PARTITIONS / UNRELEASED_TASKS are ``UNREVOKED`` and ``UNRELEASED`` here."""

    STABLE = "stable"
    UNREVOKED = "unrevoked"
    UNRELEASED = "unreleased"


def copy_assignment(assignment: Assignment) -> Assignment:
    return {k: set(ps) for k, ps in assignment.items() if ps}


def count(assignment: Assignment) -> int:
    return sum(len(ps) for ps in assignment.values())


def minus(a: Assignment, b: Assignment) -> Assignment:
    return {k: ps - b.get(k, set()) for k, ps in a.items() if ps - b.get(k, set())}


def intersect(a: Assignment, b: Assignment) -> Assignment:
    return {k: ps & b.get(k, set()) for k, ps in a.items() if ps & b.get(k, set())}


def owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Whether a member still owns any of ``partitions``, by what its heartbeat reported; a
    heartbeat that reports nothing is taken to still own everything."""
    if owned is None:
        return count(partitions) > 0
    return bool(intersect(partitions, owned))


class ModernGroupMember:
    """A member of either kind; the subclass adds what its protocol sends."""

    __slots__ = (
        "member_id",
        "instance_id",
        "rack_id",
        "client_id",
        "client_host",
        "rebalance_timeout_ms",
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
        self.member_epoch = 0
        self.previous_member_epoch = 0
        self.state = MemberState.STABLE
        self.assigned: Assignment = {}
        self.pending_revocation: Assignment = {}
        self.session_timer: Any = None
        self.revocation_timer: Any = None

    def renamed(self, member_id: str) -> Self:
        """A copy under another member id, without timers: a static member back from a
        temporary leave under a new id."""
        new = type(self)(member_id)
        for cls in type(self).__mro__:
            for attr in getattr(cls, "__slots__", ()):
                if attr not in ("member_id", "session_timer", "revocation_timer"):
                    setattr(new, attr, getattr(self, attr))
        return new

    def clear_assignment(self) -> None:
        self.assigned = {}
        self.pending_revocation = {}

    def described(self) -> dict[str, Any]:
        """The fields of a member's row both describe APIs answer alike."""
        return dict(
            member_id=self.member_id,
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            member_epoch=self.member_epoch,
            client_id=self.client_id,
            client_host=self.client_host,
        )


class ModernGroup:
    """The group of either kind. ``State`` is the subclass's state enum (its EMPTY,
    ASSIGNING, RECONCILING, STABLE and DEAD are used here); ``offsets`` has the shape of a
    classic group's, so the offset code serves every kind."""

    State: ClassVar[Any]
    protocol_type: ClassVar[str]
    #: The group epoch (and assignment epoch) of a new group.
    initial_epoch: ClassVar[int] = 0

    def __init__(self, group_id: str, now_ms: int):
        self.group_id = group_id
        self._state = self.State.EMPTY
        self.current_state_timestamp = now_ms
        self.group_epoch = self.initial_epoch
        self.assignment_epoch = self.initial_epoch
        self.members: dict[str, Any] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target: dict[str, Any] = {}  # member id -> its target assignment
        #: (topic or subtopology id, partition) -> epoch of the member that owns it or is
        #: revoking it.
        self.owners: dict[tuple[Any, int], int] = {}
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}

    # -- state ------------------------------------------------------------------------------

    @property
    def state(self) -> Any:
        return self._state

    def is_in(self, *states: Any) -> bool:
        return self._state in states

    def described(self) -> dict[str, Any]:
        """The fields of a group's row both describe APIs answer alike."""
        return dict(
            group_state=str(self._state),
            group_epoch=self.group_epoch,
            assignment_epoch=self.assignment_epoch,
        )

    def _check_transition(self, target: Any) -> None:
        """Raise ``IllegalStateTransition`` for a move this kind of group refuses."""
        raise NotImplementedError

    def transition_to(self, target: Any, now_ms: int) -> None:
        if target is self._state and target is not self.State.DEAD:
            return
        self._check_transition(target)
        self._state = target
        self.current_state_timestamp = now_ms

    def derived_state(self) -> Any:
        if not self.members:
            return self.State.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return self.State.ASSIGNING
        for member in self.members.values():
            if (
                member.state is not MemberState.STABLE
                or member.member_epoch != self.assignment_epoch
            ):
                return self.State.RECONCILING
        return self.State.STABLE

    def update_state(self, now_ms: int) -> None:
        if not self.is_in(self.State.DEAD):
            self.transition_to(self.derived_state(), now_ms)

    # -- members ----------------------------------------------------------------------------

    def add(self, member: Any) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> Any:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if (
            member.instance_id is not None
            and self.static_members.get(member.instance_id) == member_id
        ):
            del self.static_members[member.instance_id]
        self.release(member)
        self.target.pop(member_id, None)
        return member

    # -- ownership --------------------------------------------------------------------------

    def release(self, member: ModernGroupMember) -> None:
        for held in (member.assigned, member.pending_revocation):
            for key, ps in held.items():
                for p in ps:
                    self.owners.pop((key, p), None)

    def claim(self, member: ModernGroupMember) -> None:
        for held in (member.assigned, member.pending_revocation):
            for key, ps in held.items():
                for p in ps:
                    self.owners[(key, p)] = member.member_epoch

    # -- reconciliation ---------------------------------------------------------------------

    def exclusive_target(self, member_id: str) -> Assignment:
        """The part of the member's target that only one member may hold at a time."""
        raise NotImplementedError

    def take_shared(self, member: Any) -> None:
        """Hand the member at once what several may hold (Streams' standby and warm-up
        tasks); a consumer has none."""

    def reconcile(self, member: ModernGroupMember, owned: Assignment | None) -> None:
        """Move ``member`` one step towards its target (see the module docstring). ``owned``
        is what it reported holding exclusively in this heartbeat (None: not sent)."""
        self.release(member)
        if member.state is MemberState.UNREVOKED:
            if owns_any(owned, member.pending_revocation):
                self.claim(member)  # still revoking: nothing changes
                return
            member.pending_revocation = {}
        self.take_shared(member)
        target = self.exclusive_target(member.member_id)
        keep = intersect(member.assigned, target)
        revoke = minus(member.assigned, target)
        if revoke and owns_any(owned, revoke):
            member.assigned = keep
            member.pending_revocation = revoke
            member.state = MemberState.UNREVOKED
            self.claim(member)
            return
        assigned = copy_assignment(keep)
        unreleased = False
        for key, ps in target.items():
            for p in ps:
                if p in assigned.get(key, ()):
                    continue
                if (key, p) in self.owners:
                    unreleased = True
                else:
                    assigned.setdefault(key, set()).add(p)
        if member.member_epoch != self.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = self.assignment_epoch
        member.assigned = assigned
        member.pending_revocation = {}
        member.state = MemberState.UNRELEASED if unreleased else MemberState.STABLE
        self.claim(member)

    def reset_member_assignment(self, member: ModernGroupMember) -> None:
        """The member (re)joins with epoch 0: it has given up everything it held."""
        self.release(member)
        member.clear_assignment()
        member.state = MemberState.STABLE
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = 0
