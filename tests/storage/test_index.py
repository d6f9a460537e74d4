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
