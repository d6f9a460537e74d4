"""benchmarks.scaling_load against a wireserver subprocess at a toy size: every figure comes
back and no produce or commit was refused, so the benchmark's requests are ones a broker
accepts (the figures themselves are not judged)."""

from __future__ import annotations

import pytest

from benchmarks.compare import choose_pinning
from benchmarks.scaling_load import measure_connections, measure_groups
from benchmarks.scaling_targets import WireserverTarget

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def target():
    broker = WireserverTarget(choose_pinning(False))
    broker.start()
    yield broker
    broker.close()


def test_connections_produce_without_errors(target):
    figures = measure_connections(target, [2], quick=True, seconds=1, rounds=2)

    assert len(figures) == 6
    assert all(f.value is not None for f in figures), figures
    produce = [f for f in figures if f.metric.startswith("produce p")]
    assert all(", 0 errors, 0 unanswered" in f.note for f in produce), produce
    # Two rounds of 1 s on the same two connections: 4 requests, a p50 and a p99 per round.
    assert all(f.note.startswith("4 Produce") for f in produce), produce
    assert all(len(f.measured_rounds) == 2 for f in produce), produce


def test_groups_commit_without_errors_and_keep_offsets_over_a_restart(target):
    figures = measure_groups(target, [2], quick=True, seconds=1, rounds=2)

    assert len(figures) == 4
    assert all(f.value is not None for f in figures), figures
    commits = [f for f in figures if f.metric.startswith("commit p")]
    assert all(", 0 errors, 0 unanswered" in f.note for f in commits), commits
    assert all(len(f.measured_rounds) == 2 for f in commits), commits
    # The second round's commits go on from the first's offsets.
    (startup,) = [f for f in figures if f.metric == "start-up with history (s)"]
    assert startup.note.startswith("scale-g-0 offsets 2 read back"), startup.note
