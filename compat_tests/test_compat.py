"""Every scenario × client against the reference Kafka and wireserver; observations must match.

A test runs the scenario against both targets at once (two threads; the brokers are separate
processes), then:

1. the Kafka observation must pass the scenario's own check (else the scenario is broken),
2. if (scenario, client) is a known difference, the observations must still differ,
3. otherwise wireserver's observation must equal Kafka's.
"""

from __future__ import annotations

import pytest

# Imported for the scenarios they register:
from compat_tests import (  # noqa: F401
    scenarios_compaction,
    scenarios_fetch,
    scenarios_groups,
    scenarios_share,
    scenarios_streams,
    scenarios_tools,
    scenarios_txn,
)
from compat_tests.clients import CLIENTS
from compat_tests.scenarios import (
    SCENARIOS,
    known_difference,
    record_and_compare,
    run_both,
)
from compat_tests.targets import KAFKA, WIRESERVER

pytestmark = pytest.mark.integration


def _params():
    for scenario in SCENARIOS.values():
        for client in scenario.clients:
            yield pytest.param(scenario.name, client, id=f"{scenario.name}-{client}")


@pytest.mark.parametrize("name,client_name", list(_params()))
def test_scenario(name, client_name, compat_targets, compat_record):
    scenario = SCENARIOS[name]
    client = CLIENTS[client_name]
    kafka_target = compat_targets.get(KAFKA, scenario.auto_create)
    wire_target = compat_targets.get(WIRESERVER, scenario.auto_create)
    if kafka_target.problem:
        pytest.fail(f"the reference cannot run this scenario: {kafka_target.problem}")

    kafka, wire = run_both(scenario, client, kafka_target.bootstrap, wire_target.bootstrap)
    record_and_compare(
        compat_record, scenario, client_name, kafka, wire, known_difference(name, client_name)
    )
