"""The classic group state machine (Kafka's ``ClassicGroupState``), explicit: an Enum of states,
a table of the states each one may be entered from, and one ``transition_to`` that refuses any
other move.

- Empty: no members (a group that only stores offsets, or one whose members all left).
- PreparingRebalance: members are (re)joining; JoinGroup responses wait.
- CompletingRebalance: every member got its JoinGroup response; waiting for the leader's
  assignment in SyncGroup.
- Stable: the assignment is out; members heartbeat.
- Dead: the group is gone (deleted, or its metadata expired); it is about to be forgotten.
"""

from __future__ import annotations

import enum


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


S = GroupState

#: state -> the states it may be entered from (Kafka's ``validPreviousStates``).
VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset({S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD}),
}


class IllegalStateTransition(RuntimeError):
    """A move the state table does not allow: a bug in the coordinator, never a client error."""


class StateMachine:
    """Holds one group's state; ``transition_to`` is the only way to change it. ``previous`` is
    the state it was in before (Kafka's ``previousState``): PreparingRebalance entered from
    Empty is a group's initial rebalance."""

    __slots__ = ("name", "previous", "state")

    def __init__(self, name: str, initial: GroupState = GroupState.EMPTY):
        self.name = name
        self.state = initial
        self.previous = initial

    def transition_to(self, target: GroupState) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise IllegalStateTransition(
                f"group {self.name!r} cannot move from {self.state} to {target}"
            )
        self.previous, self.state = self.state, target

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states
