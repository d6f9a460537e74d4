"""Kafka 4.4's share-group ``simple`` assignor (``SimpleAssignor``), step for step.

Every partition of a subscribed topic goes to at least one subscriber; members share a
partition only when there are more members than partitions. The assignor is sticky: it starts
from the previous target assignment and moves as little as balance allows. Two builders, as
Kafka's:

- homogeneous (every member subscribes to the same topics; ``SimpleHomogeneousAssignmentBuilder``):
  ``desiredSharing`` = ceil(members / partitions) members per partition, each member's
  ``desiredAssignmentCount`` (sharing * partitions spread over the members, the first ones
  rounding down); keep what members had of the subscribed topics (revokeUnassignablePartitions),
  take the excess from members over their count (revokeOverfilledMembers), then from
  partitions shared by too many (revokeOversharedPartitions), and hand what is short to the
  members under their count (assignRemainingPartitions).
- heterogeneous (``SimpleHeterogeneousAssignmentBuilder``): the same four steps topic by topic,
  among that topic's subscribers.

Which partition a member gives up, and which member fills a gap, follow the order Kafka walks
its ``HashMap``s and ``HashSet``s in, so this module walks the same collections
(``java_collections``) to make the same choices. The inputs fix that order too:

- ``member_ids`` is ``GroupSpec.memberIds()`` in its iteration order (members are numbered in
  it, and the numbers order the member sets);
- each member's subscription is the ``Set<Uuid>`` of topic ids, taken as a ``HashSet`` filled
  in the order given;
- the previous assignment of a member is a ``HashMap<Uuid, Set<Integer>>`` of ``HashSet``s,
  filled in the order given.

tests/groups/test_share_assignor.py compares this with Kafka's class on the same inputs
(compat_tests/apps/assignor/SimpleAssignorCases.java builds them the same way).

Kafka's quirks are kept: a heterogeneous member keeps partitions of a topic no member
subscribes to any more (only subscribed topics are looked at), and a partition short of
members may take the same member twice in one pass (its count drops, the partition's members
do not grow), so it ends with fewer than ``desiredSharing``.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping, Sequence

from wireserver.groups.java_collections import (
    JavaHashMap,
    JavaHashSet,
    new_hash_map,
    new_hash_set,
)

TopicId = uuid.UUID
#: a member's partitions, as Kafka's ``Map<Uuid, Set<Integer>>``
MemberPartitions = JavaHashMap  # [TopicId, JavaHashSet[int]]


def _member_partitions(previous: Mapping[TopicId, Iterable[int]]) -> MemberPartitions:
    partitions: MemberPartitions = JavaHashMap()
    for topic_id, numbers in previous.items():
        partitions.put(topic_id, JavaHashSet(None, numbers))
    return partitions


def _deep_copy(partitions: MemberPartitions) -> MemberPartitions:
    """``AssignorHelpers.deepCopyAssignment``."""
    copy: MemberPartitions = JavaHashMap(len(partitions))
    for topic_id, numbers in partitions.items():
        copy.put(topic_id, JavaHashSet.copy_of(numbers))
    return copy


def _desired_counts(sharing: int, partitions: int, members: int) -> list[int]:
    """How many partitions each of ``members`` should have, in member order: the precise
    share ``sharing * partitions / members``, accumulated and rounded up at each step."""
    precise = sharing * partitions / members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]


class _Cursor:
    """A ``HashSet`` iterator that may remove the item it is at (the set changes in no other
    way while it is in use)."""

    def __init__(self, items: JavaHashSet):
        self.items = items
        self._order = list(items)
        self._at = 0

    def has_next(self) -> bool:
        return self._at < len(self._order)

    def next(self) -> int:
        if not self.has_next():
            raise LookupError("NoSuchElementException")  # as Kafka's loop would throw
        self._at += 1
        return self._order[self._at - 1]

    def remove(self) -> None:
        self.items.remove(self._order[self._at - 1])


class _Assignment:
    """The old and the new group assignment, by member number: a member's new partitions are
    a copy of its old ones made at its first change."""

    def __init__(self, member_ids: Sequence[str], previous: Mapping[str, MemberPartitions]):
        self.old: JavaHashMap = new_hash_map(len(member_ids))
        self.new: JavaHashMap = new_hash_map(len(member_ids))
        for index, member_id in enumerate(member_ids):
            self.old.put(index, previous[member_id])

    def changing(self, member: int) -> MemberPartitions:
        partitions = self.new.get(member)
        if partitions is None:
            partitions = _deep_copy(self.old.get(member))
            self.new.put(member, partitions)
        return partitions

    def result(self, member_ids: Sequence[str]) -> dict[str, dict[TopicId, set[int]]]:
        out = {}
        for index, member_id in enumerate(member_ids):
            partitions = self.new.get(index)
            if partitions is None:
                partitions = self.old.get(index)
            out[member_id] = {t: set(numbers) for t, numbers in partitions.items()}
        return out


def _revoke_overshared(builder, partition_of, revoked) -> None:
    """revokeOversharedPartitions: a partition held by more than ``sharing`` members is taken
    from the first of them (in its member set's order) until it is not; ``partition_of`` turns
    the builder's key into (topic id, partition), ``revoked(member)`` hears of each."""
    for key, members in builder.by_partition.items():
        count = len(members)
        if count <= builder.sharing:
            continue
        topic_id, number = partition_of(key)
        for member in members:
            numbers = builder.assignment.changing(member).get(topic_id)
            if numbers is not None and numbers.remove(number):
                count -= 1
                members.remove(member)
                builder.by_member.get(member).remove(key)
                revoked(member)
            if count <= builder.sharing:
                break


def _assign_remaining(
    by_partition: JavaHashMap,
    unfilled: JavaHashSet,
    sharing: int,
    give,
) -> None:
    """assignRemainingPartitions: each partition short of ``sharing`` members takes the next
    unfilled members (round and round while a round gave something); ``give(member,
    partition)`` records it and says whether the member is now full."""
    cursor = _Cursor(unfilled)
    progressed = False
    for partition, members in by_partition.items():
        if len(members) < sharing:
            needed = sharing - len(members)
            while needed > 0:
                if not cursor.has_next():
                    if not progressed:
                        break
                    cursor = _Cursor(unfilled)
                    progressed = False
                member = cursor.next()
                if member not in members:
                    needed -= 1
                    progressed = True
                    if give(member, partition):
                        cursor.remove()
        if not unfilled:
            return


class _Homogeneous:
    """``SimpleHomogeneousAssignmentBuilder``."""

    def __init__(
        self,
        member_ids: Sequence[str],
        subscribed: JavaHashSet,
        partition_counts: Mapping[TopicId, int],
        previous: Mapping[str, MemberPartitions],
    ):
        self.member_ids = member_ids
        self.subscribed = subscribed
        self.targets = [(t, p) for t in subscribed for p in range(partition_counts[t])]
        members = len(member_ids)
        self.sharing = (members + len(self.targets) - 1) // len(self.targets) if self.targets else 0
        self.desired = _desired_counts(self.sharing, len(self.targets), members)
        self.assignment = _Assignment(member_ids, previous)
        self.by_partition: JavaHashMap = new_hash_map(len(self.targets))
        self.by_member: JavaHashMap = new_hash_map(members)
        self.unfilled: JavaHashSet = new_hash_set(members)
        self.overfilled: JavaHashSet = new_hash_set(members)

    def build(self) -> dict[str, dict[TopicId, set[int]]]:
        if not len(self.subscribed):
            return {member_id: {} for member_id in self.member_ids}
        self._revoke_unassignable()
        self._revoke_overfilled()
        self._revoke_overshared()
        for target in self.targets:
            self.by_partition.compute_if_absent(target, JavaHashSet)
        if len(self.unfilled):
            _assign_remaining(self.by_partition, self.unfilled, self.sharing, self._give)
        return self.assignment.result(self.member_ids)

    def _revoke_unassignable(self) -> None:
        """Keep the partitions of subscribed topics, drop the other topics."""
        for member, old in self.assignment.old.items():
            changed = None
            held = 0
            desired = self.desired[member]
            for topic_id, numbers in old.items():
                if topic_id in self.subscribed:
                    for number in numbers:
                        partition = (topic_id, number)
                        held += 1
                        self.by_partition.compute_if_absent(partition, JavaHashSet).add(member)
                        self.by_member.compute_if_absent(member, JavaHashSet).add(partition)
                        if held >= desired and changed is None:
                            changed = _deep_copy(old)
                else:
                    if changed is None:
                        changed = _deep_copy(old)
                    changed.remove(topic_id)
            if changed is not None:
                self.assignment.new.put(member, changed)
            if held < desired:
                self.unfilled.add(member)
            elif held > desired:
                self.overfilled.add(member)

    def _revoke_overfilled(self) -> None:
        for member in self.overfilled:
            desired = self.desired[member]
            held = self.by_member.get(member)
            if len(held) > desired:
                for topic_id, number in held:
                    self.assignment.new.get(member).get(topic_id).remove(number)
                    self.by_partition.get((topic_id, number)).remove(member)
                    held.remove((topic_id, number))
                    if len(held) == desired:
                        break

    def _revoke_overshared(self) -> None:
        _revoke_overshared(self, lambda partition: partition, self.unfilled.add)

    def _give(self, member: int, partition: tuple[TopicId, int]) -> bool:
        changing = self.assignment.changing(member)
        changing.compute_if_absent(partition[0], JavaHashSet).add(partition[1])
        held = self.by_member.compute_if_absent(member, JavaHashSet)
        held.add(partition)
        return len(held) >= self.desired[member]


class _Heterogeneous:
    """``SimpleHeterogeneousAssignmentBuilder``."""

    def __init__(
        self,
        member_ids: Sequence[str],
        subscriptions: Sequence[JavaHashSet],
        partition_counts: Mapping[TopicId, int],
        previous: Mapping[str, MemberPartitions],
    ):
        self.member_ids = member_ids
        self.subscribed: JavaHashSet = JavaHashSet()
        for topics in subscriptions:
            for topic_id in topics:
                self.subscribed.add(topic_id)
        self.subscribers: dict[TopicId, list[int]] = {}
        for member, topics in enumerate(subscriptions):
            for topic_id in topics:
                self.subscribers.setdefault(topic_id, []).append(member)
        self.partition_counts = partition_counts
        self.assignment = _Assignment(member_ids, previous)

    def build(self) -> dict[str, dict[TopicId, set[int]]]:
        if not len(self.subscribed):
            return {member_id: {} for member_id in self.member_ids}
        for topic_id in self.subscribed:
            _TopicBuilder(
                self, topic_id, self.partition_counts[topic_id], self.subscribers[topic_id]
            ).build()
        return self.assignment.result(self.member_ids)


class _TopicBuilder:
    """``SimpleHeterogeneousAssignmentBuilder.TopicAssignmentPartialBuilder``: one topic among
    its subscribers."""

    def __init__(
        self, group: _Heterogeneous, topic_id: TopicId, partitions: int, subscribers: list[int]
    ):
        self.assignment = group.assignment
        self.topic_id = topic_id
        self.partitions = partitions
        self.subscribers = subscribers
        self.members = len(group.member_ids)
        self.by_partition: JavaHashMap = new_hash_map(partitions)
        self.by_member: JavaHashMap = new_hash_map(len(subscribers))
        self.sharing = (len(subscribers) + partitions - 1) // partitions if partitions else 0
        self.desired = [0] * self.members
        for position, count in enumerate(
            _desired_counts(self.sharing, partitions, len(subscribers))
        ):
            self.desired[subscribers[position]] = count

    def build(self) -> None:
        self._revoke_unassignable()
        self._revoke_overfilled()
        self._revoke_overshared()
        for number in range(self.partitions):
            self.by_partition.compute_if_absent(number, lambda: new_hash_set(len(self.subscribers)))
        unfilled = new_hash_set(self.members)
        for member in self.subscribers:
            held = self.by_member.get(member)
            if (0 if held is None else len(held)) < self.desired[member]:
                unfilled.add(member)
        _assign_remaining(self.by_partition, unfilled, self.sharing, self._give)

    def _revoke_unassignable(self) -> None:
        """Collect who holds what of this topic (subscriber or not: Kafka's check is on the
        group's subscriptions, which include this topic)."""
        for member, old in self.assignment.old.items():
            if not len(old):
                continue
            numbers = old.get(self.topic_id)
            if numbers is not None:
                for number in numbers:
                    self.by_partition.compute_if_absent(number, JavaHashSet).add(member)
                    self.by_member.compute_if_absent(member, JavaHashSet).add(number)

    def _revoke_overfilled(self) -> None:
        for member, held in self.by_member.items():
            desired = self.desired[member]
            if len(held) <= desired:
                continue
            changing = self.assignment.new.get(member)
            for number in held:
                if len(held) <= desired:
                    break
                self.by_partition.get(number).remove(member)
                held.remove(number)
                if changing is None:
                    changing = self.assignment.changing(member)
                changing.get(self.topic_id).remove(number)

    def _revoke_overshared(self) -> None:
        _revoke_overshared(self, lambda number: (self.topic_id, number), lambda member: None)

    def _give(self, member: int, number: int) -> bool:
        changing = self.assignment.changing(member)
        changing.compute_if_absent(self.topic_id, JavaHashSet).add(number)
        held = self.by_member.compute_if_absent(member, JavaHashSet)
        held.add(number)
        return len(held) >= self.desired[member]


def simple_assign(
    member_ids: Sequence[str],
    subscriptions: Mapping[str, Sequence[TopicId]],
    partition_counts: Mapping[TopicId, int],
    previous: Mapping[str, Mapping[TopicId, Iterable[int]]],
    homogeneous: bool,
) -> dict[str, dict[TopicId, set[int]]]:
    """Kafka's ``SimpleAssignor.assign``: the new target of every member of ``member_ids``
    (topic id -> partitions; a topic may map to an empty set, as in Kafka's result).

    ``subscriptions``: each member's subscribed topic ids (existing topics only, as Kafka's
    ``TopicIds`` resolves them); ``partition_counts``: every subscribed topic's partitions;
    ``previous``: the previous target (members missing have none); ``homogeneous``: whether
    every member subscribes to the same topic names (Kafka's ``SubscriptionType``, computed
    from the names, not the ids)."""
    if not member_ids:
        return {}
    old = {m: _member_partitions(previous.get(m, {})) for m in member_ids}
    if homogeneous:
        subscribed = JavaHashSet(None, subscriptions[member_ids[0]])
        return _Homogeneous(member_ids, subscribed, partition_counts, old).build()
    sets = [JavaHashSet(None, subscriptions[m]) for m in member_ids]
    return _Heterogeneous(member_ids, sets, partition_counts, old).build()


def kafka_member_order(member_ids: Iterable[str]) -> list[str]:
    """The order Kafka's ``TargetAssignmentBuilder`` hands the members to the assignor in: a
    ``new HashMap<>()`` of member id to spec, filled in the group's member order."""
    members: JavaHashMap = JavaHashMap()
    for member_id in member_ids:
        members.put(member_id, None)
    return members.keys()
