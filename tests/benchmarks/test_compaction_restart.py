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


def test_a_compiled_run_starts_its_brokers_on_the_compiled_tree_and_says_so(monkeypatch, tmp_path):
    """``--build compiled`` spawns wireserver from the compiled tree, the section names the
    build, and a target that failed is listed once."""
    from benchmarks import compaction, compare, compiled

    tree = tmp_path / "compiled-tree"
    monkeypatch.setattr(compiled, "compiled_tree", lambda: tree)
    monkeypatch.setattr(compare, "BUILD", compare.BUILD)  # restored after the test
    seen = []

    def run_target(name, sizes, pinning, results, log):
        seen.append(compare.build_environment().get("PYTHONPATH"))
        raise RuntimeError(f"{name} stopped here")

    monkeypatch.setattr(compaction, "run_target", run_target)
    output = tmp_path / "results.md"
    argv = ["--quick", "--no-pin", "--targets", "wireserver", "--skip-restart"]
    assert compaction.main([*argv, "--build", "compiled", "--output", str(output)]) == 1
    assert seen == [str(tree)]
    text = output.read_text()
    assert "- wireserver: compiled build (setup.py's modules compiled with mypyc;" in text
    assert text.count("wireserver: RuntimeError: wireserver stopped here") == 1
