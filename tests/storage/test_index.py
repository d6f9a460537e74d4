"""Index entries held for a write of a run of them (``storage.index``), written by the owner
thread and by the flush thread at once; what an entry costs in memory, and a reload."""

from __future__ import annotations

import sys
import threading
import tracemalloc

from wireserver.storage.index import OffsetIndex, TimeIndex


def test_entries_written_from_two_threads_reach_the_file_each_once_in_order(tmp_path):
    path = str(tmp_path / "00000000000000000000.index")
    index = OffsetIndex(path, 0, 10 * 1024 * 1024)
    index.open()
    done = threading.Event()

    def flush_thread() -> None:  # as the log's flush runs beside the reactor's appends
        while not done.is_set():
            index.write_pending()

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    flusher = threading.Thread(target=flush_thread)
    flusher.start()
    try:
        for i in range(1, 60_001):
            index.append(i, i * 10)
    finally:
        done.set()
        flusher.join()
        sys.setswitchinterval(before)
    index.flush()
    again = OffsetIndex(path, 0, 10 * 1024 * 1024)
    again.load(10**9)
    assert again.entries == 60_000
    assert [again.lookup(i) for i in (1, 777, 59_999, 60_000)] == [
        (1, 10),
        (777, 7770),
        (59_999, 599_990),
        (60_000, 600_000),
    ]
    index.close()


def _reloaded(path: str) -> OffsetIndex:
    again = OffsetIndex(path, 0, 10 * 1024 * 1024)
    again.load(10**9)
    return again


def test_a_truncation_inside_held_entries_keeps_those_before_it(tmp_path):
    path = str(tmp_path / "00000000000000000000.index")
    index = OffsetIndex(path, 0, 10 * 1024 * 1024)
    index.open()
    for i in range(1, 301):  # two runs of 128 on file, 44 held
        index.append(i, i * 10)
    index.truncate_to_position(2710)  # inside the held entries: 270 stay
    index.append(400, 5000)
    index.flush()
    again = _reloaded(path)
    assert again.entries == 271
    assert [again.lookup(o) for o in (256, 270, 271, 399, 400)] == [
        (256, 2560),
        (270, 2700),
        (270, 2700),
        (270, 2700),
        (400, 5000),
    ]
    index.truncate_to_position(1010)  # below what is on file
    index.flush()
    assert _reloaded(path).entries == 100
    index.close()


def test_a_close_without_writing_leaves_the_held_entries_out(tmp_path):
    """A halt closes files as they are: the entries held for the next run are not written
    (recovery rebuilds them), those already on file stay."""
    path = str(tmp_path / "00000000000000000000.index")
    index = OffsetIndex(path, 0, 10 * 1024 * 1024)
    index.open()
    for i in range(1, 151):
        index.append(i, i * 10)
    index.close(write=False)
    assert _reloaded(path).entries == 128


def test_entries_cost_their_file_size_in_memory_and_reload_the_same(tmp_path):
    """A broker holds every segment's index entries in memory: as Python ints in lists they
    took about 165 bytes an (offset, time) pair, megabytes for each gigabyte of log; in
    arrays they take the 20 bytes the two files spend on them, and give the same lookups
    after a reload."""
    count = 50_000
    stamp = 1_765_000_000_000
    offsets = OffsetIndex(str(tmp_path / "0.index"), 0, 10 * 1024 * 1024)
    times = TimeIndex(str(tmp_path / "0.timeindex"), 0, 10 * 1024 * 1024)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            offsets.append(i * 15 + 14, (i + 1) * 4100)
            times.maybe_append(stamp + i, i * 15 + 14)
        offsets.write_pending()
        times.write_pending()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held / count < 32
    answers = [(offsets.lookup(o), times.lookup_before(stamp + o // 15)) for o in (0, 7, 450_003)]
    offsets.load((count + 1) * 4100)
    times.load(count * 15)
    assert offsets.entries == times.entries == count
    assert [(offsets.lookup(o), times.lookup_before(stamp + o // 15)) for o in (0, 7, 450_003)] == (
        answers
    )
    assert answers[0] == ((0, 0), 0) and answers[2] == ((449_999, 30_000 * 4100), 449_999)
