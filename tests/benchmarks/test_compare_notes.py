"""benchmarks.compare: what a Java tool's row says besides its median."""

from __future__ import annotations

import os
import time

from benchmarks.compare import MIB, _java_figure, cpu_seconds


def test_a_java_row_gives_the_median_the_spread_and_both_sides_cpu_per_100_mb():
    # three runs of 100 MiB each: 2 s of broker CPU and 30 s of the tool's in all
    runs = [
        {"mib_per_s": mib, "records_per_s": mib * 1024, "broker_cpu_s": 2 / 3, "client_cpu_s": 10}
        for mib in (20.0, 30.0, 25.0)
    ]
    mib_s, note = _java_figure(runs, 100 * MIB)
    assert mib_s == 25.0
    assert note == (
        " (26 k rec/s; broker 667 ms CPU/100 MB; client 10000 ms CPU/100 MB;"
        " median of 3 runs, 20–30)"
    )


def test_a_java_row_without_cpu_figures_keeps_the_rate_and_spread_only():
    mib_s, note = _java_figure([{"mib_per_s": 8.0, "records_per_s": 8192.0}], 1)
    assert (mib_s, note) == (8.0, " (8 k rec/s)")


def test_cpu_seconds_sees_a_few_milliseconds_that_clock_ticks_round_away():
    # 10 ms ticks read a short burst as 0 or 10 ms; the threads' schedstat gives its length
    before = cpu_seconds(os.getpid())
    end = time.thread_time() + 0.003
    while time.thread_time() < end:
        pass
    used = cpu_seconds(os.getpid()) - before
    assert 0.002 < used < 0.009, used
