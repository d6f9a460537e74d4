"""A small Twisted Kafka client for broker-to-broker requests (the follower's Fetch and
OffsetForLeaderEpoch): requests are kafka-python message objects encoded with their header,
responses decoded by correlation id, several in flight on one connection."""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer, protocol
from twisted.python.failure import Failure

from protocol.framing import FrameDecoder

log = logging.getLogger(__name__)


class BrokerConnectionLost(Exception):
    pass


class BrokerClientProtocol(protocol.Protocol):
    def __init__(self, client_id: str):
        self.client_id = client_id
        self.decoder = FrameDecoder(1 << 30)
        self.correlation = 0
        self.waiting: dict[int, tuple[Any, defer.Deferred]] = {}
        self.closed = False

    def request(self, request: Any) -> defer.Deferred:
        if self.closed:
            return defer.fail(BrokerConnectionLost("connection closed"))
        self.correlation += 1
        request.with_header(correlation_id=self.correlation, client_id=self.client_id)
        result: defer.Deferred = defer.Deferred()
        self.waiting[self.correlation] = (request, result)
        self.transport.write(bytes(request.encode(header=True, framed=True)))
        return result

    def dataReceived(self, data: bytes) -> None:
        try:
            frames = self.decoder.feed(data)
        except Exception as exc:  # noqa: BLE001 - a broken peer: drop the connection
            log.warning("bad frame from peer broker: %s", exc)
            self.transport.loseConnection()
            return
        for frame in frames:
            frame = bytes(frame)
            correlation = int.from_bytes(frame[:4], "big", signed=True)
            entry = self.waiting.pop(correlation, None)
            if entry is None:
                continue
            request, result = entry
            try:
                response = request.header.get_response_class().decode(frame, header=True)
            except Exception:  # noqa: BLE001
                result.errback(Failure())
                continue
            result.callback(response)

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self.closed = True
        waiting, self.waiting = self.waiting, {}
        for _, result in waiting.values():
            result.errback(BrokerConnectionLost(str(reason.value)))

    def close(self) -> None:
        if not self.closed:
            self.transport.loseConnection()


def connect(reactor: Any, host: str, port: int, client_id: str,
            timeout: float = 10.0) -> defer.Deferred:
    """A Deferred firing with a connected ``BrokerClientProtocol``."""
    from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
    endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=timeout)
    return connectProtocol(endpoint, BrokerClientProtocol(client_id))
