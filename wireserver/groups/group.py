"""A classic group and its members: the bookkeeping Kafka's ``ClassicGroup`` keeps (members,
static instance ids, pending members, leader, generation, selected protocol, committed offsets),
with no timers and no I/O. The coordinator drives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twisted.internet import defer

from wireserver.groups.records import subscribed_topics
from wireserver.groups.state import GroupState, StateMachine

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


class Member:
    __slots__ = (
        "member_id",
        "group_instance_id",
        "client_id",
        "client_host",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "protocol_type",
        "protocols",
        "assignment",
        "join_deferred",
        "sync_deferred",
        "is_new",
        "heartbeat_timer",
    )

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
    ):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = b""
        self.join_deferred: defer.Deferred | None = None
        self.sync_deferred: defer.Deferred | None = None
        self.is_new = False
        self.heartbeat_timer: Any = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_deferred is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_deferred is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        for name in self.protocol_names():
            if name in candidates:
                return name
        raise ValueError("member does not support any candidate protocol")

    def complete_join(self, result: Any) -> bool:
        d, self.join_deferred = self.join_deferred, None
        if d is None:
            return False
        d.callback(result)
        return True

    def complete_sync(self, result: Any) -> bool:
        d, self.sync_deferred = self.sync_deferred, None
        if d is None:
            return False
        d.callback(result)
        return True


class Group:
    """One classic group. ``state`` changes only through ``transition_to``."""

    def __init__(self, group_id: str, now_ms: int, state: GroupState = GroupState.EMPTY):
        self.group_id = group_id
        self._machine = StateMachine(group_id, state)
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: dict[str, Any] = {}  # member id -> expiry timer
        self.pending_sync: set[str] = set()
        self.new_member_added = False
        self.current_state_timestamp = now_ms
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}
        # timers owned by the coordinator
        self.join_timer: Any = None
        self.initial_delay_remaining_ms = 0
        self.sync_timer: Any = None

    # -- state ------------------------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        return self._machine.state

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        self._machine.transition_to(target)
        self.current_state_timestamp = now_ms

    def is_in(self, *states: GroupState) -> bool:
        return self._machine.is_in(*states)

    def in_initial_rebalance(self) -> bool:
        """PreparingRebalance entered from Empty: only the initial-delay timer ends its join
        phase (Kafka checks ``previousState() == EMPTY``)."""
        return (
            self.is_in(GroupState.PREPARING_REBALANCE)
            and self._machine.previous is GroupState.EMPTY
        )

    def can_rebalance(self) -> bool:
        return self.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    # -- members ----------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        current = self.static_member_id(instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick any rejoined member. False if none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join:
                self.leader_id = member_id
                return True
        return False

    # -- protocols --------------------------------------------------------------------------

    def candidate_protocols(self) -> list[str]:
        """Protocols every member supports, in the leader's (else first member's) order."""
        members = list(self.members.values())
        if not members:
            return []
        first = self.members.get(self.leader_id) or members[0]
        common = set(first.protocol_names())
        for m in members:
            common &= set(m.protocol_names())
        return [name for name in first.protocol_names() if name in common]

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        candidates = set(self.candidate_protocols())
        return any(name in candidates for name in protocols)

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that all members support; the
        most votes win (ties: the order of the leader's list)."""
        candidates = self.candidate_protocols()
        votes = {name: 0 for name in candidates}
        for member in self.members.values():
            votes[member.vote(set(candidates))] += 1
        return max(candidates, key=lambda name: (votes[name], -candidates.index(name)))

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, if they speak the consumer protocol and we can read
        every subscription; None when unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None if self.members else set()
        topics: set[str] = set()
        for member in self.members.values():
            found = subscribed_topics(member.metadata_for(self.protocol_name))
            if found is None:
                return None
            topics |= found
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        if self.is_in(GroupState.EMPTY, GroupState.DEAD) or not self.members:
            return False
        topics = self.subscribed_topics()
        return topics is None or topic in topics
