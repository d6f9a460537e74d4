"""A small Twisted Kafka client for broker-to-broker requests (the follower's Fetch and
OffsetForLeaderEpoch): requests are kafka-python message objects encoded with their header,
responses decoded by correlation id, several in flight on one connection.

``connect`` secures the connection as the inter-broker listener says
(``wireserver.security.inter_broker``): TLS first where the listener uses it, then, on a SASL
listener, SaslHandshake v1 and SaslAuthenticate rounds before the connection is handed out; a
refused login fails the Deferred with ``InterBrokerAuthenticationFailed``."""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer, protocol
from twisted.python.failure import Failure

from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.framing import FrameDecoder
from wireserver.security.sasl import SaslFailure

log = logging.getLogger(__name__)


class BrokerConnectionLost(Exception):
    pass


class InterBrokerAuthenticationFailed(Exception):
    """The other broker refused this broker's SASL login (the message says why)."""


SASL_HANDSHAKE_VERSION = 1
SASL_AUTHENTICATE_VERSION = 2


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


class _OneProtocolFactory(protocol.Factory):
    def __init__(self, client: BrokerClientProtocol):
        self.client = client

    def buildProtocol(self, addr: Any) -> BrokerClientProtocol:  # noqa: N802 - Twisted's
        return self.client


@defer.inlineCallbacks
def connect(
    reactor: Any, host: str, port: int, client_id: str, security: Any = None, timeout: float = 10.0
):
    """A Deferred firing with a connected (and, per ``security``, an
    ``InterBrokerSecurity``, encrypted and authenticated) ``BrokerClientProtocol``."""
    from twisted.internet.endpoints import TCP4ClientEndpoint

    client = BrokerClientProtocol(client_id)
    factory: protocol.Factory = _OneProtocolFactory(client)
    if security is not None and security.uses_tls:
        # The clock: an embedded broker runs on a private reactor (see SecurityManager.listen).
        from twisted.protocols.tls import TLSMemoryBIOFactory

        factory = TLSMemoryBIOFactory(security.tls_options(host), True, factory, clock=reactor)
    yield TCP4ClientEndpoint(reactor, host, port, timeout=timeout).connect(factory)
    if security is not None and security.mechanism:
        try:
            yield _authenticate(client, security, f"{host}:{port}")
        except Exception:
            client.close()
            raise
    return client


def connect_to_broker(
    reactor: Any, brokers: dict, broker_id: int, security: Any, client_id: str
) -> defer.Deferred:
    """Connect to broker ``broker_id``'s endpoint of the inter-broker listener (``brokers``:
    the registrations read from ZooKeeper), secured as that listener says (TLS, SASL login).
    The replica fetcher and the transaction marker sender both reach other brokers this way."""
    info = brokers.get(broker_id)
    if info is None or not info.endpoints:
        return defer.fail(RuntimeError(f"broker {broker_id} is not registered"))
    if security.listener not in info.endpoints:
        return defer.fail(
            RuntimeError(
                f"broker {broker_id} has no endpoint for the inter-broker listener "
                f"{security.listener} (it registered {', '.join(info.endpoints)})"
            )
        )
    host, port = info.endpoints[security.listener]
    return connect(reactor, host, port, client_id, security)


@defer.inlineCallbacks
def _authenticate(client: BrokerClientProtocol, security: Any, address: str):
    from wireserver.protocol.served import SERVED

    who = f"SASL login to {address} as {security.username} with {security.mechanism}"
    handshake = yield client.request(
        SERVED.get(17).request_class(version=SASL_HANDSHAKE_VERSION, mechanism=security.mechanism)
    )
    if handshake.error_code:
        raise InterBrokerAuthenticationFailed(
            f"{who} failed: {ErrorCode(handshake.error_code).name} (enabled there: "
            f"{', '.join(handshake.mechanisms)})"
        )
    exchange = security.sasl_client()
    token = exchange.initial()
    while token is not None:
        response = yield client.request(
            SERVED.get(36).request_class(version=SASL_AUTHENTICATE_VERSION, auth_bytes=token)
        )
        if response.error_code:
            raise InterBrokerAuthenticationFailed(
                f"{who} failed: {ErrorCode(response.error_code).name}: {response.error_message}"
            )
        try:
            token = exchange.respond(bytes(response.auth_bytes))
        except SaslFailure as exc:
            raise InterBrokerAuthenticationFailed(f"{who} failed: {exc}") from None


#: How long one inter-broker request may take before its connection is dropped (Kafka's
#: ``request.timeout.ms`` default).
REQUEST_TIMEOUT_MS = 30_000


class BrokerChannel:
    """Requests from this broker to others, over one connection kept per broker (Kafka's
    ``NodeToNodeChannelManager`` shape): the transaction marker sender and the share-state
    persister send through one. ``metadata``: where each broker listens
    (``ZkMetadata.registrations``)."""

    def __init__(self, reactor: Any, node_id: int, security: Any, metadata: Any, client_id: str):
        self.reactor = reactor
        self.node_id = node_id
        self.security = security
        self.metadata = metadata
        self.client_id = client_id
        self.connections: dict[int, Any] = {}
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()

    @defer.inlineCallbacks
    def _exchange(self, broker_id: int, request: Any):
        """The broker's response, or None when the request failed (any failure: its
        connection is dropped, the caller retries)."""
        try:
            connection = yield self._connection(broker_id)
            pending = connection.request(request)
            pending.addTimeout(REQUEST_TIMEOUT_MS / 1000.0, self.reactor)
            response = yield pending
        except Exception as exc:  # noqa: BLE001
            log.info("%s to broker %d failed: %s", type(request).__name__, broker_id, exc)
            connection = self.connections.pop(broker_id, None)
            if connection is not None:
                connection.close()
            return None
        return response

    @defer.inlineCallbacks
    def _connection(self, broker_id: int):
        connection = self.connections.get(broker_id)
        if connection is not None and not connection.closed:
            return connection
        connection = yield connect_to_broker(
            self.reactor, self.metadata.registrations(), broker_id, self.security, self.client_id
        )
        existing = self.connections.get(broker_id)
        if existing is not None and not existing.closed:
            connection.close()  # another request connected meanwhile: share its connection
            return existing
        if self.stopped:
            connection.close()
            raise BrokerConnectionLost("the channel stopped")
        self.connections[broker_id] = connection
        return connection
