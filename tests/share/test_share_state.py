"""The share coordinator (``wireserver.share.state.ShareStateStore``) on real logs in a
temporary directory and a ``Clock``, on one node: state written, read back after a restart of
the store, and fenced as Kafka's share coordinator fences it (an older leader epoch, an older
state epoch); a read by a newer leader records its epoch, which fences the older leader's
later writes."""

from __future__ import annotations

import uuid

from tests.wireserver.runtime_host import Host, fired
from wireserver.coordinator_runtime import SHARE_STATE_TOPIC
from wireserver.protocol.errors import ErrorCode
from wireserver.share.manager import SharePartitionManager
from wireserver.share.state import PERSIST_TIMEOUT_MS, ShareStateStore

KEY = ("group", uuid.UUID("6f1c6a4e-0d38-4a85-8d42-1f0e0cf5a9b1"), 0)
SETTINGS = {
    "share.coordinator.state.topic.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "1",
}


def store_on(host: Host) -> ShareStateStore:
    host.node_id = 1

    def create_topic(name, partitions, replication, configs):
        host.logs.create_topic(name, partitions, configs)
        for index in range(partitions):
            host.replicas.partition(name, index)
        return None

    store = ShareStateStore(host, create_topic, host.clock)
    store.start()
    return store


def manager_on(host: Host, store: ShareStateStore) -> SharePartitionManager:
    """A partition leader's manager of share-partitions whose every topic has ``KEY``'s id."""
    return SharePartitionManager(
        host.clock,
        lambda group, name: None,
        lambda key: None,
        lambda: 10,
        store,
        lambda topic: KEY[1],
        lambda topic, index: (None, 0),
    )


def test_writes_are_fenced_by_leader_and_state_epoch_and_read_back(tmp_path):
    host = Host(tmp_path, clustered=False, **SETTINGS)
    store = store_on(host)
    assert fired(store.read_state(KEY, 0)) == [(None, None)]  # nothing yet
    batches = [(10, 11, 2, 1), (12, 12, 0, 2)]
    assert fired(store.write_state(KEY, 0, 3, 10, batches)) == [ErrorCode.NONE]
    # a leader before the one that wrote last
    assert fired(store.write_state(KEY, 0, 2, 12, [])) == [ErrorCode.FENCED_LEADER_EPOCH]
    # a reset (a newer state epoch), then the leader that read the state before it
    assert fired(store.write_state(KEY, 1, -1, 20, [])) == [ErrorCode.NONE]
    assert fired(store.write_state(KEY, 0, 3, 12, [])) == [ErrorCode.FENCED_STATE_EPOCH]
    [(error, state)] = fired(store.read_state(KEY, 3))
    assert error is None and (state.start_offset, state.state_epoch) == (20, 1)

    # a newer leader's read records its epoch: the older leader's writes are fenced from then
    assert fired(store.write_state(KEY, 1, 3, 21, [(21, 21, 0, 1)])) == [ErrorCode.NONE]
    [(error, state)] = fired(store.read_state(KEY, 4))
    assert error is None and state.leader_epoch == 4
    assert fired(store.write_state(KEY, 1, 3, 22, [])) == [ErrorCode.FENCED_LEADER_EPOCH]
    assert fired(store.read_state(KEY, 3)) == [(ErrorCode.FENCED_LEADER_EPOCH, None)]

    # what the log holds is what a new store loads
    again = store_on(host)
    again.runtime.load_all()
    assert list(again.states) == [KEY]
    loaded = again.read(KEY)
    assert (loaded.start_offset, loaded.batches, loaded.state_epoch, loaded.leader_epoch) == (
        21,
        [(21, 21, 0, 1)],
        1,
        4,
    )
    assert fired(again.delete_state(KEY)) == [ErrorCode.NONE]
    assert again.read(KEY) is None
    assert SHARE_STATE_TOPIC in host.logs.topics


def test_a_fenced_write_answers_its_waiters_and_the_share_partition_is_made_again(tmp_path):
    host = Host(tmp_path, clustered=False, **SETTINGS)
    store = store_on(host)
    manager = manager_on(host, store)
    found = manager.partition("group", "t", 0)
    found.changed()
    assert fired(manager.persisted(found)) == [ErrorCode.NONE]
    # reset under it (AlterShareGroupOffsets' new state epoch): its next write is fenced
    assert fired(store.write_state(KEY, 1, -1, 5, [])) == [ErrorCode.NONE]
    found.changed()
    assert fired(manager.persisted(found)) == [ErrorCode.FENCED_STATE_EPOCH]
    again = manager.partition("group", "t", 0)
    assert again is not found and (again.start_offset, again.state_epoch) == (5, 1)


def test_state_whose_coordinator_cannot_be_reached_answers_its_error_to_deletion(tmp_path):
    """The deletion of a share group's state, which DeleteGroups waits for before it deletes
    the group, fires with the error that kept it from its coordinator: here the state topic's
    partitions have no leader (a cluster none of whose share coordinators is alive), so it is
    retried for the persister's 30 s and fires COORDINATOR_NOT_AVAILABLE."""
    host = Host(tmp_path, clustered=True, **SETTINGS)
    host.logs.create_topic(SHARE_STATE_TOPIC, 3, {})  # as the cluster node does from ZooKeeper
    host.cluster.topics[SHARE_STATE_TOPIC] = object()
    store = store_on(host)
    manager = manager_on(host, store)
    answer = fired(manager.delete_group_state("group", [("t", 0), ("t", 1)]))
    assert answer == []  # retried meanwhile
    host.clock.advance(PERSIST_TIMEOUT_MS / 1000 + 1)
    assert answer == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
