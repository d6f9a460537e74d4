"""Kafka's framing: every request and response is a 4-byte signed big-endian size, then that
many bytes.

``FrameDecoder`` is incremental: feed it whatever the socket gave, in any split, and it hands
back each complete frame. The size is checked before anything is allocated for the frame, so a
hostile prefix cannot make us reserve 2 GiB.
"""

from __future__ import annotations

import struct

from wireserver.protocol.errors import FrameTooLarge, NegativeFrameSize

SIZE = struct.Struct(">i")
DEFAULT_MAX_FRAME_BYTES = 104857600  # socket.request.max.bytes


class FrameDecoder:
    """Split a byte stream into frames.

    ``feed(data)`` returns a list of frame bodies (without the size prefix). A body that arrived
    whole within one call is a ``memoryview`` over the bytes given to ``feed`` (no copy). A body
    spread over several calls is kept as references to the pieces until its last byte arrives
    and then joined once into a ``bytearray``: one copy, however many reads it took, and a
    writable buffer, so a produce request's batches can be stamped with their offsets in place
    and written to the log without another copy.
    """

    __slots__ = ("max_frame_bytes", "_prefix", "_need", "_pieces", "_have")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        self.max_frame_bytes = max_frame_bytes
        self._prefix = bytearray()  # bytes of a size prefix split across calls
        self._need = -1  # body size of the frame in progress, -1 while reading its prefix
        self._pieces: list[memoryview] = []  # parts of the body in progress
        self._have = 0  # bytes in self._pieces

    @property
    def buffered(self) -> int:
        """Bytes held for a frame that has not arrived whole yet."""
        return len(self._prefix) + self._have

    def _check(self, size: int) -> int:
        if size < 0:
            raise NegativeFrameSize(f"negative frame size {size}")
        if size > self.max_frame_bytes:
            raise FrameTooLarge(
                f"frame of {size} bytes exceeds socket.request.max.bytes={self.max_frame_bytes}"
            )
        return size

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        frames: list[memoryview] = []
        view = memoryview(data)
        pos = 0
        end = len(view)
        prefix = self._prefix
        while pos < end:
            if self._need < 0:
                # Reading a size prefix, possibly split across calls.
                if not prefix and end - pos >= 4:
                    self._need = self._check(SIZE.unpack_from(view, pos)[0])
                    pos += 4
                else:
                    take = min(4 - len(prefix), end - pos)
                    prefix += view[pos : pos + take]
                    pos += take
                    if len(prefix) < 4:
                        break
                    size = SIZE.unpack_from(prefix, 0)[0]
                    prefix.clear()
                    self._need = self._check(size)
            # Reading a body of self._need bytes.
            if not self._pieces and end - pos >= self._need:
                frames.append(view[pos : pos + self._need])
                pos += self._need
                self._need = -1
                continue
            take = min(self._need - self._have, end - pos)
            self._pieces.append(view[pos : pos + take])
            self._have += take
            pos += take
            if self._have == self._need:
                frames.append(memoryview(bytearray().join(self._pieces)))
                self._pieces = []
                self._have = 0
                self._need = -1
        return frames


def frame(payload_parts: list[bytes]) -> bytes:
    """Prefix the concatenation of ``payload_parts`` with its size."""
    size = sum(len(part) for part in payload_parts)
    return SIZE.pack(size) + b"".join(payload_parts)


_SIZE_AND_CORRELATION = struct.Struct(">ii")


def response_head(body_size: int, correlation_id: int, header_version: int) -> bytes:
    """The size prefix and response header (v0: the correlation id; v1: and no tagged fields)
    of a response whose body is ``body_size`` bytes. Written here: kafka-python's header
    encoder took as long as encoding a small response's body."""
    if header_version == 0:
        return _SIZE_AND_CORRELATION.pack(body_size + 4, correlation_id)
    return _SIZE_AND_CORRELATION.pack(body_size + 5, correlation_id) + b"\x00"
