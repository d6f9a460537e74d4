"""A real ZooKeeper (per test module) and real broker processes on 127.0.0.1."""

from __future__ import annotations

import os

import pytest

from compat_tests import reference as kafka_reference
from wireserver.cluster.zookeeper import ZooKeeperError, ZooKeeperServer, available
from wireserver.testing import wait_for  # noqa: F401 (the cluster tests import it from here)
from wireserver.testing.cluster import FAST_FAILOVER, LocalCluster

CLUSTER_OVERRIDES = {**FAST_FAILOVER, "offsets.topic.replication.factor": "1"}


@pytest.fixture(scope="module")
def zookeeper():
    if not available():
        if os.environ.get("CI") == "true":
            pytest.fail("ZooKeeper is not installed (scripts/test installs it)")
        pytest.skip("ZooKeeper is not installed (apt-get install zookeeper)")
    server = ZooKeeperServer()
    try:
        server.start()
    except ZooKeeperError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    yield server
    server.close()


@pytest.fixture(scope="module")
def reference():
    """Kafka's CLI tools (``reference.tool_command``): the test skips without them (fails
    under CI)."""
    kafka_reference.require_tools()
    return kafka_reference


#: Clusters not yet closed, whose broker logs a failing test's report shows.
_OPEN_CLUSTERS: set[Cluster] = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed cluster test carries the tail of every broker's log: a timeout alone rarely
    says which broker did what (the logs go when the cluster closes)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for cluster in list(_OPEN_CLUSTERS):
            for broker_id, broker in cluster.brokers.items():
                report.sections.append(
                    (
                        f"broker {broker_id} log (last 60 lines)",
                        "\n".join(broker.log_text().splitlines()[-60:]),
                    )
                )


class Cluster(LocalCluster):
    """A :class:`LocalCluster` under its own chroot of the module's ZooKeeper."""

    def __init__(
        self,
        zookeeper: ZooKeeperServer,
        count: int,
        chroot: str,
        overrides: dict | None = None,
        **broker_options,
    ):
        """``broker_options`` go to every ``EmbeddedBroker`` (``sasl=``, ``users=``)."""
        _OPEN_CLUSTERS.add(self)
        super().__init__(
            zookeeper.connect + chroot,
            count,
            {**CLUSTER_OVERRIDES, **(overrides or {})},
            **broker_options,
        )

    def close(self) -> None:
        _OPEN_CLUSTERS.discard(self)
        super().close()


def zk_client(zookeeper: ZooKeeperServer, chroot: str):
    """A started kazoo client in ``chroot`` for a test to read znodes; ``yield from`` it in a
    fixture, which then stops it."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper.connect + chroot)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()
