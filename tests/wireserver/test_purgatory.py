"""The purgatory (``wireserver.purgatory``): a watch fires with the key notified, or False at
its timeout, and a partition's key also wakes the watches on its topic's key."""

from __future__ import annotations

from twisted.internet.task import Clock

from wireserver.purgatory import Purgatory


def fired(deferred) -> list:
    seen: list = []
    deferred.addCallback(seen.append)
    return seen


def test_a_partition_key_wakes_the_watches_on_its_topic():
    purgatory = Purgatory(Clock())
    topic = fired(purgatory.watch([("append", "orders")], 5))
    partition = fired(purgatory.watch([("append", "orders", 1)], 5))
    other = fired(purgatory.watch([("append", "orders", 2), ("append", "other")], 5))
    assert purgatory.notify(("append", "orders", 1)) == 2
    assert topic == [("append", "orders")]
    assert partition == [("append", "orders", 1)]
    assert other == []
    # each watch fires once and is gone from every key it watched
    assert purgatory.notify(("append", "orders", 1)) == 0
    assert purgatory.waiting(("append", "orders")) == 0


def test_a_topic_key_does_not_wake_a_partition_watch_nor_another_kind():
    clock = Clock()
    purgatory = Purgatory(clock)
    partition = fired(purgatory.watch([("append", "orders", 0)], 5))
    acks = fired(purgatory.watch([("hw", "orders")], 5))
    assert purgatory.notify(("append", "orders")) == 0
    assert purgatory.notify(("append", "orders", 0)) == 1
    assert partition == [("append", "orders", 0)] and acks == []
    clock.advance(5)
    assert acks == [False]
