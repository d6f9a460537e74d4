"""Cluster scenarios × clients against a 3-node Apache Kafka and a 3-broker wireserver
cluster on a real ZooKeeper; observations must match (see scenarios_cluster.py).

One cluster of each kind for the whole module, both driven at once (two threads), judged as
the single-broker suite judges (scenarios.compare): Kafka's observation must pass the
scenario's check, a known difference must still differ, everything else must be equal.
Without Java/Kafka jars or ZooKeeper the module skips, except under ``CI=true`` (fails).
"""

from __future__ import annotations

import pytest

from compat_tests.clients import CLIENTS
from compat_tests.cluster_targets import kafka_cluster, wireserver_cluster
from compat_tests.reference import ReferenceUnavailable, must_not_skip
from compat_tests.scenarios import known_difference, record_and_compare, run_both
from compat_tests.scenarios_cluster import CLUSTER_SCENARIOS, DIFFERENCES
from wireserver.cluster.zookeeper import ZooKeeperError, ZooKeeperServer

pytestmark = pytest.mark.integration


def _unavailable(reason: str):
    if must_not_skip():
        pytest.fail(f"CI=true and {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def kafka_target():
    try:
        with kafka_cluster() as target:
            yield target
    except ReferenceUnavailable as exc:
        _unavailable(f"no reference Kafka: {exc}")


@pytest.fixture(scope="module")
def wireserver_target():
    zookeeper = ZooKeeperServer()
    try:
        zookeeper.start()
    except ZooKeeperError as exc:
        _unavailable(f"no ZooKeeper: {exc}")
    try:
        with wireserver_cluster(zookeeper.connect + "/compat") as target:
            yield target
    finally:
        zookeeper.close()


def _params():
    for scenario in CLUSTER_SCENARIOS.values():
        for client in scenario.clients:
            yield pytest.param(scenario.name, client, id=f"{scenario.name}-{client}")


@pytest.mark.parametrize("name,client_name", list(_params()))
def test_cluster_scenario(name, client_name, kafka_target, wireserver_target, compat_record):
    scenario = CLUSTER_SCENARIOS[name]
    kafka, wire = run_both(scenario, CLIENTS.get(client_name), kafka_target, wireserver_target)
    record_and_compare(
        compat_record,
        scenario,
        client_name,
        kafka,
        wire,
        known_difference(name, client_name, DIFFERENCES),
    )
