"""Index entries held for a write of a run of them (``storage.index``), written by the owner
thread and by the flush thread at once."""

from __future__ import annotations

import sys
import threading

from wireserver.storage.index import OffsetIndex


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
    again.load(log_size=10**9)
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
    again.load(log_size=10**9)
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
