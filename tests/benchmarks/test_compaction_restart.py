"""The restart step of benchmarks.compaction on a small history, against real wireserver
processes: the commit history is written into the stopped broker's ``__consumer_offsets``, each
timed start gives its first Metadata and, later, the groups' offsets readable (the coordinator
loads in the background), and the offsets read back are the history's last."""

from __future__ import annotations

import pytest

from benchmarks.compaction import (
    check_committed,
    seed_groups,
    timed_starts,
    write_commit_history,
)
from benchmarks.compare import choose_pinning

pytestmark = pytest.mark.integration


def test_a_start_is_served_first_and_its_groups_readable_after(tmp_path):
    pinning = choose_pinning(False)
    data_dir = str(tmp_path / "data")
    seed_groups(pinning, data_dir)
    records = write_commit_history(data_dir, 4 * 1024 * 1024)
    assert records > 0
    [(served, loaded)] = timed_starts(pinning, data_dir, 1)
    assert 0 < served <= loaded
    assert check_committed(pinning, data_dir) == "ok"
