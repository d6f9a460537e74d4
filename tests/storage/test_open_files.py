"""Segment files share a capped pool of descriptors (``storage.open_files``): partitions do not
each hold three open files, and a process out of descriptors fails the one operation that needed
one, leaves nothing half-made and keeps its log dir online."""

from __future__ import annotations

import contextlib
import os
import resource
import threading

import pytest

from tests.storage.helpers import FakeClock, make_batch, record_offsets
from wireserver.protocol.errors import ErrorCode
from wireserver.storage.errors import KafkaStorageError
from wireserver.storage.manager import LogManager
from wireserver.storage.open_files import OpenFiles, PooledFile


def open_count() -> int:
    return len(os.listdir("/proc/self/fd"))


@contextlib.contextmanager
def descriptors_left(count: int):
    """Exactly ``count`` more descriptors may be opened in this process: the limit caps the fd
    number, not the count, so the holes below the highest fd are filled first."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    highest = max(int(name) for name in os.listdir("/proc/self/fd"))
    fillers = [os.open(os.devnull, os.O_RDONLY)]
    while fillers[-1] < highest:
        fillers.append(os.open(os.devnull, os.O_RDONLY))
    resource.setrlimit(resource.RLIMIT_NOFILE, (fillers[-1] + 1 + count, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        for fd in fillers:
            os.close(fd)


def test_partitions_do_not_each_hold_their_files_open(tmp_path):
    manager = LogManager([str(tmp_path)], {}, FakeClock(), open_files=OpenFiles(capacity=16))
    manager.load()
    before = open_count()
    manager.create_topic("wide", 200)
    for p in range(200):
        manager.get_log("wide", p).append(make_batch(3), 0)
    assert len(manager.open_files) <= 16
    assert open_count() - before <= 16
    for p in range(200):
        log = manager.get_log("wide", p)
        assert record_offsets(log.read(0, 1 << 20).data) == [0, 1, 2]
        log.append(make_batch(2), 0)
    manager.close()
    again = LogManager([str(tmp_path)], {}, FakeClock(), open_files=OpenFiles(capacity=16))
    again.load()
    assert open_count() - before <= 16
    assert all(again.get_log("wide", p).log_end_offset == 5 for p in range(200))
    again.close()


def test_a_full_descriptor_table_closes_idle_segment_files_instead_of_failing(tmp_path):
    """The pool's capacity is above what is left: an open meeting EMFILE makes room."""
    manager = LogManager([str(tmp_path)], {}, FakeClock(), open_files=OpenFiles(capacity=10_000))
    manager.load()
    manager.create_topic("early", 30)
    with descriptors_left(12):
        manager.create_topic("late", 30)
        for topic in ("early", "late"):
            for p in range(30):
                manager.get_log(topic, p).append(make_batch(1), 0)
    assert manager.open_files.closed_for_room > 0
    assert all(manager.get_log("late", p).log_end_offset == 1 for p in range(30))
    manager.close()


def test_no_descriptor_left_fails_the_topic_leaves_nothing_and_keeps_the_dir_online(tmp_path):
    log_dir = str(tmp_path / "logs")
    manager = LogManager([log_dir], {}, FakeClock())
    manager.load()
    manager.create_topic("kept", 1)
    manager.get_log("kept", 0).append(make_batch(2), 0)
    while manager.open_files.shed():  # no idle segment file left to close either
        pass
    with descriptors_left(0):
        with pytest.raises(KafkaStorageError) as excinfo:
            manager.create_topic("many", 20)
    assert excinfo.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert "Too many open files" in str(excinfo.value)
    assert "many" not in manager.topics
    assert not [n for n in os.listdir(log_dir) if n.startswith("many")]
    assert not manager.failures.is_offline(log_dir)
    manager.get_log("kept", 0).append(make_batch(1), 0)
    manager.create_topic("many", 20)
    assert manager.get_log("kept", 0).log_end_offset == 3
    manager.close()


def test_a_file_pinned_by_the_flush_thread_is_not_closed_to_make_room(tmp_path):
    pool = OpenFiles(capacity=1)
    first = PooledFile(str(tmp_path / "first"), pool)
    second = PooledFile(str(tmp_path / "second"), pool)
    first.pwrite(b"x", 0)
    fd = pool.acquire(first, pin=True)
    second.pwrite(b"y", 0)  # over capacity: nothing idle to close
    assert first.is_open and second.is_open
    os.fsync(fd)
    pool.unpin(first)
    third = PooledFile(str(tmp_path / "third"), pool)
    third.pwrite(b"z", 0)
    assert not first.is_open and not second.is_open and len(pool) == 1


def test_fsync_after_the_descriptor_was_closed_for_room(tmp_path):
    pool = OpenFiles(capacity=1)
    first = PooledFile(str(tmp_path / "first"), pool)
    first.pwrite(b"abc", 0)
    PooledFile(str(tmp_path / "second"), pool).pwrite(b"y", 0)
    assert not first.is_open and first.dirty
    synced = threading.Thread(target=first.fsync)
    synced.start()
    synced.join()
    assert not first.dirty
    assert first.pread(3, 0) == b"abc"


def test_a_closed_file_is_never_opened_again(tmp_path):
    """A flush racing with retention must not create a deleted segment's file again."""
    pool = OpenFiles(capacity=4)
    path = tmp_path / "gone.log"
    doomed = PooledFile(str(path), pool)
    doomed.pwrite(b"x", 0)
    doomed.close()
    os.unlink(path)
    with pytest.raises(ValueError):
        doomed.fsync(force=True)
    assert not path.exists()
