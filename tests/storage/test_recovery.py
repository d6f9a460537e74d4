"""Reopen after a clean close, and recovery from torn, corrupt and index-less segments."""

from __future__ import annotations

import os
import shutil
import tracemalloc

from tests.storage.helpers import batches, config, make_batch, open_log, record_offsets
from wireserver.storage.index import PENDING_ENTRIES
from wireserver.storage.log import Log
from wireserver.storage.segment import RECOVER_BLOCK

CFG = dict(internal_segment_bytes=600, index_interval_bytes=100)


def build(path, n=30):
    log = open_log(path, config(**CFG))
    for i in range(n):
        log.append(make_batch(3, ts=1000 + 10 * i), leader_epoch=1)
    return log


def state(log: Log):
    return (
        log.log_start_offset,
        log.log_end_offset,
        log.size_bytes,
        [
            (s.base_offset, s.next_offset, s.size, s.max_timestamp, s.offset_index.entries)
            for s in log.segments
        ],
        log.leader_epoch_cache.entries,
    )


def segment_files(path, suffix):
    return sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(suffix))


def test_reopen_after_clean_close_has_same_state_without_rescan(tmp_path):
    path = tmp_path / "t-0"
    log = build(path)
    log.high_watermark = 90
    before = state(log)
    data = log.read(0, 1 << 30).data
    log.close()
    log2 = open_log(path, config(**CFG), recover=False, high_watermark=90)
    assert log2.recovered_segments == 0 and log2.rebuilt_indexes == 0
    assert state(log2) == before
    assert log2.read(0, 1 << 30).data == data
    assert log2.offset_for_timestamp(1153) == (48, 1160)
    assert log2.append(make_batch(1), 1).base_offset == 90


def test_unclean_open_rescans_from_recovery_point(tmp_path):
    path = tmp_path / "t-0"
    log = build(path)
    nseg = len(log.segments)
    log.flush()
    log.close()
    full = open_log(path, config(**CFG), recover=True, recovery_point=0)
    assert full.recovered_segments == nseg
    full.close()
    rp = full.segments[-2].base_offset + 1
    partial = open_log(path, config(**CFG), recover=True, recovery_point=rp)
    assert partial.recovered_segments == 2  # the segment holding rp and the active one
    assert partial.log_end_offset == 90


def test_torn_tail_is_truncated(tmp_path):
    path = tmp_path / "t-0"
    log = build(path)
    log.close()
    last = segment_files(path, ".log")[-1]
    size = os.path.getsize(last)
    with open(last, "r+b") as f:
        f.truncate(size - 17)  # cut the last batch in the middle
    log2 = open_log(path, config(**CFG), recover=True)
    assert log2.truncated_bytes > 0
    assert log2.log_end_offset == 87
    assert record_offsets(log2.read(0, 1 << 30).data) == list(range(87))
    assert log2.append(make_batch(1), 1).base_offset == 87


def test_torn_tail_after_a_clean_marker_is_still_found(tmp_path):
    # The index says nothing of the tail, but its walk does not fit: the segment is recovered.
    path = tmp_path / "t-0"
    log = build(path)
    log.close()
    last = segment_files(path, ".log")[-1]
    with open(last, "ab") as f:
        f.write(b"\x00" * 30)
    log2 = open_log(path, config(**CFG), recover=False)
    assert log2.rebuilt_indexes == 1
    assert log2.log_end_offset == 90


def test_corrupt_batch_truncates_and_drops_later_segments(tmp_path):
    path = tmp_path / "t-0"
    log = build(path)
    nseg = len(log.segments)
    log.close()
    logs = segment_files(path, ".log")
    victim = logs[1]
    with open(victim, "r+b") as f:
        f.seek(os.path.getsize(victim) - 5)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))  # flip a byte in the segment's last batch
    log2 = open_log(path, config(**CFG), recover=True)
    assert len(log2.segments) == 2 < nseg
    assert len(segment_files(path, ".log")) == 2
    end = log2.log_end_offset
    assert record_offsets(log2.read(0, 1 << 30).data) == list(range(end))
    assert end < 90 and end % 3 == 0
    assert log2.leader_epoch_cache.entries == [(1, 0)]


def test_corrupt_last_batch_crc(tmp_path):
    path = tmp_path / "t-0"
    log = build(path)
    log.close()
    last = segment_files(path, ".log")[-1]
    with open(last, "r+b") as f:
        f.seek(-3, os.SEEK_END)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x01]))
    log2 = open_log(path, config(**CFG), recover=True)
    assert log2.log_end_offset == 87


def test_missing_index_is_rebuilt_after_clean_shutdown(tmp_path):
    path = tmp_path / "t-0"
    log = build(path)
    before = state(log)
    log.close()
    os.unlink(segment_files(path, ".index")[0])
    os.unlink(segment_files(path, ".timeindex")[1])
    log2 = open_log(path, config(**CFG), recover=False)
    assert log2.rebuilt_indexes == 2
    assert state(log2)[:3] == before[:3]
    assert os.path.exists(segment_files(path, ".index")[0])
    for offset in range(0, 90, 7):
        assert log2.read(offset, 1).first_offset <= offset


def test_garbled_index_is_rebuilt(tmp_path, caplog):
    """A wrong length or last entry is found at start-up, which reads only those; a wrong
    entry before the last is found when the index is first used, and the index is rebuilt
    then (the reads are right either way)."""
    path = tmp_path / "t-0"
    log = build(path)
    log.close()
    good = [open(name, "rb").read() for name in segment_files(path, ".index")[:2]]
    assert all(good)
    idx = segment_files(path, ".index")[0]
    with open(idx, "r+b") as f:
        f.write(b"\xff\xff\xff\xff\x7f\xff\xff\xff")
    idx2 = segment_files(path, ".index")[1]
    with open(idx2, "ab") as f:
        f.write(b"\x01\x02\x03")  # not a whole entry
    log2 = open_log(path, config(**CFG), recover=False)
    assert log2.rebuilt_indexes == 1
    assert record_offsets(log2.read(0, 1 << 30).data) == list(range(90))
    for offset in range(90):
        assert log2.read(offset, 1).first_offset <= offset
    assert "rebuilding the segment's indexes" in caplog.text
    log2.close()
    assert [open(name, "rb").read() for name in segment_files(path, ".index")[:2]] == good


def test_stray_files_are_removed(tmp_path):
    path = tmp_path / "t-0"
    build(path).close()
    for name in (
        "00000000000000000099.index",
        "00000000000000000003.log.deleted",
        "leader-epoch-checkpoint.tmp",
    ):
        (path / name).write_bytes(b"x")
    open_log(path, config(**CFG)).close()
    names = os.listdir(path)
    assert not any(n.endswith((".deleted", ".tmp")) for n in names)
    assert "00000000000000000099.index" not in names


def test_index_entries_reach_the_file_in_runs_and_all_of_them_with_a_flush(tmp_path):
    """Entries are held for one write per ``PENDING_ENTRIES``; what a flush made durable (a
    crash copies the files as they are) loads without a rebuild and finds every entry."""
    path = tmp_path / "t-0"
    log = open_log(path, config(index_interval_bytes=0))
    index = log.active_segment.offset_index
    for i in range(PENDING_ENTRIES + 11):
        log.append(make_batch(2, ts=1000 + i), leader_epoch=1)
    # the first batch of a segment gets no entry: one run written, ten entries held
    assert index.entries == PENDING_ENTRIES + 10
    assert os.path.getsize(index.path) == PENDING_ENTRIES * 8
    log.flush()
    assert os.path.getsize(index.path) == index.entries * 8
    assert os.path.getsize(log.active_segment.time_index.path) == (PENDING_ENTRIES + 10) * 12
    crashed = tmp_path / "copy"
    shutil.copytree(path, crashed)
    again = open_log(crashed, config(index_interval_bytes=0), recover=False)
    assert again.rebuilt_indexes == 0
    assert again.active_segment.offset_index.entries == index.entries
    for ts in (1000, 1000 + PENDING_ENTRIES - 1, 1000 + PENDING_ENTRIES + 5):
        assert again.offset_for_timestamp(ts) == log.offset_for_timestamp(ts)
    log.close()


def test_a_start_up_leaves_the_entries_of_older_segments_on_disk_until_they_are_read(tmp_path):
    """Opening a log after a clean close reads each index's last entry only (its memory does
    not grow with the log's length, as Kafka maps indexes on first use); a read of an old
    segment reads that segment's entries, and finds the same batches as before the restart."""
    path = tmp_path / "t-0"
    log = open_log(path, config(internal_segment_bytes=200_000, index_interval_bytes=0))
    for i in range(9_000):
        log.append(make_batch(1, ts=1000 + i), leader_epoch=1)
    older = log.segments[:-1]
    assert len(older) >= 2 and min(s.offset_index.entries for s in older) > 2_000
    entries = [(s.offset_index.entries, s.time_index.entries) for s in log.segments]
    wanted = {offset: log.read(offset, 1).first_offset for offset in range(0, 9_000, 97)}
    times = {ts: log.offset_for_timestamp(ts) for ts in range(1000, 10_000, 131)}
    log.close()

    tracemalloc.start()
    try:
        again = open_log(path, config(internal_segment_bytes=200_000, index_interval_bytes=0))
        opened = tracemalloc.get_traced_memory()[0]
        again.read(0, 1)  # the first segment's offset index is read now (8 bytes an entry)
        first_read = tracemalloc.get_traced_memory()[0] - opened
    finally:
        tracemalloc.stop()
    assert first_read > entries[0][0] * 6
    # less than the older segments' entries alone, had they been read at the start-up
    assert opened < sum(offsets * 8 + times * 12 for offsets, times in entries[:-1])
    assert again.rebuilt_indexes == 0
    assert [(s.offset_index.entries, s.time_index.entries) for s in again.segments] == entries
    assert {offset: again.read(offset, 1).first_offset for offset in wanted} == wanted
    assert {ts: again.offset_for_timestamp(ts) for ts in times} == times
    # the active segment's entries are read by its first append, and later ones add to them
    # (the first batch after a load gets no entry: Kafka's bytesSinceLastIndexEntry starts at 0)
    active_entries = again.active_segment.offset_index.entries
    assert again.append(make_batch(1, ts=20_000), leader_epoch=1).base_offset == 9_000
    assert again.append(make_batch(1, ts=20_001), leader_epoch=1).base_offset == 9_001
    assert again.active_segment.offset_index.entries == active_entries + 1
    again.close()
    third = open_log(path, config(internal_segment_bytes=200_000, index_interval_bytes=0))
    assert third.active_segment.offset_index.entries == active_entries + 1
    assert third.offset_for_timestamp(20_001).offset == 9_001
    assert third.read(9_001, 1).first_offset == 9_001
    third.close()


def test_recovery_finds_batches_and_a_corrupt_one_across_its_read_blocks(tmp_path):
    """Recovery reads the log ``RECOVER_BLOCK`` bytes at a time: batches that straddle the end
    of a block, one larger than a block, and a corrupt batch in a later block are found as a
    batch-by-batch read finds them."""
    path = tmp_path / "t-0"
    log = open_log(path, config(internal_segment_bytes=64 << 20))
    sizes = [3001 + 7 * i for i in range(400)]
    sizes[150] = RECOVER_BLOCK + 4321
    for i, size in enumerate(sizes):
        log.append(make_batch(1, ts=1000 + i, value_size=size), leader_epoch=1)
    assert log.size_bytes > 2 * RECOVER_BLOCK
    starts = [start for start, _, _, _ in log.active_segment.spans()]
    log.close()
    victim = next(start for start in starts if start > 2 * RECOVER_BLOCK)
    segment = segment_files(path, ".log")[0]
    with open(segment, "r+b") as f:
        f.seek(victim + 100)  # inside the records, which the CRC covers
        f.write(b"\xee")
    written = os.path.getsize(segment)
    again = open_log(path, config(internal_segment_bytes=64 << 20), recover=True)
    assert again.truncated_bytes == written - victim
    assert os.path.getsize(segment) == victim
    assert again.log_end_offset == starts.index(victim)
    read = again.read(0, 1 << 30).data
    assert [len(r.value) for b in batches(read) for r in b.records()] == sizes[
        : starts.index(victim)
    ]
    again.close()
