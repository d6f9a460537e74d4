"""The windowed rate behind every client quota (``wireserver.quotas.rates.Rate``), against
figures worked out by hand from Kafka 4.4's ``SampledStat`` and ``Rate``: one window more than
``quota.window.num`` is kept, a window is emptied by the time of its last record (not of its
start), and a young rate counts at least ``quota.window.num - 1`` whole windows. Times are
passed in, as the broker's clock passes them."""

from __future__ import annotations

import pytest

from wireserver.quotas.rates import Rate

WINDOW_MS = 1000


def test_one_window_more_than_quota_window_num_counts():
    # quota.window.num=2: records 0.5 s, 1 s and 2 s after the rate began land in three
    # windows (starting at 0, 1000 and 2000 ms), and all three count 400 ms later: 300 over
    # 2.4 s. Keeping two windows would have reused the first for the third record and
    # measured 200 over 1.4 s (142.9 a second).
    rate = Rate(0)
    for at in (500, 1000, 2000):
        rate.record(100.0, at, WINDOW_MS, 2)
    assert rate.measure(2400, WINDOW_MS, 2) == (pytest.approx(125.0), 2400)


def test_a_window_counts_until_quota_window_num_windows_after_its_last_record():
    # one window, begun at 0, last written at 900: it still counts at 2.5 s (1.6 s after its
    # last record; emptied by its start it would be gone at 2 s) and is emptied at 2.9 s
    rate = Rate(0)
    rate.record(100.0, 0, WINDOW_MS, 2)
    rate.record(100.0, 900, WINDOW_MS, 2)
    assert rate.measure(2500, WINDOW_MS, 2) == (pytest.approx(80.0), 2500)
    assert rate.measure(2900, WINDOW_MS, 2) == (0.0, WINDOW_MS)


def test_a_young_rate_counts_at_least_quota_window_num_minus_one_windows():
    # what lets a new client send (quota.window.num - 1) windows' worth at once
    for samples, elapsed_ms in ((2, 1000), (11, 10_000)):
        rate = Rate(0)
        rate.record(100.0, 0, WINDOW_MS, samples)
        measured, window = rate.measure(0, WINDOW_MS, samples)
        assert (measured, window) == (pytest.approx(100.0 * 1000 / elapsed_ms), elapsed_ms)
    # half a window later the padding is still whole windows: 1.5 s for quota.window.num=2
    rate = Rate(0)
    rate.record(150.0, 0, WINDOW_MS, 2)
    assert rate.measure(500, WINDOW_MS, 2) == (pytest.approx(100.0), 1500)


def test_a_taken_back_record_leaves_the_rate_as_it_was():
    # a throttled fetch's bytes are recorded, found over the quota, and taken back
    rate = Rate(0)
    rate.record(100.0, 300, WINDOW_MS, 2)
    before = rate.measure(1200, WINDOW_MS, 2)
    rate.record(500.0, 1200, WINDOW_MS, 2)
    rate.record(-500.0, 1200, WINDOW_MS, 2)
    assert rate.measure(1200, WINDOW_MS, 2) == before
