"""Record batch compression codecs: gzip, snappy, lz4, zstd (attributes bits 0-2 of a v2 batch).

``compress(codec, data)`` writes what the Java client writes:

- GZIP: a single gzip member (RFC 1952).
- SNAPPY: the xerial "snappy-java" stream framing -- the 16-byte header ``\\x82SNAPPY\\x00``,
  version 1, compatible version 1 (both big-endian int32), then blocks of
  ``[int32 compressed length][raw snappy block]``, each block at most 32 KiB uncompressed.
- LZ4: the LZ4 frame format with independent blocks (Kafka's Java reader decodes each block
  on its own, with no dictionary from the previous one).
- ZSTD: one zstd frame.

``decompress(codec, data, max_size=...)`` accepts the above, plus raw (unframed) snappy, linked
LZ4 blocks and several gzip members / zstd frames back to back. Before anything large is
allocated it works out an upper bound of the output from the framing alone (snappy's length
preamble, LZ4 and zstd block headers, zlib's ``max_length``) and raises ``CorruptRecordBatch``
when that bound exceeds ``max_size`` (plus one block -- 4 MiB for LZ4, 128 KiB for zstd --
because the bound counts every compressed block as full), then checks the real output size
exactly. A decompression bomb costs at most about ``max_size``. (An LZ4/zstd stream of many
half-empty blocks whose true size is close to ``max_size`` can be refused: the bound is not
exact.)
Every failure, whatever the underlying library raises, comes out as ``CorruptRecordBatch``.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

from wireserver.protocol.errors import CorruptRecordBatch

__all__ = [
    "Codec",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "XERIAL_HEADER",
    "XERIAL_BLOCK_SIZE",
    "compress",
    "decompress",
]


class Codec(IntEnum):
    """The compression codec in bits 0-2 of a v2 batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


DEFAULT_MAX_DECOMPRESSED_SIZE = 2**31 - 1

#: xerial snappy-java stream header: magic, version 1, compatible version 1.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
#: snappy-java's default block size (uncompressed bytes per block).
XERIAL_BLOCK_SIZE = 32 * 1024

GZIP_LEVEL = 6

_INT32 = struct.Struct(">i")
_UINT32_LE = struct.Struct("<I")
_UINT64_LE = struct.Struct("<Q")

LZ4_FRAME_MAGIC = 0x184D2204
ZSTD_FRAME_MAGIC = 0xFD2FB528
_LZ4_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_ZSTD_BLOCK_MAX = 128 * 1024
# The block-header bound counts every compressed block as full; the last one rarely is, so the
# bound may exceed the true size by up to one block. Allow that much, then check exactly.
_LZ4_SLACK = 4 * 1024 * 1024


def _codec(codec: int) -> Codec:
    try:
        return Codec(codec)
    except ValueError:
        raise CorruptRecordBatch(f"unknown compression codec {codec}") from None


def _cramjam():
    """The snappy/lz4/zstd library, imported on first use: its native module is about 1.5 MiB
    of resident memory in a broker that may never see a batch compressed with them."""
    import cramjam

    return cramjam


def compress(codec: int, data: bytes) -> bytes:
    """Compress ``data`` with ``codec`` in the framing the Java client writes."""
    codec = _codec(codec)
    if codec is Codec.NONE:
        return bytes(data)
    if codec is Codec.GZIP:
        c = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec is Codec.SNAPPY:
        view = memoryview(data)
        parts = [XERIAL_HEADER]
        for start in range(0, len(view), XERIAL_BLOCK_SIZE):
            block = bytes(_cramjam().snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE]))
            parts.append(_INT32.pack(len(block)))
            parts.append(block)
        return b"".join(parts)
    if codec is Codec.LZ4:
        c = _cramjam().lz4.Compressor(block_linked=False, content_checksum=False)
        c.compress(bytes(data))
        return bytes(c.finish())
    # ZSTD
    return bytes(_cramjam().zstd.compress(bytes(data), level=3))


def decompress(codec: int, data, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress ``data``; ``CorruptRecordBatch`` on an unknown codec, corrupt input, or an
    output that would exceed ``max_size`` bytes."""
    codec = _codec(codec)
    if codec is Codec.NONE:
        if len(data) > max_size:
            raise CorruptRecordBatch(f"uncompressed data exceeds {max_size} bytes")
        return bytes(data)
    try:
        if codec is Codec.GZIP:
            return _gunzip(data, max_size)
        if codec is Codec.SNAPPY:
            return _unsnappy(data, max_size)
        if codec is Codec.LZ4:
            _check_bound(_lz4_bound(data), max_size + _LZ4_SLACK, "lz4")
            out = bytes(_cramjam().lz4.decompress(bytes(data)))
        else:
            _check_bound(_zstd_bound(data), max_size + _ZSTD_BLOCK_MAX, "zstd")
            out = bytes(_cramjam().zstd.decompress(bytes(data)))
    except CorruptRecordBatch:
        raise
    except Exception as e:  # cramjam.DecompressionError, zlib.error, struct.error, ...
        raise CorruptRecordBatch(f"corrupt {codec.name.lower()} data: {e}") from None
    if len(out) > max_size:
        raise CorruptRecordBatch(f"{codec.name.lower()} output exceeds {max_size} bytes")
    return out


def _check_bound(bound: int, max_size: int, name: str) -> None:
    if bound > max_size:
        raise CorruptRecordBatch(f"{name} data would decompress to more than {max_size} bytes")


def _gunzip(data, max_size: int) -> bytes:
    out = bytearray()
    rest = bytes(data)
    if not rest:
        raise CorruptRecordBatch("empty gzip data")
    while rest:
        d = zlib.decompressobj(31)
        room = max_size - len(out)
        out += d.decompress(rest, room + 1)
        if len(out) > max_size:
            raise CorruptRecordBatch(f"gzip output exceeds {max_size} bytes")
        if not d.eof:
            if d.unconsumed_tail:
                raise CorruptRecordBatch(f"gzip output exceeds {max_size} bytes")
            raise CorruptRecordBatch("truncated gzip data")
        rest = d.unused_data
    return bytes(out)


def _unsnappy(data, max_size: int) -> bytes:
    view = memoryview(data)
    if len(view) >= len(XERIAL_HEADER) and view[: len(XERIAL_MAGIC)] == XERIAL_MAGIC:
        # Version and compat are ignored, as Kafka's Java reader does: some producers write
        # them little-endian.
        parts = []
        total = 0
        pos = len(XERIAL_HEADER)
        end = len(view)
        while pos < end:
            if end - pos < 4:
                raise CorruptRecordBatch("truncated xerial snappy block length")
            (n,) = _INT32.unpack_from(view, pos)
            pos += 4
            if n < 0 or n > end - pos:
                raise CorruptRecordBatch(f"bad xerial snappy block length {n}")
            block = bytes(view[pos : pos + n])
            pos += n
            total += _cramjam().snappy.decompress_raw_len(block)
            _check_bound(total, max_size, "snappy")
            parts.append(bytes(_cramjam().snappy.decompress_raw(block)))
        return b"".join(parts)
    raw = bytes(view)
    _check_bound(_cramjam().snappy.decompress_raw_len(raw), max_size, "snappy")
    return bytes(_cramjam().snappy.decompress_raw(raw))


def _lz4_bound(data) -> int:
    """Upper bound of an LZ4 frame sequence's output, from its block headers alone."""
    view = memoryview(data)
    end = len(view)
    pos = 0
    bound = 0
    if end == 0:
        raise CorruptRecordBatch("empty lz4 data")
    while pos < end:
        if end - pos < 7:
            raise CorruptRecordBatch("truncated lz4 frame header")
        (magic,) = _UINT32_LE.unpack_from(view, pos)
        if 0x184D2A50 <= magic <= 0x184D2A5F:  # skippable frame
            if end - pos < 8:
                raise CorruptRecordBatch("truncated lz4 skippable frame")
            (n,) = _UINT32_LE.unpack_from(view, pos + 4)
            pos += 8 + n
            continue
        if magic != LZ4_FRAME_MAGIC:
            raise CorruptRecordBatch("bad lz4 frame magic")
        flg = view[pos + 4]
        bd = view[pos + 5]
        if flg >> 6 != 1:
            raise CorruptRecordBatch("unsupported lz4 frame version")
        block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 7)
        if block_max is None:
            raise CorruptRecordBatch("bad lz4 block maximum size")
        block_checksum = 4 if flg & 0x10 else 0
        pos += 6
        if flg & 0x08:  # content size present
            if end - pos < 9:
                raise CorruptRecordBatch("truncated lz4 frame header")
            pos += 8
        if flg & 0x01:  # dictionary id
            pos += 4
        pos += 1  # header checksum
        while True:
            if end - pos < 4:
                raise CorruptRecordBatch("truncated lz4 block")
            (n,) = _UINT32_LE.unpack_from(view, pos)
            pos += 4
            if n == 0:
                break
            size = n & 0x7FFFFFFF
            bound += size if n & 0x80000000 else block_max
            pos += size + block_checksum
            if pos > end:
                raise CorruptRecordBatch("truncated lz4 block")
        if flg & 0x04:  # content checksum
            pos += 4
    if pos > end:
        raise CorruptRecordBatch("truncated lz4 frame")
    return bound


_ZSTD_FCS_SIZE = (0, 2, 4, 8)
_ZSTD_DID_SIZE = (0, 1, 2, 4)


def _zstd_bound(data) -> int:
    """Upper bound of a zstd frame sequence's output, from its block headers alone."""
    view = memoryview(data)
    end = len(view)
    pos = 0
    bound = 0
    if end == 0:
        raise CorruptRecordBatch("empty zstd data")
    while pos < end:
        if end - pos < 5:
            raise CorruptRecordBatch("truncated zstd frame header")
        (magic,) = _UINT32_LE.unpack_from(view, pos)
        if 0x184D2A50 <= magic <= 0x184D2A5F:  # skippable frame
            if end - pos < 8:
                raise CorruptRecordBatch("truncated zstd skippable frame")
            (n,) = _UINT32_LE.unpack_from(view, pos + 4)
            pos += 8 + n
            continue
        if magic != ZSTD_FRAME_MAGIC:
            raise CorruptRecordBatch("bad zstd frame magic")
        fhd = view[pos + 4]
        pos += 5
        single_segment = fhd & 0x20
        fcs_size = _ZSTD_FCS_SIZE[fhd >> 6]
        if fcs_size == 0 and single_segment:
            fcs_size = 1
        pos += (0 if single_segment else 1) + _ZSTD_DID_SIZE[fhd & 3]
        if end - pos < fcs_size:
            raise CorruptRecordBatch("truncated zstd frame header")
        content_size = None
        if fcs_size:
            content_size = int.from_bytes(view[pos : pos + fcs_size], "little")
            if fcs_size == 2:
                content_size += 256
        pos += fcs_size
        frame_bound = 0
        while True:
            if end - pos < 3:
                raise CorruptRecordBatch("truncated zstd block header")
            header = view[pos] | (view[pos + 1] << 8) | (view[pos + 2] << 16)
            pos += 3
            last = header & 1
            kind = (header >> 1) & 3
            size = header >> 3
            if kind == 0:  # raw
                frame_bound += size
                pos += size
            elif kind == 1:  # RLE: one byte repeated `size` times
                frame_bound += size
                pos += 1
            elif kind == 2:
                frame_bound += _ZSTD_BLOCK_MAX
                pos += size
            else:
                raise CorruptRecordBatch("reserved zstd block type")
            if pos > end:
                raise CorruptRecordBatch("truncated zstd block")
            if last:
                break
        if fhd & 0x04:
            pos += 4
        if content_size is not None:
            frame_bound = min(frame_bound, content_size)
        bound += frame_bound
    if pos > end:
        raise CorruptRecordBatch("truncated zstd frame")
    return bound
