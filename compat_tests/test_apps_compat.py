"""Kafka's applications (compat_tests/scenarios_apps.py) against the reference Kafka and
wireserver; observations must match, as in test_compat.py.

Kafka Streams and Connect run against each single broker of ``compat_targets`` at once (two
threads). MirrorMaker 2 needs two clusters: the brokers with auto-create on are its sources,
those with auto-create off its targets. Its reference observation is Kafka -> Kafka; each
other direction is a row of the report with the direction as its client. All four run at once.

The ``-long`` variants run only with ``WIRESERVER_COMPAT_LONG=1`` (scripts/compat sets it).
"""

from __future__ import annotations

import concurrent.futures

import pytest

from compat_tests.applications import connect_classpath, env_flag, streams_classpath
from compat_tests.reference import must_not_skip
from compat_tests.scenarios import record_and_compare, run_both, run_once
from compat_tests.scenarios_apps import APP_SCENARIOS, LONG, MM2_DIRECTIONS
from compat_tests.targets import KAFKA, WIRESERVER

pytestmark = pytest.mark.integration

LONG_ENV = "WIRESERVER_COMPAT_LONG"


def _params():
    for scenario in APP_SCENARIOS.values():
        if scenario.name in LONG and not env_flag(LONG_ENV):
            continue
        for client in scenario.clients:
            yield pytest.param(scenario.name, client, id=f"{scenario.name}-{client}")


_POOL = concurrent.futures.ThreadPoolExecutor(1 + len(MM2_DIRECTIONS))
_MM2: dict[tuple[str, str], concurrent.futures.Future] = {}


def _mm2(name: str, direction: str, targets) -> concurrent.futures.Future:
    """The run of ``name`` in ``direction`` ("kafka->kafka" is the reference). The first call
    starts every direction at once in the background (one MirrorMaker 2 each), so the four
    take the wall time of one."""
    if (name, direction) not in _MM2:
        for each in ("kafka->kafka", *MM2_DIRECTIONS):
            source, target = each.split("->")
            pair = (targets.get(source, True).bootstrap, targets.get(target, False).bootstrap)
            _MM2[(name, each)] = _POOL.submit(run_once, APP_SCENARIOS[name], None, pair)
    return _MM2[(name, direction)]


@pytest.fixture(scope="module")
def app_jars() -> None:
    """Resolve the applications' jars and compile compat_tests/apps once; without Maven, the
    jars or javac the module skips, except under ``CI=true`` (fails)."""
    try:
        streams_classpath()
        connect_classpath()
    except (OSError, RuntimeError) as exc:
        if must_not_skip():
            pytest.fail(f"CI=true and Kafka's applications cannot run: {exc}")
        pytest.skip(f"Kafka's applications cannot run: {exc}")


@pytest.mark.parametrize("name,client_name", list(_params()))
def test_app_scenario(name, client_name, app_jars, compat_targets, compat_record):
    scenario = APP_SCENARIOS[name]
    if client_name in MM2_DIRECTIONS:
        kafka = _mm2(name, "kafka->kafka", compat_targets).result()
        wire = _mm2(name, client_name, compat_targets).result()
    else:
        kafka, wire = run_both(
            scenario,
            None,
            compat_targets.get(KAFKA).bootstrap,
            compat_targets.get(WIRESERVER).bootstrap,
        )
    record_and_compare(compat_record, scenario, client_name, kafka, wire, None)
