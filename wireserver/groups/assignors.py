"""Server-side partition assignors of the consumer group protocol (KIP-848): ``uniform`` and
``range``, the two Kafka ships (``group.consumer.assignors``).

An assignor is a pure function: the members (id → subscribed topic names), the topics they
may be given (name → (topic id, partition count)) and the previous target assignment in,
the new target assignment (member id → topic id → partitions) out. No I/O, no clock.

- ``uniform`` (Kafka's UniformAssignor): every partition of every subscribed topic goes to
  exactly one member subscribed to it; the counts are as even as the subscriptions allow
  (they differ by at most one between members that share their subscriptions) and the
  assignment is sticky: a member keeps every partition of its previous target that balance
  allows. Kafka picks its moves in a different order, so the exact partitions can differ from
  Kafka's; the balance and stickiness guarantees are the same.
- ``range`` (Kafka's RangeAssignor): per topic, the members subscribed to it, ordered by
  member id, get contiguous ranges; the first ``partitions % members`` get one more. Topics
  with equal partition counts are thus co-partitioned. Not sticky (as the client-side range
  assignor): the ranges follow from the member ids alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

#: member id → topic id → partitions
Assignment = dict[str, dict[uuid.UUID, set[int]]]
#: topic name → (topic id, number of partitions)
TopicMetadata = Mapping[str, tuple[uuid.UUID, int]]


class UnsupportedAssignor(ValueError):
    """The client named an assignor this broker does not run."""


def _eligible(
    subscriptions: Mapping[str, set[str]], topics: TopicMetadata
) -> dict[str, set[uuid.UUID]]:
    """member id → ids of the topics it subscribes to that exist."""
    return {
        member: {topics[name][0] for name in names if name in topics}
        for member, names in subscriptions.items()
    }


def uniform(
    subscriptions: Mapping[str, set[str]],
    topics: TopicMetadata,
    previous: Mapping[str, Mapping[uuid.UUID, set[int]]],
) -> Assignment:
    eligible = _eligible(subscriptions, topics)
    counts = {topic_id: count for topic_id, count in topics.values()}
    members = sorted(subscriptions)
    owner: dict[tuple[uuid.UUID, int], str] = {}
    # 1. Stickiness: keep every still-valid partition of the previous target, once.
    for member in members:
        for topic_id, partitions in sorted(previous.get(member, {}).items()):
            if topic_id not in eligible[member]:
                continue
            for partition in sorted(partitions):
                if partition < counts.get(topic_id, 0) and (topic_id, partition) not in owner:
                    owner[(topic_id, partition)] = member
    held: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in members}
    for tp, member in owner.items():
        held[member].append(tp)
    # 2. Every other subscribed partition to the least loaded member that may take it.
    for topic_id in sorted({t for ts in eligible.values() for t in ts}):
        takers = [m for m in members if topic_id in eligible[m]]
        for partition in range(counts[topic_id]):
            if (topic_id, partition) not in owner:
                member = min(takers, key=lambda m: (len(held[m]), m))
                owner[(topic_id, partition)] = member
                held[member].append((topic_id, partition))
    # 3. Balance: move one partition at a time from a member with two or more than another
    #    member that may take it, most loaded first, newest partitions first (keeps the
    #    oldest ownership), until no such move is left.
    moved = True
    while moved:
        moved = False
        for giver in sorted(members, key=lambda m: (-len(held[m]), m)):
            for taker in sorted(members, key=lambda m: (len(held[m]), m)):
                if len(held[giver]) - len(held[taker]) <= 1:
                    break
                movable = [tp for tp in held[giver] if tp[0] in eligible[taker]]
                if movable:
                    tp = movable[-1]
                    held[giver].remove(tp)
                    held[taker].append(tp)
                    moved = True
                    break
            if moved:
                break
    return _as_assignment(held, members)


def range_(
    subscriptions: Mapping[str, set[str]],
    topics: TopicMetadata,
    previous: Mapping[str, Mapping[uuid.UUID, set[int]]],
) -> Assignment:
    eligible = _eligible(subscriptions, topics)
    counts = {topic_id: count for topic_id, count in topics.values()}
    members = sorted(subscriptions)
    held: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in members}
    for topic_id in sorted({t for ts in eligible.values() for t in ts}):
        takers = [m for m in members if topic_id in eligible[m]]
        quota, extra = divmod(counts[topic_id], len(takers))
        start = 0
        for index, member in enumerate(takers):
            size = quota + (1 if index < extra else 0)
            held[member].extend((topic_id, p) for p in range(start, start + size))
            start += size
    return _as_assignment(held, members)


def _as_assignment(
    held: Mapping[str, list[tuple[uuid.UUID, int]]], members: list[str]
) -> Assignment:
    out: Assignment = {m: {} for m in members}
    for member, partitions in held.items():
        for topic_id, partition in partitions:
            out[member].setdefault(topic_id, set()).add(partition)
    return out


ASSIGNORS = {"uniform": uniform, "range": range_}

#: Kafka's class names for the same assignors (``group.consumer.assignors`` accepts both).
CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_name(name: str) -> str:
    """The short name of a configured or requested assignor; UnsupportedAssignor if unknown."""
    short = CLASS_NAMES.get(name, name)
    if short not in ASSIGNORS:
        raise UnsupportedAssignor(name)
    return short
