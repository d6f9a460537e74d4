"""Random, truncated and bit-flipped request frames end in a typed decode error (or decode):
never another exception, never a hang."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.protocol.message_strategies import message_strategy
from wireserver.protocol.errors import DecodeError
from wireserver.protocol.framing import FrameDecoder
from wireserver.protocol.messages import decode_request
from wireserver.protocol.served import SERVED

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
VERSIONS = [(spec, v) for spec in SERVED for v in range(spec.min_version, spec.max_version + 1)]


def decode_or_typed_error(frame: bytes) -> None:
    try:
        decode_request(memoryview(frame), SERVED)
    except DecodeError:
        pass


@FUZZ
@given(
    key=st.sampled_from([spec.key for spec in SERVED]),
    version=st.integers(0, 20),
    tail=st.binary(max_size=200),
)
def test_random_bodies(key, version, tail):
    header = key.to_bytes(2, "big") + version.to_bytes(2, "big") + b"\x00\x00\x00\x01\x00\x01c"
    decode_or_typed_error(header + tail)


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_frames(data):
    decode_or_typed_error(data)


@pytest.mark.parametrize("spec,version", VERSIONS, ids=[f"{s.name}-v{v}" for s, v in VERSIONS])
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_truncated_and_flipped_valid_requests(spec, version, data):
    message = data.draw(message_strategy(spec.request_class, version))
    message.with_header(correlation_id=1, client_id="fuzz")
    frame = bytes(FrameDecoder().feed(message.encode(header=True, framed=True))[0])
    for cut in range(0, len(frame), max(1, len(frame) // 40)):
        decode_or_typed_error(frame[:cut])
    flips = data.draw(st.lists(st.integers(0, len(frame) * 8 - 1), min_size=1, max_size=4))
    mutated = bytearray(frame)
    for bit in flips:
        mutated[bit // 8] ^= 1 << (bit % 8)
    decode_or_typed_error(bytes(mutated))


def test_huge_array_length_does_not_allocate():
    """An array count of two billion in a 30-byte frame is refused, not allocated."""
    header = b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x01c"  # Metadata v1
    frame = header + b"\x7f\xff\xff\xff" + b"\x00\x01a" * 3
    with pytest.raises(DecodeError):
        decode_request(memoryview(frame), SERVED)
