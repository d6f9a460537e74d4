"""benchmarks.scaling: the partitions dimension runs end to end against a real wireserver
process with real clients, and its table says what was measured."""

from __future__ import annotations

import math

import pytest
from confluent_kafka.admin import AdminClient

from benchmarks.compare import choose_pinning
from benchmarks.scaling import Figure, growth, measure_partitions, render
from benchmarks.scaling_targets import WireserverTarget

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


def test_the_partitions_dimension_measures_a_real_broker():
    target = WireserverTarget(choose_pinning(False))
    try:
        target.start()
        figures = measure_partitions(target, [10], quick=True)
        by_metric = {f.metric: f for f in figures}
        assert set(by_metric) >= {
            "create (s)",
            "Metadata all topics p50 (ms)",
            "produce throughput (records/s)",
            "follow all: produce-to-consume p99 (ms)",
            "idle RSS (MiB)",
            "start-up with these partitions (s)",
            "delete (s)",
        }
        for figure in figures:
            assert figure.value is not None and not math.isnan(figure.value), figure
            assert "errors" not in figure.note, figure
        # The topics it made are gone again.
        listed = AdminClient({"bootstrap.servers": target.bootstrap}).list_topics(timeout=30)
        assert not [name for name in listed.topics if name.startswith("scale-p10-")]
    finally:
        target.close()
