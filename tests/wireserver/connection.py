"""A broker connection driven in-process (a string transport): connect, send a request, read the
framed responses."""

from __future__ import annotations

from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from wireserver.protocol.framing import FrameDecoder


def connect(broker):
    factory = broker.ports[0].factory if hasattr(broker.ports[0], "factory") else None
    factory = factory or broker.reactor.tcpServers[0][1]
    connection = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 5555))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "127.0.0.1", 5555))
    connection.makeConnection(transport)
    return connection, transport


def send(connection, request, correlation_id):
    request.with_header(correlation_id=correlation_id, client_id="test")
    connection.dataReceived(bytes(request.encode(header=True, framed=True)))


def responses(transport) -> list[memoryview]:
    frames = FrameDecoder().feed(transport.value())
    transport.clear()
    return frames
