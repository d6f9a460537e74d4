"""A consumer-protocol group (KIP-848) and its members: bookkeeping and reconciliation, no
timers or I/O (those are in ``consumer_coordinator``).

Epochs. The *group epoch* is bumped whenever what the assignment depends on changes (members,
their subscriptions, the chosen assignor, the subscribed topics' partitions). The *assignment
epoch* is the group epoch the current target assignment was computed for. A *member epoch* is
the assignment epoch a member has caught up with.

Reconciliation and the state machine are those of every modern group (``modern_group``); what
is the consumer's own is the subscription (topic names, a regular expression, a server
assignor), the subscribed topics' metadata the target assignment saw, and the table of state
moves ``transition_to`` allows.
"""

from __future__ import annotations

import enum
import uuid

from wireserver.groups.modern_group import ModernGroup, ModernGroupMember
from wireserver.groups.state import IllegalStateTransition

TopicPartitions = dict[uuid.UUID, set[int]]


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


class ConsumerGroupMember(ModernGroupMember):
    """``assigned``: the partitions it owns."""

    __slots__ = ("subscribed_topic_names", "subscribed_topic_regex", "server_assignor")

    def __init__(self, member_id: str, client_id: str = "", client_host: str = ""):
        super().__init__(member_id, client_id, client_host)
        self.subscribed_topic_names: list[str] = []
        self.subscribed_topic_regex: str | None = None
        self.server_assignor: str | None = None


class ConsumerGroup(ModernGroup):
    """Group type "consumer"."""

    State = ConsumerGroupState
    protocol_type = "consumer"
    # A new group starts at epoch 1 with an empty target assignment, so its first computed
    # assignment (and its first member's epoch) is 2, as in Kafka 4.4 (KAFKA-20268).
    initial_epoch = 1

    def __init__(self, group_id: str, now_ms: int):
        super().__init__(group_id, now_ms)
        self.target: dict[str, TopicPartitions] = {}
        #: The subscribed topics as the last target assignment saw them:
        #: name -> (topic id, partitions).
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.assignor_name = ""
        #: The members' regular expressions resolved to topic names, the broker's count of
        #: topic names come and gone when they were (``LogManager.topic_names_changed``), and
        #: when (see ``ConsumerGroupCoordinator._refresh_regexes``).
        self.resolved_regexes: dict[str, set[str]] = {}
        self.regex_topics_changed = -1
        self.regex_refreshed_ms = -1

    def _check_transition(self, target: ConsumerGroupState) -> None:
        if self._state not in VALID_PREVIOUS[target]:
            raise IllegalStateTransition(
                f"consumer group {self.group_id!r} cannot move from {self._state} to {target}"
            )

    def exclusive_target(self, member_id: str) -> TopicPartitions:
        return self.target.get(member_id, {})

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscription_metadata
