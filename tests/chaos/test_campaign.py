"""The fault campaign's short variant (issue #17; the long one is ``scripts/chaos``): a
3-broker cluster with ZooKeeper, each in a network namespace of its own, under continuous
idempotent, transactional and group load, meets every fault kind once (partitions both ways and
one way, packet loss, pauses of a leader, the controller and ZooKeeper, kill -9 alone and with a
pause, a full disk), and the checker finds nothing the guarantees forbid."""

from __future__ import annotations

import os

import pytest

from chaos.campaign import FAULTS, Campaign, format_table
from chaos.cluster import WireserverCluster
from chaos.netns import Network, missing_prerequisites
from wireserver.cluster.zookeeper import available as zookeeper_available

pytestmark = pytest.mark.integration


@pytest.fixture
def prerequisites():
    missing = missing_prerequisites()
    if not zookeeper_available():
        missing.append("ZooKeeper (apt-get install zookeeper)")
    if missing:
        message = "the fault campaign needs " + ", ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


def test_every_fault_once_loses_nothing(prerequisites, tmp_path):
    with Network("wst", "10.94.0") as network:
        target = WireserverCluster(network)
        try:
            target.start()
            result = Campaign(
                target,
                seed=17,
                duration=900,
                workdir=str(tmp_path),
                fault_seconds=(5.0, 7.0),
                quiet_seconds=(1.0, 2.0),
                max_faults=len(FAULTS),
            ).run()
        finally:
            target.save_logs(str(tmp_path / "logs"))
            target.close()
    table = format_table([result])
    print(table)
    assert sorted(result.faults) == sorted(FAULTS), table
    assert result.producers is not None and result.producers.acknowledged > 2000, table
    assert result.transactions is not None and result.transactions.committed > 20, table
    assert result.problems == [], table + "\n" + "\n".join(result.events)
