"""Kafka's framing: every request and response is a 4-byte signed big-endian size, then that
many bytes.

``FrameDecoder`` is incremental: feed it whatever the socket gave, in any split, and it hands
back each complete frame. The size is checked before anything is allocated for the frame, so a
hostile prefix cannot make us reserve 2 GiB.
"""

from __future__ import annotations

import struct

from protocol.errors import FrameTooLarge, NegativeFrameSize

SIZE = struct.Struct(">i")
DEFAULT_MAX_FRAME_BYTES = 104857600  # socket.request.max.bytes


class FrameDecoder:
    """Split a byte stream into frames.

    ``feed(data)`` returns a list of frame bodies (without the size prefix). A body is a
    ``memoryview`` over the bytes given to ``feed`` when the frame arrived whole within one
    call (no copy), or over a ``bytearray`` assembled from several calls.
    """

    __slots__ = ("max_frame_bytes", "_pending", "_need")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        self.max_frame_bytes = max_frame_bytes
        self._pending = bytearray()  # bytes of an incomplete size prefix or frame
        self._need = -1  # body size of the frame in progress, -1 while reading its prefix

    @property
    def buffered(self) -> int:
        """Bytes held for a frame that has not arrived whole yet."""
        return len(self._pending)

    def _check(self, size: int) -> int:
        if size < 0:
            raise NegativeFrameSize(f"negative frame size {size}")
        if size > self.max_frame_bytes:
            raise FrameTooLarge(
                f"frame of {size} bytes exceeds socket.request.max.bytes={self.max_frame_bytes}")
        return size

    def feed(self, data: bytes) -> list[memoryview]:
        frames: list[memoryview] = []
        view = memoryview(data)
        pos = 0
        end = len(view)
        pending = self._pending
        while pos < end:
            if self._need < 0:
                # Reading a size prefix, possibly split across calls.
                if not pending and end - pos >= 4:
                    self._need = self._check(SIZE.unpack_from(view, pos)[0])
                    pos += 4
                else:
                    take = min(4 - len(pending), end - pos)
                    pending += view[pos:pos + take]
                    pos += take
                    if len(pending) < 4:
                        break
                    size = SIZE.unpack_from(pending, 0)[0]
                    pending.clear()
                    self._need = self._check(size)
            # Reading a body of self._need bytes.
            if not pending and end - pos >= self._need:
                frames.append(view[pos:pos + self._need])
                pos += self._need
                self._need = -1
                continue
            take = min(self._need - len(pending), end - pos)
            pending += view[pos:pos + take]
            pos += take
            if len(pending) == self._need:
                frames.append(memoryview(bytes(pending)))
                pending.clear()
                self._need = -1
        return frames


def frame(payload_parts: list[bytes]) -> bytes:
    """Prefix the concatenation of ``payload_parts`` with its size."""
    size = sum(len(part) for part in payload_parts)
    return SIZE.pack(size) + b"".join(payload_parts)
