"""Accepted sockets as Kafka's acceptor sets them up: ``socket.receive.buffer.bytes`` and
``socket.send.buffer.bytes`` (SO_RCVBUF / SO_SNDBUF, -1 for the OS's autotuned default) and
SO_KEEPALIVE, read as an operator reads them: ``ss`` on the broker's side of the connection."""

from __future__ import annotations

import re
import socket
import subprocess
import time

import pytest

from wireserver.testing import EmbeddedBroker


def broker_side(port: int) -> dict[str, str]:
    """``ss``'s view of the broker's end of the one connection to ``port``: its receive and
    send buffer sizes (``rb``, ``tb``: what the kernel allots, twice what was set) and its
    timer (``keepalive`` when SO_KEEPALIVE is on)."""
    deadline = time.monotonic() + 10
    while True:
        out = subprocess.run(
            ["ss", "-tmonH", "state", "established", f"( sport = :{port} )"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        skmem = re.search(r"skmem:\(r\d+,rb(\d+),t\d+,tb(\d+)", out)
        if skmem is not None or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert skmem is not None, out
    timer = re.search(r"timer:\((\w+)", out)
    return {"rb": skmem[1], "tb": skmem[2], "timer": timer[1] if timer else ""}


def connected(broker: EmbeddedBroker) -> socket.socket:
    """A client connection the broker has accepted (one Metadata round trip on it)."""
    client = socket.create_connection((broker.host, broker.port))
    time.sleep(0.2)  # the broker's reactor accepts it and sets it up
    return client


@pytest.mark.parametrize(
    ("overrides", "rb", "tb"),
    [
        ({}, 2 * 102400, 2 * 102400),  # Kafka's defaults
        ({"socket.receive.buffer.bytes": 50000, "socket.send.buffer.bytes": 30000}, 100000, 60000),
    ],
)
def test_accepted_sockets_get_the_configured_buffers_and_keepalive(overrides, rb, tb):
    with EmbeddedBroker(overrides=overrides) as broker, connected(broker):
        seen = broker_side(broker.port)
    assert (int(seen["rb"]), int(seen["tb"])) == (rb, tb)
    assert seen["timer"] == "keepalive"


def test_minus_one_leaves_the_buffers_to_the_operating_system():
    overrides = {"socket.receive.buffer.bytes": -1, "socket.send.buffer.bytes": -1}
    with EmbeddedBroker(overrides=overrides) as broker, connected(broker):
        seen = broker_side(broker.port)
    default_rb = int(open("/proc/sys/net/ipv4/tcp_rmem").read().split()[1])
    assert int(seen["rb"]) == default_rb
    assert int(seen["tb"]) != 2 * 102400
    assert seen["timer"] == "keepalive"


def test_a_tls_listener_sets_up_its_sockets_alike():
    with EmbeddedBroker(tls=True) as broker, connected(broker):
        seen = broker_side(broker.port)
    assert (int(seen["rb"]), int(seen["tb"]), seen["timer"]) == (204800, 204800, "keepalive")
