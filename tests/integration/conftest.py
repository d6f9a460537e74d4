"""Fixtures for the integration tests: real clients over real sockets against a real broker.

Under ``CI=true`` a missing prerequisite (kcat, a codec library) fails the test instead of
skipping it."""

from __future__ import annotations

import os
import re

import pytest

from wireserver.testing import EmbeddedBroker

CI = os.environ.get("CI", "").lower() == "true"
PARTITIONS = 3


def require(condition: object, reason: str) -> None:
    """Skip when a prerequisite is missing, but fail under CI=true."""
    if condition:
        return
    if CI:
        pytest.fail(f"prerequisite missing (CI=true never skips): {reason}")
    pytest.skip(reason)


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def broker():
    """One in-process broker for the integration session; topics it auto-creates get
    PARTITIONS partitions. Tests keep apart by topic name (the ``topic`` fixture)."""
    with EmbeddedBroker("thread", overrides={"num.partitions": PARTITIONS}) as running:
        yield running


@pytest.fixture
def topic(request) -> str:
    """A topic name unique to this test (and its parameters)."""
    name = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")
    return f"it-{name}"[:200]
