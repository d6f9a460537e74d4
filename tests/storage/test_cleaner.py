"""Log compaction (storage.cleaner): what may be cleaned, what is kept, the swap, the map."""

from __future__ import annotations

import os

import pytest

from tests.storage.cleaner_helpers import (
    all_batches,
    compacted_log,
    kept_records,
    keyed_batch,
    segment_ranges_do_not_overlap,
)
from tests.storage.helpers import FakeClock
from wireserver.protocol.compression import Codec
from wireserver.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT, read_offsets
from wireserver.storage.cleaner import (
    SourceSegment,
    clean,
    cleanable_offsets,
    group_segments_by_size,
    prepare_cleaning,
)
from wireserver.storage.offset_map import OffsetMap


def fill_updates(log, count: int, keys: int = 5, ts0: int = 1000) -> None:
    for i in range(count):
        log.append(keyed_batch([(b"k%d" % (i % keys), b"v%d" % i)], ts=ts0 + i), 0)
    log.high_watermark = log.log_end_offset


def latest_values(log) -> dict:
    out = {}
    for _, key, value in kept_records(log):
        out[key] = value
    return out


def test_keeps_the_last_value_of_each_key_at_its_offset(tmp_path):
    log = compacted_log(tmp_path / "t-0")
    fill_updates(log, 60)
    before = latest_values(log)
    active_base = log.active_segment.base_offset
    result = clean(log)
    assert result is not None and result.committed
    assert result.first_dirty_offset == active_base
    kept = kept_records(log)
    cleaned = [r for r in kept if r[0] < active_base]
    # Below the active segment only the last record of each key is left, at its own offset.
    assert cleaned == [
        (o, b"k%d" % (o % 5), b"v%d" % o) for o in range(active_base - 5, active_base)
    ]
    assert latest_values(log) == before
    assert segment_ranges_do_not_overlap(log)
    assert read_offsets(str(tmp_path / CLEANER_OFFSET_CHECKPOINT)) == {("t", 0): active_base}
    # Reads across the holes land on the next batch.
    read = log.read(3, 1 << 20)
    assert read.first_offset == active_base - 5
    assert log.offset_for_timestamp(1003).offset == active_base - 5
    log.close()
    reopened = compacted_log(tmp_path / "t-0")
    assert kept_records(reopened) == kept
    reopened.close()


def test_the_active_segment_and_records_above_the_high_watermark_are_not_cleaned(tmp_path):
    log = compacted_log(tmp_path / "t-0")
    fill_updates(log, 60)
    log.high_watermark = 20
    offsets = cleanable_offsets(log, None, 10_000)
    # The high watermark falls in a segment: cleaning stops at that segment's base.
    hw_segment = max(s.base_offset for s in log.segments if s.base_offset <= 20)
    assert offsets.first_uncleanable_offset == hw_segment
    clean(log)
    assert [r[0] for r in kept_records(log) if r[0] >= hw_segment] == list(range(hw_segment, 60))
    log.close()


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path):
    clock = FakeClock(10_000)
    log = compacted_log(tmp_path / "t-0", clock, min_compaction_lag_ms=5000)
    for i in range(30):
        log.append(keyed_batch([(b"k", b"v%d" % i)], ts=1000 if i < 15 else 9000), 0)
    log.high_watermark = log.log_end_offset
    offsets = cleanable_offsets(log, None, clock.now)
    young = min(s.base_offset for s in log.segments if s.max_timestamp == 9000)
    assert offsets.first_uncleanable_offset == young
    assert offsets.dirty_ratio == 1.0  # as Kafka: uncleanable bytes are not in the total
    clean(log)
    assert [r[0] for r in kept_records(log) if r[0] >= young] == list(range(young, 30))
    log.close()


def test_dirty_ratio_and_max_compaction_lag(tmp_path):
    log = compacted_log(tmp_path / "t-0", max_compaction_lag_ms=1000)
    fill_updates(log, 40)
    offsets = cleanable_offsets(log, None, 1000 + 5000)
    assert offsets.clean_bytes == 0 and offsets.dirty_ratio == 1.0
    assert offsets.max_compaction_delay_ms == 5000 - 1000
    assert offsets.should_clean(0.99)
    result = clean(log, now_ms=6000)
    after = cleanable_offsets(log, result.first_dirty_offset, 6000)
    assert after.cleanable_bytes == 0 and not after.should_clean(0.5)
    # A checkpoint beyond the log end is reset to the log start and flagged.
    assert cleanable_offsets(log, 10_000, 6000).checkpoint_was_invalid
    log.close()


def test_a_full_offset_map_cleans_only_as_far_as_it_reached(tmp_path):
    log = compacted_log(tmp_path / "t-0")
    for i in range(60):
        log.append(keyed_batch([(b"k%d" % i, b"a")]), 0)  # 60 distinct keys
    for i in range(60):
        log.append(keyed_batch([(b"k%d" % i, b"b")]), 0)
    log.high_watermark = log.log_end_offset
    # Room for 20 keys: 20 / 0.9 slots of 24 bytes.
    result = clean(log, dedupe_buffer_bytes=23 * 24)
    assert result.map_full and result.first_dirty_offset == 20
    assert latest_values(log) == {b"k%d" % i: b"b" for i in range(60)}
    while result is not None and result.first_dirty_offset < log.active_segment.base_offset:
        result = clean(log, dedupe_buffer_bytes=23 * 24)
    active = log.active_segment.base_offset
    in_active = {k for o, k, _ in kept_records(log) if o >= active}
    assert {k for _, k, v in kept_records(log) if v == b"a"} <= in_active
    log.close()


def test_tombstones_are_kept_until_the_delete_horizon(tmp_path):
    clock = FakeClock(10_000)
    log = compacted_log(tmp_path / "t-0", clock, delete_retention_ms=1000)
    log.append(keyed_batch([(b"a", b"1"), (b"b", b"1")]), 0)
    log.append(keyed_batch([(b"a", None), (b"c", b"1")]), 0)
    fill_updates(log, 30, keys=3, ts0=2000)  # keys k0..k2 roll segments
    clean(log, now_ms=10_000)
    tombstone = [b for b in all_batches(log) if b.base_offset == 2][0]
    assert tombstone.delete_horizon_ms == 11_000 and tombstone.verify_crc()
    assert [(r.offset, r.key, r.value, r.timestamp) for r in tombstone.records()] == [
        (2, b"a", None, 1000),
        (3, b"c", b"1", 1000),
    ]
    # Before the horizon the tombstone stays (a new dirty section is needed to clean again).
    fill_updates(log, 15, keys=3, ts0=3000)
    clean(log, now_ms=10_500)
    assert (2, b"a", None) in kept_records(log)
    fill_updates(log, 15, keys=3, ts0=4000)
    clean(log, now_ms=11_000)
    kept = kept_records(log)
    assert (2, b"a", None) not in kept and (3, b"c", b"1") in kept and (1, b"b", b"1") in kept
    log.close()


def test_aborted_transactions_go_and_markers_follow_their_data(tmp_path):
    clock = FakeClock(10_000)
    log = compacted_log(tmp_path / "t-0", clock, delete_retention_ms=1000)
    log.append(keyed_batch([(b"x", b"aborted")], producer_id=7, epoch=0, transactional=True), 0)
    log.append(keyed_batch([(b"y", b"plain")]), 0)
    log.append_marker(7, 0, commit=False)
    log.append(keyed_batch([(b"z", b"committed")], producer_id=8, epoch=0, transactional=True), 0)
    log.append_marker(8, 0, commit=True)
    fill_updates(log, 20, keys=2)
    assert log.collect_aborted(0, 5)
    clean(log, now_ms=10_000)
    kept = kept_records(log)
    assert (0, b"x", b"aborted") not in kept
    assert (1, b"y", b"plain") in kept and (3, b"z", b"committed") in kept
    markers = {b.base_offset for b in all_batches(log) if b.is_control and b.record_count}
    assert markers == {2, 4}  # the ABORT stays while its data was met, the COMMIT too
    # The aborted data batch of producer 7 was its last data batch: kept, empty.
    empty = [b for b in all_batches(log) if b.base_offset == 0]
    assert empty and empty[0].record_count == 0 and empty[0].producer_id == 7
    assert [t.first_offset for t in log.collect_aborted(0, 5)] == [0]
    log.close()


def test_a_producer_retry_of_its_last_batch_is_still_a_duplicate_after_cleaning(tmp_path):
    log = compacted_log(tmp_path / "t-0")
    log.append(keyed_batch([(b"k0", b"1")], producer_id=5, epoch=0, sequence=0), 0)
    last = keyed_batch([(b"k0", b"2")], producer_id=5, epoch=0, sequence=1)
    log.append(bytearray(last), 0)
    fill_updates(log, 30, keys=1)  # supersedes key k0: producer 5's batches lose their records
    clean(log)
    kept = [b for b in all_batches(log) if b.producer_id == 5]
    assert [(b.base_offset, b.record_count, b.base_sequence) for b in kept] == [(1, 0, 1)]
    assert log.append(bytearray(last), 0).duplicate
    log.close()
    for name in os.listdir(tmp_path / "t-0"):
        if name.endswith(".snapshot"):
            os.unlink(tmp_path / "t-0" / name)
    reopened = compacted_log(tmp_path / "t-0")
    assert reopened.append(bytearray(last), 0).duplicate
    reopened.close()


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.ZSTD, Codec.LZ4, Codec.SNAPPY])
def test_compressed_batches_are_rebuilt_with_the_same_codec(tmp_path, codec):
    log = compacted_log(tmp_path / "t-0")
    log.append(keyed_batch([(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], compression=codec), 0)
    log.append(keyed_batch([(b"b", b"2")]), 0)
    fill_updates(log, 20, keys=1)
    clean(log)
    first = all_batches(log)[0]
    assert first.compression == codec and first.verify_crc()
    assert (first.base_offset, first.last_offset_delta) == (0, 2)
    assert [(r.offset, r.key) for r in first.records()] == [(0, b"a"), (2, b"c")]
    log.close()


def test_commit_abandons_when_retention_removed_a_segment_meanwhile(tmp_path):
    log = compacted_log(tmp_path / "t-0")
    fill_updates(log, 60)
    job = prepare_cleaning(log, cleanable_offsets(log, None, 10_000), now_ms=10_000)
    job.run()
    assert any(name.endswith(".cleaned") for name in os.listdir(tmp_path / "t-0"))
    log.delete_records_before(log.segments[1].base_offset)
    result = job.commit()
    assert not result.committed and result.first_dirty_offset == 0
    assert not any(name.endswith(".cleaned") for name in os.listdir(tmp_path / "t-0"))
    assert [r[0] for r in kept_records(log)] == list(range(log.log_start_offset, 60))
    log.close()


def test_a_throttle_sees_every_byte_read_and_written(tmp_path):
    log = compacted_log(tmp_path / "t-0")
    fill_updates(log, 40)
    seen = []
    result = clean(log, throttle=seen.append)
    stats = result.stats
    assert sum(seen) == stats.map_bytes_read + stats.bytes_read + stats.bytes_written
    log.close()


def source(base: int, size: int, index: int = 0) -> SourceSegment:
    return SourceSegment(None, base, size, index, index, 0)  # type: ignore[arg-type]


def test_group_segments_by_size():
    segments = [source(0, 100), source(10, 100), source(20, 300), source(30, 50), source(40, 0)]
    groups = group_segments_by_size(segments, 250, 1000, 50)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20], [30, 40]]
    # Index sizes bound a group too.
    groups = group_segments_by_size([source(0, 1, 8), source(5, 1, 8)], 100, 8, 10)
    assert len(groups) == 2
    # So does an offset range past an int32 from the group's base offset.
    far = [source(0, 10), source(2**31, 10)]
    assert len(group_segments_by_size(far, 100, 100, 2**31 + 5)) == 2


def test_offset_map_holds_hashes_in_a_fixed_buffer():
    offset_map = OffsetMap(24 * 100)
    assert (offset_map.slots, offset_map.capacity) == (100, 90)
    for i in range(90):
        offset_map.put(b"key-%d" % i, i)
    offset_map.put(b"key-3", 500)
    assert offset_map.size == 90 and offset_map.full
    assert offset_map.get(b"key-3") == 500 and offset_map.get(b"key-89") == 89
    assert offset_map.get(b"missing") == -1
    assert offset_map.latest_offset == 500
