"""Record batches that are still in segment files: what a Fetch sends with ``os.sendfile``.

``Log.read(..., zero_copy=True)`` answers with a ``FileRecords`` instead of bytes when a
stretch of a segment is large enough for the copy to matter. Each ``FileRegion`` holds its own
duplicate of the segment's descriptor, so a segment that retention deletes (or closes) between
the read and the send still yields the bytes that were read, as a pread would have. Whoever
ends up with a ``FileRecords`` sends or reads it and then closes it; an unsent one closes its
descriptors when it is garbage collected.

Storage knows nothing of sockets: the sending side is ``wireserver.zero_copy``.
"""

from __future__ import annotations

import os

#: At most this many descriptors are held by unsent regions at once; past that, reads fall back
#: to memory (``FileRegion.available``), so many slow consumers cannot exhaust the process's
#: file descriptors.
MAX_OPEN_REGIONS = 512


class FileRegion:
    """``length`` bytes at ``position`` of an open file (a private descriptor)."""

    __slots__ = ("fd", "position", "length")
    open_count = 0  # regions whose descriptor is still open, process-wide

    def __init__(self, fd: int, position: int, length: int):
        self.fd = os.dup(fd)
        FileRegion.open_count += 1
        self.position = position
        self.length = length

    @staticmethod
    def available() -> bool:
        """Whether another region may hold a descriptor (``MAX_OPEN_REGIONS``)."""
        return FileRegion.open_count < MAX_OPEN_REGIONS

    def read(self) -> bytes:
        out = os.pread(self.fd, self.length, self.position)
        if len(out) != self.length:
            raise OSError(f"short read of a file region ({len(out)} of {self.length} bytes)")
        return out

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            FileRegion.open_count -= 1

    def __del__(self) -> None:
        self.close()


class FileRecords:
    """Whole batches as a sequence of parts, each ``bytes`` or a ``FileRegion``."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list):
        self.parts = parts
        self.size = sum(len(part) if isinstance(part, bytes) else part.length for part in parts)

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(part if isinstance(part, bytes) else part.read() for part in self.parts)

    def close(self) -> None:
        for part in self.parts:
            if not isinstance(part, bytes):
                part.close()

    def __repr__(self) -> str:
        return f"FileRecords({self.size} bytes in {len(self.parts)} parts)"
