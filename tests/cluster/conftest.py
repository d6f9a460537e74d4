"""A real ZooKeeper (per test module) and real broker processes on 127.0.0.1."""

from __future__ import annotations

import os
import time

import pytest

from wireserver.cluster.zookeeper import ZooKeeperError, ZooKeeperServer, available
from wireserver.testing import EmbeddedBroker

CLUSTER_OVERRIDES = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "offsets.topic.replication.factor": "1",
    # Closing a cluster stops its brokers one by one; the last one's controlled shutdown finds
    # no other replica to hand its partitions to and retries: keep those pauses short.
    "controlled.shutdown.retry.backoff.ms": "300",
}


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


#: Clusters not yet closed, whose broker logs a failing test's report shows.
_OPEN_CLUSTERS: set["Cluster"] = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed cluster test carries the tail of every broker's log: a timeout alone rarely
    says which broker did what (the logs go when the cluster closes)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for cluster in list(_OPEN_CLUSTERS):
            for broker_id, broker in cluster.brokers.items():
                report.sections.append((f"broker {broker_id} log (last 60 lines)",
                                        "\n".join(broker.log_text().splitlines()[-60:])))


class Cluster:
    def __init__(self, zookeeper: ZooKeeperServer, count: int, chroot: str,
                 overrides: dict | None = None, **broker_options):
        """``broker_options`` go to every ``EmbeddedBroker`` (``sasl=``, ``users=``)."""
        _OPEN_CLUSTERS.add(self)
        self.zk_connect = zookeeper.connect + chroot
        self.brokers: dict[int, EmbeddedBroker] = {}
        for broker_id in range(1, count + 1):
            settings = dict(CLUSTER_OVERRIDES)
            settings.update({"broker.id": str(broker_id),
                             "zookeeper.connect": self.zk_connect})
            settings.update(overrides or {})
            self.brokers[broker_id] = EmbeddedBroker("subprocess", overrides=settings,
                                                     **broker_options)

    def start(self) -> "Cluster":
        for broker in self.brokers.values():
            broker.start()
        wait_for(self._every_broker_lists_all, timeout=60,
                 what="every broker's Metadata to list the whole cluster")
        return self

    def _every_broker_lists_all(self) -> bool:
        """Registrations reach the other brokers through ZooKeeper watches after each broker
        starts listening; a CreateTopics before then places replicas on fewer brokers (seen
        on a loaded machine as "only 2 broker(s) are registered")."""
        from kafka.protocol.metadata.metadata import MetadataRequest
        for broker in self.brokers.values():
            try:
                with broker.wire() as wire:
                    version = wire.version(MetadataRequest, 12)
                    response = wire.request(MetadataRequest(
                        version=version, topics=[], allow_auto_topic_creation=False))
            except ConnectionError:
                continue  # a listener the test wire cannot log in to (client certificates)
            if len(response.brokers) < len(self.brokers):
                return False
        return True

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers.values() if b.running)

    def close(self) -> None:
        _OPEN_CLUSTERS.discard(self)
        for broker in self.brokers.values():
            broker.close()


def zk_client(zookeeper: ZooKeeperServer, chroot: str):
    """A started kazoo client in ``chroot`` for a test to read znodes; ``yield from`` it in a
    fixture, which then stops it."""
    from kazoo.client import KazooClient
    client = KazooClient(hosts=zookeeper.connect + chroot)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")
