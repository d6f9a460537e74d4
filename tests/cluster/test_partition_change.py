"""Kafka 4.4's rules for a partition whose replica set changes (``partition_change``), and the
controller's creation of a partition state, which must not bring back a deleted topic's znode
(against a real ZooKeeper); the cluster behaviour is in test_decommission.py and
test_reassignment.py."""

from __future__ import annotations

import pytest

from wireserver.cluster import zkdata as zd
from wireserver.cluster.partition_change import replica_change_state
from wireserver.cluster.zkdata import PartitionState

from .conftest import zk_client

LIVE = {1, 2, 3, 4}


def state(leader: int, isr: list[int], replicas: list[int], epoch: int = 4) -> PartitionState:
    return PartitionState(leader, epoch, list(isr), 7, 12, list(replicas))


def test_a_move_that_only_adds_replicas_keeps_the_leader_epoch():
    now = state(1, [1, 2], [1, 2])
    assert replica_change_state(now, [1, 2], [1, 2], LIVE) is now  # completing {1} -> {1, 2}


def test_removing_replicas_bumps_the_leader_epoch_once():
    # {1, 2} -> {1, 3} completing: RS = [1, 3, 2], all in the ISR
    new = replica_change_state(state(1, [1, 2, 3], [1, 3, 2]), [1, 3, 2], [1, 3], LIVE, 9)
    assert (new.leader, new.leader_epoch, new.isr, new.replicas) == (1, 5, [1, 3], [1, 3])
    assert new.controller_epoch == 9
    # a removed replica out of the ISR still counts: the replica set lost it
    new = replica_change_state(state(1, [1, 3], [1, 3, 2]), [1, 3, 2], [1, 3], LIVE)
    assert (new.leader, new.leader_epoch, new.isr, new.controller_epoch) == (1, 5, [1, 3], 7)


def test_a_new_leader_bumps_the_leader_epoch_once():
    # the leader is removed: the first target replica in the ISR leads
    new = replica_change_state(state(2, [2, 1, 3], [3, 1, 2]), [3, 1, 2], [3, 1], LIVE)
    assert (new.leader, new.leader_epoch, new.isr) == (3, 5, [1, 3])
    # a dead target replica does not lead
    new = replica_change_state(state(2, [2, 1, 3], [3, 1, 2]), [3, 1, 2], [3, 1], {1, 2})
    assert (new.leader, new.leader_epoch) == (1, 5)


def test_a_cancel_drops_the_added_replicas_and_bumps_once():
    # {1, 2} -> {1, 4} cancelled before 4 caught up, and after it joined the ISR
    new = replica_change_state(state(1, [1, 2], [1, 4, 2]), [1, 4, 2], [1, 2], LIVE)
    assert (new.leader, new.leader_epoch, new.isr) == (1, 5, [1, 2])
    new = replica_change_state(state(4, [1, 2, 4], [1, 4, 2]), [1, 4, 2], [1, 2], LIVE)
    assert (new.leader, new.leader_epoch, new.isr) == (1, 5, [1, 2])


def test_no_replica_left_to_lead_changes_nothing():
    assert replica_change_state(state(4, [4], [1, 4, 2]), [1, 4, 2], [1, 2], LIVE) is None
    assert replica_change_state(state(1, [1, 3], [1, 3]), [1, 3], [1, 3], {2}) is None


def test_an_isr_shrink_alone_keeps_the_leader_epoch():
    # a replica no longer assigned still in the ISR (Kafka 4.4 bumps for no ISR shrink)
    new = replica_change_state(state(1, [1, 2, 5], [1, 2]), [1, 2], [1, 2], LIVE)
    assert (new.leader, new.leader_epoch, new.isr) == (1, 4, [1, 2])


CHROOT = "/wireserver-partition-change"


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def test_a_partition_state_is_created_only_under_an_existing_topic(zk):
    topic = "gone"
    data = state(1, [1], [1]).encode()
    assert zd.create_partition_state(zk, topic, 0, data) is False
    assert zk.exists(zd.topic_path(topic)) is None
    zk.create(zd.topic_path(topic), b"{}", makepath=True)
    assert zd.create_partition_state(zk, topic, 0, data) is True
    assert zd.create_partition_state(zk, topic, 1, data) is True  # "partitions" is there
    assert zk.get(zd.state_path(topic, 1))[0] == data
