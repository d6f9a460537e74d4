"""``connections.max.idle.ms``: the broker closes a client connection that has neither read
nor written for that long, as Kafka's selector does, and leaves busy ones alone."""

from __future__ import annotations

import socket
import time

from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from wireserver.testing import EmbeddedBroker, KafkaWire


def closed_by_peer(sock: socket.socket, within_s: float) -> bool:
    """Whether the other end closes ``sock`` within ``within_s`` (it sends nothing else)."""
    sock.settimeout(within_s)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_an_idle_connection_is_closed_and_a_busy_one_is_not():
    with EmbeddedBroker(overrides={"connections.max.idle.ms": 1500}) as broker:
        idle = socket.create_connection((broker.host, broker.port))
        with idle, KafkaWire(broker.bootstrap_servers) as busy:
            started = time.monotonic()
            while time.monotonic() - started < 4:  # well past the limit, one request per 0.3 s
                assert busy.request(ApiVersionsRequest(version=0)).error_code == 0
                time.sleep(0.3)
            assert closed_by_peer(idle, within_s=0.1)
            assert busy.request(ApiVersionsRequest(version=0)).error_code == 0


def test_minus_one_keeps_idle_connections():
    with EmbeddedBroker(overrides={"connections.max.idle.ms": -1}) as broker:
        idle = socket.create_connection((broker.host, broker.port))
        with idle:
            assert not closed_by_peer(idle, within_s=2.5)
