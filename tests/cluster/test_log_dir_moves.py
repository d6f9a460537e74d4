"""Moving a replica between the log dirs of one broker of a real 3-broker cluster, with Kafka's
``kafka-reassign-partitions`` (a plan naming ``log_dirs``): broker 2, which leads the partition
and has two log dirs, moves it from one to the other under acks=all load from an idempotent
producer; the followers keep replicating, no acknowledged record is lost or duplicated, and the
old dir keeps nothing of the partition."""

from __future__ import annotations

import json
import os

import pytest

from tests.cluster.reassignment import LoadProducer, create_topic, read_all, reassign_tool
from wireserver.testing.cluster import cluster_metadata

from .conftest import Cluster, wait_for

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-log-dir-moves"


@pytest.fixture(scope="module")
def nodes(zookeeper):
    """Brokers 1-3; broker 2 with two log dirs."""
    cluster = Cluster(zookeeper, 3, CHROOT)
    first = cluster.brokers[2].data_dir
    cluster.brokers[2].overrides["log.dirs"] = f"{first},{first}-second"
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


def test_the_leader_moves_its_replica_to_its_other_log_dir_under_load(nodes, reference, tmp_path):
    topic = "dir-moved"
    create_topic(nodes.bootstrap, topic, [2, 1, 3])
    dirs = nodes.brokers[2].overrides["log.dirs"].split(",")
    (first,) = [d for d in dirs if os.path.isdir(os.path.join(d, f"{topic}-0"))]
    (second,) = [d for d in dirs if d != first]
    load = LoadProducer(nodes.bootstrap, topic)
    load.start()
    wait_for(lambda: len(load.acked) >= 500, 60, what="500 records acknowledged")
    plan = tmp_path / "plan.json"
    entry = {"topic": topic, "partition": 0, "replicas": [2, 1, 3]}
    entry["log_dirs"] = [second, "any", "any"]
    plan.write_text(json.dumps({"version": 1, "partitions": [entry]}))
    out = reassign_tool(
        reference, nodes.bootstrap, "--execute", "--reassignment-json-file", str(plan)
    )
    assert f"Successfully started moving log directory to {second} for replica {topic}-0" in out
    acked_before = len(load.acked)
    done = f"Reassignment of replica {topic}-0-2 completed successfully."
    wait_for(
        lambda: (
            done
            in reassign_tool(
                reference, nodes.bootstrap, "--verify", "--reassignment-json-file", str(plan)
            )
        ),
        60,
        interval=0.5,
        what="--verify to report the move complete",
    )
    wait_for(lambda: len(load.acked) > acked_before + 300, 30, what="writes after the move")
    load.stopping.set()
    assert load.done.wait(60)
    assert load.errors == []
    assert os.path.isdir(os.path.join(second, f"{topic}-0"))
    wait_for(
        lambda: not [n for n in os.listdir(first) if n.startswith(f"{topic}-0")],
        10,
        what="the old log dir emptied",
    )
    leader, _, replicas, isr = cluster_metadata(nodes.bootstrap, topic)[2][0]
    assert leader == 2 and sorted(isr) == [1, 2, 3], (leader, replicas, isr)
    values = read_all(nodes.bootstrap, topic, len(load.acked))
    assert values == sorted(set(values)), "a record read twice or out of order"
    assert set(load.acked) <= set(values)
