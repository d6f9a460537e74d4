"""Kafka 4.4's ``kafka-features`` tool against a real broker: describe, downgrade, upgrade and
disable print what they print against Kafka 4.4 for the features wireserver has."""

from __future__ import annotations

import re

import pytest

from compat_tests.reference import require_tools, run_tool
from tests.apis.conftest import RunningBroker

ROW = re.compile(
    r"Feature: (\S+)\s+SupportedMinVersion: (\S+)\s+SupportedMaxVersion: (\S+)\s+"
    r"FinalizedVersionLevel: (\S+)\s+Epoch: (\S+)"
)


@pytest.fixture(scope="module", autouse=True)
def kafka_tools():
    require_tools()


@pytest.fixture
def broker(tmp_path):
    running = RunningBroker(tmp_path)
    yield running
    running.stop()


def features(bootstrap: str, *args: str):
    return run_tool("kafka-features", ["--bootstrap-server", bootstrap, *args], timeout=60)


def describe(bootstrap: str) -> list[tuple[str, ...]]:
    done = features(bootstrap, "describe")
    assert done.returncode == 0, done.stderr
    return ROW.findall(done.stdout)


def test_describe_downgrade_upgrade_disable(broker):
    assert describe(broker.bootstrap) == [
        ("group.version", "0", "1", "1", "0"),
        ("share.version", "0", "1", "1", "0"),
        ("streams.version", "0", "1", "1", "0"),
        ("transaction.version", "0", "2", "2", "0"),
    ]
    done = features(broker.bootstrap, "downgrade", "--feature", "transaction.version=1")
    assert (done.returncode, done.stdout) == (0, "transaction.version was downgraded to 1.\n")
    done = features(broker.bootstrap, "upgrade", "--feature", "transaction.version=9")
    assert done.returncode == 1
    assert done.stdout == (
        "Could not upgrade transaction.version to 9. The update failed for all features since "
        "the following feature had an error: Invalid update version 9 for feature "
        "transaction.version. Local controller 1 only supports versions 0-2\n"
    )
    assert done.stderr.endswith("1 out of 1 operation(s) failed.\n")
    done = features(broker.bootstrap, "disable", "--feature", "group.version", "--dry-run")
    assert (done.returncode, done.stdout) == (0, "group.version can be disabled.\n")
    done = features(broker.bootstrap, "upgrade", "--feature", "transaction.version=2")
    assert (done.returncode, done.stdout) == (0, "transaction.version was upgraded to 2.\n")
    assert describe(broker.bootstrap) == [
        ("group.version", "0", "1", "1", "2"),
        ("share.version", "0", "1", "1", "2"),
        ("streams.version", "0", "1", "1", "2"),
        ("transaction.version", "0", "2", "2", "2"),
    ]
