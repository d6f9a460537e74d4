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

A file that shrank under a pending send (a follower truncating its log) cannot deliver the
length already announced in the response; the connection is closed, as Kafka does.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
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


class ResponseWriter:
    """Writes a connection's response chunks in order, file regions by ``sendfile``."""

    def __init__(self, transport: Any, zero_copy: bool):
        self.transport = transport
        self.zero_copy = zero_copy
        self.queue: collections.deque = collections.deque()  # bytes / memoryview / FileRegion
        self.sent = 0  # bytes of queue[0] already sent
        self.registered = False
        self.registering = False
        self.stopped = False

    def write(self, chunks: list) -> None:
        """Queue one or more responses' chunks (bytes and ``FileRecords``)."""
        if self.stopped:
            close_chunks(chunks)
            return
        if not self.queue and not any(isinstance(chunk, FileRecords) for chunk in chunks):
            self.transport.writeSequence(chunks)
            return
        for chunk in chunks:
            if isinstance(chunk, FileRecords):
                self.queue.extend(chunk.parts)
            elif chunk:
                self.queue.append(chunk)
        if not self.registered:
            # registerProducer calls resumeProducing at once, but the transport may still hold
            # bytes written earlier: wait for its drain (doWrite → resumeProducing) instead.
            self.registered = self.registering = True
            self.transport.registerProducer(self, False)
            self.registering = False
            self.transport.startWriting()

    # -- IPullProducer ----------------------------------------------------------------------
    def resumeProducing(self) -> None:
        """The transport's buffer is empty: send until done or the socket would block."""
        if self.stopped or self.registering or not self.queue:
            return
        try:
            done = self._send()
        except OSError as exc:
            log.warning("send failed on %s: %s", self.transport.getPeer(), exc)
            self.stopProducing()
            self.transport.abortConnection()
            return
        if done:
            self.registered = False
            self.transport.unregisterProducer()
        else:
            self.transport.startWriting()

    def stopProducing(self) -> None:
        """The connection is gone: drop what is queued and close its descriptors."""
        self.stopped = True
        for item in self.queue:
            if isinstance(item, FileRegion):
                item.close()
        self.queue.clear()

    def pauseProducing(self) -> None:  # a pull producer is never paused
        pass

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
                    if n < remaining:
                        self.sent += n
                        continue
                    item.close()
                    queue.popleft()
                    self.sent = 0
                else:
                    self._send_buffers(sock)
            except BlockingIOError:
                return False
        return True

    def _send_buffers(self, sock: socket.socket) -> None:
        """One ``sendmsg`` of the leading run of byte buffers; drops what went out."""
        queue = self.queue
        buffers = []
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
                break
