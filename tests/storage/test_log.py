"""Log append/read, indexes, rolling, timestamps, retention, truncation, leader epochs."""

from __future__ import annotations

import os

import pytest

from tests.storage.helpers import (
    FakeClock,
    batches,
    config,
    make_batch,
    open_log,
    record_offsets,
)
from wireserver.protocol.records import TIMESTAMP_LOG_APPEND_TIME
from wireserver.storage.errors import OffsetOutOfRange
from wireserver.storage.log import Log


def fill(
    log: Log,
    n_batches: int,
    per_batch: int = 3,
    ts0: int = 1000,
    epoch: int = 0,
    value_size: int = 20,
):
    results = []
    for i in range(n_batches):
        results.append(
            log.append(make_batch(per_batch, ts=ts0 + i * 10, value_size=value_size), epoch)
        )
    return results


def test_append_assigns_consecutive_offsets_and_patches_epoch(tmp_path):
    log = open_log(tmp_path / "t-0")
    r1 = log.append(make_batch(3), leader_epoch=7)
    r2 = log.append(make_batch(2), leader_epoch=7)
    assert (r1.base_offset, r1.last_offset) == (0, 2)
    assert (r2.base_offset, r2.last_offset) == (3, 4)
    assert r1.log_append_time == -1 and r1.log_start_offset == 0
    assert log.log_end_offset == 5
    data = log.read(0, 1 << 20).data
    got = batches(data)
    assert [b.base_offset for b in got] == [0, 3]
    assert all(b.partition_leader_epoch == 7 and b.verify_crc() for b in got)
    assert record_offsets(data) == [0, 1, 2, 3, 4]
    log.close()


def test_round_trip_across_segment_rolls(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=600, index_interval_bytes=150))
    fill(log, 60)
    assert len(log.segments) > 10
    assert log.log_end_offset == 180
    # Every segment but the active one is at most segment.bytes, and they chain.
    for seg, nxt in zip(log.segments, log.segments[1:]):
        assert seg.size <= 600
        assert seg.next_offset == nxt.base_offset
    data = log.read(0, 1 << 30).data
    assert record_offsets(data) == list(range(180))
    names = sorted(os.listdir(tmp_path / "t-0"))
    assert "00000000000000000000.log" in names and "00000000000000000000.index" in names
    assert all(len(n.split(".")[0]) == 20 for n in names if n.endswith((".log", ".index")))
    log.close()


def test_index_lookups_at_every_offset(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=2000, index_interval_bytes=100))
    fill(log, 40, per_batch=2)
    assert any(seg.offset_index.entries > 2 for seg in log.segments)
    for offset in range(log.log_end_offset):
        res = log.read(offset, 1)
        first = batches(res.data)[0]
        assert first.base_offset <= offset <= first.last_offset
        assert res.first_offset == first.base_offset
    log.close()


def test_kip74_first_batch_returned_whole(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(make_batch(5, value_size=500), 0)
    log.append(make_batch(1), 0)
    size0 = batches(log.read(0, 1 << 20).data)[0].size
    res = log.read(0, 10, min_one_batch=True)
    assert len(res.data) == size0 and len(batches(res.data)) == 1
    assert log.read(0, 10, min_one_batch=False).data == b""
    # max_bytes limits to whole batches
    res = log.read(0, size0 + 10)
    assert len(batches(res.data)) == 1


def test_upper_bound_excludes_batches(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 4, per_batch=2)  # offsets 0..7, batches at 0,2,4,6
    res = log.read(0, 1 << 20, upper_bound=4)
    assert [b.base_offset for b in batches(res.data)] == [0, 2]
    assert log.read(4, 1 << 20, upper_bound=4).data == b""
    # a bound inside a batch excludes that batch
    res = log.read(0, 1 << 20, upper_bound=5)
    assert [b.base_offset for b in batches(res.data)] == [0, 2]


def test_offset_out_of_range(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 2)
    assert log.read(6, 100).data == b""  # at the log end: empty, not an error
    with pytest.raises(OffsetOutOfRange) as info:
        log.read(7, 100)
    assert info.value.log_end_offset == 6
    log.high_watermark = 6
    log.delete_records_before(3)
    with pytest.raises(OffsetOutOfRange):
        log.read(2, 100)
    assert batches(log.read(3, 100).data)[0].base_offset == 3


def test_offset_for_timestamp_and_max_timestamp(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=500, index_interval_bytes=50))
    # batch i: records at ts 1000+10i, +1, +2 ; offsets 3i..3i+2
    fill(log, 30)
    assert len(log.segments) > 3
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1000) == (0, 1000)
    assert log.offset_for_timestamp(1001) == (1, 1001)
    assert log.offset_for_timestamp(1003) == (3, 1010)
    assert log.offset_for_timestamp(1152) == (47, 1152)
    assert log.offset_for_timestamp(1153) == (48, 1160)
    assert log.offset_for_timestamp(1292) == (89, 1292)
    assert log.offset_for_timestamp(1293) is None
    assert log.offset_for_timestamp(1153, upper_bound=48) is None
    for ts in range(995, 1300, 7):
        hit = log.offset_for_timestamp(ts)
        i, r = divmod(ts - 1000, 10)
        if ts < 1000:
            expected = (0, 1000)
        elif r <= 2:
            expected = (3 * i + r, ts)
        else:
            expected = (3 * (i + 1), 1000 + 10 * (i + 1)) if i + 1 < 30 else None
        assert hit == expected, ts
    assert log.max_timestamp() == (1292, 89)


def test_max_timestamp_out_of_order(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(make_batch(3, ts=5000), 0)  # 5000..5002 at 0..2
    log.append(make_batch(3, ts=9000, ts_step=-1), 0)  # 9000, 8999, 8998 at 3..5
    log.append(make_batch(1, ts=100), 0)
    assert log.max_timestamp() == (9000, 3)
    assert log.offset_for_timestamp(8999) == (3, 9000)
    assert open_log(tmp_path / "empty-0").max_timestamp() is None


def test_log_append_time(tmp_path):
    clock = FakeClock(123456)
    log = open_log(tmp_path / "t-0", config(message_timestamp_type="LogAppendTime"), clock)
    r = log.append(make_batch(2, ts=5), 0, now_ms=777)
    assert r.log_append_time == 777
    b = batches(log.read(0, 1 << 20).data)[0]
    assert b.timestamp_type == TIMESTAMP_LOG_APPEND_TIME and b.max_timestamp == 777
    assert b.verify_crc()
    assert [rec.timestamp for rec in b.records()] == [777, 777]


def test_compressed_batches(tmp_path):
    log = open_log(tmp_path / "t-0")
    for codec in (1, 2, 3, 4):
        log.append(make_batch(4, ts=2000 + codec * 10, compression=codec), 0)
    assert record_offsets(log.read(0, 1 << 20).data) == list(range(16))
    assert log.offset_for_timestamp(2031) == (9, 2031)


def test_retention_by_time(tmp_path):
    clock = FakeClock(10_000)
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=400, retention_ms=1000), clock)
    fill(log, 20, ts0=1000)  # timestamps 1000..1192
    log.high_watermark = log.log_end_offset
    nseg = len(log.segments)
    assert log.apply_retention(now_ms=1500) == 0
    deleted = log.apply_retention(now_ms=2100)  # older than 1100 → segments ending < 1100
    assert 0 < deleted < nseg
    assert log.log_start_offset == log.segments[0].base_offset > 0
    assert all(seg.max_timestamp >= 1100 for seg in log.segments if seg.size)
    # Everything expired: the active segment goes too, after a roll (as Kafka does).
    log.apply_retention(now_ms=100_000)
    assert log.log_start_offset == log.log_end_offset == 60
    assert log.size_bytes == 0
    r = log.append(make_batch(1), 0)
    assert r.base_offset == 60


def test_retention_needs_high_watermark(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=400, retention_ms=1000))
    fill(log, 20, ts0=1000)
    assert log.high_watermark == 0
    assert log.apply_retention(now_ms=100_000) == 0


def test_retention_by_bytes(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=400, retention_bytes=1000))
    fill(log, 30)
    log.high_watermark = log.log_end_offset
    deleted = log.apply_retention(now_ms=0)
    assert deleted > 0
    assert log.size_bytes <= 1000 + log.segments[0].size
    assert log.size_bytes - log.segments[0].size < 1000
    assert log.log_start_offset == log.segments[0].base_offset
    assert log.active_segment.size > 0


def test_compact_policy_skips_retention(tmp_path):
    log = open_log(
        tmp_path / "t-0",
        config(internal_segment_bytes=400, retention_bytes=0, cleanup_policy="compact"),
    )
    fill(log, 30)
    log.high_watermark = log.log_end_offset
    assert log.apply_retention(now_ms=0) == 0


def test_delete_records_before(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=400))
    fill(log, 20)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(10)  # above the high watermark (0)
    log.high_watermark = 60
    nseg = len(log.segments)
    assert log.delete_records_before(25) == 25
    assert log.log_start_offset == 25
    assert len(log.segments) < nseg
    assert log.segments[0].base_offset <= 25 < log.segments[0].next_offset
    assert log.delete_records_before(10) == 25  # never moves back
    res = log.read(25, 1 << 20)
    assert batches(res.data)[0].base_offset <= 25
    assert log.offset_for_timestamp(0)[0] == 25
    assert log.delete_records_before(60) == 60
    assert log.size_bytes == 0 and log.log_end_offset == 60


def test_truncate_to(tmp_path):
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=400, index_interval_bytes=50))
    fill(log, 20, epoch=1)
    log.append(make_batch(3), leader_epoch=2)  # 60..62
    log.append(make_batch(3), leader_epoch=3)  # 63..65
    log.high_watermark = 66
    assert log.truncate_to(63)
    assert log.log_end_offset == 63 and log.high_watermark == 63
    assert log.end_offset_for_epoch(2) == (2, 63)
    assert log.end_offset_for_epoch(3) == (-1, -1)
    assert log.truncate_to(30)
    assert log.log_end_offset == 30
    assert record_offsets(log.read(0, 1 << 30).data) == list(range(30))
    assert log.latest_epoch == 1
    r = log.append(make_batch(2), 4)
    assert r.base_offset == 30
    assert log.end_offset_for_epoch(1) == (1, 30)
    assert not log.truncate_to(100)
    # Truncating inside a batch drops the whole batch
    log.truncate_to(31)
    assert log.log_end_offset == 30


def test_leader_epoch_cache(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 2, epoch=0)  # 0..5
    fill(log, 2, epoch=2)  # 6..11
    fill(log, 1, epoch=5)  # 12..14
    assert log.leader_epoch_cache.entries == [(0, 0), (2, 6), (5, 12)]
    assert log.end_offset_for_epoch(5) == (5, 15)
    assert log.end_offset_for_epoch(2) == (2, 12)
    assert log.end_offset_for_epoch(3) == (2, 12)  # unknown epoch: largest below it
    assert log.end_offset_for_epoch(1) == (0, 6)
    assert log.end_offset_for_epoch(6) == (-1, -1)
    assert log.end_offset_for_epoch(-1) == (-1, -1)
    assert log.leader_epoch_for_offset(7) == 2
    log.close()
    with open(tmp_path / "t-0" / "leader-epoch-checkpoint") as f:
        assert f.read() == "0\n3\n0 0\n2 6\n5 12\n"
    log2 = open_log(tmp_path / "t-0")
    assert log2.leader_epoch_cache.entries == [(0, 0), (2, 6), (5, 12)]


def test_append_as_follower_keeps_offsets(tmp_path):
    leader = open_log(tmp_path / "leader-0")
    fill(leader, 3, epoch=4)
    data = leader.read(0, 1 << 20).data
    follower = open_log(tmp_path / "follower-0")
    r = follower.append_as_follower(bytearray(data))
    assert (r.base_offset, r.last_offset) == (0, 8)
    assert follower.read(0, 1 << 20).data == data
    assert follower.end_offset_for_epoch(4) == (4, 9)


def test_high_watermark_clamped(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 2)
    log.high_watermark = 100
    assert log.high_watermark == 6
    log.high_watermark = -5
    assert log.high_watermark == 0


def test_roll_by_time_and_full_index(tmp_path):
    log = open_log(tmp_path / "t-0", config(segment_ms=100))
    log.append(make_batch(1, ts=1000), 0)
    log.append(make_batch(1, ts=1050), 0)
    assert len(log.segments) == 1
    log.append(make_batch(1, ts=1101), 0)
    assert len(log.segments) == 2 and log.active_segment.base_offset == 2
    log2 = open_log(tmp_path / "u-0", config(segment_index_bytes=16, index_interval_bytes=0))
    fill(log2, 10)
    assert len(log2.segments) > 1
    assert all(s.offset_index.entries <= 2 for s in log2.segments)


def test_flush_due(tmp_path):
    clock = FakeClock(0)
    log = open_log(tmp_path / "t-0", config(flush_messages=5), clock)
    assert not log.flush_due(0)
    log.append(make_batch(3), 0)
    assert not log.flush_due(0)
    log.append(make_batch(3), 0)
    assert log.flush_due(0)
    assert log.flush(now_ms=0) == 6
    assert not log.flush_due(0) and log.recovery_point == 6
    log2 = open_log(tmp_path / "u-0", config(flush_ms=1000), clock)
    log2.append(make_batch(1), 0)
    assert not log2.flush_due(999)
    assert log2.flush_due(1000)


def test_a_roll_makes_a_flush_due_however_long_the_history(tmp_path):
    # Under Kafka's defaults (no flush.messages, no flush.ms) only a roll calls for an fsync:
    # of the segment it closed. Checked on every append, so it looks only at the segments
    # from the recovery point up; these are the cases that must still see the roll.
    clock = FakeClock(0)
    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=600), clock)
    fill(log, 40)
    assert len(log.segments) > 10
    assert log.flush_due(0) and log.may_become_due()
    log.flush(now_ms=0)
    assert not log.flush_due(0) and not log.may_become_due()
    segments = len(log.segments)
    while len(log.segments) == segments:
        # appends to the active segment: data above the recovery point, but nothing rolled
        if log.log_end_offset > log.recovery_point:
            assert not log.flush_due(0) and not log.may_become_due()
        fill(log, 1)
    # the append that rolled: the closed segment holds records above the recovery point
    assert log.flush_due(0) and log.may_become_due()
    log.flush(now_ms=0)
    assert not log.flush_due(0)
    log.close()
    reopened = open_log(tmp_path / "t-0", config(internal_segment_bytes=600), clock)
    assert reopened.recovery_point == reopened.log_end_offset
    segments = len(reopened.segments)
    while len(reopened.segments) == segments:
        fill(reopened, 1)
    assert reopened.flush_due(0)
    reopened.close()


def test_zero_copy_read_leaves_large_stretches_in_the_files(tmp_path):
    """A zero-copy read names the same bytes as an ordinary one, across segments; small reads
    stay bytes; the regions still read after the log is deleted (each has its own fd)."""
    from wireserver.storage.file_records import FileRecords
    from wireserver.storage.log import ZERO_COPY_MIN_BYTES

    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=300_000))
    fill(log, 40, per_batch=4, value_size=5_000)  # ~20 KB a batch: three segments
    assert len(log.segments) == 3
    expected = log.read(0, 1 << 30)
    zero_copy = log.read(0, 1 << 30, zero_copy=True)
    assert isinstance(zero_copy.data, FileRecords)
    assert len(zero_copy.data.parts) == 3 and len(zero_copy.data) == len(expected.data)
    assert zero_copy[1:] == expected[1:]
    assert expected.next_offset == log.log_end_offset == 160
    small = log.read(4, ZERO_COPY_MIN_BYTES // 2, zero_copy=True)
    assert isinstance(small.data, bytes)
    assert small.data == log.read(4, ZERO_COPY_MIN_BYTES // 2).data
    log.delete()
    assert not os.path.exists(tmp_path / "t-0")
    assert bytes(zero_copy.data) == expected.data
    zero_copy.data.close()
    assert all(part.fd == -1 for part in zero_copy.data.parts)


def test_reads_at_every_offset_across_header_blocks(tmp_path):
    """Batch headers are read a block at a time (``WALK_BLOCK``): reads from every offset of a
    segment many blocks long, with sparse index entries, start at the right batch and agree
    with the full-header walk."""
    from wireserver.storage.segment import WALK_BLOCK

    log = open_log(tmp_path / "t-0", config(index_interval_bytes=3 * WALK_BLOCK))
    fill(log, 300, per_batch=2, value_size=30)
    (segment,) = log.segments
    assert segment.size > 8 * WALK_BLOCK
    assert [(pos, h.base_offset, h.last_offset, h.size) for pos, h in segment.walk()] == list(
        segment.spans()
    )
    for offset in range(0, log.log_end_offset, 7):
        res = log.read(offset, 700)
        got = batches(res.data)
        assert got[0].base_offset <= offset <= got[0].last_offset
        assert res.next_offset == got[-1].last_offset + 1
        assert record_offsets(res.data) == list(range(got[0].base_offset, res.next_offset))
    log.close()


def test_zero_copy_reads_fall_back_to_memory_past_the_descriptor_cap(tmp_path, monkeypatch):
    """Unsent regions hold descriptors; past ``MAX_OPEN_REGIONS`` a read comes back in memory
    (same bytes), and closing the regions gives the descriptors back."""
    from wireserver.storage import file_records
    from wireserver.storage.file_records import FileRecords, FileRegion

    log = open_log(tmp_path / "t-0", config(internal_segment_bytes=300_000))
    fill(log, 40, per_batch=4, value_size=5_000)  # three segments
    baseline = FileRegion.open_count
    monkeypatch.setattr(file_records, "MAX_OPEN_REGIONS", baseline + 1)
    first = log.read(0, 1 << 30, zero_copy=True)
    assert isinstance(first.data, FileRecords)
    assert [isinstance(part, bytes) for part in first.data.parts] == [False, True, True]
    assert FileRegion.open_count == baseline + 1
    second = log.read(0, 1 << 30, zero_copy=True)
    assert isinstance(second.data, bytes)
    assert bytes(first.data) == second.data == log.read(0, 1 << 30).data
    first.data.close()
    assert FileRegion.open_count == baseline
    assert isinstance(log.read(0, 1 << 30, zero_copy=True).data, FileRecords)
    log.close()


def test_epochs_lost_from_the_checkpoint_in_a_crash_come_back_from_recovery(tmp_path):
    """A new epoch is written to the checkpoint without fsync: after a crash that lost the
    file, recovery re-adds the epochs of the batches it re-scans (Kafka's recovery too)."""
    log = open_log(tmp_path / "t-0")
    fill(log, 2, epoch=0)
    fill(log, 2, epoch=3)
    fill(log, 1, epoch=7)
    assert log.leader_epoch_cache.unsynced
    log.flush()
    assert not log.leader_epoch_cache.unsynced
    for seg in log.segments:  # the crash: nothing else written, the checkpoint gone
        seg.close()
    os.unlink(tmp_path / "t-0" / "leader-epoch-checkpoint")
    again = open_log(tmp_path / "t-0", recover=True)
    assert again.leader_epoch_cache.entries == [(0, 0), (3, 6), (7, 12)]
    assert again.end_offset_for_epoch(3) == (3, 12)
