"""The cores dimension of benchmarks.scaling runs end to end against a wireserver process and a
2-broker wireserver cluster with K=2 real librdkafka processes at a toy size: every figure comes
back, as the median of its rounds, and what each round produced was consumed. The figures
themselves are not checked: they are for reading, not for asserting."""

from __future__ import annotations

import math

import pytest
from confluent_kafka.admin import AdminClient

from benchmarks import scaling_cores
from benchmarks.scaling import dimensions
from benchmarks.scaling_cores import CLUSTER, measure_cores
from benchmarks.scaling_targets import WireserverTarget

pytestmark = pytest.mark.integration


def test_the_cores_dimension_measures_one_broker_and_a_two_broker_cluster(monkeypatch):
    monkeypatch.setitem(scaling_cores.RECORDS, True, 20_000)
    assert dimensions()["cores"][1:] == ([1, 2, 4], [1, 2])
    target = WireserverTarget(scaling_cores.PINNING)
    try:
        target.start()
        figures = measure_cores(target, [2], quick=True, rounds=2)
        # each round wrote a topic of its own, so that each consume read what one round wrote
        listed = AdminClient({"bootstrap.servers": target.bootstrap}).list_topics(timeout=30)
        assert {"scale-cores-2", "scale-cores-2-r1"} <= set(listed.topics)
    finally:
        target.close()
    by_metric = {figure.metric: figure for figure in figures}
    assert set(by_metric) == set(CLUSTER) | set(CLUSTER.values())
    for figure in figures:
        assert figure.value is not None and not math.isnan(figure.value), figure
        assert figure.value > 0, figure
        assert len(figure.measured_rounds) == 2, figure
        assert min(figure.measured_rounds) <= figure.value <= max(figure.measured_rounds)
    # A figure is None when any client process reported an error (a failed delivery, or a
    # consumer that read fewer records than the partitions hold). 2 producers sent 10,000
    # records and a warm-up of 2,500 each; the consumers read all of them back.
    for produce, consume in (
        (scaling_cores.PRODUCE, scaling_cores.CONSUME),
        (CLUSTER[scaling_cores.PRODUCE], CLUSTER[scaling_cores.CONSUME]),
    ):
        assert by_metric[produce].note.startswith("2 × 10,000 records"), by_metric[produce]
        assert by_metric[consume].note.startswith("25,000 records"), by_metric[consume]
    assert by_metric[CLUSTER[scaling_cores.PRODUCE]].note.endswith("leaders 4 + 4")
