"""protocol.fetch_request decodes what kafka-python's client encodes to the same fields as
kafka-python's own decoder (and the same request-log form), with or without tagged fields on
some partitions, and refuses malformed input with DecodeError only."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.fetch import FetchRequest

from tests.protocol.message_strategies import message_strategy
from tests.protocol.wire_bytes import tags
from wireserver.protocol.errors import DecodeError
from wireserver.protocol.fetch_request import FetchRequestBody, decode_fetch_request
from wireserver.protocol.framing import FrameDecoder
from wireserver.protocol.messages import decode_body, decode_request_header
from wireserver.protocol.served import SERVED
from wireserver.request_log import message_node

SPEC = SERVED.get(1)
VERSIONS = list(range(SPEC.min_version, SPEC.max_version + 1))
FLEXIBLE = [v for v in VERSIONS if v >= 12]
Topic = FetchRequest.FetchTopic
Partition = Topic.FetchPartition
Forgotten = FetchRequest.ForgottenTopic
EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
IDS = [uuid.UUID(int=n) for n in (0, 7, 2**127 + 5)]


def client_frame(request: FetchRequest) -> tuple[memoryview, int]:
    """The frame (without size prefix) as kafka-python's client sends it, and where its body
    starts."""
    request.with_header(correlation_id=3, client_id="consumer")
    frames = FrameDecoder().feed(request.encode(header=True, framed=True))
    assert len(frames) == 1
    frame = frames[0]
    _, pos = decode_request_header(frame, SPEC.request_header_version(request._version))
    return frame, pos


def check_decodes(frame: memoryview, pos: int, version: int) -> FetchRequestBody:
    """Ours and kafka-python's decoder agree field by field, and in the request log."""
    ours = decode_fetch_request(frame, pos, version)
    theirs = decode_body(SPEC, version, frame, pos)
    assert ours.to_dict() == theirs.to_dict(json=False)
    assert message_node(ours) == message_node(theirs)
    return ours


def partition(index: int, offset: int, **tagged) -> Partition:
    return Partition(
        partition=index,
        current_leader_epoch=index % 3,
        fetch_offset=offset,
        last_fetched_epoch=2,
        log_start_offset=offset // 2,
        partition_max_bytes=1 << 20,
        **tagged,
    )


def request(version: int, partitions_per_topic: int = 5, tagged_every: int = 0) -> FetchRequest:
    """Three topics (v13+ by id, one of them the zero id), the last partitions of each with
    tagged fields every ``tagged_every`` (v17+: a directory id, v18+: a high watermark)."""
    topics = []
    for t in range(3):
        partitions = []
        for p in range(partitions_per_topic):
            tagged = {}
            if tagged_every and p % tagged_every == tagged_every - 1:
                if version >= 17:
                    tagged["replica_directory_id"] = uuid.UUID(int=p + 1)
                if version >= 18:
                    tagged["high_watermark"] = 10_000 + p
            partitions.append(partition(p, 2**40 + 17 * p, **tagged))
        topics.append(Topic(topic=f"topic-{t}", topic_id=IDS[t], partitions=partitions))
    return FetchRequest(
        version=version,
        cluster_id="cluster" if version >= 12 else None,
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=50 << 20,
        isolation_level=1,
        session_id=12,
        session_epoch=4,
        topics=topics,
        forgotten_topics_data=[Forgotten(topic="gone", topic_id=IDS[1], partitions=[0, 5, 9])],
        rack_id="rack-a",
    )


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("tagged_every", [0, 1, 2])
def test_topics_partitions_and_forgotten_topics(version, tagged_every):
    frame, pos = client_frame(request(version, tagged_every=tagged_every))
    body = check_decodes(frame, pos, version)
    assert [len(topic.partitions) for topic in body.topics] == [5, 5, 5]
    assert body.topics[0].partitions[4].fetch_offset == 2**40 + 68
    if version >= 13:
        assert [topic.topic_id for topic in body.topics] == [None, IDS[1], IDS[2]]
    else:
        assert [topic.topic for topic in body.topics] == ["topic-0", "topic-1", "topic-2"]
    if version >= 7:
        assert body.forgotten_topics_data[0].partitions == [0, 5, 9]
    if version >= 18 and tagged_every:
        assert body.topics[1].partitions[tagged_every - 1].high_watermark == 10_000 + (
            tagged_every - 1
        )


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 15])
def test_a_followers_replica_state(version):
    sent = request(version)
    sent.replica_state = FetchRequest.ReplicaState(replica_id=3, replica_epoch=77)
    frame, pos = client_frame(sent)
    body = check_decodes(frame, pos, version)
    assert (body.replica_state.replica_id, body.replica_state.replica_epoch) == (3, 77)


@pytest.mark.parametrize("version", VERSIONS)
@EXAMPLES
@given(data=st.data())
def test_any_request_from_client_decodes_like_kafka_python(version, data):
    sent = data.draw(message_strategy(FetchRequest, version))
    frame, pos = client_frame(sent)
    check_decodes(frame, pos, version)


# --- unknown tagged fields ---------------------------------------------------------------


@pytest.mark.parametrize("version", FLEXIBLE)
def test_unknown_tagged_fields_are_skipped(version):
    """A partition with tags kafka-python does not know (a later version's) reads as one
    without; so do the body's and a topic's."""
    frame, pos = client_frame(request(version, partitions_per_topic=2))
    plain = decode_fetch_request(frame, pos, version)
    wire = bytearray(frame[pos:])
    # The first topic's first partition: after the body head, topic count and topic name/id.
    head = (4 if version < 15 else 0) + 13 + 8
    name = 16 if version >= 13 else 1 + len("topic-0")
    at = head + 1 + name + 1
    fixed = 4 + 4 + 8 + 4 + 8 + 4
    assert wire[at + fixed] == 0  # the partition's tag count
    extra = tags([(9, b"x"), (300, b"\xff" * 40)])
    wire[at + fixed : at + fixed + 1] = extra
    body = decode_fetch_request(memoryview(bytes(wire)), 0, version)
    assert body.to_dict() == plain.to_dict()


# --- malformed input ---------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("tagged_every", [0, 2])
def test_every_truncation_is_a_decode_error(version, tagged_every):
    frame, pos = client_frame(request(version, partitions_per_topic=3, tagged_every=tagged_every))
    full = bytes(frame) + b"\x01\x02\x03\x04\xff"
    expected = decode_fetch_request(frame, pos, version).to_dict()
    for cut in range(pos, len(full) + 1):
        view = memoryview(full)[:cut]
        if cut >= len(frame):
            assert decode_fetch_request(view, pos, version).to_dict() == expected
        else:
            with pytest.raises(DecodeError):
                decode_fetch_request(view, pos, version)


@settings(max_examples=1000, deadline=None)
@given(version=st.sampled_from(VERSIONS), data=st.binary(max_size=200), pos=st.integers(0, 8))
def test_random_bytes_raise_only_decode_error(version, data, pos):
    try:
        body = decode_fetch_request(memoryview(data), pos, version)
    except DecodeError:
        return
    assert isinstance(body, FetchRequestBody)


@settings(max_examples=1000, deadline=None)
@given(data=st.data(), version=st.sampled_from(VERSIONS))
def test_mutated_requests_raise_only_decode_error(data, version):
    frame, pos = client_frame(request(version, partitions_per_topic=2, tagged_every=2))
    wire = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(pos, len(wire) - 1))
        wire[at] = data.draw(st.integers(0, 255))
    try:
        body = decode_fetch_request(memoryview(wire), pos, version)
    except DecodeError:
        return
    assert isinstance(body, FetchRequestBody)


@pytest.mark.parametrize("version", [3, 19])
def test_unsupported_version_is_a_decode_error(version):
    with pytest.raises(DecodeError):
        decode_fetch_request(memoryview(b"\x00" * 60), 0, version)
