"""Kafka's ControlledShutdownPartitionLeaderElectionStrategy, as the stopping broker applies it
to each partition (``controller.controlled_shutdown_state``); the cluster behaviour is in
test_failures.py (rolling restart)."""

from wireserver.cluster.controller import controlled_shutdown_state
from wireserver.cluster.zkdata import PartitionState


def state(leader: int, isr: list[int], replicas=(1, 2, 3), epoch: int = 4) -> PartitionState:
    return PartitionState(leader, epoch, list(isr), 7, 12, list(replicas))


def test_leadership_goes_to_the_first_live_in_sync_replica_of_the_assignment():
    new = controlled_shutdown_state(state(1, [3, 1, 2], replicas=(1, 3, 2)), 1, {1, 2, 3})
    assert (new.leader, new.leader_epoch, new.isr) == (3, 5, [3, 2])


def test_dead_and_out_of_sync_replicas_are_passed_over():
    new = controlled_shutdown_state(state(1, [1, 3]), 1, {1, 2, 3})  # 2 is out of sync
    assert (new.leader, new.isr) == (3, [3])
    new = controlled_shutdown_state(state(1, [1, 2, 3]), 1, {1, 3})  # 2 is dead
    assert (new.leader, new.isr) == (3, [2, 3])


def test_no_other_live_in_sync_replica_leaves_the_partition_led_by_the_broker():
    assert controlled_shutdown_state(state(1, [1]), 1, {1, 2, 3}) is None
    assert controlled_shutdown_state(state(1, [1, 2]), 1, {1, 3}) is None


def test_a_follower_leaves_the_isr_without_a_new_leader_epoch():
    new = controlled_shutdown_state(state(2, [2, 1, 3]), 1, {1, 2, 3})
    assert (new.leader, new.leader_epoch, new.isr) == (2, 4, [2, 3])


def test_nothing_to_do_out_of_the_isr_or_without_a_live_leader():
    assert controlled_shutdown_state(state(2, [2, 3]), 1, {1, 2, 3}) is None
    assert controlled_shutdown_state(state(-1, [1]), 1, {1, 2, 3}) is None
    assert controlled_shutdown_state(state(2, [2, 1]), 1, {1, 3}) is None
