"""Kafka's ``LogDirFailureChannel``: the one place every write path of a log dir reports an
I/O error to (``OSError``: ENOSPC, EIO, EMFILE...).

The first error in a dir marks it offline for good (until the broker restarts) and tells the
listeners once (the broker: its partitions there stop being served and, with every dir offline,
it halts, as Kafka's ``ReplicaManager.handleLogDirFailure``). Every later operation on a log of
that dir raises ``KafkaStorageError`` before touching the disk, so nothing is written after the
failure and nothing half-written is acknowledged. Listeners may be called on any thread (a
flush runs on a worker thread).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from wireserver.storage.errors import KafkaStorageError

logger = logging.getLogger(__name__)


class LogDirFailureChannel:
    def __init__(self) -> None:
        self._offline: dict[str, str] = {}  # dir -> the message of its first error
        self._lock = threading.Lock()
        self.listeners: list[Callable[[str], None]] = []

    def is_offline(self, log_dir: str) -> bool:
        return log_dir in self._offline

    def check(self, log_dir: str) -> None:
        """Raise ``KafkaStorageError`` if ``log_dir`` is offline (Kafka's wording)."""
        if log_dir in self._offline:
            raise KafkaStorageError(
                f"The log dir {log_dir} is already offline due to a previous IO exception.",
                log_dir,
            )

    def fail(self, log_dir: str, message: str, exc: BaseException) -> KafkaStorageError:
        """Log ``message`` with ``exc``, mark ``log_dir`` offline (telling the listeners the
        first time) and return the error to raise."""
        logger.error("%s", message, exc_info=exc)
        with self._lock:
            first = log_dir not in self._offline
            if first:
                self._offline[log_dir] = message
        if first:
            for listener in list(self.listeners):
                listener(log_dir)
        return KafkaStorageError(message, log_dir)

    @contextmanager
    def guard(self, log_dir: str, message: str) -> Iterator[None]:
        """Kafka's ``maybeHandleIOException``: refuse when ``log_dir`` is offline; an
        ``OSError`` inside is reported (``fail``) and raised as ``KafkaStorageError``."""
        self.check(log_dir)
        try:
            yield
        except OSError as exc:
            raise self.fail(log_dir, message, exc) from exc
