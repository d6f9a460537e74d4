"""Bad bytes into the record batch decoders: only DecodeError subclasses come out, and fast."""

from __future__ import annotations

import struct

import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wireserver.protocol.errors import DecodeError
from wireserver.protocol.records import Codec, RecordBatch, RecordBatchBuilder, iter_batches

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_OUT = 1 << 20  # decompression cap while fuzzing


def _valid(codec: Codec) -> bytes:
    b = RecordBatchBuilder(compression=codec, producer_id=3, producer_epoch=0, base_sequence=0)
    b.append(1000, b"key", b"value" * 10, [("h", b"v"), ("n", None)])
    b.append(1001, None, None, [])
    b.append(999, b"k" * 130, b"\x00" * 300, [("x" * 5, b"y")])
    return bytes(b.build())


VALID = {codec: _valid(codec) for codec in Codec}


def exercise(data) -> None:
    """Everything a broker might do with untrusted bytes; any DecodeError is fine."""
    buf = memoryview(bytearray(data))
    try:
        for batch in iter_batches(buf):
            batch.header()
            batch.verify_crc()
            try:
                batch.validate()
            except DecodeError:
                pass
            for record in batch.records(MAX_OUT):
                assert isinstance(record.headers, list)
    except DecodeError:
        pass
    try:
        batch = RecordBatch(buf)
        try:
            batch.validate(strict=True)
        except DecodeError:
            pass
        list(batch.records(MAX_OUT))
    except DecodeError:
        pass


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data):
    exercise(data)


@FUZZ
@given(
    codec=st.sampled_from(list(Codec)),
    header=st.binary(min_size=61, max_size=61),
    body=st.binary(max_size=300),
)
def test_random_body_with_plausible_header(codec, header, body):
    """Headers that pass the length and magic checks, so the record parser sees the bytes."""
    raw = bytearray(header + body)
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    raw[16] = 2
    raw[22] = (raw[22] & 0xF8) | int(codec)
    struct.pack_into(">i", raw, 57, raw[57] & 0x0F)  # small record counts
    struct.pack_into(">i", raw, 23, 20)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    exercise(raw)


@FUZZ
@given(codec=st.sampled_from(list(Codec)), data=st.data())
def test_bit_flips(codec, data):
    raw = bytearray(VALID[codec])
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] ^= 1 << data.draw(st.integers(0, 7))
    exercise(raw)


@FUZZ
@given(codec=st.sampled_from(list(Codec)), data=st.data())
def test_bit_flips_with_fixed_crc(codec, data):
    """Flips in the record bytes with the CRC rewritten, so the parser itself is tested."""
    raw = bytearray(VALID[codec])
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(61, len(raw) - 1))
        raw[pos] ^= 1 << data.draw(st.integers(0, 7))
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    exercise(raw)


def test_truncation_at_every_position():
    for raw in VALID.values():
        two = raw + raw
        for cut in range(len(two)):
            exercise(two[:cut])


@FUZZ
@given(codec=st.sampled_from(list(Codec)), data=st.data())
def test_garbage_spliced_after_valid(codec, data):
    raw = VALID[codec]
    exercise(raw + data.draw(st.binary(max_size=80)))
