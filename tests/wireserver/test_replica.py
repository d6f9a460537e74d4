"""The partition layer (``wireserver.replica``) on real partition logs in a temporary directory
and a Twisted ``Clock``: one node as a cluster of one, and a leader with followers."""

from __future__ import annotations

import pytest
from twisted.internet.task import Clock

from wireserver.config import BrokerConfig
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.records import RecordBatchBuilder
from wireserver.purgatory import Purgatory
from wireserver.replica.manager import ReplicaManager
from wireserver.replica.selector import RACK_AWARE_REPLICA_SELECTOR as SELECTOR
from wireserver.replica.selector import SELECTORS
from wireserver.storage.manager import LogManager
from wireserver.storage.validation import BatchError

TOPIC = "events"


def batch(n: int = 1, key: bytes | None = b"k") -> bytearray:
    builder = RecordBatchBuilder()
    for _ in range(n):
        builder.append(0, key, b"v")
    return builder.build()


class Setup:
    def __init__(self, tmp_path, local_leadership: bool, node_id: int = 1, **topic_config):
        self.clock = Clock()
        config = BrokerConfig.load(None, {"log.dirs": str(tmp_path), "node.id": str(node_id)})
        self.logs = LogManager([str(tmp_path)], config.topic_defaults(), self.now_ms)
        self.logs.load()
        self.logs.create_topic(
            TOPIC, 1, {k.replace("_", "."): str(v) for k, v in topic_config.items()}
        )
        self.purgatory = Purgatory(self.clock)
        self.flushed: list = []
        self.isr_writes: list = []
        self.replicas = ReplicaManager(
            node_id, self.logs, self.purgatory, self.now_ms, self.flushed.extend, local_leadership
        )
        self.replicas.isr_writer = lambda tp, isr: self.isr_writes.append((tp, isr)) or True
        self.replicas.live_brokers = lambda: {1, 2, 3}

    def now_ms(self) -> int:
        return int(self.clock.seconds() * 1000)

    @property
    def config(self):
        return self.logs.topics[TOPIC].config

    def append(self, acks: int = -1, records=None):
        return self.replicas.append_records(TOPIC, 0, records or batch(), acks, self.config)

    def status(self, last_offset: int):
        return self.replicas.replication_status(TOPIC, 0, last_offset)


def test_one_node_leads_every_partition_at_epoch_0_and_commits_on_write(tmp_path):
    node = Setup(tmp_path, local_leadership=True)
    assert node.replicas.check_leader(TOPIC, 0) == (None, 0)
    assert node.replicas.check_leader(TOPIC, 0, 1) == (ErrorCode.UNKNOWN_LEADER_EPOCH, 0)
    assert node.replicas.check_leader("missing", 0)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    result = node.append(acks=-1, records=batch(3))
    log = node.logs.get_log(TOPIC, 0)
    assert (result.base_offset, result.last_offset) == (0, 2)
    assert log.high_watermark == log.log_end_offset == 3
    assert node.status(2) == ErrorCode.NONE
    fired = []
    node.replicas.wait_for_replication([(TOPIC, 0, 2)], 1000).addCallback(fired.append)
    assert fired == [{(TOPIC, 0): ErrorCode.NONE}]  # at once: no purgatory wait


def test_one_node_acks_all_is_the_local_write_whatever_min_insync_replicas_says(tmp_path):
    node = Setup(tmp_path, local_leadership=True, min_insync_replicas=2)
    assert node.append(acks=-1).base_offset == 0


def test_a_bad_batch_fails_with_kafkas_code_and_writes_nothing(tmp_path):
    node = Setup(tmp_path, local_leadership=True, cleanup_policy="compact")
    with pytest.raises(BatchError) as refused:
        node.append(records=batch(2, key=None))
    assert refused.value.code == ErrorCode.INVALID_RECORD
    assert [index for index, _ in refused.value.record_errors] == [0, 1]
    corrupt = batch()
    corrupt[-1] ^= 0xFF
    with pytest.raises(BatchError) as refused:
        node.append(records=corrupt)
    assert refused.value.code == ErrorCode.CORRUPT_MESSAGE
    assert node.logs.get_log(TOPIC, 0).log_end_offset == 0


def test_a_cluster_partition_without_state_has_no_leader(tmp_path):
    node = Setup(tmp_path, local_leadership=False)
    node.replicas.topic_known = lambda name: True
    assert node.replicas.check_leader(TOPIC, 0) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)
    with pytest.raises(BatchError) as refused:
        node.append()
    assert refused.value.code == ErrorCode.LEADER_NOT_AVAILABLE


def test_the_high_watermark_follows_the_isr_and_acks_all_waits_for_it(tmp_path):
    node = Setup(tmp_path, local_leadership=False, min_insync_replicas=2)
    elected, resigned = [], []
    node.replicas.add_leadership_listener(
        TOPIC, lambda index, epoch: elected.append((index, epoch)), resigned.append
    )
    node.replicas.make_leader((TOPIC, 0), 5, [1, 2, 3], [1, 2, 3])
    assert elected == [(0, 5)]
    assert node.replicas.check_leader(TOPIC, 0, 4) == (ErrorCode.FENCED_LEADER_EPOCH, 5)
    result = node.append(acks=-1, records=batch(2))
    log = node.logs.get_log(TOPIC, 0)
    assert log.high_watermark == 0 and node.status(result.last_offset) is None
    fired = []
    node.replicas.wait_for_replication([(TOPIC, 0, result.last_offset)], 5000).addCallback(
        fired.append
    )
    node.replicas.follower_fetched((TOPIC, 0), 2, 2)
    assert log.high_watermark == 0 and fired == []  # broker 3 has not fetched yet
    node.replicas.follower_fetched((TOPIC, 0), 3, 1)
    assert log.high_watermark == 1 and fired == []
    node.replicas.follower_fetched((TOPIC, 0), 3, 2)
    assert log.high_watermark == 2
    assert fired == [{(TOPIC, 0): ErrorCode.NONE}]


def test_an_append_wakes_a_fetch_waiting_on_the_partition_once(tmp_path):
    """A fetch waits on the partition's "append" key and, woken without enough bytes, waits
    again at once: the same append does not wake it a second time, whether it moved the high
    watermark (one node) or not (followers yet to fetch)."""
    for local in (True, False):
        node = Setup(tmp_path / str(local), local_leadership=local)
        if not local:
            node.replicas.make_leader((TOPIC, 0), 1, [1, 2], [1, 2])
        wakes = []

        def wait() -> None:
            woken = node.purgatory.watch([("append", TOPIC, 0)], 30)
            woken.addCallback(lambda key: wakes.append(key) or wait())

        wait()
        node.append(acks=1)
        assert wakes == [("append", TOPIC, 0)]
        assert node.purgatory.waiting(("append", TOPIC, 0)) == 1


def test_acks_all_is_refused_below_min_insync_replicas_and_times_out_without_followers(tmp_path):
    node = Setup(tmp_path, local_leadership=False, min_insync_replicas=2)
    node.replicas.make_leader((TOPIC, 0), 1, [1], [1, 2])
    with pytest.raises(BatchError) as refused:
        node.append(acks=-1)
    assert refused.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert node.append(acks=1).base_offset == 0
    node.replicas.partition(TOPIC, 0).apply_state(1, 1, [1, 2], [1, 2])
    result = node.append(acks=-1)
    fired = []
    node.replicas.wait_for_replication([(TOPIC, 0, result.last_offset)], 300).addCallback(
        fired.append
    )
    node.clock.advance(0.31)
    assert fired == [{(TOPIC, 0): ErrorCode.REQUEST_TIMED_OUT}]


def test_a_caught_up_follower_joins_the_isr_and_a_silent_one_leaves_it(tmp_path):
    node = Setup(tmp_path, local_leadership=False)
    node.replicas.make_leader((TOPIC, 0), 1, [1, 2], [1, 2, 3])
    node.append(records=batch(2))
    node.replicas.follower_fetched((TOPIC, 0), 2, 2)
    node.replicas.follower_fetched((TOPIC, 0), 3, 1)
    assert node.isr_writes == []  # behind the high watermark (2)
    node.replicas.follower_fetched((TOPIC, 0), 3, 2)
    assert node.isr_writes == [((TOPIC, 0), [1, 2, 3])]
    partition = node.replicas.partition(TOPIC, 0)
    partition.apply_state(1, 1, [1, 2, 3], [1, 2, 3])
    node.clock.advance(10)
    node.replicas.follower_fetched((TOPIC, 0), 2, 2)
    assert partition.out_of_sync_replicas(5000) == [3]


RACKS = {1: "a", 2: "b", 3: "b", 4: "b"}


def test_the_leader_names_the_most_caught_up_in_sync_replica_of_the_clients_rack(tmp_path):
    node = Setup(tmp_path, local_leadership=False)
    node.replicas.make_leader((TOPIC, 0), 1, [1, 2, 3], [1, 2, 3, 4])
    node.append(acks=1, records=batch(4))
    node.replicas.follower_fetched((TOPIC, 0), 2, 3, 0)
    node.replicas.follower_fetched((TOPIC, 0), 3, 4, 0)
    node.replicas.follower_fetched((TOPIC, 0), 4, 4, 0)  # not in the ISR (yet)
    reachable = dict.fromkeys(RACKS, True)

    def preferred(rack: str, offset: int) -> int:
        return node.replicas.preferred_read_replica(
            TOPIC, 0, offset, rack, lambda b: (reachable[b], RACKS[b])
        )

    assert preferred("b", 2) == -1  # no replica.selector.class: the leader serves everyone
    node.replicas.replica_selector = SELECTORS[SELECTOR]
    assert preferred("b", 2) == 3  # the largest log end offset of rack b
    assert preferred("b", 4) == 3  # broker 2 lacks offset 4; broker 4 is not in the ISR
    assert preferred("a", 2) == -1  # the leader is in the client's rack
    assert preferred("c", 2) == -1  # no replica in rack c
    assert preferred("", 2) == -1  # a client without a rack
    reachable[3] = False  # no endpoint on the client's listener
    assert preferred("b", 2) == 2
    assert preferred("b", 4) == -1


def test_a_follower_serves_consumers_that_may_read_from_it(tmp_path):
    node = Setup(tmp_path, local_leadership=False)
    node.replicas.partition(TOPIC, 0).apply_state(2, 3, [2, 1], [2, 1])
    assert node.replicas.check_leader(TOPIC, 0, 3) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, 3)
    assert node.replicas.check_leader(TOPIC, 0, 3, leader_only=False) == (None, 3)
    assert node.replicas.check_leader(TOPIC, 0, 2, leader_only=False)[0] == (
        ErrorCode.FENCED_LEADER_EPOCH
    )
    node.replicas.partition(TOPIC, 0).apply_state(2, 3, [2, 3], [2, 3])  # not a replica here
    assert node.replicas.check_leader(TOPIC, 0, 3, leader_only=False)[0] == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    node.replicas.replica_selector = SELECTORS[SELECTOR]
    # Only a leader names a preferred read replica.
    assert node.replicas.preferred_read_replica(TOPIC, 0, 0, "a", lambda b: (True, "a")) == -1


def test_resigning_fences_appends_and_tells_the_listeners(tmp_path):
    node = Setup(tmp_path, local_leadership=False)
    resigned = []
    node.replicas.add_leadership_listener(TOPIC, lambda *_: None, resigned.append)
    node.replicas.make_leader((TOPIC, 0), 1, [1], [1])
    result = node.append(acks=-1)
    assert node.replicas.resign((TOPIC, 0)) and resigned == [0]
    assert node.status(result.last_offset) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(BatchError) as refused:
        node.append()
    assert refused.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_topic_made_again_gets_a_new_partition_and_the_old_log_lets_go(tmp_path):
    """``ReplicaManager.partition`` finds a log's partition through the log: a topic deleted
    and created again is a new partition (no leadership or high watermark carried over), and
    the deleted log no longer links to the forgotten one."""
    s = Setup(tmp_path, local_leadership=True)
    old = s.replicas.partition(TOPIC, 0)
    assert old is not None and s.replicas.partition(TOPIC, 0) is old
    old_log = old.log
    s.append()
    s.replicas.remove_topic(TOPIC)
    s.logs.delete_topic(TOPIC)
    assert old_log.replica is None and s.replicas.partition(TOPIC, 0) is None
    s.logs.create_topic(TOPIC, 1, {})
    new = s.replicas.partition(TOPIC, 0)
    assert new is not None and new is not old and new.log is not old_log
    assert new.log.replica is new and s.replicas.partitions[(TOPIC, 0)] is new
    assert new.log.high_watermark == 0 and new.is_leader
