"""A log dir's ``.lock`` (``storage.dir_lock``): a second broker is refused a dir in use, from
this process or another, until the first lets it go."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.storage.helpers import FakeClock, make_batch
from wireserver.storage.dir_lock import LogDirInUseError
from wireserver.storage.manager import LogManager

IN_USE = "A Kafka instance in another process or thread is using this directory."


def test_a_second_manager_in_this_process_is_refused_until_the_first_closes(tmp_path):
    first = LogManager([str(tmp_path / "a"), str(tmp_path / "b")], {}, FakeClock())
    first.load()
    first.create_topic("t", 1)
    first.get_log("t", 0).append(make_batch(3), 0)
    second = LogManager([str(tmp_path / "c"), str(tmp_path / "b")], {}, FakeClock())
    with pytest.raises(LogDirInUseError) as refused:
        second.load()
    assert str(refused.value) == (
        f"Failed to acquire lock on file .lock in {tmp_path / 'b'}. {IN_USE}"
    )
    # the refused start let go of the dir it had locked before meeting the held one
    third = LogManager([str(tmp_path / "c")], {}, FakeClock())
    third.load()
    third.close()
    first.close()
    again = LogManager(
        [str(tmp_path / "c"), str(tmp_path / "b"), str(tmp_path / "a")], {}, FakeClock()
    )
    again.load()
    assert sum(log.log_end_offset for _, log in again.logs()) == 3
    again.close()


def test_a_dir_locked_by_another_process_is_refused_until_that_process_ends(tmp_path):
    """The lock is a POSIX record lock on ``.lock``, the kind the JVM's ``FileChannel.tryLock``
    takes (Kafka's ``FileLock``), so a process that holds it that way keeps a broker out."""
    (tmp_path / ".lock").touch()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.lockf(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
            str(tmp_path / ".lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(LogDirInUseError, match=IN_USE):
            LogManager([str(tmp_path)], {}, FakeClock()).load()
    finally:
        holder.stdin.close()
        holder.wait(10)
    manager = LogManager([str(tmp_path)], {}, FakeClock())
    manager.load()
    manager.close()
