"""The campaign checker's verdict on producer histories against the log it read back."""

from __future__ import annotations

from chaos.checker import check_producers


def ack(value: str, partition: int, offset: int | None) -> dict:
    return {"k": "ack", "v": value, "p": partition, "o": offset, "t": 0.0}


def test_an_ack_without_an_offset_needs_only_the_record_in_the_log():
    """librdkafka delivers a batch whose answer was lost without an offset once a later batch
    succeeds (an implicit ack): such a record must be in the log, at any offset."""
    history = [ack("p1-1", 0, 10), ack("p1-2", 0, None), ack("p1-3", 0, None)]
    log = {0: [(10, "p1-1"), (11, "p1-2")]}
    verdict = check_producers([history], log)
    assert verdict.wrong_offset == []
    assert verdict.lost == ["p1-3"]


def test_a_record_at_another_offset_or_twice_is_reported():
    history = [ack("p1-1", 0, 10), ack("p1-2", 0, 11)]
    log = {0: [(10, "p1-1"), (12, "p1-2"), (13, "p1-1")]}
    verdict = check_producers([history], log)
    assert verdict.wrong_offset == ["p1-2"]
    assert verdict.duplicated == ["p1-1 at 0/10, 0/13"]
    assert verdict.reordered == 1
