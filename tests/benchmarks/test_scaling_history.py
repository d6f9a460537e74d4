"""The history dimension of benchmarks.scaling runs end to end against a wireserver process on a
4 MiB log: every step gives a figure, and the restarts (clean and kill -9) keep every record.
The figures themselves are not checked: they are for reading, not for asserting."""

from __future__ import annotations

import pytest

from benchmarks.compare import choose_pinning
from benchmarks.scaling_history import METRICS, measure_history
from benchmarks.scaling_targets import WireserverTarget

pytestmark = pytest.mark.integration


def test_every_step_of_a_small_history_gives_a_figure_and_no_record_is_lost():
    target = WireserverTarget(choose_pinning(False))
    target.start()
    try:
        figures = measure_history(target, [4], quick=True)
    finally:
        target.close()
    assert [figure.metric for figure in figures] == list(METRICS)
    failed = [(figure.metric, figure.note) for figure in figures if figure.value is None]
    assert failed == []
    losses = [figure.note for figure in figures if "lost" in figure.note]
    assert losses == []
