"""``max.connections.per.ip`` (and its overrides) and ``max.connections``, as Kafka's
``ConnectionQuotas``: one connection too many from an address is closed unread; past the
broker's maximum a listener accepts nothing until a connection closes, and the client that
waited is then served; past ``max.connection.creation.rate`` new connections wait their turn."""

from __future__ import annotations

import logging
import socket
import struct
import time

import pytest
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from wireserver.testing import EmbeddedBroker, KafkaWire


def api_versions_frame() -> bytes:
    request = ApiVersionsRequest(version=0)
    request.with_header(correlation_id=7, client_id="limits")
    return bytes(request.encode(header=True, framed=True))


def answered(sock: socket.socket, timeout: float) -> bool:
    """Whether an answer (a frame header) arrives within ``timeout`` seconds."""
    sock.settimeout(timeout)
    try:
        head = sock.recv(4)
    except TimeoutError:
        return False
    return len(head) == 4 and struct.unpack(">i", head)[0] > 0


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.sendall(api_versions_frame())
    return sock


def test_a_connection_past_the_address_s_maximum_is_closed_unread(caplog):
    with EmbeddedBroker("thread", overrides={"max.connections.per.ip": 3}) as broker:
        wires = [KafkaWire(broker.bootstrap_servers) for _ in range(3)]
        with caplog.at_level(logging.INFO, logger="wireserver.server"):
            extra = connect(broker.bootstrap_servers)
            extra.settimeout(5)
            assert extra.recv(4) == b""  # closed, no answer
        assert (
            "Rejected connection from 127.0.0.1, address already has the configured maximum "
            "of 3 connections." in caplog.text
        )
        wires.pop().close()
        again = connect(broker.bootstrap_servers)
        assert answered(again, 5)
        again.close()
        # an override for the address replaces the maximum, at once (dynamic)
        with wires[0] as admin:
            set_broker_config(admin, "max.connections.per.ip.overrides", "127.0.0.1:6")
            more = [connect(broker.bootstrap_servers) for _ in range(4)]
            assert all(answered(sock, 5) for sock in more)
            for sock in more:
                sock.close()
        for wire in wires:
            wire.close()


@pytest.mark.parametrize("key", ["max.connections", "listener.name.plaintext.max.connections"])
def test_past_the_broker_s_maximum_a_client_waits_for_a_connection_to_close(key):
    with EmbeddedBroker("thread", overrides={key: 2}) as broker:
        first, second = KafkaWire(broker.bootstrap_servers), KafkaWire(broker.bootstrap_servers)
        waiting = connect(broker.bootstrap_servers)  # in the listening socket's backlog
        assert not answered(waiting, 1.0)
        first.close()
        assert answered(waiting, 5)
        waiting.close()
        second.close()


def test_past_max_connection_creation_rate_new_connections_wait_their_turn():
    # two windows of a second: a new rate is measured over one, so 5 a second lets 5 in at
    # once; the sixth waits (6 - 5) / 5 of a second, and each after it about as long
    overrides = {"quota.window.num": 2, "max.connection.creation.rate": 5}
    with EmbeddedBroker("thread", overrides=overrides) as broker:
        started = time.monotonic()
        socks = [connect(broker.bootstrap_servers) for _ in range(8)]
        waited = []
        for sock in socks:
            assert answered(sock, 5)
            waited.append(time.monotonic() - started)
            sock.close()
        assert waited[-1] >= 0.5, waited  # 200 ms each for the sixth, seventh and eighth
        assert waited[4] < waited[-1] - 0.3, waited


def set_broker_config(wire: KafkaWire, name: str, value: str) -> None:
    r = IncrementalAlterConfigsRequest.AlterConfigsResource
    setting = r.AlterableConfig(name=name, config_operation=0, value=value)
    request = IncrementalAlterConfigsRequest(
        version=1,
        validate_only=False,
        resources=[r(resource_type=4, resource_name="", configs=[setting])],
    )
    assert [x.error_code for x in wire.request(request).responses] == [0]
