"""Replica placement matches Kafka's AdminUtils.assignReplicasToBrokers."""

import uuid

import pytest

from wireserver.cluster.placement import PlacementError, assign_replicas
from wireserver.cluster.topic_admin import new_partitions_assignment
from wireserver.cluster.zkdata import TopicAssignment


def test_rack_unaware_matches_kafkas_documented_example():
    # The example in AdminUtils' documentation: 5 brokers, 10 partitions, RF 3, start 0.
    got = assign_replicas(10, 3, {b: None for b in range(5)}, start_index=0)
    assert got == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_rack_aware_puts_each_replica_on_another_rack():
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    got = assign_replicas(12, 3, racks)
    for replicas in got.values():
        assert len({racks[b] for b in replicas}) == 3
        assert len(set(replicas)) == 3
    leaders = [r[0] for r in got.values()]
    assert sorted(leaders) == sorted(list(range(6)) * 2)


def test_added_partitions_continue_from_partition_zero_as_in_kafka():
    # Kafka's AddPartitionsTest.testReplicaPlacementPartialServers: brokers 0-3, partition 0
    # on [1, 2], two partitions added.
    brokers = {b: None for b in range(4)}
    existing = TopicAssignment("t", uuid.uuid4(), {0: [1, 2]})
    assert new_partitions_assignment(brokers, existing, 3) == {1: [2, 0], 2: [3, 1]}
    # testReplicaPlacementAllServers: partition 0 on [2, 3, 0, 1], grown to 7; the leaders.
    existing = TopicAssignment("t", uuid.uuid4(), {0: [2, 3, 0, 1]})
    added = new_partitions_assignment(brokers, existing, 7)
    assert [added[p][0] for p in range(1, 7)] == [3, 0, 1, 2, 3, 0]
    assert all(sorted(r) == [0, 1, 2, 3] for r in added.values())


def test_errors():
    with pytest.raises(PlacementError):
        assign_replicas(1, 4, {1: None, 2: None, 3: None})
    with pytest.raises(PlacementError):
        assign_replicas(1, 2, {1: "a", 2: None})
