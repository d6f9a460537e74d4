from __future__ import annotations

import gzip
import os
import struct
import zlib

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wireserver.protocol.compression import (
    XERIAL_BLOCK_SIZE,
    XERIAL_HEADER,
    Codec,
    compress,
    decompress,
)
from wireserver.protocol.errors import CorruptRecordBatch, DecodeError

SAMPLES = [
    b"",
    b"a",
    b"hello world " * 10,
    os.urandom(5000),
    b"x" * (3 * XERIAL_BLOCK_SIZE + 17),
    bytes(range(256)) * 1000,
]


@pytest.mark.parametrize("codec", list(Codec))
@pytest.mark.parametrize("data", SAMPLES, ids=lambda d: f"{len(d)}B")
def test_round_trip(codec, data):
    assert decompress(codec, compress(codec, data)) == data


@settings(max_examples=50, deadline=None)
@given(codec=st.sampled_from(list(Codec)), data=st.binary(max_size=3000))
def test_round_trip_property(codec, data):
    assert decompress(codec, compress(codec, data)) == data


def test_snappy_writes_xerial_framing():
    data = b"0123456789" * 10000  # several 32 KiB blocks
    out = compress(Codec.SNAPPY, data)
    assert out[:8] == b"\x82SNAPPY\x00"
    assert out[8:16] == struct.pack(">ii", 1, 1)
    assert XERIAL_HEADER == out[:16]
    pos = 16
    pieces = []
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        pos += 4
        pieces.append(bytes(cramjam.snappy.decompress_raw(out[pos : pos + n])))
        pos += n
    assert pos == len(out)
    assert len(pieces) == -(-len(data) // XERIAL_BLOCK_SIZE)
    assert all(len(p) == XERIAL_BLOCK_SIZE for p in pieces[:-1])
    assert b"".join(pieces) == data


def test_snappy_reads_raw_snappy():
    data = b"raw snappy without framing " * 50
    assert decompress(Codec.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_snappy_reads_xerial_with_little_endian_version():
    data = b"some producers write version/compat little-endian" * 20
    block = bytes(cramjam.snappy.compress_raw(data))
    framed = b"\x82SNAPPY\x00" + struct.pack("<ii", 1, 1) + struct.pack(">i", len(block)) + block
    assert decompress(Codec.SNAPPY, framed) == data


def test_snappy_header_only_is_empty():
    assert decompress(Codec.SNAPPY, XERIAL_HEADER) == b""


def test_gzip_is_stdlib_compatible():
    data = b"gzip me " * 100
    assert gzip.decompress(compress(Codec.GZIP, data)) == data
    assert decompress(Codec.GZIP, gzip.compress(data)) == data
    # Several gzip members back to back read as one stream, as Java's GZIPInputStream does.
    assert decompress(Codec.GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_lz4_writes_independent_blocks():
    out = compress(Codec.LZ4, os.urandom(300_000))
    assert out[:4] == b"\x04\x22\x4d\x18"
    flg = out[4]
    assert flg >> 6 == 1  # version 01
    assert flg & 0x20  # block independence: Kafka's Java reader requires it


def test_lz4_reads_linked_blocks():
    data = b"linked lz4 blocks " * 20000
    assert decompress(Codec.LZ4, bytes(cramjam.lz4.compress(data))) == data


def test_zstd_reads_frames_without_content_size():
    data = b"streamed zstd " * 30000
    c = cramjam.zstd.Compressor()
    c.compress(data)
    framed = bytes(c.finish())
    assert decompress(Codec.ZSTD, framed) == data


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
@pytest.mark.parametrize(
    "garbage",
    [b"", b"\x00", b"not compressed at all", b"\xff" * 64, os.urandom(200)],
    ids=["empty", "zero", "text", "ff", "random"],
)
def test_corrupt_input_raises_corrupt_record_batch(codec, garbage):
    if codec is Codec.SNAPPY and garbage in (b"", b"\x00"):
        # b"\x00" is a valid raw snappy block of length 0; b"" may go either way.
        try:
            assert decompress(codec, garbage) == b""
        except CorruptRecordBatch:
            pass
        return
    with pytest.raises(CorruptRecordBatch):
        decompress(codec, garbage)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_truncated_input_raises(codec):
    data = compress(codec, os.urandom(2000) + b"z" * 5000)
    for cut in (1, len(data) // 2, len(data) - 1):
        with pytest.raises(DecodeError):
            decompress(codec, data[:cut])


@pytest.mark.parametrize("codec", [5, 6, 7, -1, 99])
def test_unknown_codec(codec):
    with pytest.raises(CorruptRecordBatch):
        decompress(codec, b"abc")
    with pytest.raises(CorruptRecordBatch):
        compress(codec, b"abc")


@pytest.mark.parametrize("codec", list(Codec))
def test_bomb_guard(codec):
    data = b"\x00" * 1_000_000
    packed = compress(codec, data)
    assert decompress(codec, packed, max_size=len(data)) == data
    with pytest.raises(CorruptRecordBatch):
        decompress(codec, packed, max_size=100_000)


def test_gzip_bomb_stops_early():
    """A gzip bomb is refused after max_size + 1 bytes, not inflated in full."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\x00" * (1 << 20)
    bomb = b"".join(c.compress(chunk) for _ in range(256)) + c.flush()  # 256 MiB of zeros
    with pytest.raises(CorruptRecordBatch):
        decompress(Codec.GZIP, bomb, max_size=1 << 20)
