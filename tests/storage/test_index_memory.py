"""The index entries of inactive segments held in memory are capped (``IndexMemory``): a broker
that wrote, or was asked to read, a long history holds no more of them than the cap, and
every read, timestamp lookup, truncation and append still finds what it found before."""

from __future__ import annotations

import logging
import tracemalloc

from tests.storage.helpers import config, make_batch, open_log
from wireserver.storage.index import IndexMemory
from wireserver.storage.manager import LogManager

RECORDS = 20_000
#: Room for the entries of about one segment of those written below (over 13 times less than all).
CAP = 30_000


def settings():
    return config(internal_segment_bytes=100_000, index_interval_bytes=0)


def write(path, memory: IndexMemory):
    log = open_log(path, settings(), index_memory=memory)
    for i in range(RECORDS):
        log.append(make_batch(1, ts=1000 + i), leader_epoch=1)
    return log


def entry_bytes(log) -> int:
    return sum(s.offset_index.entries * 8 + s.time_index.entries * 12 for s in log.segments)


def test_writing_a_long_history_holds_the_rolled_segments_entries_up_to_the_cap(tmp_path):
    memory = IndexMemory(CAP)
    log = write(tmp_path / "t-0", memory)
    assert len(log.segments) > 10 and entry_bytes(log) > 10 * CAP
    assert memory.held_bytes <= CAP and memory.dropped > 0
    # the active segment's entries are not the cap's: they change with every append
    active = log.active_segment
    assert active.offset_index.memory_bytes == active.offset_index.entries * 8 > 0
    wanted = list(range(0, RECORDS, 37))
    assert [log.read(offset, 1).first_offset for offset in wanted] == wanted
    assert [log.offset_for_timestamp(1000 + o).offset for o in wanted] == wanted
    assert memory.held_bytes <= CAP
    log.close()
    assert memory.held_bytes == 0 and len(memory) == 0


def test_reading_a_long_history_from_its_start_holds_no_more_entries_than_the_cap(tmp_path):
    """A consumer replaying the log from offset 0 reads every segment's offset index; the
    memory the opened log holds stays near the cap however long the log, where it held
    every entry before."""
    path = tmp_path / "t-0"
    write(path, IndexMemory()).close()
    memory = IndexMemory(CAP)
    tracemalloc.start()
    try:
        log = open_log(path, settings(), index_memory=memory)
        opened = tracemalloc.get_traced_memory()[0]
        found = all(log.read(o, 1).first_offset == o for o in range(0, RECORDS, 13))
        timed = all(log.offset_for_timestamp(1000 + o).offset == o for o in range(0, RECORDS, 13))
        held = tracemalloc.get_traced_memory()[0] - opened
    finally:
        tracemalloc.stop()
    assert found and timed
    assert entry_bytes(log) > 10 * CAP
    assert held < 3 * CAP, held
    assert memory.held_bytes <= CAP and memory.dropped > 0
    assert log.rebuilt_indexes == 0
    # reading it all again reads the dropped entries again, and finds the same
    assert [log.read(offset, 1).first_offset for offset in range(5, RECORDS, 101)] == list(
        range(5, RECORDS, 101)
    )
    # appends go on in the active segment, whose entries were never dropped
    before = log.active_segment.offset_index.entries
    assert log.append(make_batch(1, ts=50_000), leader_epoch=1).base_offset == RECORDS
    assert log.append(make_batch(1, ts=50_001), leader_epoch=1).base_offset == RECORDS + 1
    assert log.active_segment.offset_index.entries == before + 1
    log.close()
    again = open_log(path, settings(), index_memory=IndexMemory(CAP))
    assert again.read(RECORDS + 1, 1).first_offset == RECORDS + 1
    assert again.offset_for_timestamp(50_001).offset == RECORDS + 1
    assert again.read(7, 1).first_offset == 7
    again.close()


def test_a_truncation_into_a_segment_whose_entries_were_dropped(tmp_path):
    memory = IndexMemory(CAP)
    path = tmp_path / "t-0"
    log = write(path, memory)
    target = log.segments[2]
    assert target.offset_index.memory_bytes == 0  # dropped while later segments rolled
    cut = target.base_offset + 500
    log.truncate_to(cut)
    assert log.active_segment is target and log.log_end_offset == cut
    assert log.append(make_batch(1, ts=90_000), leader_epoch=1).base_offset == cut
    # the segment is active again: reads elsewhere do not drop its entries
    for offset in range(0, target.base_offset, 101):
        assert log.read(offset, 1).first_offset == offset
    assert target.offset_index.memory_bytes == target.offset_index.entries * 8
    assert log.read(cut - 1, 1).first_offset == cut - 1
    log.close()
    again = open_log(path, settings(), index_memory=IndexMemory(CAP))
    assert again.log_end_offset == cut + 1
    assert again.rebuilt_indexes == 0
    assert [again.read(o, 1).first_offset for o in range(0, cut + 1, 53)] == list(
        range(0, cut + 1, 53)
    )
    assert again.offset_for_timestamp(90_000).offset == cut
    again.close()


def test_an_index_file_damaged_after_its_entries_were_dropped_is_rebuilt(tmp_path, caplog):
    memory = IndexMemory(CAP)
    log = write(tmp_path / "t-0", memory)
    victim = log.segments[0]
    assert victim.offset_index.memory_bytes == 0
    with open(victim.offset_index.path, "r+b") as f:
        f.seek(8 * 10)
        f.write(b"\x7f\xff\xff\xff\x7f\xff\xff\xff")  # an entry past the segment's end
    with caplog.at_level(logging.WARNING, logger="wireserver.storage.index"):
        assert [log.read(o, 1).first_offset for o in range(0, victim.next_offset, 29)] == list(
            range(0, victim.next_offset, 29)
        )
    assert "rebuilding the segment's indexes" in caplog.text
    log.close()


def test_a_broker_s_logs_share_one_cap(tmp_path):
    manager = LogManager([str(tmp_path)], {}, now_ms=lambda: 0)
    manager.load()
    manager.create_topic("a", 2)
    logs = [log for _, log in manager.logs()]
    assert {id(log.index_memory) for log in logs} == {id(manager.index_memory)}
    manager.close()
