from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from tests.protocol.capture_broker import kafka_python_codecs
from wireserver.protocol import records as R
from wireserver.protocol.errors import CorruptRecordBatch, TruncatedRecordBatch, UnsupportedMagic
from wireserver.protocol.records import (
    Codec,
    ControlRecordType,
    RecordBatch,
    RecordBatchBuilder,
    build_control_batch,
    decode_control_record,
    iter_batches,
)

# -- strategies --------------------------------------------------------------------------------

INT64 = st.integers(-(2**63), 2**63 - 1)
timestamps = st.integers(0, 2**42)
maybe_bytes = st.none() | st.binary(max_size=200)
headers = st.lists(st.tuples(st.text(max_size=20), maybe_bytes), max_size=4)
record_lists = st.lists(
    st.tuples(timestamps, maybe_bytes, maybe_bytes, headers), min_size=1, max_size=20
)


def build(recs, **kwargs) -> bytearray:
    b = RecordBatchBuilder(**kwargs)
    for ts, key, value, hdrs in recs:
        b.append(ts, key, value, hdrs)
    return b.build()


# -- layout --------------------------------------------------------------------------------------


def test_layout_constants():
    assert R.HEADER_SIZE == 61 and R.LOG_OVERHEAD == 12
    assert R.HEADER_STRUCT.size == 61
    offsets = [
        R.BASE_OFFSET_OFFSET,
        R.BATCH_LENGTH_OFFSET,
        R.PARTITION_LEADER_EPOCH_OFFSET,
        R.MAGIC_OFFSET,
        R.CRC_OFFSET,
        R.ATTRIBUTES_OFFSET,
        R.LAST_OFFSET_DELTA_OFFSET,
        R.BASE_TIMESTAMP_OFFSET,
        R.MAX_TIMESTAMP_OFFSET,
        R.PRODUCER_ID_OFFSET,
        R.PRODUCER_EPOCH_OFFSET,
        R.BASE_SEQUENCE_OFFSET,
        R.RECORD_COUNT_OFFSET,
    ]
    assert offsets == [0, 8, 12, 16, 17, 21, 23, 27, 35, 43, 51, 53, 57]
    assert (
        R.ATTR_COMPRESSION_MASK,
        R.ATTR_TIMESTAMP_TYPE_MASK,
        R.ATTR_TRANSACTIONAL_MASK,
        R.ATTR_CONTROL_MASK,
        R.ATTR_DELETE_HORIZON_MASK,
    ) == (0x07, 0x08, 0x10, 0x20, 0x40)
    assert [int(c) for c in Codec] == [0, 1, 2, 3, 4]


def test_header_fields():
    raw = build(
        [(1000, b"k", b"v", [("a", b"1")]), (1005, None, b"w", []), (990, b"k3", None, [])],
        compression=Codec.GZIP,
        base_offset=77,
        partition_leader_epoch=9,
        producer_id=123456,
        producer_epoch=7,
        base_sequence=42,
        is_transactional=True,
    )
    b = RecordBatch(raw)
    b.validate(strict=True)
    assert b.base_offset == 77
    assert b.batch_length == len(raw) - 12 and b.size == len(raw) == len(b)
    assert b.partition_leader_epoch == 9
    assert b.magic == 2
    assert b.crc == crc32c.crc32c(bytes(raw[21:]))
    assert b.compression is Codec.GZIP
    assert b.attributes == 0x01 | 0x10
    assert b.timestamp_type == 0
    assert b.is_transactional and not b.is_control
    assert b.last_offset_delta == 2 and b.last_offset == 79 and b.next_offset == 80
    assert b.base_timestamp == 1000 and b.max_timestamp == 1005
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.record_count) == (123456, 7, 42, 3)
    assert b.header() == R.HEADER_STRUCT.unpack_from(raw)
    assert b.buffer.obj is raw  # zero copy
    recs = list(b.records())
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (77, 1000, b"k", b"v", [("a", b"1")]),
        (78, 1005, None, b"w", []),
        (79, 990, b"k3", None, []),
    ]


def test_empty_builder():
    raw = RecordBatchBuilder().build()
    b = RecordBatch(raw)
    assert len(raw) == 61 and b.record_count == 0
    b.validate()
    assert list(b.records()) == []
    with pytest.raises(CorruptRecordBatch):
        b.validate(strict=True)


# -- round trips ---------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=record_lists, codec=st.sampled_from(list(Codec)), base_offset=st.integers(0, 2**62))
def test_builder_view_round_trip(recs, codec, base_offset):
    raw = build(recs, compression=codec, base_offset=base_offset)
    b = RecordBatch(raw)
    b.validate(strict=True)
    assert b.compression is codec
    assert b.record_count == len(recs)
    assert b.base_timestamp == recs[0][0]
    assert b.max_timestamp == max(r[0] for r in recs)
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records()]
    assert got == [(base_offset + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]
    assert b.keyless_records() == [i for i, (_, k, _, _) in enumerate(recs) if k is None]


def _kp_records(data):
    batch = DefaultRecordBatch(bytes(data))
    assert batch.validate_crc()
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=record_lists, codec=st.sampled_from(list(Codec)))
def test_ours_parse_in_kafka_python(recs, codec):
    raw = build(
        recs, compression=codec, base_offset=5, producer_id=9, producer_epoch=1, base_sequence=0
    )
    with kafka_python_codecs():
        got = _kp_records(raw)
    assert got == [(5 + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]


kp_headers = st.lists(st.tuples(st.text(max_size=20), st.binary(max_size=50)), max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recs=st.lists(
        st.tuples(timestamps, maybe_bytes, maybe_bytes, kp_headers), min_size=1, max_size=20
    ),
    codec=st.sampled_from(list(Codec)),
)
def test_kafka_python_batches_parse_in_ours(recs, codec):
    with kafka_python_codecs():
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=int(codec),
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=2**30,
        )
        for i, (ts, k, v, h) in enumerate(recs):
            assert builder.append(i, timestamp=ts, key=k, value=v, headers=h) is not None
        raw = builder.build()
    b = RecordBatch(raw)
    b.validate(strict=True)
    assert b.compression in (codec, Codec.NONE)  # kafka-python drops compression that does not help
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records()]
    assert got == [(i, ts, k, v, list(h)) for i, (ts, k, v, h) in enumerate(recs)]
    assert b.keyless_records() == [i for i, (_, k, _, _) in enumerate(recs) if k is None]


def test_varint_extremes():
    recs = [(0, b"", b"", []), (2**62, None, None, []), (-5, b"x" * 70000, None, [("", None)])]
    raw = build(recs)
    got = [(r.timestamp, r.key, r.value, r.headers) for r in RecordBatch(raw).records()]
    assert got == [(ts, k, v, h) for ts, k, v, h in recs]


# -- CRC -----------------------------------------------------------------------------------------


def test_crc_detects_any_flipped_bit_after_attributes():
    raw = build([(1, b"key", b"value", [("h", b"v")])] * 3, compression=Codec.NONE)
    for pos in range(21, len(raw)):
        for bit in (0, 7):
            bad = bytearray(raw)
            bad[pos] ^= 1 << bit
            b = RecordBatch(bad)
            assert not b.verify_crc()
            with pytest.raises(CorruptRecordBatch):
                b.validate()


def test_crc_field_itself_corrupted():
    raw = build([(1, b"k", b"v", [])])
    raw[17] ^= 0xFF
    with pytest.raises(CorruptRecordBatch, match="CRC"):
        RecordBatch(raw).validate()


# -- patches ------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(Codec))
def test_patch_base_offset_and_leader_epoch(codec):
    raw = build([(100, b"k", b"v" * 50, [("h", b"x")]), (101, None, None, [])], compression=codec)
    original = bytes(raw)
    b = RecordBatch(raw)
    b.set_base_offset(2**40 + 3)
    b.set_partition_leader_epoch(17)
    assert raw[:8] == struct.pack(">q", 2**40 + 3)
    assert raw[12:16] == struct.pack(">i", 17)
    assert raw[8:12] == original[8:12] and raw[16:] == original[16:]
    assert b.verify_crc()
    b.validate(strict=True)
    assert b.base_offset == 2**40 + 3 and b.partition_leader_epoch == 17
    assert [r.offset for r in b.records()] == [2**40 + 3, 2**40 + 4]


def test_patch_needs_writable_buffer():
    raw = bytes(build([(1, b"k", b"v", [])]))
    with pytest.raises(TypeError):
        RecordBatch(raw).set_base_offset(5)


@pytest.mark.parametrize("codec", list(Codec))
def test_set_log_append_time(codec):
    raw = build([(100, b"k", b"v", []), (250, b"k2", b"v2", [])], compression=codec)
    original = bytes(raw)
    b = RecordBatch(raw)
    b.set_log_append_time(999_999)
    b.validate(strict=True)
    assert b.timestamp_type == 1
    assert b.max_timestamp == 999_999
    assert b.base_timestamp == 100
    assert b.compression is codec
    assert [r.timestamp for r in b.records()] == [999_999, 999_999]
    # Only attributes, maxTimestamp and the CRC changed.
    changed = {i for i in range(len(raw)) if raw[i] != original[i]}
    assert changed <= set(range(17, 23)) | set(range(35, 43))
    with kafka_python_codecs():
        kp = DefaultRecordBatch(bytes(raw))
        assert kp.validate_crc() and kp.timestamp_type == 1


# -- control batches ----------------------------------------------------------------------------


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch(commit):
    raw = build_control_batch(
        commit,
        producer_id=55,
        producer_epoch=3,
        timestamp=1234,
        coordinator_epoch=7,
        base_offset=40,
    )
    b = RecordBatch(raw)
    b.validate(strict=True)
    assert b.is_control and b.is_transactional
    assert (b.producer_id, b.producer_epoch, b.base_offset, b.record_count) == (55, 3, 40, 1)
    (rec,) = list(b.records())
    assert rec.offset == 40 and rec.timestamp == 1234
    assert rec.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert rec.value == struct.pack(">hi", 0, 7)
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    assert decode_control_record(rec) == (kind, 7)
    kp = DefaultRecordBatch(bytes(raw))
    assert kp.is_control_batch and kp.validate_crc()


def test_decode_control_record_rejects_short_key():
    with pytest.raises(CorruptRecordBatch):
        decode_control_record(R.Record(0, 0, b"\x00", None, []))


# -- splitting and recovery ---------------------------------------------------------------------


def _three_batches():
    return [
        build([(1, b"a", b"1", [])], base_offset=0),
        build([(2, b"b", b"2", []), (3, b"c", b"3", [])], base_offset=1, compression=Codec.GZIP),
        build([(4, None, b"4" * 100, [])], base_offset=3, compression=Codec.ZSTD),
    ]


def test_iter_batches_splits_by_length():
    parts = _three_batches()
    buf = memoryview(bytearray(b"".join(parts)))
    batches = list(iter_batches(buf))
    assert [bytes(b.buffer) for b in batches] == [bytes(p) for p in parts]
    assert [b.base_offset for b in batches] == [0, 1, 3]
    assert list(iter_batches(b"")) == []
    # Views into the same buffer: a patch through the view lands in the buffer.
    batches[1].set_base_offset(100)
    assert struct.unpack_from(">q", buf, len(parts[0]))[0] == 100


def test_iter_batches_truncated_tail():
    parts = _three_batches()
    whole = b"".join(parts)
    complete = len(parts[0]) + len(parts[1])
    for cut in range(complete + 1, len(whole)):
        with pytest.raises(TruncatedRecordBatch) as info:
            list(iter_batches(whole[:cut]))
        assert info.value.valid_length == complete


def test_iter_batches_yields_before_raising():
    parts = _three_batches()
    data = b"".join(parts)[:-1]
    seen = []
    with pytest.raises(TruncatedRecordBatch):
        for b in iter_batches(data):
            seen.append(b.base_offset)
    assert seen == [0, 1]


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_magic(magic):
    # offset int64, size int32, crc int32, magic int8, attributes int8, (timestamp), key, value
    body = (
        struct.pack(">ib", 0, magic)
        + b"\x00"
        + (b"\x00" * 8 if magic else b"")
        + struct.pack(">ii", -1, 3)
        + b"abc"
    )
    legacy = struct.pack(">qi", 0, len(body)) + body
    with pytest.raises(UnsupportedMagic) as info:
        list(iter_batches(legacy))
    assert info.value.magic == magic
    with pytest.raises(UnsupportedMagic):
        RecordBatch(legacy)


def test_unknown_magic_and_short_length():
    raw = build([(1, b"k", b"v", [])])
    bad = bytearray(raw)
    bad[16] = 3
    with pytest.raises(CorruptRecordBatch):
        list(iter_batches(bad))
    bad = bytearray(raw)
    struct.pack_into(">i", bad, 8, 48)
    with pytest.raises(CorruptRecordBatch):
        list(iter_batches(bad))
    with pytest.raises(CorruptRecordBatch):
        RecordBatch(raw[:30])


@pytest.mark.parametrize(
    "offset,fmt,value",
    [(57, ">i", -1), (23, ">i", -1), (57, ">i", 5), (8, ">i", 48)],
    ids=["negative-count", "negative-delta", "count-beyond-offsets", "length-below-49"],
)
def test_validate_impossible_counts(offset, fmt, value):
    raw = build([(1, b"k", b"v", [])])
    struct.pack_into(fmt, raw, offset, value)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))  # CRC still right
    with pytest.raises(CorruptRecordBatch):
        RecordBatch(raw).validate()


def test_validate_unknown_codec():
    raw = build([(1, b"k", b"v", [])])
    raw[22] = (raw[22] & ~7) | 6
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    with pytest.raises(CorruptRecordBatch):
        RecordBatch(raw).validate()


def test_strict_validation_of_offset_gaps():
    raw = build([(1, b"k", b"v", []), (2, b"k", b"v", [])])
    struct.pack_into(">i", raw, 23, 5)  # compacted-looking: 2 records over 6 offsets
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    RecordBatch(raw).validate()
    with pytest.raises(CorruptRecordBatch):
        RecordBatch(raw).validate(strict=True)


def test_records_detect_malformed_uncompressed_payload():
    raw = build([(1, b"key", b"value", [])])
    # Claim a longer record than there is.
    bad = bytearray(raw)
    bad[61] = 0x7E
    with pytest.raises(CorruptRecordBatch):
        list(RecordBatch(bad).records())
    with pytest.raises(CorruptRecordBatch):
        RecordBatch(bad).keyless_records()
    # Claim two records where there is one.
    bad = bytearray(raw)
    struct.pack_into(">i", bad, 57, 2)
    with pytest.raises(CorruptRecordBatch):
        list(RecordBatch(bad).records())
    with pytest.raises(CorruptRecordBatch):
        RecordBatch(bad).keyless_records()
    # Leftover bytes after the last record.
    extra = bytearray(raw) + b"\x00"
    struct.pack_into(">i", extra, 8, len(extra) - 12)
    with pytest.raises(CorruptRecordBatch):
        list(RecordBatch(extra).records())
    with pytest.raises(CorruptRecordBatch):
        RecordBatch(extra).keyless_records()
    # A key length below -1.
    bad = bytearray(raw)
    assert bad[65] == 6  # zigzag(3): len(b"key"), after length, attributes, two deltas
    bad[65] = 5  # zigzag(-3)
    with pytest.raises(CorruptRecordBatch):
        RecordBatch(bad).keyless_records()


def test_records_bomb_cap():
    raw = build([(1, None, b"\x00" * 500_000, [])], compression=Codec.GZIP)
    assert len(raw) < 2000
    with pytest.raises(CorruptRecordBatch):
        list(RecordBatch(raw).records(max_decompressed_size=10_000))
