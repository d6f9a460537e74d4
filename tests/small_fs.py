"""A real small filesystem for full-disk tests: a tmpfs the test mounts (it runs as root), fills,
grows and unmounts. Nothing is mocked: the errors are the kernel's ENOSPC."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def small_filesystem(path: str | os.PathLike, size: str) -> Iterator[str]:
    """Mount a tmpfs of ``size`` (``"256k"``, ``"8m"``) at ``path`` for the block; unmounted
    after it, whatever happened (lazily, should a broker still hold a file)."""
    where = os.fspath(path)
    os.makedirs(where, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", where], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", where], check=False)


def resize(path: str | os.PathLike, size: str) -> None:
    """Grow (or shrink) the tmpfs mounted at ``path``: the operator freeing space."""
    subprocess.run(["mount", "-o", f"remount,size={size}", os.fspath(path)], check=True)


def fill(directory: str | os.PathLike, leave: int = 0) -> str:
    """Write a filler file in ``directory`` until the filesystem is full, then give back
    ``leave`` bytes (whole pages); returns the filler's path (remove it to free the space)."""
    path = os.path.join(os.fspath(directory), "filler")
    chunk = b"\0" * 65536
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
        if leave:
            os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
    finally:
        os.close(fd)
    return path
