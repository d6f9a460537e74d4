"""Responses whose records go from segment files to the socket with ``os.sendfile``.

A Fetch response of a plain-TCP connection may carry ``storage.file_records.FileRecords``
(stretches of segment files) between its short encoded fields. Copying those through Python
(pread into bytes, Twisted joining its write buffer, send) is three memcpys of every byte
served; ``sendfile`` is none. Kafka does the same (``FileRecords.writeTo`` → ``transferTo``)
for plaintext listeners; TLS connections never get here (the records are read into memory
there, as before).

``ResponseWriter`` is the connection's only way out. While no file data is queued it writes
through the transport as usual. Once some is, it registers itself with the transport as a pull
producer (``IPullProducer``): Twisted calls ``resumeProducing`` each time the transport's own
buffer has drained, and only then does the writer send straight to the socket (``sendmsg``
for bytes, ``sendfile`` for file regions) until the socket would block. It then asks the
transport to wait for writability (``startWriting``), which brings it back through
``resumeProducing``. The reactor never blocks, and bytes leave in the order they were queued.
When the queue is empty the writer unregisters and the transport is in charge again.

Answers without file data are not handed to the transport one by one either. Twisted's
``write`` registers the socket for writability (``epoll_ctl``), sends on the reactor's next turn
and unregisters it (``epoll_ctl`` again): two system calls and a turn for every write. The
writer instead keeps the turn's answers and ``TurnEnd`` sends each connection's in one
``sendmsg`` once the turn's reads are handled, straight to the socket when the transport holds
nothing; only what the socket does not take goes through the transport. Against the Java
producer (idempotent, 1 KB records, five requests in flight) the broker spent 12-14 % less CPU
per run and the producer sent 8-12 % more (benchmarks/results.md). The answers a connection
makes while it handles what it just read go when it has handled all of it (``read_done``):
for that connection the same moment, without a reactor call to schedule.

While an answer waits to be sent (``waiting``: queued here, or on TLS and other transports held
in the transport's buffer past its size, which Twisted reports to the writer as a streaming
producer), the connection reads and handles no further request, and the writer tells it when
the answers have gone (``on_drained``), as Kafka reads nothing from a channel whose response is
still being sent. A client that wrote requests and never read the answers otherwise made the
broker answer every one into memory, with a descriptor for each answer's file region, until
it ran out of descriptors and memory.

A file that shrank under a pending send (a follower truncating its log) cannot deliver the
length already announced in the response; the connection is closed, as Kafka does.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
from collections.abc import Callable
from typing import Any

from wireserver.storage.file_records import FileRecords, FileRegion

log = logging.getLogger(__name__)

#: At most this many buffers per sendmsg call (well under any IOV_MAX).
SENDMSG_BUFFERS = 64


def supports_sendfile(transport: Any) -> bool:
    """Whether ``transport`` is Twisted's plain TCP transport (a socket we may write to
    directly); TLS, UNIX and test transports take the ordinary path."""
    from twisted.internet import tcp

    return (
        isinstance(transport, tcp.Connection)
        and not getattr(transport, "TLS", False)
        and hasattr(os, "sendfile")
    )


def close_chunks(chunks: list) -> None:
    """Release the descriptors of any ``FileRecords`` among ``chunks`` (never sent)."""
    for chunk in chunks:
        if isinstance(chunk, FileRecords):
            chunk.close()


class TurnEnd:
    """Sends the answers of one reactor turn at its end: connections whose writers hold some
    are flushed by one call scheduled for the next turn, which a reactor runs before it polls
    again."""

    def __init__(self, reactor: Any):
        self.reactor = reactor
        self.writers: list[ResponseWriter] = []
        self.call: Any = None

    def add(self, writer: ResponseWriter) -> None:
        self.writers.append(writer)
        if self.call is None:
            self.call = self.reactor.callLater(0, self.run)

    def run(self) -> None:
        self.call = None
        writers, self.writers = self.writers, []
        for writer in writers:
            writer.send_outbox()
            writer.turn_ended()


class ResponseWriter:
    """Writes a connection's response chunks in order, file regions by ``sendfile``; with a
    ``turn_end`` (plain TCP only), answers without file data at the end of the turn."""

    def __init__(self, transport: Any, zero_copy: bool, turn_end: TurnEnd | None = None):
        self.transport = transport
        self.zero_copy = zero_copy
        self.turn_end = turn_end if zero_copy else None
        #: this turn's answers, for ``send_outbox``
        self.outbox: list = []
        #: the connection is handling what it read: it sends the outbox when done
        #: (``read_done``), so no ``TurnEnd`` call is needed for the answers made meanwhile
        self.reading = False
        self.queue: collections.deque = collections.deque()  # bytes / memoryview / FileRegion
        self.sent = 0  # bytes of queue[0] already sent
        self.registered = False
        self.registering = False
        self.stopped = False
        #: the transport's buffer is past its size (streaming producer: not plain TCP)
        self.transport_full = False
        #: told when the answers that were waiting have gone (``waiting`` turned false)
        self.on_drained: Callable[[], None] | None = None
        if not zero_copy:
            # Twisted pauses a streaming producer when the transport's buffer is full and
            # resumes it once that buffer has drained.
            transport.registerProducer(self, True)

    @property
    def waiting(self) -> bool:
        """Whether answers wait to be sent: queued here (file data, or bytes the socket did
        not take), or in a full transport buffer."""
        return bool(self.queue) or self.transport_full

    def closing(self) -> None:
        """The connection closes once its answers are out: a streaming producer still
        registered (and paused) would keep Twisted from ever closing it."""
        if not self.zero_copy:
            self.transport.unregisterProducer()

    def _drained(self) -> None:
        if self.on_drained is not None:
            self.on_drained()

    def write(self, chunks: list) -> None:
        """Queue one or more responses' chunks (bytes and ``FileRecords``)."""
        if self.stopped:
            close_chunks(chunks)
            return
        if not self.queue and not any(isinstance(chunk, FileRecords) for chunk in chunks):
            if self.turn_end is None:
                self.transport.writeSequence(chunks)
            else:
                if not self.outbox and not self.reading:
                    self.turn_end.add(self)
                self.outbox.extend(chunks)
            return
        self.send_outbox()  # what came before goes first
        for chunk in chunks:
            if isinstance(chunk, FileRecords):
                self.queue.extend(chunk.parts)
            elif chunk:
                self.queue.append(chunk)
        self._register()

    def _register(self) -> None:
        """Send the queue as the transport drains (``resumeProducing``)."""
        if not self.registered:
            # registerProducer calls resumeProducing at once, but the transport may still hold
            # bytes written earlier: wait for its drain (doWrite → resumeProducing) instead.
            self.registered = self.registering = True
            self.transport.registerProducer(self, False)
            self.registering = False
            self.transport.startWriting()

    def send_outbox(self) -> None:
        """Send the answers kept this turn: straight to the socket when the transport holds
        nothing; what is left (or all, when it holds something) joins the queue and goes as
        the transport drains, so bytes leave in order. Nothing goes out on a connection that
        is gone or aborted."""
        outbox, self.outbox = self.outbox, []
        transport = self.transport
        if not outbox or self.stopped or not transport.connected or transport._aborting:
            return
        self.queue.extend(outbox)
        if not (transport._tempDataLen or len(transport.dataBuffer) > transport.offset):
            try:
                if self._send():
                    self._sent_all()
                    return
            except OSError as exc:
                self._fail(exc)
                return
        self._register()

    # -- IPullProducer ----------------------------------------------------------------------
    def resumeProducing(self) -> None:
        """The transport's buffer is empty: send until done or the socket would block."""
        if self.stopped or self.registering:
            return
        if self.queue:
            try:
                done = self._send()
            except OSError as exc:
                self._fail(exc)
                return
            if not done:
                self.transport.startWriting()
                return
        # Sent (or emptied by ``send_outbox`` meanwhile, or a streaming producer's resume:
        # the transport's buffer drained).
        self._sent_all()
        self.transport_full = False
        self._drained()

    def _sent_all(self) -> None:
        """The queue is empty: stop waiting for the socket to take more."""
        if self.registered:
            self.registered = False
            self.transport.unregisterProducer()

    def read_done(self) -> None:
        """The connection has handled what it read: the answers it made meanwhile go now,
        in one ``sendmsg``, as ``TurnEnd`` would send them at the end of the turn, without
        scheduling a reactor call for it (a delayed call made and run for every read: about
        4 % of the broker's CPU for a lone small Produce request)."""
        self.reading = False
        if self.outbox:
            self.send_outbox()
            self.turn_ended()

    def turn_ended(self) -> None:
        """``TurnEnd`` has sent this turn's answers: if none waits, the connection may go on
        with requests it held (not from ``send_outbox`` itself, which ``write`` calls before
        queuing an answer that must leave before theirs)."""
        if not self.waiting:
            self._drained()

    def _fail(self, exc: OSError) -> None:
        log.warning("send failed on %s: %s", self.transport.getPeer(), exc)
        self.stopProducing()
        self.transport.abortConnection()

    def stopProducing(self) -> None:
        """The connection is gone: drop what is queued and close its descriptors."""
        self.stopped = True
        for item in self.queue:
            if isinstance(item, FileRegion):
                item.close()
        self.queue.clear()

    def pauseProducing(self) -> None:
        """The transport's buffer is full (a streaming producer's pause: not plain TCP)."""
        self.transport_full = True

    # -- sending ----------------------------------------------------------------------------
    def _send(self) -> bool:
        """Send queued items until the queue is empty (True) or the socket is full (False)."""
        sock = self.transport.socket
        out = sock.fileno()
        queue = self.queue
        while queue:
            item = queue[0]
            try:
                if isinstance(item, FileRegion):
                    remaining = item.length - self.sent
                    n = os.sendfile(out, item.fd, item.position + self.sent, remaining)
                    if n == 0:
                        raise OSError(f"file region truncated during send ({remaining} bytes left)")
                    if n < remaining:  # the socket is full: asking again gets EAGAIN
                        self.sent += n
                        return False
                    item.close()
                    queue.popleft()
                    self.sent = 0
                elif not self._send_buffers(sock):
                    return False
            except BlockingIOError:
                return False
        return True

    def _send_buffers(self, sock: socket.socket) -> bool:
        """One ``sendmsg`` of the leading run of byte buffers; drops what went out. False when
        the socket took only part of them (it is full)."""
        queue = self.queue
        buffers: list[bytes | memoryview] = []
        for item in queue:
            if isinstance(item, FileRegion) or len(buffers) == SENDMSG_BUFFERS:
                break
            buffers.append(item)
        if self.sent:
            buffers[0] = memoryview(buffers[0])[self.sent :]
        n = sock.sendmsg(buffers)
        for buffer in buffers:
            if n >= len(buffer):
                n -= len(buffer)
                queue.popleft()
                self.sent = 0
            else:
                self.sent += n
                return False
        return True
