"""The Kafka listener: framing, decoding and strictly ordered responses per connection.

Each connection keeps a queue of the requests it has read. Handlers may finish in any order
(a long-polling Fetch behind a quick Metadata), but responses leave in request order, as Kafka
clients require: a response is written only once every earlier one has been. A produce with
acks=0 takes its place in the queue and writes nothing.

A frame that does not decode, or an API/version we don't serve, closes that connection only
(as Kafka does) and is logged with the peer's address.

Each request is timed as Kafka's ``RequestMetrics`` time it (``wireserver.metrics``): queue
time from the read that brought its frame to its dispatch, local time in the handler, remote
time waiting on a Deferred (the purgatory, replication, another broker), response-queue time
waiting behind earlier responses, send time in the write.
"""

from __future__ import annotations

import collections
import logging
import socket
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from twisted.internet import defer, protocol, task
from twisted.python.failure import Failure

from wireserver import request_log
from wireserver.apis import handler_for
from wireserver.context import RequestContext
from wireserver.heap import after_response
from wireserver.metrics import count_errors, request_times_ms
from wireserver.protocol.errors import DecodeError, UnsupportedApi
from wireserver.protocol.framing import FrameDecoder
from wireserver.protocol.messages import (
    FETCH_KEY,
    PRODUCE_KEY,
    Request,
    decode_request,
    encode_response_chunks,
    fetch_replica_id,
)
from wireserver.quotas import quota_user
from wireserver.security import connection as security_hooks
from wireserver.zero_copy import ResponseWriter, TurnEnd, close_chunks, supports_sendfile

if TYPE_CHECKING:
    from wireserver.security import ConnectionSecurity
    from wireserver.services import Services

log = logging.getLogger(__name__)

NO_RESPONSE = None

#: how often the broker looks for connections idle past ``connections.max.idle.ms`` (Kafka's
#: selector looks on every poll; a second is fine grained enough for a limit of minutes)
IDLE_CONNECTIONS_CHECK_MS = 1000


class _Slot:
    """One request's place in its connection's response queue."""

    __slots__ = (
        "request",
        "done",
        "data",
        "received",
        "started",
        "returned",
        "completed",
        "response",
        "size",
    )

    def __init__(self, request: Request, received: float, size: int = 0):
        self.request = request
        #: the request's bytes (without the size prefix): what a produce quota counts
        self.size = size
        self.done = False
        self.data: list[bytes] | None = None
        #: ``time.perf_counter()`` readings: the read that brought the frame, the handler's
        #: start and return, the response ready to go
        self.received = received
        self.started = self.returned = self.completed = received
        self.response: Any = None  # kept only while the request log is on (TRACE shows it)


class KafkaConnection(protocol.Protocol):
    """One client connection."""

    #: set by Twisted before ``connectionMade`` (``Protocol`` types it as optional)
    transport: Any

    def __init__(
        self,
        services: Services,
        listener_name: str,
        max_in_flight: int,
        turn_end: TurnEnd | None = None,
    ):
        self.services = services
        self.listener_name = listener_name
        self.max_in_flight = max_in_flight
        #: sends the answers of a reactor turn at its end (``zero_copy.TurnEnd``)
        self.turn_end = turn_end
        self.decoder = FrameDecoder(services.config["socket.request.max.bytes"])
        self.pending: collections.deque[_Slot] = collections.deque()
        #: requests read while an answer waited to be sent, handled once it has gone
        self.held: collections.deque[memoryview] = collections.deque()
        # Three reasons not to read requests (``_update_reading``): ``queued.max.requests``
        # of them unanswered (``paused``), a throttle (``muted``), requests held (``held``).
        self.paused = False
        #: a ``throttle`` control keeps this connection from reading (``mute``)
        self.muted = False
        self.reading = True
        self.closed = False
        self.host = "?"
        #: counted in ``services.connection_limits`` (uncounted when refused there)
        self.counted = False
        self.peer = "?"
        self.security: ConnectionSecurity | None = None
        self.writer: ResponseWriter | None = None
        #: what handlers keep for this connection (``RequestContext.connection_cache``)
        self.handler_cache: dict = {}
        #: ``metrics.enable``: count and time each request (``_record``)
        self.timed = services.metrics.enabled
        #: the timer that ends a quota throttle (``throttle``)
        self._unthrottle: Any = None
        #: ``time.perf_counter()`` of the last read or write (``close_idle_connections``)
        self.last_active = time.perf_counter()

    # -- connection lifecycle -------------------------------------------------------------

    def connectionMade(self) -> None:
        peer = self.transport.getPeer()
        self.host = getattr(peer, "host", "?")
        self.peer = f"{self.host}:{getattr(peer, 'port', '?')}"
        controls = self.services.controls
        if controls is not None and controls.refuses(self):
            return
        if self.services.connection_limits.admit(self.listener_name, self._admitted_later):
            self._admitted()
        else:  # max.connection.creation.rate: read nothing while it waits its turn
            self.transport.pauseProducing()

    def _admitted_later(self) -> None:
        if not self.closed:  # not gone while it waited
            self.transport.resumeProducing()
            self._admitted()

    def _admitted(self) -> None:
        """The rest of ``connectionMade``, once the creation rates let the connection in (as
        Kafka's acceptor hands a socket to a processor only after its wait)."""
        peer = self.transport.getPeer()
        connections = self.services.quotas.connections
        if connections.active:
            throttle_ms = connections.connection(getattr(peer, "host", "?"), self.services.now_ms())
            if throttle_ms > 0:
                # Kafka's acceptor: over the IP's connection_creation_rate, the connection is
                # read from no more and closed once the throttle time is over
                self.services.connection_limits.uncount_creation(self.listener_name)
                self.closed = True
                self.transport.pauseProducing()
                self.services.reactor.callLater(throttle_ms / 1000.0, self.transport.loseConnection)
                return
        if not self.services.connection_limits.opened(self.listener_name, self.host):
            self.closed = True  # max.connections.per.ip: closed unread, as Kafka's acceptor
            self.transport.loseConnection()
            return
        self.counted = True
        self.writer = ResponseWriter(
            self.transport, supports_sendfile(self.transport), self.turn_end
        )
        self.writer.on_drained = self._answers_sent
        configure_accepted_socket(self.transport, self.services.config["socket.send.buffer.bytes"])
        if self.services.security is not None:
            self.security = self.services.security.new_connection(
                self.listener_name, getattr(peer, "host", "*")
            )
        self.services.connections.add(self)
        self.services.metrics.connections_created[self.listener_name] += 1

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self.closed = True
        if self.counted:
            self.counted = False
            self.services.connection_limits.closed(self.listener_name, self.host)
        self.services.connections.discard(self)
        self.services.share.connection_closed(self.peer)
        for slot in self.pending:
            close_chunks(slot.data or [])
        self.pending.clear()
        self.held.clear()
        self.handler_cache.clear()
        if self._unthrottle is not None and self._unthrottle.active():
            self._unthrottle.cancel()

    def close(self, why: str) -> None:
        """Drop this connection (only this one) after a protocol violation."""
        if not self.closed:
            log.warning("closing connection from %s: %s", self.peer, why)
            self.closed = True
            self.lose_connection()

    def drop(self, why: str) -> None:
        """Close this connection without answering what is still pending (the
        ``disconnect``, ``down`` and ``refuse_connections`` controls)."""
        if not self.closed:
            log.info("closing connection from %s: %s", self.peer, why)
            self.closed = True
            self.lose_connection()

    def lose_connection(self) -> None:
        """Close once the answers already made have gone out: those the writer keeps for
        the end of the turn first (the transport flushes only its own buffer)."""
        if self.writer is not None:
            self.writer.send_outbox()
            self.writer.closing()
        self.transport.loseConnection()

    # -- input ------------------------------------------------------------------------------

    def dataReceived(self, data: bytes) -> None:
        if self.closed:
            return
        received = self.last_active = time.perf_counter()
        try:
            frames = self.decoder.feed(data)
        except DecodeError as exc:
            self.close(str(exc))
            return
        writer = self.writer
        assert writer is not None  # made in connectionMade, before any data is read
        held = self.held
        writer.reading = True
        try:
            for frame in frames:
                if self.closed:
                    return
                if held or writer.waiting:
                    held.append(frame)
                    continue
                self._handle_frame(frame, received)
        finally:
            writer.read_done()
        self._after_frames()

    def _answers_sent(self) -> None:
        """The answers that waited to be sent have gone (``ResponseWriter.on_drained``):
        handle the requests held meanwhile, in order, until one's answer waits in turn."""
        held = self.held
        if not held:
            return
        writer = self.writer
        assert writer is not None
        while held and not self.closed and not writer.waiting:
            self._handle_frame(held.popleft(), time.perf_counter())
        self._after_frames()

    def _after_frames(self) -> None:
        """Stop reading while requests are held or too many are unanswered."""
        if len(self.pending) >= self.max_in_flight and not self.paused:
            self.paused = True
        self._update_reading()

    def _handle_frame(self, frame: memoryview, received: float) -> None:
        security = self.security
        if security is not None and (
            security.authenticator is not None or not security.tls_principal_done
        ):
            if not security_hooks.admit(self, frame):
                return
        try:
            request = decode_request(frame, self.services.registry)
        except UnsupportedApi as exc:
            self.close(f"unsupported request: {exc}")
            return
        except DecodeError as exc:
            self.close(f"malformed request: {exc}")
            return
        self._dispatch(request, received, len(frame))

    def _dispatch(self, request: Request, received: float, size: int = 0) -> None:
        slot = _Slot(request, received, size)
        self.pending.append(slot)
        controls = self.services.controls
        if controls is not None and controls.active:
            # Only while a control is active: with none, a test broker (``controls.enable``,
            # as the benchmarks run it) answers as any other, without a Deferred per request.
            controls.dispatch(self, slot)
            return
        try:
            response = self._run_handler(slot)
        except Exception:  # noqa: BLE001 - answered as a handler's failure is
            self._failed(Failure(), slot)
            return
        if defer.Deferred in type(response).__mro__:  # isinstance goes through ABCMeta
            self.answer(slot, response)
        else:
            # Most answers are ready at once: written without a Deferred chain, which
            # was about a sixth of a small Produce request's cost (benchmarks/results.md).
            self._completed(response, slot)

    def handle(self, slot: _Slot) -> defer.Deferred:
        """Run the request's handler; a Deferred of its response."""
        return defer.maybeDeferred(self._run_handler, slot)

    def _run_handler(self, slot: _Slot) -> Any:
        """The request's handler's result: its response, or a Deferred of it."""
        request = slot.request
        writer = self.writer
        assert writer is not None  # made in connectionMade, before any request is read
        ctx = RequestContext(
            request=request,
            services=self.services,
            peer=self.peer,
            listener_name=self.listener_name,
            security=self.security,
            zero_copy=writer.zero_copy,
            connection_cache=self.handler_cache,
        )
        handler = handler_for(request.spec)
        slot.started = time.perf_counter()
        try:
            result = handler(ctx)
        finally:
            slot.returned = time.perf_counter()
        if self.services.quotas.enforcing:
            if isinstance(result, defer.Deferred):
                return result.addCallback(self._apply_quotas, ctx, slot)
            return self._apply_quotas(result, ctx, slot)
        return result

    # -- quotas -----------------------------------------------------------------------------

    def _apply_quotas(self, response: Any, ctx: RequestContext, slot: _Slot) -> Any:
        """Record the request against the client's quotas (``wireserver.quotas``): produce
        bytes, handler time (``request_percentage``); the Fetch handler has recorded its
        bytes already (``ctx.throttle_ms``). A violation sets ``throttle_time_ms`` and mutes
        this connection that long (KIP-219), or holds the response instead for request
        versions from before client-side throttling, as Kafka does."""
        quotas = self.services.quotas
        request = slot.request
        throttle_ms = ctx.throttle_ms
        user = quota_user(self.security)
        client_id = request.header.client_id or ""
        now_ms = self.services.now_ms()
        if request.header.api_key == PRODUCE_KEY and quotas.produce.active:
            throttle_ms = max(
                throttle_ms, quotas.produce.record(user, client_id, slot.size, now_ms)
            )
        throttle_field = request.spec.response_class.fields.get("throttle_time_ms")
        if quotas.request.active and throttle_field is not None and not self._exempt(request):
            # percent of one second of reactor time, as Kafka counts request-thread time
            used = (slot.returned - slot.started) * 100.0
            throttle_ms = max(throttle_ms, quotas.request.record(user, client_id, used, now_ms))
        if throttle_ms <= 0 or self.closed:
            return response
        from wireserver.controls.rules import CLIENT_THROTTLES_FROM, raise_throttle_time

        raise_throttle_time(response, request, throttle_ms)

        if request.api_version >= CLIENT_THROTTLES_FROM.get(request.spec.name, 0):
            self.throttle(throttle_ms)
            return response
        return task.deferLater(self.services.reactor, throttle_ms / 1000.0, lambda: response)

    @staticmethod
    def _exempt(request: Request) -> bool:
        """A follower's fetch is replication, exempt from client quotas."""
        body = request.body
        return (
            body is None
            or request.header.api_key == FETCH_KEY
            and fetch_replica_id(body, request.api_version) >= 0
        )

    def throttle(self, ms: int) -> None:
        """Read nothing from this connection for ``ms`` (a quota violation, or the ``throttle``
        control), from now, or longer if it is muted longer already. One timer serves both, so
        neither ends the other's mute early; it counts real seconds, which the ``clock``
        control's jumps do not shorten."""
        if self.closed:
            return
        self.mute()
        delay = ms / 1000.0
        timer = self._unthrottle
        if timer is not None and timer.active():
            if timer.getTime() - timer.seconds() < delay:
                timer.reset(delay)
        else:
            self._unthrottle = self.services.reactor.callLater(delay, self.unmute)

    def answer(self, slot: _Slot, response: defer.Deferred) -> None:
        """Write ``response`` (a Deferred of the response, or of a failure) in ``slot``'s
        turn (the controls answer this way too, after holding it or instead of handling)."""
        response.addCallbacks(
            self._completed, self._failed, callbackArgs=(slot,), errbackArgs=(slot,)
        )

    def mute(self) -> None:
        """Stop reading requests (the ``throttle`` control, as Kafka mutes a throttled
        channel), apart from the other reasons not to read (``_update_reading``)."""
        if not self.muted:
            self.muted = True
            self._update_reading()

    def unmute(self) -> None:
        if self.muted:
            self.muted = False
            self._update_reading()

    def _update_reading(self) -> None:
        """Read from the socket only while no reason not to holds: too many requests
        unanswered, a throttle, or requests held until an answer has been sent (as Kafka
        reads nothing from a channel whose response is still being sent)."""
        reading = not (self.paused or self.muted or self.held)
        if reading != self.reading and not self.closed:
            self.reading = reading
            if reading:
                self.transport.resumeProducing()
            else:
                self.transport.pauseProducing()

    # -- output -----------------------------------------------------------------------------

    def _completed(self, response: Any, slot: _Slot) -> None:
        if self.closed:
            return
        request = slot.request
        if response is not NO_RESPONSE:
            version = request.api_version if request.body is not None else 0
            try:
                slot.data = encode_response_chunks(
                    request.spec, version, request.header.correlation_id, response
                )
            except Exception:  # noqa: BLE001 - a handler built a response that won't encode
                self._failed(Failure(), slot)
                return
            if self.timed and request.body is not None:
                count_errors(response, request.spec.name, self.services.metrics.errors)
        slot.completed = time.perf_counter()
        if request_log.request_logger.isEnabledFor(logging.DEBUG):
            slot.response = response
        after_response(request.header.api_key, request.header.api_version, self.services.reactor)
        slot.done = True
        self._flush()
        if self.security is not None and self.security.authenticator is not None:
            security_hooks.after_response(self)

    def _failed(self, failure: Failure, slot: _Slot) -> None:
        if failure.check(DecodeError):
            # A handler found the request invalid in a way Kafka answers by disconnecting.
            self.close(f"invalid {slot.request.spec.name} request: {failure.value}")
            return
        log.error(
            "%s v%d from %s failed: %s",
            slot.request.spec.name,
            slot.request.api_version,
            self.peer,
            failure.getTraceback(),
        )
        self.close("internal error while handling a request")

    def _flush(self) -> None:
        out = []
        sent = []
        while self.pending and self.pending[0].done:
            slot = self.pending.popleft()
            sent.append(slot)
            if slot.data is not None:
                out.extend(slot.data)
        dequeued = time.perf_counter()
        if out:
            assert self.writer is not None  # made in connectionMade, before any request
            self.writer.write(out)
        written = self.last_active = time.perf_counter()
        if sent and self.timed:
            self._record(sent, dequeued, written)
        if sent and request_log.request_logger.isEnabledFor(logging.DEBUG):
            self._log_requests(sent, dequeued, written)
        if self.paused and len(self.pending) < self.max_in_flight:
            self.paused = False
            self._update_reading()

    def _log_requests(self, sent: list[_Slot], dequeued: float, written: float) -> None:
        """Kafka's request log line of each request whose response just went out."""
        principal = self.security.principal if self.security is not None else "User:ANONYMOUS"
        security_protocol = next(
            (
                listener.security_protocol
                for listener in self.services.config.listeners
                if listener.name == self.listener_name
            ),
            "PLAINTEXT",
        )
        for slot in sent:
            request_log.log_completed(
                slot.request,
                self.peer,
                self.listener_name,
                principal,
                request_log.timings_ms(
                    request_times_ms(
                        slot.received,
                        slot.started,
                        slot.returned,
                        slot.completed,
                        dequeued,
                        written,
                    )
                ),
                response=slot.response,
                security_protocol=security_protocol,
            )
            slot.response = None

    def _record(self, sent: list[_Slot], dequeued: float, written: float) -> None:
        """Kafka's RequestMetrics of requests whose responses just went out (in ms); a fetch
        counts as ``Fetch`` and as ``FetchConsumer`` or ``FetchFollower``."""
        metrics = self.services.metrics
        requests = metrics.requests
        record = metrics.request_times
        for slot in sent:
            request = slot.request
            name = request.spec.name
            requests[(name, request.api_version)] += 1
            values = request_times_ms(
                slot.received, slot.started, slot.returned, slot.completed, dequeued, written
            )
            record(name, written, values)
            if request.header.api_key == FETCH_KEY:
                body = request.body
                follower = body is not None and fetch_replica_id(body, request.api_version) >= 0
                record("FetchFollower" if follower else "FetchConsumer", written, values)


def close_idle_connections(connections: Iterable[KafkaConnection], max_idle_s: float) -> None:
    """Close every connection with no read or write for ``max_idle_s`` (Kafka's
    ``connections.max.idle.ms``, ten minutes by default): clients reconnect when they next
    need the broker, as they do after Kafka's selector closes an idle channel."""
    now = time.perf_counter()
    for connection in list(connections):
        if now - connection.last_active > max_idle_s:
            connection.drop(
                f"idle for more than {max_idle_s * 1000:.0f} ms (connections.max.idle.ms)"
            )


def configure_accepted_socket(transport: Any, send_buffer_bytes: int) -> None:
    """Set up an accepted socket as Kafka's acceptor does (``configureAcceptedSocketChannel``):
    TCP_NODELAY, so that a response's short tail (after its records went out by sendfile, or
    any small answer) does not wait on Nagle for the client's ACK; SO_KEEPALIVE; and SO_SNDBUF
    from ``socket.send.buffer.bytes`` unless it is -1 (the OS default, which Linux autotunes).
    On a TLS listener the socket is under the TLS layer's transport."""
    sock = getattr(transport, "socket", None)
    if sock is None:
        sock = getattr(getattr(transport, "transport", None), "socket", None)
    if sock is None:
        return
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if send_buffer_bytes != -1:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer_bytes)


def configure_listening_socket(port: Any, receive_buffer_bytes: int) -> None:
    """SO_RCVBUF of a Kafka listener's socket from ``socket.receive.buffer.bytes`` unless -1,
    as Kafka sets it on its server socket: accepted sockets inherit it, and the window scale
    they offer is chosen from it. Set before the first connection is accepted."""
    sock = getattr(port, "socket", None)  # none on an in-memory reactor's port
    if sock is not None and receive_buffer_bytes != -1:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)


class KafkaServerFactory(protocol.Factory):
    """Builds a ``KafkaConnection`` per accepted socket on one listener."""

    def __init__(self, services: Services, listener_name: str):
        self.services = services
        self.listener_name = listener_name
        self.turn_end = TurnEnd(services.reactor)

    def buildProtocol(self, addr: Any) -> KafkaConnection:
        return KafkaConnection(
            self.services,
            self.listener_name,
            self.services.config["queued.max.requests"],
            self.turn_end,
        )
