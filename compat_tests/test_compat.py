"""Every scenario × client against the reference Kafka and wireserver; observations must match.

A test runs the scenario against both targets at once (two threads; the brokers are separate
processes), then:

1. the Kafka observation must pass the scenario's own check (else the scenario is broken),
2. if (scenario, client) is a known difference, the observations must still differ,
3. otherwise wireserver's observation must equal Kafka's.

Pending work is a strict xfail that only a :class:`WireserverDiffers` satisfies: a scenario
that breaks against Kafka still fails, and one that starts passing fails as XPASS(strict).
"""

from __future__ import annotations

import concurrent.futures
import json
import traceback

import pytest

from compat_tests.clients import CLIENTS
from compat_tests import scenarios_groups, scenarios_txn  # noqa: F401 - they register scenarios
from compat_tests.scenarios import SCENARIOS, known_difference
from compat_tests.targets import KAFKA, WIRESERVER

pytestmark = pytest.mark.integration


class WireserverDiffers(AssertionError):
    """wireserver's observation is not Kafka's (the only failure a pending mark expects)."""


def _params():
    for scenario in SCENARIOS.values():
        for client in scenario.clients:
            reason = scenario.pending_reason(client)
            marks = [pytest.mark.xfail(strict=True, raises=WireserverDiffers, reason=reason)] \
                if reason else []
            yield pytest.param(scenario.name, client, marks=marks, id=f"{scenario.name}-{client}")


def run_once(scenario, client, bootstrap: str) -> dict:
    """{"status": "ok" | "check failed: ..." | "error: ...", "observation": ...}."""
    try:
        observation = json.loads(json.dumps(scenario.fn(bootstrap, client)))
    except Exception as exc:
        return {"status": f"error: {type(exc).__name__}: {exc}"[:300], "observation": None,
                "traceback": traceback.format_exc()}
    try:
        scenario.check(observation)
    except Exception as exc:  # an assertion, or a TypeError on a malformed observation
        return {"status": f"check failed: {exc!r}"[:300], "observation": observation}
    return {"status": "ok", "observation": observation}


def run_both(scenario, client, kafka_bootstrap: str, wireserver_bootstrap: str):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        kafka = pool.submit(run_once, scenario, client, kafka_bootstrap)
        wire = pool.submit(run_once, scenario, client, wireserver_bootstrap)
        return kafka.result(), wire.result()


@pytest.mark.parametrize("name,client_name", list(_params()))
def test_scenario(name, client_name, compat_targets, compat_record):
    scenario = SCENARIOS[name]
    client = CLIENTS[client_name]
    kafka_target = compat_targets.get(KAFKA, scenario.auto_create)
    wire_target = compat_targets.get(WIRESERVER, scenario.auto_create)
    if kafka_target.problem:
        pytest.fail(f"the reference cannot run this scenario: {kafka_target.problem}")

    kafka, wire = run_both(scenario, client, kafka_target.bootstrap, wire_target.bootstrap)
    same = kafka["observation"] == wire["observation"] and kafka["status"] == wire["status"]
    difference = known_difference(name, client_name)
    compat_record(scenario=name, client=client_name, kafka=kafka["status"],
                  wireserver=wire["status"], same=same, known_difference=difference,
                  pending=scenario.pending_reason(client_name),
                  kafka_observation=kafka["observation"],
                  wireserver_observation=wire["observation"])

    assert kafka["status"] == "ok", (
        f"the scenario is broken against Kafka itself: {kafka['status']}\n"
        f"{kafka.get('traceback', '')}observation: {kafka['observation']}")
    if difference:
        assert not same, f"listed as a known difference but now the same: {difference}"
        return
    if not same:
        raise WireserverDiffers(
            f"wireserver differs from Kafka in {name} with {client_name}\n"
            f"kafka:      {json.dumps(kafka['observation'], sort_keys=True)}\n"
            f"wireserver: {json.dumps(wire['observation'], sort_keys=True)}\n"
            f"wireserver status: {wire['status']}\n{wire.get('traceback', '')}")
