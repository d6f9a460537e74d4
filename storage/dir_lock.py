"""The ``.lock`` file that keeps a second broker out of a log dir (Kafka's
``LogManager.lockLogDirs``).

Two brokers on one log dir would each recover, truncate, clean and checkpoint logs the other is
writing. A start beside a broker left running gets there: one that never received the signal
meant to stop it, or a restart begun before the old process has finished its clean stop (which
syncs every dirty page first). So a broker locks each of its log dirs before it reads a log
there, and a start that finds one locked fails with Kafka's message.

The lock is a POSIX record lock (``fcntl.lockf``), the kind the JVM's ``FileChannel.tryLock``
takes, so that a Kafka broker and wireserver refuse each other's dirs too. Such a lock does not
exclude its own process, so the dirs locked in this process are also kept in a set: brokers
run in threads of one process (``wireserver.testing``) are refused the same way. Closing the
descriptor, or the process ending however it ends, releases the lock.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading

LOCK_FILE = ".lock"

_held: set[str] = set()  # real paths of the dirs this process has locked
_guard = threading.Lock()


class LogDirInUseError(RuntimeError):
    """The log dir is locked by another broker, in another process or in this one."""


class LogDirLock:
    """The lock of one log dir, held from ``acquire`` to ``release``."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._key = os.path.realpath(directory)
        self._fd: int | None = None

    def acquire(self) -> None:
        """Lock the dir (creating its ``.lock`` file), or raise LogDirInUseError."""
        with _guard:
            if self._fd is not None:
                return
            if self._key in _held:
                raise self._refused()
            fd = os.open(os.path.join(self.directory, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno in (errno.EACCES, errno.EAGAIN):
                    raise self._refused() from None
                raise
            _held.add(self._key)
            self._fd = fd

    def _refused(self) -> LogDirInUseError:
        """Kafka's words for it (``LogManager.lockLogDirs``)."""
        return LogDirInUseError(
            f"Failed to acquire lock on file {LOCK_FILE} in {self.directory}. A Kafka instance "
            "in another process or thread is using this directory."
        )

    def release(self) -> None:
        with _guard:
            if self._fd is None:
                return
            os.close(self._fd)
            self._fd = None
            _held.discard(self._key)
