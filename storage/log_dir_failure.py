"""Kafka's ``LogDirFailureChannel``: the one place every write path of a log dir reports an
I/O error to (``OSError``: ENOSPC, EIO, EMFILE...).

The first error in a dir marks it offline for good (until the broker restarts) and tells the
listeners once (the broker: its partitions there stop being served and, with every dir offline,
it halts, as Kafka's ``ReplicaManager.handleLogDirFailure``). Every later operation on a log of
that dir raises ``KafkaStorageError`` before touching the disk, so nothing is written after the
failure and nothing half-written is acknowledged. Listeners may be called on any thread (a
flush runs on a worker thread).

Running out of descriptors (EMFILE, ENFILE) is the one exception: it says nothing about the
disk, happens only when a file is opened (before anything is written to it), and passes once
connections or files are closed. The operation fails with ``KafkaStorageError`` and the dir
stays online; Kafka takes the dir offline for it as for any ``IOException``
(docs/compatibility.md).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

from wireserver.storage.errors import KafkaStorageError

logger = logging.getLogger(__name__)

#: Errors of the process, not of the dir: the dir stays online.
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


def out_of_descriptors(error: BaseException) -> bool:
    """Whether ``error`` (a ``KafkaStorageError`` or its cause) is EMFILE or ENFILE."""
    cause = error if isinstance(error, OSError) else error.__cause__
    return getattr(cause, "errno", None) in OUT_OF_DESCRIPTORS


class LogDirFailureChannel:
    def __init__(self) -> None:
        #: dir -> the message of its first error; read it, never write it (``fail`` does), and
        #: never rebind it: a partition's check on every Fetch reads it directly
        self.offline_dirs: dict[str, str] = {}
        self._lock = threading.Lock()
        self.listeners: list[Callable[[str], None]] = []
        # Called (on the failing thread) when an operation ran out of descriptors: the
        # descriptor pool sheds idle files so that the next attempt finds some.
        self.out_of_descriptors_listeners: list[Callable[[], object]] = []

    def is_offline(self, log_dir: str) -> bool:
        return log_dir in self.offline_dirs

    def check(self, log_dir: str) -> None:
        """Raise ``KafkaStorageError`` if ``log_dir`` is offline (Kafka's wording)."""
        if log_dir in self.offline_dirs:
            raise KafkaStorageError(
                f"The log dir {log_dir} is already offline due to a previous IO exception.",
                log_dir,
            )

    def fail(self, log_dir: str, message: str, exc: BaseException) -> KafkaStorageError:
        """Log ``message`` with ``exc``, mark ``log_dir`` offline (telling the listeners the
        first time) and return the error to raise."""
        logger.error("%s", message, exc_info=exc)
        if getattr(exc, "errno", None) in OUT_OF_DESCRIPTORS:
            for shed in list(self.out_of_descriptors_listeners):
                shed()
            return KafkaStorageError(f"{message}: {os.strerror(exc.errno)}", log_dir)
        with self._lock:
            first = log_dir not in self.offline_dirs
            if first:
                self.offline_dirs[log_dir] = message
        if first:
            for listener in list(self.listeners):
                listener(log_dir)
        return KafkaStorageError(message, log_dir)

    def raise_failure(self, log_dir: str, message: str, exc: BaseException) -> NoReturn:
        """``fail``, then raise its error with ``exc`` as the cause. Raised here, in a module
        the compiled build leaves interpreted: ``raise ... from exc`` in a mypyc-compiled
        ``Log`` method left ``__cause__`` unset."""
        raise self.fail(log_dir, message, exc) from exc

    @contextmanager
    def guard(self, log_dir: str, message: str) -> Iterator[None]:
        """Kafka's ``maybeHandleIOException``: refuse when ``log_dir`` is offline; an
        ``OSError`` inside is reported (``fail``) and raised as ``KafkaStorageError``."""
        self.check(log_dir)
        try:
            yield
        except OSError as exc:
            raise self.fail(log_dir, message, exc) from exc
