"""A process killed at each step of a cleaning leaves a log that loads with every record the
compaction keeps, no leftover swap files and no overlapping segments."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.storage.cleaner_helpers import compacted_log, kept_records, keyed_batch
from tests.storage.cleaner_helpers import segment_ranges_do_not_overlap as no_overlap

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import os, sys
    from tests.storage.cleaner_helpers import compacted_log
    from wireserver.storage.cleaner import clean

    path, crash_at, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
    seen = []

    def step(name):
        seen.append(name)
        if seen.count(crash_at) == nth:
            os._exit(9)

    log = compacted_log(path)
    log.high_watermark = log.log_end_offset
    assert clean(log, now_ms=10_000, step=step).committed
    os._exit(0)
    """
)


def build(path) -> dict:
    log = compacted_log(path)
    for i in range(80):
        value = None if i == 50 else b"v%d" % i  # one tombstone, for key k0
        log.append(keyed_batch([(b"k%d" % (i % 5), value)], ts=1000 + i), 0)
    for i in range(5):
        log.append(keyed_batch([(b"other", b"%d" % i)]), 0)
    log.high_watermark = log.log_end_offset
    latest = {}
    for _, key, value in kept_records(log):
        latest[key] = value
    log.close()
    return latest


@pytest.mark.parametrize(
    "crash_at,nth",
    [
        ("after-cleaned-written", 1),
        ("after-swap-renamed", 1),
        ("after-old-deleted", 1),
        ("after-old-deleted", 3),
        ("after-swap-completed", 2),
        ("never", 1),
    ],
)
def test_kill_at_each_step_of_a_cleaning(tmp_path, crash_at, nth):
    path = tmp_path / "t-0"
    latest = build(path)
    reader = compacted_log(path)
    before = kept_records(reader)
    reader.close()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), crash_at, str(nth)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == (0 if crash_at == "never" else 9), done.stderr
    log = compacted_log(path)
    kept = kept_records(log)
    got = {}
    for _, key, value in kept:
        got[key] = value
    assert got == latest
    assert no_overlap(log)
    offsets = [offset for offset, _, _ in kept]
    assert offsets == sorted(set(offsets))  # no record twice
    assert set(kept) <= set(before)  # nothing renumbered or invented
    assert not [n for n in os.listdir(path) if n.endswith((".swap", ".cleaned"))]
    if crash_at in ("after-old-deleted", "after-swap-renamed"):
        assert log.completed_swaps > 0
    log.close()
