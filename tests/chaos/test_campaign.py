"""The fault campaign's short variant (issue #17; the long one is ``scripts/chaos``): a
3-broker cluster with ZooKeeper, each in a network namespace of its own, under continuous
idempotent, transactional and group load, meets every fault kind once (partitions both ways and
one way, packet loss, pauses of a leader, the controller and ZooKeeper, kill -9 alone and with a
pause, a full disk), and the checker finds nothing the guarantees forbid."""

from __future__ import annotations

import os

import pytest

from chaos.campaign import FAULTS, Campaign, Result, format_table
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


def test_duplicates_are_explained_by_their_fault_window_and_the_producer_log(tmp_path):
    """CI keeps only a failure's text: when the checker finds duplicates, the events name the
    fault windows their acknowledgements fell in and quote what the producer logged of
    sequence errors and epoch bumps."""
    out = str(tmp_path / "wireserver-j7.jsonl")
    with open(out + ".stderr", "w") as stderr:
        stderr.write("[t] WARN Connection to node 3 could not be established\n")
        stderr.write(
            "[t] WARN Got error produce response ... Error: OUT_OF_ORDER_SEQUENCE_NUMBER\n"
        )
        stderr.write("[t] INFO ProducerId set to 1000 with epoch 1 (TransactionManager)\n")
    campaign = Campaign.__new__(Campaign)
    campaign.result = Result("wireserver", 1, False)
    campaign.result.windows = [("kill-leader", 100.0, 110.0), ("pause-zk", 110.0, 120.0)]
    campaign.workloads = [("java", out, None), ("group", str(tmp_path / "g1.jsonl"), None)]
    history = [
        {"k": "ack", "v": "7.1", "p": 1, "o": 5, "t": 105.0},
        {"k": "ack", "v": "7.2", "p": 1, "o": 6, "t": 111.0},
        {"k": "ack", "v": "7.3", "p": 1, "o": 7, "t": 112.0},
    ]
    campaign._explain_duplicates(
        [history], ["7.1 at 1/5, 1/9", "7.2 at 1/6, 1/10", "7.3 at 1/7, 1/11", "7.4 at 1/8, 1/12"]
    )
    events = campaign.result.events
    assert events[0].endswith(
        "duplicates acknowledged in: kill-leader 1, pause-zk 2, unacknowledged 1"
    )
    assert [e.split(": ", 1)[0] for e in events[1:]] == ["wireserver-j7.jsonl"] * 2
    assert "OUT_OF_ORDER_SEQUENCE_NUMBER" in events[1] and "epoch 1" in events[2]
