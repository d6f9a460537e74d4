"""Transactions without sockets: the state machine table, ``__transaction_state`` records, the
last stable offset and the ``.txnindex`` on temporary directories, and the coordinator (fencing,
markers, pending group offsets, timeouts, reload) on a fake clock."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.testing import MemoryReactorClock

from wireserver.broker import Broker
from wireserver.config import BrokerConfig
from wireserver.groups.coordinator import OffsetCommit
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.records import RecordBatchBuilder
from wireserver.storage.errors import InvalidProducerEpoch, TransactionCoordinatorFenced
from wireserver.storage.log import Log
from wireserver.storage.log_config import LogConfig
from wireserver.storage.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex
from wireserver.topics import create_topic
from wireserver.txn.records import (
    TxnLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from wireserver.txn.state import (
    ALLOWED,
    MAX_EPOCH,
    IllegalTransition,
    TransactionMetadata,
    TxnState,
)

E = ErrorCode
S = TxnState


# -- the state machine ------------------------------------------------------------------------

LEGAL = [
    (S.EMPTY, S.ONGOING),
    (S.ONGOING, S.ONGOING),
    (S.ONGOING, S.PREPARE_COMMIT),
    (S.ONGOING, S.PREPARE_ABORT),
    (S.PREPARE_COMMIT, S.COMPLETE_COMMIT),
    (S.PREPARE_ABORT, S.COMPLETE_ABORT),
    (S.COMPLETE_COMMIT, S.ONGOING),
    (S.COMPLETE_ABORT, S.EMPTY),
    (S.ONGOING, S.PREPARE_EPOCH_FENCE),
    (S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT),
    (S.COMPLETE_ABORT, S.DEAD),
    (S.EMPTY, S.DEAD),
]
ILLEGAL = [
    (S.EMPTY, S.PREPARE_COMMIT),
    (S.EMPTY, S.COMPLETE_COMMIT),
    (S.ONGOING, S.COMPLETE_COMMIT),
    (S.PREPARE_COMMIT, S.PREPARE_ABORT),
    (S.PREPARE_COMMIT, S.ONGOING),
    (S.PREPARE_ABORT, S.COMPLETE_COMMIT),
    (S.COMPLETE_COMMIT, S.PREPARE_COMMIT),
    (S.DEAD, S.EMPTY),
    (S.ONGOING, S.DEAD),
    (S.PREPARE_EPOCH_FENCE, S.PREPARE_COMMIT),
]


def txn(state=S.EMPTY) -> TransactionMetadata:
    return TransactionMetadata("t", 7, 0, 60_000, state)


@pytest.mark.parametrize("current,target", LEGAL)
def test_legal_transitions(current, target):
    meta = txn(current)
    meta.transition_to(target, 123)
    assert meta.state == target and meta.txn_last_update_timestamp == 123


@pytest.mark.parametrize("current,target", ILLEGAL)
def test_illegal_transitions_raise_and_change_nothing(current, target):
    meta = txn(current)
    with pytest.raises(IllegalTransition):
        meta.transition_to(target, 1)
    assert meta.state == current


def test_table_covers_every_state_and_ids_match_kafka():
    assert set(ALLOWED) == set(S)
    assert [s.id for s in S] == list(range(8))
    assert S.from_id(4) == S.COMPLETE_COMMIT and S.from_name("PrepareAbort") == S.PREPARE_ABORT


# -- __transaction_state records -------------------------------------------------------------


def test_key_layout_and_partition_like_kafka():
    assert encode_key("my-txn") == b"\x00\x00\x00\x06my-txn"
    assert decode_key(encode_key("ü-id")) == "ü-id"
    # Java: "hello".hashCode() == 99162322.
    assert partition_for("hello", 50) == 99162322 % 50


@given(
    pid=st.integers(0, 2**63 - 1),
    epoch=st.integers(0, 2**15 - 1),
    timeout=st.integers(1, 2**31 - 1),
    status=st.integers(0, 7),
    partitions=st.one_of(
        st.none(),
        st.lists(
            st.tuples(st.text(min_size=1, max_size=20), st.lists(st.integers(0, 1000), max_size=5)),
            max_size=4,
        ),
    ),
    times=st.tuples(st.integers(-1, 2**62), st.integers(-1, 2**62)),
)
def test_value_round_trip(pid, epoch, timeout, status, partitions, times):
    value = TxnLogValue(pid, epoch, timeout, status, partitions, *times)
    assert decode_value(encode_value(value)) == value


@given(
    previous=st.integers(-1, 2**63 - 1),
    following=st.integers(-1, 2**63 - 1),
    partitions=st.lists(
        st.tuples(st.text(min_size=1, max_size=20), st.lists(st.integers(0, 1000), max_size=5)),
        max_size=4,
    ),
)
def test_protocol_v2_values_are_version_1_with_their_tags(previous, following, partitions):
    value = TxnLogValue(5, 7, 60000, 4, partitions, 10, 9, previous, following, 2)
    data = encode_value(value)
    assert data[:2] == b"\x00\x01"
    assert decode_value(data) == value


def test_reads_flexible_version_1_with_tags():
    import struct

    body = struct.pack(">hqhib", 1, 42, 3, 60000, 1)
    body += bytes([2])  # compact array of one partition schema
    body += bytes([2]) + b"t" + bytes([3]) + struct.pack(">ii", 0, 5) + bytes([0])
    body += struct.pack(">qq", 1000, 900)
    body += bytes([1, 0, 8]) + struct.pack(">q", 41)  # tag 0 PreviousProducerId
    value = decode_value(body)
    assert (value.producer_id, value.producer_epoch, value.status) == (42, 3, 1)
    assert value.partitions == [("t", [0, 5])]
    assert (value.last_update_timestamp, value.start_timestamp) == (1000, 900)
    assert value.previous_producer_id == 41


# -- storage: LSO and the aborted index ----------------------------------------------------------


def open_log(path, recover=False, **config) -> Log:
    return Log.open(
        str(path), LogConfig.from_values({}, config), now_ms=lambda: 1000, recover=recover
    )


def txn_batch(pid: int, epoch: int, seq: int, n: int = 2) -> bytearray:
    builder = RecordBatchBuilder(
        producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True
    )
    for i in range(n):
        builder.append(1000, None, b"v%d" % i)
    return builder.build()


def plain_batch() -> bytearray:
    builder = RecordBatchBuilder()
    builder.append(1000, None, b"p")
    return builder.build()


def test_aborts_are_found_across_segments_whose_indexes_are_empty(tmp_path):
    # A transaction open over many rolls: its abort marker, and so its index entry, lands
    # segments after its first records; the segments between index nothing.
    log = open_log(tmp_path / "t-0", **{"internal.segment.bytes": "300"})
    log.append(txn_batch(1, 0, 0), 0)  # 0-1 (pid 1)
    for _ in range(24):
        log.append(plain_batch(), 0)
    _, first = log.append_marker(1, 0, commit=False)
    log.append(txn_batch(2, 0, 0), 0)  # pid 2
    log.append_marker(2, 0, commit=False)
    log.high_watermark = log.log_end_offset
    segments = log.segments
    assert len(segments) > 5
    assert [bool(s.txn_index.entries) for s in segments].count(True) <= 2
    assert not segments[1].txn_index.entries
    end = log.log_end_offset
    assert [t.producer_id for t in log.collect_aborted(0, end)] == [1, 2]
    assert [t.producer_id for t in log.collect_aborted(2, end)] == [1, 2]
    assert [t.producer_id for t in log.collect_aborted(first.last_offset + 1, end)] == [2]


def test_lso_follows_open_transactions_and_aborts_are_indexed(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(plain_batch(), 0)  # 0
    log.append(txn_batch(1, 0, 0), 0)  # 1-2 (pid 1)
    log.append(txn_batch(2, 0, 0), 0)  # 3-4 (pid 2)
    log.high_watermark = log.log_end_offset
    assert log.last_stable_offset == 1
    _, done = log.append_marker(1, 0, commit=True)  # 5
    assert done.first_offset == 1 and not done.is_aborted
    log.high_watermark = log.log_end_offset
    assert log.last_stable_offset == 3
    _, aborted = log.append_marker(2, 0, commit=False)  # 6
    log.high_watermark = log.log_end_offset
    assert aborted.is_aborted and log.last_stable_offset == 7 == log.high_watermark
    assert log.collect_aborted(0, 7) == [AbortedTxn(2, 3, 6, 7)]
    assert log.collect_aborted(5, 7) == [AbortedTxn(2, 3, 6, 7)]
    assert log.collect_aborted(0, 3) == []
    path = os.path.join(str(tmp_path / "t-0"), "00000000000000000000.txnindex")
    assert os.path.getsize(path) == ENTRY_SIZE == 34
    log.append_marker(2, 1, commit=True)  # a bumped epoch (a fenced producer)
    with pytest.raises(InvalidProducerEpoch):
        log.append_marker(2, 0, commit=True)
    log.close()


def test_open_transaction_and_index_survive_restart_and_rebuild(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory, **{"internal.segment.bytes": 300})
    log.append(txn_batch(1, 0, 0), 0)
    log.append_marker(1, 0, commit=False)
    for _ in range(4):
        log.append(plain_batch(), 0)
    log.append(txn_batch(2, 0, 0), 0)  # left open
    first_open = log.log_end_offset - 2
    log.high_watermark = log.log_end_offset
    log.close()
    again = open_log(directory, **{"internal.segment.bytes": 300})
    again.high_watermark = again.log_end_offset
    assert again.last_stable_offset == first_open
    assert again.collect_aborted(0, again.log_end_offset) == [AbortedTxn(1, 0, 2, 3)]
    again.close()
    # Lose every index and snapshot: recovery rebuilds the .txnindex from the markers.
    for name in os.listdir(directory):
        if name.endswith((".txnindex", ".snapshot", ".index", ".timeindex")):
            os.unlink(directory / name)
    rebuilt = open_log(directory, recover=True, **{"internal.segment.bytes": 300})
    rebuilt.high_watermark = rebuilt.log_end_offset
    assert rebuilt.collect_aborted(0, rebuilt.log_end_offset) == [AbortedTxn(1, 0, 2, 3)]
    assert rebuilt.last_stable_offset == first_open
    rebuilt.close()


def test_markers_from_an_older_coordinator_are_fenced(tmp_path):
    """Kafka's ``checkCoordinatorEpoch``: after a marker at coordinator epoch 3, one at 2 is a
    zombie coordinator's; the epoch is kept across a restart and taken from replicated markers."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append(txn_batch(1, 0, 0), 0)
    log.append_marker(1, 0, commit=True, coordinator_epoch=3)
    log.append(txn_batch(1, 0, 2), 0)
    with pytest.raises(TransactionCoordinatorFenced):
        log.append_marker(1, 0, commit=False, coordinator_epoch=2)
    log.close()
    again = open_log(directory, recover=True)
    with pytest.raises(TransactionCoordinatorFenced):
        again.append_marker(1, 0, commit=False, coordinator_epoch=2)
    again.append_marker(1, 0, commit=False, coordinator_epoch=4)
    # A follower copying the leader's log learns the epoch from the marker's record.
    follower = open_log(tmp_path / "f-0")
    data = again.read(0, 1 << 20, upper_bound=again.log_end_offset).data
    follower.append_as_follower(bytearray(data))
    with pytest.raises(TransactionCoordinatorFenced):
        follower.append_marker(1, 0, commit=True, coordinator_epoch=3)
    again.close()
    follower.close()


def test_truncation_drops_index_entries(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(txn_batch(1, 0, 0), 0)
    log.append_marker(1, 0, commit=False)
    log.truncate_to(2)
    assert log.collect_aborted(0, 10) == []
    assert log.last_stable_offset == 0  # the transaction is open again
    log.close()


def test_txn_index_torn_tail_is_cut(tmp_path):
    path = str(tmp_path / "x.txnindex")
    index = TransactionIndex(path)
    index.append(AbortedTxn(1, 0, 5, 6))
    assert not index.append(AbortedTxn(1, 0, 5, 6))  # idempotent on replay
    index.close()
    with open(path, "ab") as f:
        f.write(b"\x00" * 10)
    assert TransactionIndex(path).entries == [AbortedTxn(1, 0, 5, 6)]
    assert os.path.getsize(path) == ENTRY_SIZE


# -- the coordinator on a fake clock -----------------------------------------------------------


def make_broker(path) -> Broker:
    values = {
        "log.dirs": str(path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.num.partitions": "3",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    }
    broker = Broker(BrokerConfig.load(None, values), MemoryReactorClock())
    broker.start()
    broker.reactor.advance(0)  # the reactor's first turn, where the groups load
    return broker


def close(broker: Broker) -> None:
    broker.txn.stop()
    broker.groups.stop()
    broker.logs.close()


@pytest.fixture
def broker(tmp_path):
    instance = make_broker(tmp_path)
    create_topic(instance, "t", 2, 1, {})
    yield instance
    close(instance)


def produce_txn(broker, pid, epoch, seq=0, partition=0):
    assert broker.txn.check_produce(pid, epoch, "t", partition) is None
    broker.logs.get_log("t", partition).append(txn_batch(pid, epoch, seq), 0)


def test_init_add_commit_writes_markers_and_states(broker):
    coord = broker.txn
    error, pid, epoch = coord.init_producer_id("a", 60_000)
    assert (error, epoch) == (E.NONE, 0)
    assert coord.check_produce(pid, epoch, "t", 0) == E.INVALID_TXN_STATE
    assert coord.add_partitions("a", pid, epoch, [("t", 0), ("t", 1)]) == {
        ("t", 0): E.NONE,
        ("t", 1): E.NONE,
    }
    assert coord.txns["a"].state == S.ONGOING
    produce_txn(broker, pid, epoch)
    log0 = broker.logs.get_log("t", 0)
    log0.high_watermark = log0.log_end_offset
    assert log0.last_stable_offset == 0
    assert coord.end_txn("a", pid, epoch, commit=True) == E.NONE
    assert coord.txns["a"].state == S.COMPLETE_COMMIT and not coord.txns["a"].partitions
    assert log0.last_stable_offset == log0.log_end_offset == 3
    assert broker.logs.get_log("t", 1).log_end_offset == 1  # a marker alone
    assert coord.end_txn("a", pid, epoch, commit=True) == E.NONE  # a retry
    assert coord.end_txn("a", pid, epoch, commit=False) == E.INVALID_TXN_STATE
    assert coord.add_partitions("a", pid, epoch, [("nope", 0), ("t", 0)]) == {
        ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("t", 0): E.OPERATION_NOT_ATTEMPTED,
    }
    assert coord.end_txn("a", pid + 1, epoch, True) == E.INVALID_PRODUCER_ID_MAPPING


def test_second_init_fences_and_aborts_the_open_transaction(broker):
    coord = broker.txn
    _, pid, epoch = coord.init_producer_id("a", 60_000)
    coord.add_partitions("a", pid, epoch, [("t", 0)])
    produce_txn(broker, pid, epoch)
    assert coord.init_producer_id("a", 60_000)[0] == E.CONCURRENT_TRANSACTIONS
    assert coord.txns["a"].state == S.COMPLETE_ABORT
    log0 = broker.logs.get_log("t", 0)
    assert log0.collect_aborted(0, 10) == [AbortedTxn(pid, 0, 2, 3)]
    error, pid2, epoch2 = coord.init_producer_id("a", 60_000)
    assert (error, pid2, epoch2) == (E.NONE, pid, epoch + 2)
    assert coord.end_txn("a", pid, epoch, True) == E.PRODUCER_FENCED
    assert coord.add_partitions("a", pid, epoch, [("t", 0)]) == {("t", 0): E.PRODUCER_FENCED}
    assert coord.check_produce(pid, epoch, "t", 0) == E.INVALID_PRODUCER_EPOCH


def test_timeout_aborts_on_the_clock(broker):
    coord = broker.txn
    _, pid, epoch = coord.init_producer_id("slow", 5_000)
    coord.add_partitions("slow", pid, epoch, [("t", 0)])
    produce_txn(broker, pid, epoch)
    broker.reactor.advance(4.0)
    assert coord.txns["slow"].state == S.ONGOING
    broker.reactor.advance(2.0)
    assert coord.txns["slow"].state == S.COMPLETE_ABORT
    assert coord.txns["slow"].producer_epoch == epoch + 1
    assert coord.end_txn("slow", pid, epoch, True) == E.PRODUCER_FENCED


def test_txn_offsets_are_pending_until_the_marker(broker):
    coord, groups = broker.txn, broker.groups
    _, pid, epoch = coord.init_producer_id("a", 60_000)
    assert coord.add_offsets("a", pid, epoch, "g") == E.NONE
    results = groups.offsets.txn_offset_commit(
        "g", pid, epoch, -1, "", None, [OffsetCommit("t", 0, 42)]
    )
    assert results == {("t", 0): E.NONE}
    assert groups.offsets.has_pending("g", "t", 0)
    assert groups.offsets.fetch_offsets("g", [("t", [0])]) == [("t", [(0, None)])]
    assert coord.end_txn("a", pid, epoch, commit=True) == E.NONE
    assert not groups.offsets.has_pending("g", "t", 0)
    assert groups.offsets.fetch_offsets("g", [("t", [0])])[0][1][0][1].offset == 42
    # An aborted one leaves the committed offset alone.
    coord.add_offsets("a", pid, epoch, "g")
    groups.offsets.txn_offset_commit("g", pid, epoch, -1, "", None, [OffsetCommit("t", 0, 99)])
    coord.end_txn("a", pid, epoch, commit=False)
    assert groups.offsets.fetch_offsets("g", [("t", [0])])[0][1][0][1].offset == 42


def test_state_and_pending_offsets_reload(tmp_path):
    first = make_broker(tmp_path)
    create_topic(first, "t", 1, 1, {})
    _, pid, epoch = first.txn.init_producer_id("open", 60_000)
    first.txn.add_partitions("open", pid, epoch, [("t", 0)])
    first.txn.add_offsets("open", pid, epoch, "g")
    first.groups.offsets.txn_offset_commit("g", pid, epoch, -1, "", None, [OffsetCommit("t", 0, 7)])
    produce_txn(first, pid, epoch)
    _, pid2, epoch2 = first.txn.init_producer_id("done", 60_000)
    first.txn.add_partitions("done", pid2, epoch2, [("t", 0)])
    first.txn.end_txn("done", pid2, epoch2, commit=False)
    close(first)
    second = make_broker(tmp_path)
    try:
        assert second.txn.txns["open"].state == S.ONGOING
        assert second.txn.txns["open"].partitions == {
            ("t", 0),
            ("__consumer_offsets", second.groups.partition_for("g")),
        }
        assert second.txn.txns["done"].state == S.COMPLETE_ABORT
        assert second.groups.offsets.has_pending("g", "t", 0)
        assert second.logs.get_log("t", 0).last_stable_offset == 0
        assert second.txn.end_txn("open", pid, epoch, commit=True) == E.NONE
        assert second.groups.offsets.fetch_offsets("g", [("t", [0])])[0][1][0][1].offset == 7
    finally:
        close(second)
    third = make_broker(tmp_path)
    try:
        assert third.groups.offsets.fetch_offsets("g", [("t", [0])])[0][1][0][1].offset == 7
        assert not third.groups.offsets.has_pending("g", "t", 0)
        assert third.txn.txns["open"].state == S.COMPLETE_COMMIT
    finally:
        close(third)


def test_a_reload_keeps_each_partitions_last_offset_in_log_order(tmp_path):
    """A reload decodes only the last plain commit of each partition (the coordinator's
    ``_replay``): a transaction's offsets still land over the commits before its marker and
    under those after it, and a deleted offset stays deleted."""
    first = make_broker(tmp_path)
    create_topic(first, "t", 3, 1, {})
    offsets = first.groups.offsets
    for n in range(1, 51):
        commits = [OffsetCommit("t", p, n * 10 + p) for p in range(3)]
        assert set(offsets.commit_offsets("g", -1, "", None, 9, commits).values()) == {E.NONE}
    _, pid, epoch = first.txn.init_producer_id("a", 60_000)
    assert first.txn.add_offsets("a", pid, epoch, "g") == E.NONE
    txn_commits = [OffsetCommit("t", 0, 700), OffsetCommit("t", 1, 701)]
    offsets.txn_offset_commit("g", pid, epoch, -1, "", None, txn_commits)
    assert first.txn.end_txn("a", pid, epoch, commit=True) == E.NONE
    offsets.commit_offsets("g", -1, "", None, 9, [OffsetCommit("t", 1, 801)])
    assert offsets.delete_offsets("g", [("t", 2)]) == (E.NONE, {("t", 2): E.NONE})

    def committed(broker: Broker) -> dict[int, int | None]:
        [(_, found)] = broker.groups.offsets.fetch_offsets("g", [("t", [0, 1, 2])])
        return {p: None if c is None else c.offset for p, c in found}

    before = committed(first)
    close(first)
    second = make_broker(tmp_path)
    try:
        assert committed(second) == before == {0: 700, 1: 801, 2: None}
    finally:
        close(second)


def test_list_transactions_filters(broker):
    coord = broker.txn
    _, pid, epoch = coord.init_producer_id("x-1", 60_000)
    coord.add_partitions("x-1", pid, epoch, [("t", 0)])
    coord.init_producer_id("y-1", 60_000)
    unknown, found = coord.list_transactions(["Ongoing", "Bogus"], [])
    assert unknown == ["Bogus"] and [t.transactional_id for t in found] == ["x-1"]
    assert [t.transactional_id for t in coord.list_transactions([], [], -1, "y-.*")[1]] == ["y-1"]


def test_protocol_v2_end_past_the_last_epoch_moves_to_a_new_producer_id(broker):
    """EndTxn v5 at epoch Short.MaxValue - 1: the markers carry the last epoch, then the id
    continues as a new producer id at epoch 0; a retry with the old id and epoch still
    succeeds (Kafka's retryOnOverflow)."""
    coord = broker.txn
    _, pid, _ = coord.init_producer_id("a", 60_000)
    coord.txns["a"].producer_epoch = MAX_EPOCH
    assert coord.add_partitions("a", pid, MAX_EPOCH, [("t", 0)], transaction_version=2) == {
        ("t", 0): E.NONE
    }
    assert coord.end_txn("a", pid, MAX_EPOCH, commit=True, transaction_version=2) == E.NONE
    new_pid, epoch = coord.producer_of("a")
    assert new_pid != pid and epoch == 0
    assert (coord.txns["a"].producer_id, coord.txns["a"].producer_epoch) == (new_pid, 0)
    assert coord.end_txn("a", pid, MAX_EPOCH, commit=True, transaction_version=2) == E.NONE
    assert coord.end_txn("a", pid, MAX_EPOCH - 1, commit=True, transaction_version=2) == (
        E.INVALID_PRODUCER_ID_MAPPING
    )
