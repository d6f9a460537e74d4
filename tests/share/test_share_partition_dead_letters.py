"""Which archived records a share-partition hands to its dead-letter queue
(``SharePartition.dead_lettered``, written by ``wireserver.share.dlq``), over a real log with
the locks on a ``twisted.internet.task.Clock``: the rejected ones (not gaps) and those that
reach the delivery count limit, whether released by the member, by its lock expiring or by its
leaving, each with its delivery count and Kafka's cause."""

from __future__ import annotations

from twisted.internet.task import Clock

from tests.share.conftest import SETTINGS as PARTITION_SETTINGS
from wireserver.share.dlq import CLIENT_REJECT, DELIVERY_COUNT_EXCEEDED
from wireserver.share.partition import ACCEPT, GAP, REJECT, RELEASE, SharePartition

SETTINGS = {**PARTITION_SETTINGS, "share.delivery.count.limit": 2}


def partition(clock):
    letters: list[tuple[list[tuple[int, int]], str]] = []
    share = SharePartition(
        "g",
        "t",
        0,
        clock,
        SETTINGS.__getitem__,
        lambda: None,
        dead_lettered=lambda offsets, cause: letters.append((offsets, cause)),
    )
    return share, letters


def test_rejected_records_are_dead_lettered_gaps_are_not(log):
    share, letters = partition(Clock())
    share.acquire("a", log, 10, 1 << 20, False)
    share.acknowledge("a", [(0, 5, [ACCEPT, REJECT, GAP, REJECT, ACCEPT, ACCEPT])])
    assert letters == [([(1, 1), (3, 1)], CLIENT_REJECT)]
    assert share.start_offset == 6


def test_released_at_the_limit_is_dead_lettered_once(log):
    share, letters = partition(Clock())
    share.acquire("a", log, 10, 1 << 20, False)
    share.acknowledge("a", [(0, 5, [RELEASE])])
    assert letters == []  # delivered once of two: available again
    share.acquire("a", log, 10, 1 << 20, False)
    share.acknowledge("a", [(0, 5, [RELEASE, RELEASE, ACCEPT, REJECT, ACCEPT, ACCEPT])])
    assert letters == [
        ([(3, 2)], CLIENT_REJECT),
        ([(0, 2), (1, 2)], DELIVERY_COUNT_EXCEEDED),
    ]


def test_a_lock_expiring_at_the_limit_dead_letters(log):
    clock = Clock()
    share, letters = partition(clock)
    for _ in range(2):
        assert share.acquire("a", log, 10, 1 << 20, False).ranges
        clock.advance(30)
    assert letters == [([(o, 2) for o in range(6)], DELIVERY_COUNT_EXCEEDED)]
    assert share.start_offset == 6


def test_a_member_leaving_at_the_limit_dead_letters(log):
    share, letters = partition(Clock())
    share.acquire("a", log, 10, 1 << 20, False)
    share.release_member("a")
    share.acquire("b", log, 10, 1 << 20, False)
    share.release_member("b")
    assert letters == [([(o, 2) for o in range(6)], DELIVERY_COUNT_EXCEEDED)]
