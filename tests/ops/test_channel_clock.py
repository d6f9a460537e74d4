"""The operations listener's request deadline on an injected clock: the channel is given the
reactor's ``callLater`` (here a ``twisted.internet.task.Clock``), so the deadline is measured
in the broker's time, not the wall clock's, and every byte a slow client sends does not move
it."""

from __future__ import annotations

from twisted.internet import task
from twisted.internet.testing import StringTransport
from twisted.web import resource

from wireserver.ops.http import REQUEST_TIMEOUT_S, OpsSite


class Hello(resource.Resource):
    isLeaf = True

    def render_GET(self, request):  # noqa: N802 - twisted.web's name
        return b"hello"


def channel_on(clock: task.Clock):
    site = OpsSite(Hello(), clock, {})
    channel = site.buildProtocol(None)
    transport = StringTransport()
    channel.makeConnection(transport)
    return site, channel, transport


def test_a_trickling_request_is_answered_408_when_the_deadline_passes():
    clock = task.Clock()
    _, channel, transport = channel_on(clock)
    request = b"GET / HTTP/1.1\r\nX-Slow: " + b"s" * 100
    step = REQUEST_TIMEOUT_S / len(request) * 0.999
    for byte in request:  # one byte per step: it would never finish in time
        channel.dataReceived(bytes([byte]))
        clock.advance(step)
    assert transport.value() == b""
    assert not transport.disconnecting
    clock.advance(REQUEST_TIMEOUT_S)
    assert transport.value().startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert transport.disconnecting


def test_a_complete_request_in_time_is_served_and_the_deadline_starts_again():
    clock = task.Clock()
    _, channel, transport = channel_on(clock)
    clock.advance(REQUEST_TIMEOUT_S * 0.9)
    channel.dataReceived(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"HTTP/1.1 200 OK" in transport.value()
    assert transport.value().endswith(b"hello")
    transport.clear()
    clock.advance(REQUEST_TIMEOUT_S * 0.9)  # a new deadline from the answer on
    assert not transport.disconnecting
    clock.advance(REQUEST_TIMEOUT_S * 0.2)
    assert transport.value().startswith(b"HTTP/1.1 408 ")
    assert transport.disconnecting
