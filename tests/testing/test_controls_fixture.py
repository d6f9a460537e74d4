"""``kafka_controls`` as a project's tests see it, with kafka-python: a fault a test injects is
in force for that test and gone for the next, whether the broker is shared (thread or
subprocess mode) or fresh; a shared broker's controls are reset even when a test used
``kafka_broker.controls`` without the fixture; and a broker the plugin did not start has no
controls to give."""

from __future__ import annotations

import pytest

from tests.testing.userrun import run_user_tests
from wireserver.testing import EmbeddedBroker

CONTROLS_TESTS = """
import time

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import PolicyViolationError

HOUR_MS = 3_600_000


def create_topic(bootstrap, name):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics({name: {"num_partitions": 1, "replication_factor": 1}})
    finally:
        admin.close()


def test_faults_for_this_test(kafka_controls, kafka_bootstrap):
    kafka_controls.inject_error("CreateTopics", "POLICY_VIOLATION", count=None)
    kafka_controls.add_latency(20, api="Metadata")
    kafka_controls.advance_clock(HOUR_MS)
    with pytest.raises(PolicyViolationError):
        create_topic(kafka_bootstrap, "refused")
    assert kafka_controls.now_ms() > time.time() * 1000 + HOUR_MS / 2
    assert len(kafka_controls.active()) == 3  # all on as the test ends


def test_the_next_test_sees_none(kafka_controls, kafka_bootstrap):
    assert kafka_controls.active() == []
    assert kafka_controls.now_ms() < time.time() * 1000 + HOUR_MS / 2  # the clock is back
    create_topic(kafka_bootstrap, "allowed")


def test_listeners_left_down_without_the_fixture(kafka_broker):
    kafka_broker.controls.down()


def test_the_next_test_can_connect(kafka_broker, kafka_bootstrap):
    create_topic(kafka_bootstrap, "reachable")
    assert kafka_broker.controls.active() == []
"""


@pytest.mark.parametrize(
    "args",
    [("--wireserver-fresh=false",), ("--wireserver-mode=subprocess",), ()],
    ids=["thread-shared", "subprocess-shared", "thread-fresh"],
)
def test_no_fault_leaks_into_the_next_test(pytester, args):
    result = run_user_tests(pytester, CONTROLS_TESTS, *args)
    result.assert_outcomes(passed=4)


def test_a_broker_the_plugin_did_not_start_has_no_controls(pytester):
    with EmbeddedBroker() as running:
        result = run_user_tests(
            pytester,
            "def test_faults(kafka_controls):\n    pass\n",
            f"--kafka-bootstrap={running.bootstrap_servers}",
        )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*kafka_controls needs a wireserver broker the plugin starts*"])
