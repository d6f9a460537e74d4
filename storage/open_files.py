"""A cap on the file descriptors a broker's segment files hold.

One descriptor per file for as long as the segment lives means at least three per partition
(``.log``, ``.index``, ``.timeindex``): a broker with a few thousand partitions reaches the
process's open-files limit, and then a CreateTopics, a roll or an accepted connection fails with
EMFILE. Kafka keeps only the ``.log`` channels open and maps indexes when they are first used;
here every segment file is a ``PooledFile`` whose descriptor is opened on first use and closed
again, least recently used first, once its ``OpenFiles`` pool holds ``capacity`` of them. An
open that still meets EMFILE or ENFILE (sockets took the rest) closes idle pooled descriptors
and tries again before giving up.

Threads. Reads and writes run on the log's owner thread (the reactor), and only there are
descriptors closed to make room. The flush thread fsyncs through ``PooledFile.fsync``, which
pins the file while it works: a pinned descriptor is never closed to make room, and opening one
for a pin never closes another. The log cleaner's thread reads duplicated descriptors and writes
its new segments with unpooled files (``pool=None``), so it never closes anything either.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

#: The smallest pool: enough for a few partitions' active segments at any limit.
MIN_CAPACITY = 64
#: Descriptors held in reserve (on /dev/null) and let go only to clean up after running out:
#: removing a half-made partition directory needs two (the directory and its listing).
RESERVE = 2
_EXHAUSTED = (errno.EMFILE, errno.ENFILE)


def default_capacity() -> int:
    """Half the process's soft open-files limit: the other half is for sockets, snapshots
    and checkpoints."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(MIN_CAPACITY, soft // 2)


class OpenFiles:
    """The pool: which ``PooledFile``s hold a descriptor, least recently used first."""

    def __init__(self, capacity: int | None = None):
        self.capacity = default_capacity() if capacity is None else max(1, capacity)
        self._open: OrderedDict[PooledFile, None] = OrderedDict()
        self._lock = threading.Lock()
        self._owner: int | None = None  # the thread that reads and writes (closes for room)
        self._shed_pending = False
        self.opened = 0  # descriptors opened, for tests and metrics
        self.closed_for_room = 0  # of which closed again to make room
        self._reserve: list[int] = []
        self._hold_reserve()

    def _hold_reserve(self) -> None:
        try:
            while len(self._reserve) < RESERVE:
                self._reserve.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass  # still out of descriptors: taken again after the next cleanup

    @contextmanager
    def reserve(self) -> Iterator[None]:
        """Let the reserved descriptors go while cleaning up after running out of them."""
        while self._reserve:
            os.close(self._reserve.pop())
        try:
            yield
        finally:
            self._hold_reserve()

    def close(self) -> None:
        """Close every pooled descriptor and the reserve (the broker is stopping)."""
        with self._lock:
            while self._open:
                file, _ = self._open.popitem(last=False)
                fd, file._fd = file._fd, None
                if fd is not None:
                    os.close(fd)
        while self._reserve:
            os.close(self._reserve.pop())

    def __len__(self) -> int:
        return len(self._open)

    def acquire(self, file: PooledFile, *, make_room: bool = True, pin: bool = False) -> int:
        """``file``'s descriptor, opened if needed and marked most recently used. With
        ``pin`` it stays open until ``unpin``, and nothing is closed to open it: for threads
        other than the owner."""
        with self._lock:
            if file.closed:
                raise ValueError(f"{file.path} is closed")
            if pin:
                make_room = False
                file.pins += 1
            fd = file._fd
            if fd is not None:
                self._open.move_to_end(file)
                return fd
            if make_room:
                self._owner = threading.get_ident()
                if self._shed_pending:
                    self._shed()
                while len(self._open) >= self.capacity and self._close_idle():
                    pass
            while True:
                try:
                    fd = os.open(file.path, file.flags, 0o644)
                    break
                except OSError as exc:
                    if exc.errno not in _EXHAUSTED or not make_room or not self._shed():
                        if pin:
                            file.pins -= 1
                        raise
            file._fd = fd
            self._open[file] = None
            self.opened += 1
            return fd

    def _close_idle(self) -> bool:
        """Close the least recently used descriptor no thread has pinned (lock held)."""
        for file in self._open:
            if not file.pins:
                del self._open[file]
                fd, file._fd = file._fd, None
                if fd is not None:
                    os.close(fd)
                self.closed_for_room += 1
                return True
        return False

    def unpin(self, file: PooledFile) -> None:
        with self._lock:
            file.pins -= 1

    def shed(self) -> int:
        """The process ran out of descriptors: close half the idle ones and lower the
        capacity to what is left open, so that the other half stays free for sockets and the
        files opened outside the pool (checkpoints, snapshots). On the owner thread. Returns
        how many were closed."""
        with self._lock:
            if threading.get_ident() != self._owner:
                self._shed_pending = True  # the owner thread sheds at its next open
                return 0
            return self._shed()

    def _shed(self) -> int:
        self._shed_pending = False
        closed = 0
        target = max(1, len(self._open) // 2)
        while closed < target and self._close_idle():
            closed += 1
        self.capacity = max(1, min(self.capacity, len(self._open)))
        return closed

    def release(self, file: PooledFile) -> None:
        """Close ``file``'s descriptor (the file itself is closed or deleted)."""
        with self._lock:
            file.closed = True
            self._open.pop(file, None)
            fd, file._fd = file._fd, None
        if fd is not None:
            os.close(fd)


class PooledFile:
    """One file of a segment, opened on demand. With ``pool=None`` the descriptor, once
    opened, stays open until ``close`` (the cleaner's files, files of tests)."""

    __slots__ = ("path", "flags", "pool", "_fd", "pins", "dirty", "closed")

    def __init__(self, path: str, pool: OpenFiles | None, flags: int = os.O_RDWR | os.O_CREAT):
        self.path = path
        self.flags = flags
        self.pool = pool
        self._fd: int | None = None
        self.pins = 0
        self.dirty = False  # written since the last fsync
        self.closed = False  # for good: a closed file is never opened (created) again

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    @property
    def fd(self) -> int:
        """The descriptor, for the owner thread to use at once (``os.dup`` it to keep it)."""
        if self.pool is not None:
            return self.pool.acquire(self)
        if self._fd is None:
            if self.closed:
                raise ValueError(f"{self.path} is closed")
            self._fd = os.open(self.path, self.flags, 0o644)
        return self._fd

    @contextmanager
    def _pinned_fd(self) -> Iterator[int]:
        """The descriptor, pinned while the block runs, for use from any thread: the pool
        closes no pinned descriptor to make room, and opening one for a pin closes none."""
        if self.pool is None:
            yield self.fd
            return
        fd = self.pool.acquire(self, pin=True)
        try:
            yield fd
        finally:
            self.pool.unpin(self)

    def pread(self, length: int, position: int) -> bytes:
        return os.pread(self.fd, length, position)

    def pwrite(self, data, position: int) -> int:
        self.dirty = True
        return os.pwrite(self.fd, data, position)

    def pwrite_any_thread(self, data, position: int) -> int:
        """``pwrite`` from any thread: the file is pinned while it writes, as ``fsync``
        does, so nothing is closed to open it and no other thread closes it meanwhile."""
        self.dirty = True
        with self._pinned_fd() as fd:
            return os.pwrite(fd, data, position)

    def truncate(self, length: int) -> None:
        self.dirty = True
        os.ftruncate(self.fd, length)

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def fsync(self, *, force: bool = False) -> None:
        """fsync what was written since the last fsync (``force``: whatever is in the page
        cache, as after a crash); safe on any thread. A descriptor closed to make room lost
        nothing: the file's dirty pages are synced through a new one."""
        if not (self.dirty or force):
            return
        self.dirty = False  # cleared first: a write racing with the fsync sets it again
        try:
            with self._pinned_fd() as fd:
                os.fsync(fd)
        except BaseException:
            self.dirty = True
            raise

    def close(self) -> None:
        if self.pool is not None:
            self.pool.release(self)
            return
        self.closed = True
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
