"""Kafka framing: a 4-byte signed size then the body, whatever way the bytes arrive."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wireserver.protocol.errors import FrameTooLarge, NegativeFrameSize
from wireserver.protocol.framing import FrameDecoder, frame

bodies = st.lists(st.binary(max_size=300), max_size=8)


def wire(payloads: list[bytes]) -> bytes:
    return b"".join(frame([p]) for p in payloads)


@given(payloads=bodies)
def test_one_byte_at_a_time(payloads):
    decoder = FrameDecoder()
    out = []
    for byte in wire(payloads):
        out += [bytes(f) for f in decoder.feed(bytes([byte]))]
    assert out == payloads
    assert decoder.buffered == 0


@given(payloads=bodies)
def test_all_at_once(payloads):
    assert [bytes(f) for f in FrameDecoder().feed(wire(payloads))] == payloads


@given(payloads=bodies, cuts=st.lists(st.integers(0, 5000), max_size=10))
@settings(max_examples=200)
def test_any_split(payloads, cuts):
    data = wire(payloads)
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    decoder = FrameDecoder()
    out = []
    for start, end in zip(points, points[1:]):
        out += [bytes(f) for f in decoder.feed(data[start:end])]
    assert out == payloads


def test_negative_size_rejected():
    with pytest.raises(NegativeFrameSize):
        FrameDecoder().feed(struct.pack(">i", -1))


def test_oversized_frame_rejected_before_allocation():
    """The size is refused as soon as its 4 bytes are in, with nothing buffered for it."""
    decoder = FrameDecoder(max_frame_bytes=1024)
    with pytest.raises(FrameTooLarge):
        decoder.feed(struct.pack(">i", 1025)[:2])
        decoder.feed(struct.pack(">i", 1025)[2:])
    assert decoder.buffered < 4


def test_default_limit_is_socket_request_max_bytes():
    decoder = FrameDecoder()
    assert decoder.max_frame_bytes == 104857600
    with pytest.raises(FrameTooLarge):
        decoder.feed(struct.pack(">i", 2**31 - 1))


def test_frame_exactly_at_limit_accepted():
    decoder = FrameDecoder(max_frame_bytes=8)
    assert [bytes(f) for f in decoder.feed(frame([b"12345678"]))] == [b"12345678"]


def test_whole_frame_is_not_copied():
    data = frame([b"abc"]) + frame([b"defg"])
    frames = FrameDecoder().feed(data)
    assert [f.obj is data for f in frames] == [True, True]


def test_a_frame_over_many_reads_is_joined_once_into_a_writable_buffer():
    body = bytes(range(256)) * 1000
    data = frame([body]) + frame([b"next"])
    decoder = FrameDecoder()
    out = []
    for start in range(0, len(data), 65536):
        out += decoder.feed(data[start : start + 65536])
        if not out:
            assert decoder.buffered == min(start + 65536, len(data)) - 4
    assert [bytes(f) for f in out] == [body, b"next"]
    assert isinstance(out[0].obj, bytearray) and not out[0].readonly
    assert decoder.buffered == 0
