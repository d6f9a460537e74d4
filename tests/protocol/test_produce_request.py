"""protocol.produce_request decodes what kafka-python's client encodes to the same values as
kafka-python's own decoder, with each partition's records a slice of the frame (no copy), and
refuses malformed input with DecodeError only."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.producer.produce import ProduceRequest

from tests.protocol.kafka_python_reference import produce_request_values
from tests.protocol.message_strategies import message_strategy
from tests.protocol.wire_bytes import compact, tags, uvarint
from wireserver.protocol.errors import DecodeError
from wireserver.protocol.framing import FrameDecoder
from wireserver.protocol.messages import decode_body, decode_request_header
from wireserver.protocol.produce_request import ProduceRequestBody, decode_produce_request
from wireserver.protocol.served import SERVED

SPEC = SERVED.get(0)
VERSIONS = list(range(3, 14))
FLEXIBLE = [v for v in VERSIONS if v >= 9]
Topic = ProduceRequest.TopicProduceData
Partition = Topic.PartitionProduceData
EXAMPLES = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def client_frame(
    request: ProduceRequest, correlation_id: int = 7, client_id: str | None = "producer"
) -> tuple[memoryview, int]:
    """The frame (without size prefix) as kafka-python's client sends it, and where its body
    starts."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    frames = FrameDecoder().feed(request.encode(header=True, framed=True))
    assert len(frames) == 1
    frame = frames[0]
    _, pos = decode_request_header(frame, SPEC.request_header_version(request._version))
    return frame, pos


def check_decodes(frame: memoryview, pos: int, version: int) -> ProduceRequestBody:
    """Ours and kafka-python's decoder agree, and records are views of the frame."""
    ours = decode_produce_request(frame, pos, version)
    theirs = decode_body(SPEC, version, frame, pos)
    assert produce_request_values(ours, version) == produce_request_values(theirs, version)
    for topic in ours.topic_data:
        if version < 13:
            assert isinstance(topic.name, str)
        for partition in topic.partition_data:
            if partition.records is not None:
                assert isinstance(partition.records, memoryview)
                assert partition.records.obj is frame.obj
    return ours


def request(version: int, transactional_id: str | None, topics: list) -> ProduceRequest:
    """A request with ``topics`` as (name, topic_id, [(index, records)])."""
    topic_data = []
    for name, topic_id, partitions in topics:
        key = {"topic_id": topic_id} if version >= 13 else {"name": name}
        topic_data.append(
            Topic(partition_data=[Partition(index=i, records=r) for i, r in partitions], **key)
        )
    return ProduceRequest(
        version=version,
        transactional_id=transactional_id,
        acks=-1,
        timeout_ms=30000,
        topic_data=topic_data,
    )


TOPICS = [
    (
        "orders",
        uuid.UUID(int=0x1234567890ABCDEF1234567890ABCDEF),
        [(0, b"\x00" * 70), (1, b""), (2, None), (7, bytes(range(256)) * 3)],
    ),
    ("päyments", uuid.uuid4(), [(3, b"abc")]),
    ("empty", uuid.uuid4(), []),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("transactional_id", [None, "", "txn-1"])
def test_several_topics_and_partitions(version, transactional_id):
    frame, pos = client_frame(request(version, transactional_id, TOPICS))
    body = check_decodes(frame, pos, version)
    assert body.transactional_id == transactional_id
    assert body.acks == -1 and body.timeout_ms == 30000
    assert [len(t.partition_data) for t in body.topic_data] == [4, 1, 0]
    orders = body.topic_data[0]
    if version >= 13:
        assert orders.name == "" and orders.topic_id == TOPICS[0][1]
    else:
        assert orders.name == "orders" and orders.topic_id is None
    records = [p.records for p in orders.partition_data]
    assert bytes(records[0]) == b"\x00" * 70
    assert isinstance(records[1], memoryview) and len(records[1]) == 0
    assert records[2] is None


@pytest.mark.parametrize("version", VERSIONS)
def test_no_topics(version):
    frame, pos = client_frame(request(version, None, []))
    assert check_decodes(frame, pos, version).topic_data == []


def test_v13_zero_topic_id_reads_as_none():
    """As kafka-python: the all-zero UUID is "no topic id"."""
    frame, pos = client_frame(request(13, None, [(None, uuid.UUID(int=0), [(0, b"x")])]))
    assert check_decodes(frame, pos, 13).topic_data[0].topic_id is None


@pytest.mark.parametrize("version", VERSIONS)
def test_records_of_a_writable_frame_are_writable_views(version):
    frame, pos = client_frame(request(version, None, TOPICS))
    writable = memoryview(bytearray(frame))
    body = decode_produce_request(writable, pos, version)
    records = body.topic_data[0].partition_data[0].records
    assert records.obj is writable.obj and not records.readonly


@pytest.mark.parametrize("version", VERSIONS)
@EXAMPLES
@given(data=st.data(), client_id=st.one_of(st.none(), st.text(max_size=8)))
def test_any_request_from_client_decodes_like_kafka_python(version, data, client_id):
    sent = data.draw(message_strategy(ProduceRequest, version))
    frame, pos = client_frame(sent, client_id=client_id)
    check_decodes(frame, pos, version)


# --- unknown tagged fields ---------------------------------------------------------------


def flexible_body(
    version: int,
    transactional_id: str | None,
    topics: list,
    body_tags=(),
    topic_tags=(),
    partition_tags=(),
) -> bytes:
    """A flexible Produce body encoded by hand, with the given tagged fields at each level."""
    out = bytearray(compact(None if transactional_id is None else transactional_id.encode()))
    out += struct.pack(">hi", -1, 30000) + uvarint(len(topics) + 1)
    for name, topic_id, partitions in topics:
        out += topic_id.bytes if version >= 13 else compact(name.encode())
        out += uvarint(len(partitions) + 1)
        for index, records in partitions:
            out += struct.pack(">i", index) + compact(records) + tags(list(partition_tags))
        out += tags(list(topic_tags))
    out += tags(list(body_tags))
    return bytes(out)


@pytest.mark.parametrize("version", FLEXIBLE)
def test_hand_encoder_matches_kafka_python(version):
    frame, pos = client_frame(request(version, "t", TOPICS))
    assert bytes(frame[pos:]) == flexible_body(version, "t", TOPICS)


SOME_TAGS = [(0, b""), (5, b"hello"), (300, b"\xff" * 200), (2**20, b"\x00")]


@pytest.mark.parametrize("version", FLEXIBLE)
@pytest.mark.parametrize("level", ["body", "topic", "partition", "all"])
def test_unknown_tagged_fields_are_skipped(version, level):
    kwargs = {
        f"{name}_tags": SOME_TAGS
        for name in ("body", "topic", "partition")
        if level in (name, "all")
    }
    wire = flexible_body(version, "txn", TOPICS, **kwargs)
    frame = memoryview(b"\x00\x00\x00" + wire)
    body = check_decodes(frame, 3, version)
    plain = memoryview(flexible_body(version, "txn", TOPICS))
    assert produce_request_values(body, version) == produce_request_values(
        decode_produce_request(plain, 0, version), version
    )


# --- malformed input ---------------------------------------------------------------------


def frames_to_cut():
    for version in VERSIONS:
        yield version, client_frame(request(version, "txn", TOPICS[:2]))
        yield version, client_frame(request(version, None, [TOPICS[0]]))
    for version in FLEXIBLE:
        wire = flexible_body(
            version,
            "t",
            TOPICS[:2],
            body_tags=SOME_TAGS[:2],
            topic_tags=SOME_TAGS[1:2],
            partition_tags=SOME_TAGS[:3],
        )
        yield version, (memoryview(wire), 0)


@pytest.mark.parametrize("version,framed", list(frames_to_cut()))
def test_every_truncation_is_a_decode_error(version, framed):
    frame, pos = framed
    trailing = b"\x01\x02\x03\x04\xff"
    full = bytes(frame) + trailing
    body_end = len(frame)
    expected = produce_request_values(decode_produce_request(frame, pos, version), version)
    for cut in range(pos, len(full) + 1):
        view = memoryview(full)[:cut]
        if cut >= body_end:
            assert (
                produce_request_values(decode_produce_request(view, pos, version), version)
                == expected
            )
        else:
            with pytest.raises(DecodeError):
                decode_produce_request(view, pos, version)


def classic(transactional_id: bytes, topics: bytes) -> memoryview:
    return memoryview(
        struct.pack(">h", len(transactional_id) if transactional_id else -1)
        + transactional_id
        + struct.pack(">hi", 1, 100)
        + topics
    )


def flex(rest: bytes) -> memoryview:
    return memoryview(b"\x00" + struct.pack(">hi", 1, 100) + rest)


BAD = [
    (3, memoryview(struct.pack(">h", -2))),  # transactional_id length -2
    (3, memoryview(b"\x00\x02\xc3\x28" + struct.pack(">hi", 1, 1) + b"\0\0\0\0")),  # bad UTF-8
    (3, classic(b"", struct.pack(">i", -1))),  # null topic_data
    (3, classic(b"", struct.pack(">i", -5))),
    (3, classic(b"", struct.pack(">i", 2**31 - 1))),
    (3, classic(b"", struct.pack(">ih", 1, -1) + struct.pack(">i", 0))),  # null topic name
    (3, classic(b"", struct.pack(">ih", 1, 1) + b"\xff" + struct.pack(">i", 0))),  # bad UTF-8
    (3, classic(b"", struct.pack(">ih", 1, 0) + struct.pack(">i", -1))),  # null partitions
    (3, classic(b"", struct.pack(">ih", 1, 0) + struct.pack(">iii", 1, 0, -2))),  # records -2
    (3, classic(b"", struct.pack(">ih", 1, 0) + struct.pack(">iii", 1, 0, 5) + b"abcd")),
    (9, memoryview(b"\x80\x80\x80\x80\x80\x01")),  # varint of 6 bytes
    (9, memoryview(b"\x03\xc3\x28" + struct.pack(">hi", 1, 1) + b"\x01\x00")),  # bad UTF-8
    (9, flex(b"\x00\x00")),  # null topic_data
    (9, flex(b"\xff\xff\xff\xff\x0f")),  # huge topic count
    (9, flex(b"\x02\x00\x01\x00\x00")),  # null topic name
    (9, flex(b"\x02\x01\x00\x00\x00")),  # null partition_data
    (9, flex(b"\x02\x01\x02\x00\x00\x00\x00\x0aabc\x00\x00\x00")),  # records past the end
    (9, flex(b"\x02\x01\x02\x00\x00\x00\x00\x00\x01\x01\x09abc\x00\x00")),  # tag past the end
    (9, flex(b"\x02\x01\x02\x00\x00\x00\x00\x00\xff\xff\xff\xff\x0f\x00\x00")),  # tag count
    (9, flex(b"\x02\x01\x01\x00\x80\x80\x80\x80\x80\x00")),  # tag count varint too long
    (9, flex(b"\x02" + uvarint(0x8000 + 1) + b"a" * 0x8000 + b"\x01\x00\x00")),  # name > 32767
    (13, flex(b"\x02" + b"\x01" * 15)),  # truncated topic id
]


@pytest.mark.parametrize("version,frame", BAD)
def test_malformed_is_a_decode_error(version, frame):
    with pytest.raises(DecodeError):
        decode_produce_request(frame, 0, version)


def test_valid_after_flex_helper():
    """The BAD cases are near misses: the same shapes, well formed, decode."""
    body = decode_produce_request(flex(b"\x02\x02a\x02\x00\x00\x00\x04\x04abc\x00\x00\x00"), 0, 9)
    assert produce_request_values(body, 9) == (None, 1, 100, [("a", None, [(4, b"abc")])])
    body = decode_produce_request(
        classic(b"", struct.pack(">ih", 1, 0) + struct.pack(">iii", 1, 0, 4) + b"abcd"), 0, 3
    )
    assert produce_request_values(body, 3) == (None, 1, 100, [("", None, [(0, b"abcd")])])


@settings(max_examples=1000, deadline=None)
@given(version=st.sampled_from(VERSIONS), data=st.binary(max_size=200), pos=st.integers(0, 8))
def test_random_bytes_raise_only_decode_error(version, data, pos):
    try:
        body = decode_produce_request(memoryview(data), pos, version)
    except DecodeError:
        return
    assert isinstance(body, ProduceRequestBody)


@settings(max_examples=1000, deadline=None)
@given(data=st.data(), version=st.sampled_from(VERSIONS))
def test_mutated_requests_raise_only_decode_error(data, version):
    frame, pos = client_frame(request(version, "txn", TOPICS[:2]))
    wire = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(pos, len(wire) - 1))
        wire[at] = data.draw(st.integers(0, 255))
    try:
        body = decode_produce_request(memoryview(wire), pos, version)
    except DecodeError:
        return
    assert isinstance(body, ProduceRequestBody)


def test_unsupported_version_is_a_decode_error():
    with pytest.raises(DecodeError):
        decode_produce_request(memoryview(b"\x00" * 40), 0, 2)
