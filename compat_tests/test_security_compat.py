"""The authentication and authorization scenarios (scenarios_security.py) against a reference
Kafka and a wireserver with the same SASL listener, users, authorizer and super users; the
observations must be equal, as in test_compat.

One reference Kafka (a local KRaft node with an extra SASL_PLAINTEXT listener) and one
wireserver subprocess serve the whole module.
"""

from __future__ import annotations

import contextlib

import pytest

from compat_tests import scenarios_tools  # noqa: F401 (registers tool-kafka-acls[authorizer])
from compat_tests.reference import ReferenceUnavailable, must_not_skip, reference_kafka
from compat_tests.scenarios import known_difference, record_and_compare, run_both
from compat_tests.scenarios_security import (
    BROKER_SETTINGS,
    SASL_LISTENER,
    SECURITY_DIFFERENCES,
    SECURITY_SCENARIOS,
    SecureTarget,
    add_scram_users,
    wait_until_authenticates,
)

pytestmark = pytest.mark.integration


def _start_kafka(stack: contextlib.ExitStack) -> SecureTarget:
    try:
        ref = stack.enter_context(
            reference_kafka(
                broker_props=BROKER_SETTINGS, extra_listeners={SASL_LISTENER: SASL_LISTENER}
            )
        )
    except ReferenceUnavailable as exc:
        if must_not_skip():
            pytest.fail(f"CI=true and no reference Kafka: {exc}")
        pytest.skip(f"no reference Kafka: {exc}")
    return SecureTarget(
        "kafka", ref.bootstrap_servers, ref.cluster.listener_bootstrap(SASL_LISTENER)
    )


def _start_wireserver(stack: contextlib.ExitStack) -> SecureTarget:
    from wireserver.testing import EmbeddedBroker

    broker = stack.enter_context(
        EmbeddedBroker(
            mode="subprocess",
            overrides={
                **BROKER_SETTINGS,
                "listeners": f"PLAINTEXT://127.0.0.1:0,{SASL_LISTENER}://127.0.0.1:0",
            },
        )
    )
    address = {name: f"{host}:{port}" for name, host, port in broker.endpoints}
    return SecureTarget("wireserver", address["PLAINTEXT"], address[SASL_LISTENER])


@pytest.fixture(scope="module")
def secure_targets():
    with contextlib.ExitStack() as stack:
        targets = (_start_kafka(stack), _start_wireserver(stack))
        for target in targets:
            add_scram_users(target.admin)
        for target in targets:
            wait_until_authenticates(target)
        yield targets


def _params():
    for scenario in SECURITY_SCENARIOS.values():
        for client in scenario.clients:
            yield pytest.param(scenario.name, client, id=f"{scenario.name}-{client}")


@pytest.mark.parametrize("name,client", list(_params()))
def test_security_scenario(name, client, secure_targets, compat_record):
    scenario = SECURITY_SCENARIOS[name]
    kafka_target, wire_target = secure_targets
    kafka, wire = run_both(scenario, client, kafka_target, wire_target)
    record_and_compare(
        compat_record,
        scenario,
        client,
        kafka,
        wire,
        known_difference(name, client, SECURITY_DIFFERENCES),
    )
