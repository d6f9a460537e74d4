"""benchmarks.scaling: the partitions dimension runs end to end against a real wireserver
process with real clients, and its table says what was measured."""

from __future__ import annotations

import math
import os
import re
import tempfile
import threading

import pytest
from confluent_kafka.admin import AdminClient

from benchmarks.compare import choose_pinning, wait_until_removed
from benchmarks.scaling import Figure, growth, measure_partitions, render
from benchmarks.scaling_targets import WireserverTarget, median_of_rounds

pytestmark = pytest.mark.integration


def test_growth_is_the_exponent_between_the_two_largest_sizes():
    assert growth({10: 1.0, 100: 10.0, 1000: 100.0}) == "1.00"
    assert growth({100: 5.0, 1000: 5.0}) == "0.00"
    assert growth({100: 1.0, 1000: 100.0}) == "2.00"
    assert growth({100: 1.0, 1000: None}) == "—"


def test_render_puts_both_brokers_a_ratio_and_the_growth_in_each_row():
    figures = {
        "wireserver": [Figure("partitions", s, "create (s)", s / 100) for s in (10, 100)],
        "Kafka": [Figure("partitions", s, "create (s)", s / 50) for s in (10, 100)],
    }
    lines = render("partitions", figures)
    assert lines[-2].startswith("| create (s) | 10 | 0.1 | 0.2 | 0.50× | lower |")
    assert lines[-1].endswith("| 1.00 | 1.00 |")


def test_a_figure_measured_in_rounds_is_the_median_with_its_spread():
    rounds = {10: [1.0, 3.0, 2.0], 100: [50.0, 20.0, 5.0]}  # medians 2 and 20, means 2 and 25
    metric = "Metadata all topics p50 (ms)"
    figures = {
        "wireserver": [
            median_of_rounds("partitions", s, metric, values, "345 B")
            for s, values in rounds.items()
        ],
        "Kafka": [Figure("partitions", s, metric, s / 10) for s in (10, 100)],
    }
    lines = render("partitions", figures)
    assert lines[-2].startswith(f"| {metric} | 10 | 2 (345 B; 3 rounds: 1–3) | 1 | 2.00× |")
    assert lines[-1].startswith("|  | 100 | 20.0 (345 B; 3 rounds: 5–50.0) | 10.0 | 2.00× |")
    assert lines[-1].endswith("| 1.00 | 1.00 |")  # from the medians (the means give 1.10)


def test_a_round_that_failed_is_left_out_of_the_median_and_counted():
    fig = median_of_rounds("partitions", 10, "produce p99 (ms)", [4.0, math.nan, 8.0])
    assert fig.value == 6.0
    lines = render("partitions", {"wireserver": [fig]})
    assert "| 6 (2 of 3 rounds: 4–8) | — |" in lines[-1]
    assert median_of_rounds("partitions", 10, "produce p99 (ms)", [None, None]).value is None


def test_the_partitions_dimension_measures_a_real_broker():
    target = WireserverTarget(choose_pinning(False))
    try:
        target.start()
        figures = measure_partitions(target, [10], quick=True, rounds=2)
        by_metric = {f.metric: f for f in figures}
        assert set(by_metric) >= {
            "create (s)",
            "Metadata all topics p50 (ms)",
            "Metadata one topic by id p99 (ms)",
            "produce throughput (records/s)",
            "follow all: produce-to-consume p99 (ms)",
            "idle RSS (MiB)",
            "start-up with these partitions (s)",
            "delete (s)",
        }
        for figure in figures:
            assert figure.value is not None and not math.isnan(figure.value), figure
            assert "errors" not in figure.note, figure
        repeated = [f.metric for f in figures if len(f.measured_rounds) == 2]
        assert repeated == [
            "Metadata all topics p50 (ms)",
            "Metadata all topics p99 (ms)",
            "Metadata one topic by id p99 (ms)",
            "produce throughput (records/s)",
            "produce p99 (ms)",
            "follow all: produce-to-consume p50 (ms)",
            "follow all: produce-to-consume p99 (ms)",
        ]
        assert by_metric["follow all: broker CPU (%)"].note == "mean of 2 rounds"
        # the consumer's own process was busy too (this process, pinned or not: at most the
        # machine's cores)
        client = by_metric["follow all: client CPU (%)"]
        assert client.note == "mean of 2 rounds"
        assert 0 < client.value <= 100 * os.cpu_count(), client
        # The create is timed to the partitions' logs on disk, after Metadata listed them.
        listed = re.match(r"leaders listed after ([\d.e-]+) s", by_metric["create (s)"].note)
        assert 0 < float(listed.group(1)) <= by_metric["create (s)"].value
        answered = re.match(r"answered after ([\d.e-]+) s", by_metric["delete (s)"].note)
        assert 0 < float(answered.group(1)) <= by_metric["delete (s)"].value
        # Every record the follow-all producer had acknowledged reached the consumer and its
        # latency counts (it starts at each partition's end, and waits for the last ones).
        arrived, acknowledged = re.match(
            r"(\d+) of (\d+) records", by_metric["follow all: produce-to-consume p50 (ms)"].note
        ).groups()
        assert int(acknowledged) > 0 and arrived == acknowledged
        # The topics it made are gone again.
        listed = AdminClient({"bootstrap.servers": target.bootstrap}).list_topics(timeout=30)
        assert not [name for name in listed.topics if name.startswith("scale-p10-")]
        # ... and so are their directories, renamed and removed before the next size starts.
        assert not [n for n in os.listdir(target.data_dir) if n.startswith("scale-p10-")]
    finally:
        target.close()


def test_the_next_size_waits_for_the_deleted_directories(tmp_path):
    doomed = tmp_path / "scale-p10-0-3.0123abcd-delete"
    doomed.mkdir()
    (tmp_path / "scale-p100-0-3").mkdir()  # another size's: not waited for
    assert not wait_until_removed(tmp_path, "scale-p10-", timeout=0.3)
    threading.Timer(0.3, doomed.rmdir).start()
    assert wait_until_removed(tmp_path, "scale-p10-", timeout=30)
    assert not doomed.exists()


class _ToyTarget:
    """A stand-in broker for the harness's own plumbing (no broker is measured here)."""

    name = "toy"

    def __init__(self, pinning):
        self.pinning = pinning

    def start(self):
        return 0.0

    def close(self):
        pass


def test_each_measurement_runs_in_a_process_of_its_own(monkeypatch):
    import os

    from benchmarks import scaling

    def measure(target, sizes, quick):
        return [Figure("toy", size, "pid", float(os.getpid())) for size in sizes]

    monkeypatch.setattr(scaling, "dimensions", lambda: {"toy": (measure, [1, 2], [1])})
    monkeypatch.setitem(scaling.TARGETS, "toy", _ToyTarget)
    name, figures = scaling.measure_apart("toy", "toy", choose_pinning(False), [1, 2], False)
    assert name == "toy"
    assert [f.size for f in figures] == [1, 2]
    assert {f.value for f in figures} != {float(os.getpid())}  # measured elsewhere


def test_the_rounds_reach_the_measurement_in_the_child_process(monkeypatch):
    from benchmarks import scaling

    def measure(target, sizes, quick, *, rounds):
        return [
            median_of_rounds("toy", size, "rounds", [float(r) for r in range(rounds)])
            for size in sizes
        ]

    monkeypatch.setattr(scaling, "dimensions", lambda: {"toy": (measure, [1, 2], [1])})
    monkeypatch.setitem(scaling.TARGETS, "toy", _ToyTarget)
    _, figures = scaling.measure_apart("toy", "toy", choose_pinning(False), [1, 2], False, 3)
    assert [f.rounds for f in figures] == [(0.0, 1.0, 2.0)] * 2
    assert [f.value for f in figures] == [1.0, 1.0]


@pytest.mark.parametrize(
    ("options", "rounds"),
    [([], 3), (["--quick"], 1), (["--quick", "--rounds", "2"], 2), (["--rounds", "5"], 5)],
)
def test_the_run_passes_its_rounds_on_and_names_them_in_its_command(
    monkeypatch, tmp_path, options, rounds
):
    from benchmarks import scaling
    from benchmarks.compare import cpus

    passed = []

    def measure_apart(dimension, key, pinning, sizes, quick, rounds):
        passed.append(rounds)
        return key, [Figure(dimension, size, "figure (ms)", 1.0) for size in sizes]

    monkeypatch.setattr(scaling, "measure_apart", measure_apart)
    monkeypatch.setattr(scaling, "plot", lambda *args: False)
    output = tmp_path / "results.md"
    argv = [*options, "--no-pin", "--no-warm-memory", "--dimensions", "partitions"]
    argv += ["--targets", "wireserver"]
    assert scaling.main([*argv, "--output", str(output)]) == 0
    assert passed == [rounds]
    measured_by = next(line for line in output.read_text().splitlines() if "Measured by" in line)
    # a table kept from an earlier run may come from other CPUs than the header lists
    assert measured_by.endswith(f", on {cpus()}; wireserver's pure-Python build.")
    assert ("--rounds" in measured_by) == ("--rounds" in options)
    if "--rounds" in options:
        assert f"--rounds {rounds}" in measured_by


def test_a_compiled_run_spawns_its_brokers_on_the_compiled_tree_and_says_so(monkeypatch, tmp_path):
    """``--build compiled`` puts the compiled tree first on a spawned broker's path (and not
    on the harness's own, whose clients run ``python -m benchmarks...`` from the checkout),
    and the table names the build."""
    from benchmarks import compare, compiled, scaling

    tree = tmp_path / "compiled-tree"
    monkeypatch.setattr(compiled, "compiled_tree", lambda: tree)
    monkeypatch.setattr(compare, "BUILD", compare.BUILD)  # restored after the test
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    path_before = os.environ.get("PYTHONPATH")
    seen = []

    def measure_apart(dimension, key, pinning, sizes, quick, rounds):
        with compare.spawning_build():
            seen.append((os.environ.get("PYTHONPATH"), os.environ.get("PYTHONSAFEPATH")))
        seen.append((os.environ.get("PYTHONPATH"), os.environ.get("PYTHONSAFEPATH")))
        return key, [Figure(dimension, size, "figure (ms)", 1.0) for size in sizes]

    monkeypatch.setattr(scaling, "measure_apart", measure_apart)
    monkeypatch.setattr(scaling, "plot", lambda *args: False)
    output = tmp_path / "results.md"
    argv = ["--quick", "--no-pin", "--dimensions", "partitions", "--targets", "wireserver"]
    assert scaling.main([*argv, "--build", "compiled", "--output", str(output)]) == 0
    assert seen == [(str(tree), "1"), (path_before, None)]
    measured_by = next(line for line in output.read_text().splitlines() if "Measured by" in line)
    assert "--build compiled" in measured_by
    assert measured_by.endswith(
        "wireserver's compiled build (setup.py's modules compiled with mypyc; benchmarks.compiled)."
    )


def test_a_run_of_some_dimensions_keeps_the_other_tables(tmp_path):
    from benchmarks import scaling

    results = tmp_path / "results.md"
    results.write_text(
        "# results\n\n## Other\n\ntext\n\n"
        f"{scaling.SECTION}\n\nhead\n\n### partitions\n\n| a |\n\nreading\n\n"
        "### connections\n\n| b |\n"
    )
    kept = scaling.kept_tables(results)
    assert kept == {
        "partitions": ["### partitions", "", "| a |", "", "reading"],
        "connections": ["### connections", "", "| b |"],
    }


def test_a_run_warms_the_memory_first_unless_told_not_to(monkeypatch, tmp_path):
    """The run writes, syncs and deletes a file of the memory's size before it measures
    anything (here 4 MiB), says so in its header, and leaves no file behind."""
    from benchmarks import compare, scaling

    monkeypatch.setattr(compare, "WARM_MEMORY_BYTES", 4 << 20)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(scaling, "measure_apart", lambda d, key, *rest: (key, []))
    monkeypatch.setattr(scaling, "plot", lambda *args: False)
    output = tmp_path / "results.md"
    argv = ["--no-pin", "--dimensions", "partitions", "--targets", "wireserver"]
    assert scaling.main([*argv, "--output", str(output)]) == 0
    assert "; memory: 0.0 GiB written, synced and deleted first in " in output.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.md"]
    assert scaling.main([*argv, "--no-warm-memory", "--output", str(output)]) == 0
    assert "; memory: " not in output.read_text()


def test_warming_a_missing_directory_says_it_did_not(tmp_path):
    from benchmarks.compare import warm_memory

    note = warm_memory(tmp_path / "missing", limit=1 << 20)
    assert note == "memory not warmed: No such file or directory"
