"""Bad input on raw sockets: each bad request gets Kafka's error, or its connection is closed,
and nothing else is disturbed: a second client, connected before the bad one, still produces
and fetches afterwards."""

from __future__ import annotations

import os
import socket
import struct

import pytest

from tests.integration import raw
from wireserver.testing import KafkaWire


@pytest.fixture
def bystander(broker, topic):
    """A client connected before the bad input; checked to still work afterwards."""
    wire = KafkaWire(broker.bootstrap_servers)
    raw.roundtrip(broker.bootstrap_servers, topic + "-ok", wire=wire)
    yield wire
    raw.roundtrip(broker.bootstrap_servers, topic + "-ok", wire=wire)
    raw.roundtrip(broker.bootstrap_servers, topic + "-ok")  # and a new connection
    wire.close()


def bad_socket(broker) -> socket.socket:
    return socket.create_connection((broker.host, broker.port), timeout=10)


def header(
    api_key: int, api_version: int, correlation_id: int = 1, client_id: bytes = b"bad"
) -> bytes:
    """A v1 request header (no tagged fields)."""
    return struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def test_oversized_frame_closes_connection(broker, bystander):
    with bad_socket(broker) as sock:
        sock.sendall(struct.pack(">i", 1_000_000_000) + header(3, 12))
        assert raw.connection_closed(sock)


def test_negative_frame_size_closes_connection(broker, bystander):
    with bad_socket(broker) as sock:
        sock.sendall(struct.pack(">i", -5) + b"\x00" * 16)
        assert raw.connection_closed(sock)


@pytest.mark.parametrize("seed", range(3))
def test_garbage_bytes_close_connection(broker, bystander, seed):
    garbage = framed(bytes([0x7F, 0x7F]) + os.urandom(30 + seed))
    with bad_socket(broker) as sock:
        sock.sendall(garbage)
        assert raw.connection_closed(sock)


def test_truncated_request_closes_connection(broker, bystander, topic):
    """A frame whose body ends in the middle of a field."""
    request = raw.produce(topic, {0: raw.v2_batch([b"x" * 100])})
    request.with_header(correlation_id=1, client_id="bad")
    body = bytes(request.encode(header=True))
    with bad_socket(broker) as sock:
        sock.sendall(framed(body[: len(body) // 2]))
        assert raw.connection_closed(sock)


def test_half_a_frame_then_hang_up(broker, bystander):
    """A client that sends part of a frame and goes away leaves the broker unharmed."""
    request = raw.metadata(None)
    request.with_header(correlation_id=1, client_id="bad")
    data = bytes(request.encode(header=True, framed=True))
    with bad_socket(broker) as sock:
        sock.sendall(data[: len(data) - 3])
        sock.shutdown(socket.SHUT_WR)
        assert raw.connection_closed(sock)


def test_unknown_api_key_closes_connection(broker, bystander):
    with bad_socket(broker) as sock:
        sock.sendall(framed(header(9999, 0) + b"\x00" * 8))
        assert raw.connection_closed(sock)


def test_unsupported_version_closes_connection(broker, bystander):
    with bad_socket(broker) as sock:
        sock.sendall(framed(header(3, 999) + b"\x00" * 8))  # Metadata v999
        assert raw.connection_closed(sock)


def test_api_versions_at_unknown_version_answers_unsupported_version(broker, bystander):
    """KIP-511: ApiVersions at a version the broker does not know is answered with
    UNSUPPORTED_VERSION (in a v0 response) so the client can retry lower."""
    with bad_socket(broker) as sock:
        # Header v2 (ApiVersions v3+ is flexible): client id, then no tagged fields.
        sock.sendall(framed(header(18, 999, correlation_id=42) + b"\x00"))
        wire = KafkaWire.__new__(KafkaWire)
        wire.sock = sock
        frame = wire.read_frame()
    correlation_id, error_code = struct.unpack_from(">ih", frame)
    assert (correlation_id, error_code) == (42, raw.UNSUPPORTED_VERSION)


def test_bad_crc_fails_only_its_partition(broker, bystander, topic):
    good, bad = raw.v2_batch([b"good"]), raw.with_bad_crc(raw.v2_batch([b"bad"]))
    with KafkaWire(broker.bootstrap_servers) as wire:
        raw.ensure_topic(wire, topic)
        response = wire.request(raw.produce(topic, {0: bad, 1: good}))
        assert raw.produce_errors(response) == {0: raw.CORRUPT_MESSAGE, 1: raw.NONE}
        assert raw.fetched(wire.request(raw.fetch(topic, 0, 0))) == []
        assert [r.value for r in raw.fetched(wire.request(raw.fetch(topic, 1, 0)))] == [b"good"]
        raw.roundtrip(broker.bootstrap_servers, topic, 0, wire=wire)  # same connection


def test_magic_1_batch_is_unsupported(broker, bystander, topic):
    with KafkaWire(broker.bootstrap_servers) as wire:
        raw.ensure_topic(wire, topic)
        response = wire.request(
            raw.produce(topic, {0: raw.magic1_batch([b"old"]), 1: raw.v2_batch([b"new"])})
        )
        assert raw.produce_errors(response) == {0: raw.UNSUPPORTED_FOR_MESSAGE_FORMAT, 1: raw.NONE}
        assert raw.fetched(wire.request(raw.fetch(topic, 0, 0))) == []


def test_batch_over_max_message_bytes(broker, bystander, topic):
    big = raw.v2_batch([os.urandom(1_100_000)])  # max.message.bytes defaults to 1048588
    with KafkaWire(broker.bootstrap_servers) as wire:
        raw.ensure_topic(wire, topic)
        response = wire.request(raw.produce(topic, {0: big, 1: raw.v2_batch([b"small"])}))
        assert raw.produce_errors(response) == {0: raw.MESSAGE_TOO_LARGE, 1: raw.NONE}
        assert raw.fetched(wire.request(raw.fetch(topic, 0, 0))) == []


def test_produce_to_missing_partition(broker, bystander, topic):
    with KafkaWire(broker.bootstrap_servers) as wire:
        raw.ensure_topic(wire, topic)
        response = wire.request(
            raw.produce(topic, {0: raw.v2_batch([b"a"]), 99: raw.v2_batch([b"b"])})
        )
        assert raw.produce_errors(response) == {0: raw.NONE, 99: raw.UNKNOWN_TOPIC_OR_PARTITION}
