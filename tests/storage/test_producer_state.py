"""Producer state (idempotence): transitions, snapshots, and rebuilding it on open."""

from __future__ import annotations

import os
import struct

import crc32c
import pytest

from tests.storage.helpers import FakeClock, config, open_log
from wireserver.protocol.records import RecordBatchBuilder
from wireserver.storage.producer_state import (
    INT32_MAX,
    BatchMetadata,
    CorruptSnapshot,
    InvalidProducerEpoch,
    OutOfOrderSequence,
    ProducerStateEntry,
    ProducerStateManager,
    decode_snapshot,
    encode_snapshot,
    increment_sequence,
    list_snapshots,
    snapshot_name,
)

PID = 4000


def pbatch(
    seq: int,
    count: int = 3,
    *,
    pid: int = PID,
    epoch: int = 0,
    ts: int = 1_000_000,
    transactional: bool = False,
) -> bytearray:
    builder = RecordBatchBuilder(
        producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=transactional
    )
    for i in range(count):
        builder.append(ts + i, b"k", b"seq-%d" % increment_sequence(seq, i))
    return builder.build()


# -- transitions through Log.append ----------------------------------------------------------


def test_new_producer_then_in_order(tmp_path):
    log = open_log(tmp_path / "t-0")
    r1 = log.append(pbatch(0), 0)
    r2 = log.append(pbatch(3), 0)
    assert (r1.base_offset, r1.last_offset, r1.duplicate) == (0, 2, False)
    assert (r2.base_offset, r2.last_offset) == (3, 5)
    entry = log.producer_state.entry(PID)
    assert entry.producer_epoch == 0 and entry.last_seq == 5
    assert [b.first_offset for b in entry.batches] == [0, 3]


def test_unknown_producer_any_first_sequence(tmp_path):
    log = open_log(tmp_path / "t-0")
    assert log.append(pbatch(17), 0).base_offset == 0
    assert log.producer_state.entry(PID).last_seq == 19


@pytest.mark.parametrize("back", [1, 2, 3, 4, 5])
def test_duplicate_of_each_of_last_five(tmp_path, back):
    log = open_log(tmp_path / "t-0")
    results = [log.append(pbatch(3 * i), 0) for i in range(7)]
    before, end = log.size_bytes, log.log_end_offset
    original = results[-back]
    again = log.append(pbatch(3 * (7 - back)), 0)
    assert again.duplicate
    assert (again.base_offset, again.last_offset) == (original.base_offset, original.last_offset)
    assert again.log_append_time == 1_000_002  # Kafka answers the batch's max timestamp
    assert (log.size_bytes, log.log_end_offset) == (before, end)


def test_sixth_batch_back_is_out_of_order(tmp_path):
    log = open_log(tmp_path / "t-0")
    for i in range(7):
        log.append(pbatch(3 * i), 0)
    with pytest.raises(OutOfOrderSequence):
        log.append(pbatch(3), 0)


def test_gap_is_out_of_order_and_changes_nothing(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(pbatch(0), 0)
    before = log.size_bytes
    with pytest.raises(OutOfOrderSequence) as err:
        log.append(pbatch(4), 0)
    assert err.value.error_code.name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert log.size_bytes == before and log.log_end_offset == 3
    assert log.producer_state.entry(PID).last_seq == 2
    assert log.append(pbatch(3), 0).base_offset == 3


def test_partial_overlap_is_not_a_duplicate(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(pbatch(0, 3), 0)
    with pytest.raises(OutOfOrderSequence):
        log.append(pbatch(0, 2), 0)


def test_old_epoch_is_invalid_producer_epoch(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(pbatch(0, epoch=0), 0)
    log.append(pbatch(0, epoch=1), 0)
    with pytest.raises(InvalidProducerEpoch) as err:
        log.append(pbatch(3, epoch=0), 0)
    assert err.value.error_code.name == "INVALID_PRODUCER_EPOCH"
    # A retry of an old-epoch batch is not a duplicate either.
    with pytest.raises(InvalidProducerEpoch):
        log.append(pbatch(0, epoch=0), 0)


def test_epoch_bump_resets_sequence(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(pbatch(0), 0)
    log.append(pbatch(3), 0)
    with pytest.raises(OutOfOrderSequence):
        log.append(pbatch(6, epoch=1), 0)  # a new epoch must start at 0
    r = log.append(pbatch(0, epoch=1), 0)
    entry = log.producer_state.entry(PID)
    assert entry.producer_epoch == 1 and len(entry.batches) == 1
    dup = log.append(pbatch(0, epoch=1), 0)
    assert dup.duplicate and (dup.base_offset, dup.last_offset) == (r.base_offset, r.last_offset)


def test_sequence_wraps_at_int32_max(tmp_path):
    log = open_log(tmp_path / "t-0")
    first = log.append(pbatch(INT32_MAX - 1, 3), 0)  # MAX-1, MAX, 0
    entry = log.producer_state.entry(PID)
    assert entry.last_seq == 0 and entry.batches[-1].first_seq == INT32_MAX - 1
    assert log.append(pbatch(INT32_MAX - 1, 3), 0).base_offset == first.base_offset
    assert log.append(pbatch(1, 2), 0).base_offset == 3
    with pytest.raises(OutOfOrderSequence):
        log.append(pbatch(0, 2), 0)


def test_wrap_from_max_to_zero(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(pbatch(INT32_MAX - 2, 3), 0)  # ends at MAX
    assert log.append(pbatch(0, 1), 0).base_offset == 3


def test_producers_are_independent_and_plain_batches_ignored(tmp_path):
    from tests.storage.helpers import make_batch

    log = open_log(tmp_path / "t-0")
    log.append(pbatch(0, pid=1), 0)
    log.append(make_batch(2), 0)
    log.append(pbatch(0, pid=2), 0)
    log.append(pbatch(3, pid=1), 0)
    assert set(log.producer_state.producers) == {1, 2}
    assert log.producer_state.map_end_offset == log.log_end_offset == 11


def test_log_append_time_is_remembered(tmp_path):
    clock = FakeClock(5_000_000)
    log = open_log(tmp_path / "t-0", config(message_timestamp_type="LogAppendTime"), clock)
    log.append(pbatch(0), 0)
    clock.now += 10
    dup = log.append(pbatch(0), 0)
    assert dup.duplicate and dup.log_append_time == 5_000_000


def test_prepare_validates_several_batches_of_one_request():
    state = ProducerStateManager("/nonexistent")
    from wireserver.storage.batches import read_header

    h1, h2 = read_header(pbatch(0)), read_header(pbatch(3))
    prepared = state.prepare([h1, h2], 10)
    assert prepared.duplicate is None and state.entry(PID) is None  # nothing installed yet
    state.commit(prepared, 16)
    assert [b.last_offset for b in state.entry(PID).batches] == [12, 15]
    with pytest.raises(OutOfOrderSequence):
        state.prepare([read_header(pbatch(6)), read_header(pbatch(10))], 16)


def test_expiration():
    state = ProducerStateManager("/nonexistent", expiration_ms=1000)
    entry = ProducerStateEntry(PID)
    entry.add_batch(0, 2, 2, 2, timestamp=10_000)
    state.producers[PID] = entry
    assert state.remove_expired(10_999) == 0
    assert state.remove_expired(11_000) == 1
    assert state.entry(PID) is None


# -- snapshots ------------------------------------------------------------------------------


def sample_entries() -> list[ProducerStateEntry]:
    a = ProducerStateEntry(1, 3)
    for i in range(7):
        a.add_batch(3, 4 * i + 3, 100 + 4 * i + 3, 3, 2_000 + i)
    b = ProducerStateEntry(2**40, 0, [BatchMetadata(INT32_MAX, 9, 0, 77)], last_timestamp=77)
    c = ProducerStateEntry(5, 2)  # an epoch and no batches
    return [a, b, c]


def test_snapshot_round_trip():
    entries = sample_entries()
    assert len(entries[0].batches) == 5
    assert decode_snapshot(encode_snapshot(entries)) == entries


def test_snapshot_crc_and_damage_are_detected():
    data = bytearray(encode_snapshot(sample_entries()))
    for damaged in (
        data[:-1],
        data[:5],
        bytes(data[:20]) + b"\x00" + bytes(data[21:]),
        b"\x00\x07" + bytes(data[2:]),
    ):
        with pytest.raises(CorruptSnapshot):
            decode_snapshot(bytes(damaged))


def test_reads_kafka_version_1_snapshot():
    entry = struct.pack(">qhiqiqiq", 42, 7, 19, 500, 4, 1234, -1, -1)
    body = struct.pack(">i", 1) + entry
    data = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    (loaded,) = decode_snapshot(data)
    assert (loaded.producer_id, loaded.producer_epoch, loaded.last_seq) == (42, 7, 19)
    assert loaded.batches[0] == BatchMetadata(19, 500, 4, 1234)
    assert loaded.batches[0].first_seq == 15 and loaded.batches[0].first_offset == 496


def test_snapshot_written_at_roll_and_close(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=300))
    for i in range(6):
        log.append(pbatch(3 * i), 0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 1
    assert set(bases[1:]) <= set(list_snapshots(log.directory))
    log.close()
    assert log.log_end_offset in list_snapshots(log.directory)
    assert os.path.exists(os.path.join(log.directory, snapshot_name(18)))


# -- rebuilding on open ---------------------------------------------------------------------


def fill(log, batches=8):
    return [log.append(pbatch(3 * i), 0) for i in range(batches)]


def test_clean_reopen_loads_snapshot_without_replay(tmp_path):
    log = open_log(tmp_path / "t-0")
    results = fill(log)
    before = log.producer_state.entry(PID)
    log.close()
    again = open_log(tmp_path / "t-0")
    assert again.producer_state.replayed_batches == 0
    assert again.producer_state.entry(PID) == before
    for back in range(1, 6):  # every one of the last five is still recognised
        dup = again.append(pbatch(3 * (8 - back)), 0)
        assert dup.duplicate and dup.base_offset == results[-back].base_offset


def test_crash_rebuilds_from_roll_snapshot_and_replay(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=400))
    results = fill(log, 10)
    expected = log.producer_state.entry(PID)
    snaps = list_snapshots(log.directory)
    assert snaps  # written at rolls, none at the end: the process "dies" here
    log.flush()
    crashed = open_log(tmp_path / "t-0", config(internal_segment_bytes=400), recover=True)
    assert crashed.producer_state.entry(PID) == expected
    assert crashed.producer_state.replayed_batches == 10 - len(
        [r for r in results if r.base_offset < snaps[-1]]
    )
    assert crashed.append(pbatch(27), 0).duplicate
    assert crashed.append(pbatch(30), 0).base_offset == 30


def test_crash_without_any_snapshot_replays_whole_log(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 4)
    log.flush()
    crashed = open_log(tmp_path / "t-0", recover=True)
    assert crashed.producer_state.replayed_batches == 4
    assert crashed.append(pbatch(9), 0).duplicate


def test_corrupt_snapshot_falls_back_to_replay(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 4)
    log.close()
    path = os.path.join(log.directory, snapshot_name(12))
    with open(path, "r+b") as f:
        f.seek(10)
        f.write(b"\xff\xff")
    again = open_log(tmp_path / "t-0")
    assert not os.path.exists(path)
    assert again.producer_state.replayed_batches == 4
    assert again.append(pbatch(9), 0).duplicate


def test_snapshot_beyond_log_end_is_discarded(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 4)
    log.close()
    # A snapshot the log does not reach any more (its tail was lost) must not be trusted.
    os.rename(
        os.path.join(log.directory, snapshot_name(12)),
        os.path.join(log.directory, snapshot_name(99)),
    )
    again = open_log(tmp_path / "t-0")
    assert 99 not in list_snapshots(again.directory)
    assert again.producer_state.entry(PID).last_seq == 11


def test_truncation_rebuilds_state(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=400))
    fill(log, 10)
    log.high_watermark = log.log_end_offset
    assert log.truncate_to(12)
    entry = log.producer_state.entry(PID)
    assert entry.last_seq == 11 and entry.batches[-1].last_offset == 11
    assert all(s <= 12 for s in list_snapshots(log.directory))
    assert log.append(pbatch(12), 0).base_offset == 12


def test_truncate_fully_forgets_producers(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 3)
    log.close()
    log = open_log(tmp_path / "t-0")
    log.truncate_fully_and_start_at(100)
    assert log.producer_state.producers == {} and list_snapshots(log.directory) == []
    assert log.append(pbatch(50), 0).base_offset == 100


def test_the_last_stable_offset_follows_transactions_across_reopen_and_full_truncation(tmp_path):
    """A Fetch reads the LSO through the log's own reference to the producer state's open
    transactions (Log.fetch_offsets): reloading the state on open and truncating it fully
    must keep that reference the live one."""
    log = open_log(tmp_path / "t-0")
    log.append(pbatch(0, transactional=True), 0)
    log.high_watermark = log.log_end_offset
    assert log.fetch_offsets() == (3, 0, 0)  # the open transaction holds the LSO at 0
    log.close()
    log = open_log(tmp_path / "t-0")  # the state is read back from the log
    log.high_watermark = log.log_end_offset
    assert log.fetch_offsets() == (3, 0, 0)
    assert log.last_stable_offset == 0
    log.truncate_fully_and_start_at(100)
    assert log.fetch_offsets() == (100, 100, 100)  # the transaction went with the records
    log.append(pbatch(0, pid=PID + 1, transactional=True), 0)
    log.high_watermark = log.log_end_offset
    assert log.fetch_offsets() == (103, 100, 100)


def test_delete_records_keeps_producers_but_drops_old_snapshots(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=400))
    fill(log, 10)
    log.high_watermark = log.log_end_offset
    log.delete_records_before(20)
    assert log.producer_state.entry(PID).last_seq == 29  # entries expire, not retention
    assert all(s >= 20 for s in list_snapshots(log.directory))
    assert log.append(pbatch(27), 0).duplicate
