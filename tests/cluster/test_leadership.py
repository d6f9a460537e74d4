"""Controller failover and unclean leader election on a 3-broker cluster."""

from __future__ import annotations

import re

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import Cluster, wait_for
from wireserver.testing.cluster import cluster_metadata as metadata

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, "/wireserver-leadership").start()
    yield nodes
    nodes.close()


def test_controller_moves_when_it_dies(cluster):
    any_broker = next(iter(cluster.brokers.values())).bootstrap_servers
    controller = wait_for(
        lambda: metadata(any_broker, "none")[0] in (1, 2, 3) and metadata(any_broker, "none")[0],
        10,
        what="a controller",
    )
    cluster.brokers[controller].kill()
    survivor = next(b for b in cluster.brokers.values() if b.running)
    new = wait_for(
        lambda: (
            (c := metadata(survivor.bootstrap_servers, "none")[0]) not in (-1, controller) and c
        ),
        30,
        what="a new controller",
    )
    assert new != controller
    # The new controller does its job: a topic created now gets leaders.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("after-controller", 2, 2)])["after-controller"].result(30)
    # CreateTopics answers once the broker that took it (the controller) sees the leaders;
    # the survivor's view may lag behind it by an UpdateMetadata, as with Kafka.
    _, brokers, partitions = wait_for(
        lambda: (
            (m := metadata(survivor.bootstrap_servers, "after-controller"))[2]
            and len(m[2]) == 2
            and all(p[0] != -1 for p in m[2].values())
            and m
        ),
        30,
        what="the survivor to see both leaders",
    )
    assert controller not in brokers
    assert all(p[0] in brokers for p in partitions.values())
    # ... and it still elects leaders when a broker fails: the leader of a partition (not
    # the new controller itself) dies and the controller hands the partition to the other
    # replica, with a new leader epoch.
    wait_for(
        lambda: all(
            sorted(p[3]) == sorted(p[2])
            for p in metadata(survivor.bootstrap_servers, "after-controller")[2].values()
        ),
        30,
        what="both replicas in sync",
    )
    _, _, partitions = metadata(survivor.bootstrap_servers, "after-controller")
    partition, (leader, epoch, replicas, _) = next(
        (p, state) for p, state in sorted(partitions.items()) if state[0] != new
    )
    cluster.brokers[leader].kill()
    (other,) = [r for r in replicas if r != leader]
    assert other == new
    moved = wait_for(
        lambda: (
            (
                p := metadata(cluster.brokers[new].bootstrap_servers, "after-controller")[2][
                    partition
                ]
            )[0]
            == new
            and p
        ),
        30,
        what="the new controller to elect a leader",
    )
    assert moved[1] > epoch and moved[3] == [new]
    # The new controller logged both decisions as Kafka's partition state machine words them.
    log = cluster.brokers[new].log_text()
    assert re.search(
        rf"\[Controller id={new}\] {new} successfully elected as the controller\. Epoch "
        r"incremented to \d+ and epoch zk version is now \d+",
        log,
    )
    assert re.search(
        rf"\[Controller id={new}\] Newly added brokers: [\d,]*, deleted brokers: [\d,]*, "
        r"bounced brokers: [\d,]*, all live brokers: [\d,]+$",
        log,
        re.M,
    )
    state = r"with state LeaderAndIsr\(leader=\d+, leaderEpoch=0, isr=List\([\d, ]+\), "
    assert re.search(
        rf"\[Controller id={new} epoch=\d+\] Changed partition after-controller-0 from "
        rf"NewPartition to OnlinePartition {state}leaderRecoveryState=RECOVERED, partitionEpoch=0\)",
        log,
    )
    assert re.search(
        rf"\[Controller id={new} epoch=\d+\] Changed partition after-controller-{partition} "
        rf"from OfflinePartition to OnlinePartition with state LeaderAndIsr\(leader={new}, "
        rf"leaderEpoch={moved[1]}, isr=List\({new}\), leaderRecoveryState=RECOVERED, "
        r"partitionEpoch=\d+\)",
        log,
    )
    cluster.brokers[controller].start()
    cluster.brokers[leader].start()
    wait_for(
        lambda: len(metadata(survivor.bootstrap_servers, "none")[1]) == 3,
        30,
        what="the brokers to register again",
    )


def test_unclean_leader_election(cluster):
    # Every broker up, whatever the test before left behind (a failure there skips its restarts).
    for broker in cluster.brokers.values():
        if not broker.running:
            broker.start()
    wait_for(
        lambda: len(metadata(cluster.brokers[1].bootstrap_servers, "none")[1]) == 3,
        30,
        what="three live brokers",
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = "unclean"
    admin.create_topics([NewTopic(topic, 1, 2, config={"unclean.leader.election.enable": "true"})])[
        topic
    ].result(30)
    any_broker = next(iter(cluster.brokers.values())).bootstrap_servers
    # CreateTopics answers once the receiving broker sees a leader; another broker's view may
    # lag behind it (leader -1) on a loaded machine.
    leader, _, replicas, _ = wait_for(
        lambda: (
            (p := metadata(any_broker, topic)[2].get(0))
            and p[0] in p[2]
            and sorted(p[3]) == sorted(p[2])
            and p
        ),
        30,
        what="a leader and a full ISR",
    )
    follower = next(r for r in replicas if r != leader)
    observer = next(b for i, b in cluster.brokers.items() if i not in replicas)
    # The follower dies first and leaves the ISR; then the leader dies: offline.
    cluster.brokers[follower].kill()
    wait_for(
        lambda: metadata(observer.bootstrap_servers, topic)[2][0][3] == [leader],
        30,
        what="the ISR to shrink",
    )
    cluster.brokers[leader].kill()
    wait_for(
        lambda: metadata(observer.bootstrap_servers, topic)[2][0][0] == -1,
        30,
        what="the partition to go offline",
    )
    # The out-of-sync follower returns and, unclean election being on, leads.
    cluster.brokers[follower].start()
    got = wait_for(
        lambda: (p := metadata(observer.bootstrap_servers, topic)[2][0])[0] == follower and p,
        30,
        what="the unclean election",
    )
    assert got[3] == [follower]
    # In the controller's words: no leader while both were down, then the unclean election.
    logs = "\n".join(broker.log_text() for broker in cluster.brokers.values())
    assert re.search(
        r"ERROR .*\[Controller id=\d+ epoch=\d+\] Controller \d+ epoch \d+ failed to change "
        r"state for partition unclean-0 from OfflinePartition to OnlinePartition: Failed to "
        r"elect leader for partition unclean-0 under strategy "
        r"OfflinePartitionLeaderElectionStrategy\(true\)",
        logs,
    )
    assert re.search(
        r"WARNING .*\[Controller id=\d+ epoch=\d+\] No broker in ISR is alive for unclean-0\. "
        rf"Elect leader {follower} from live brokers {follower}\. There's potential data loss\.",
        logs,
    )
    cluster.brokers[leader].start()
    wait_for(
        lambda: sorted(metadata(observer.bootstrap_servers, topic)[2][0][3]) == sorted(replicas),
        30,
        what="the old leader to rejoin as follower",
    )
