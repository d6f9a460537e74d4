"""Requests as clients send them decode in protocol/, and responses protocol/ encodes decode in
kafka-python's client, for every API key and version wireserver serves."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.api_message import ApiMessage

from tests.protocol.kafka_python_reference import kafka_python_encoding, produce_request_values
from tests.protocol.message_strategies import message_strategy
from wireserver.protocol.errors import DecodeError, UnsupportedApi
from wireserver.protocol.fetch_request import FetchRequestBody
from wireserver.protocol.framing import FrameDecoder
from wireserver.protocol.messages import decode_request, encode_response, encode_response_chunks
from wireserver.protocol.served import SERVED

VERSIONS = [
    (spec, version) for spec in SERVED for version in range(spec.min_version, spec.max_version + 1)
]
IDS = [f"{spec.name}-v{version}" for spec, version in VERSIONS]
EXAMPLES = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def client_frame(request: ApiMessage, correlation_id: int, client_id: str | None) -> bytes:
    """Bytes exactly as kafka-python's client puts them on the wire."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return request.encode(header=True, framed=True)


ZERO_UUID = uuid.UUID(int=0)


def normalized(message) -> dict:
    """Fields as a dict; the all-zero UUID reads back as None (Kafka's "no topic id")."""

    def walk(value):
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return None if value == ZERO_UUID else value

    return walk(message.to_dict(json=False))


def unframe(data: bytes) -> memoryview:
    frames = FrameDecoder().feed(data)
    assert len(frames) == 1
    return frames[0]


@pytest.mark.parametrize("spec,version", VERSIONS, ids=IDS)
@EXAMPLES
@given(
    data=st.data(),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    client_id=st.one_of(st.none(), st.text(max_size=20)),
)
def test_request_from_client_decodes(spec, version, data, correlation_id, client_id):
    """A request encoded by kafka-python's client class decodes to the same fields."""
    sent = data.draw(message_strategy(spec.request_class, version))
    request = decode_request(unframe(client_frame(sent, correlation_id, client_id)), SERVED)
    assert request.spec is spec
    assert request.header.api_version == version
    assert request.header.correlation_id == correlation_id
    assert request.header.client_id == client_id
    if spec.key == 1:  # our own decoder, protocol.fetch_request
        assert isinstance(request.body, FetchRequestBody)
    if spec.key == 0:  # our own decoder, protocol.produce_request
        assert produce_request_values(request.body, version) == produce_request_values(
            sent, version
        )
    else:
        assert normalized(request.body) == normalized(sent)


@pytest.mark.parametrize("spec,version", VERSIONS, ids=IDS)
@EXAMPLES
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_response_decodes_in_client(spec, version, data, correlation_id):
    """A response we encode is read back by kafka-python's client with the same fields, and
    its bytes (the size and header we write, the chunks of our own encoders) are those
    kafka-python's encoder writes."""
    response = data.draw(message_strategy(spec.response_class, version))
    if spec.key == 18 and response.error_code != 0:
        # Clients read any ApiVersions response with an error as v0 (KIP-511), so one
        # carrying an error only round-trips at v0; that case has its own test.
        response.error_code = 0
    wire = encode_response(spec, version, correlation_id, response)
    decoded = spec.response_class.decode(wire, version=version, header=True, framed=True)
    assert decoded.header.correlation_id == correlation_id
    assert normalized(decoded) == normalized(response)
    chunks = encode_response_chunks(spec, version, correlation_id, response)
    assert b"".join(chunks) == kafka_python_encoding(spec, version, correlation_id, response)


@pytest.mark.parametrize("spec,version", VERSIONS, ids=IDS)
def test_response_header_version(spec, version):
    """Flexible versions answer with header v1 (a tagged-field byte after the correlation id),
    except ApiVersions, whose response header is always v0."""
    response = spec.response_class(version=version)
    wire = encode_response(spec, version, 7, response)
    body = spec.response_class(version=version).encode(version=version)
    header_size = len(wire) - 4 - len(body)
    expected = 5 if spec.is_flexible(version) and spec.key != 18 else 4
    assert header_size == expected


def test_unknown_api_key_is_unsupported():
    frame = unframe(b"\x00\x00\x00\x0a" + b"\x03\xe7\x00\x00\x00\x00\x00\x01\xff\xff")
    with pytest.raises(UnsupportedApi) as info:
        decode_request(frame, SERVED)
    assert info.value.api_key == 999


def test_unsupported_version_of_other_api_is_unsupported():
    frame = unframe(b"\x00\x00\x00\x0a" + b"\x00\x03\x00\x63\x00\x00\x00\x01\xff\xff")
    with pytest.raises(UnsupportedApi):
        decode_request(frame, SERVED)


def test_newer_api_versions_request_is_answered_without_body():
    """KIP-511: an ApiVersions request above our range has a parsable (v2) header and is
    answered rather than refused; its body, in a format we may not know, is not read."""
    wire = b"\x00\x12\x00\x63\x00\x00\x00\x2a\x00\x03abc\x00" + b"\xde\xad"
    request = decode_request(unframe(len(wire).to_bytes(4, "big") + wire), SERVED)
    assert request.body is None
    assert request.header.correlation_id == 42
    assert request.header.client_id == "abc"


def test_truncated_body_is_a_decode_error():
    from kafka.protocol.metadata.metadata import MetadataRequest

    full = client_frame(
        MetadataRequest(
            version=12, topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name="orders")]
        ),
        1,
        "c",
    )
    body = unframe(full)
    for cut in range(8, len(body)):
        with pytest.raises(DecodeError):
            decode_request(body[:cut], SERVED)
