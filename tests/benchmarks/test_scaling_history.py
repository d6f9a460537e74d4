"""The history dimension of benchmarks.scaling runs end to end against a wireserver process on a
4 MiB log: every step gives a figure, the restarts (clean and kill -9) keep every record, and the
log is written in batches of the Java producer's default size (16 KiB), as the docstring of
``benchmarks.scaling_history`` says. The figures themselves are not checked: they are for
reading, not for asserting."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from benchmarks.compare import choose_pinning
from benchmarks.scaling_history import BATCH_BYTES, METRICS, TOPIC, VALUE_BYTES, measure_history
from benchmarks.scaling_targets import WireserverTarget

pytestmark = pytest.mark.integration


def test_every_step_of_a_small_history_gives_a_figure_and_no_record_is_lost():
    target = WireserverTarget(choose_pinning(False))
    target.start()
    try:
        figures = measure_history(target, [4], quick=True)
        sizes = batch_sizes(target.data_dir)
    finally:
        target.close()
    assert [figure.metric for figure in figures] == list(METRICS)
    failed = [(figure.metric, figure.note) for figure in figures if figure.value is None]
    assert failed == []
    losses = [figure.note for figure in figures if "lost" in figure.note]
    assert losses == []
    # 4 MiB in batches of at most 16 KiB of records (a batch's own framing on top)
    assert len(sizes) >= 4 * 1024 * 1024 // BATCH_BYTES
    assert max(sizes) <= BATCH_BYTES + VALUE_BYTES, max(sizes)


def batch_sizes(data_dir: Path) -> list[int]:
    """The size of every batch in the topic's segment files."""
    sizes = []
    for segment in data_dir.glob(f"{TOPIC}-*/*.log"):
        data = segment.read_bytes()
        position = 0
        while position + 12 <= len(data):
            (length,) = struct.unpack_from(">i", data, position + 8)
            sizes.append(12 + length)
            position += 12 + length
    return sizes
