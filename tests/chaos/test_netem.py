"""chaos.netem between two real network namespaces joined by a veth pair: what a program in one
sees of the delay and loss configured on the other's side, and that the namespace is as before
once the context exits. Needs root, ``ip``, ``nft``, ``iptables`` and ``fnfqueue``; under
``CI=true`` a missing one fails the test."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from chaos.netem import Netem, in_namespace
from tests.integration.conftest import require

CLIENT, SERVER, OTHER = "10.199.0.1", "10.199.0.2", "10.199.0.3"
CLIENT6, SERVER6 = "fd00:199::1", "fd00:199::2"
DEVICE = "veth0"
PORT = 9555


@pytest.fixture
def link() -> Iterator[tuple[str, str]]:
    """Namespaces (client, server) joined by ``veth0``: the client is 10.199.0.1 and
    fd00:199::1, the server 10.199.0.2, 10.199.0.3 and fd00:199::2."""
    require(os.geteuid() == 0, "network namespaces need root")
    for tool in ("ip", "tc", "nft", "iptables", "ip6tables"):
        require(shutil.which(tool), f"{tool} is not installed (apt: iproute2, nftables, iptables)")
    require(importlib.util.find_spec("fnfqueue"), "fnfqueue is not installed (the test extra)")
    client, server = f"netem-c-{os.getpid()}", f"netem-s-{os.getpid()}"
    made = []
    try:
        for namespace in (client, server):
            subprocess.run(["ip", "netns", "add", namespace], check=True)
            made.append(namespace)
        subprocess.run(
            ["ip", "link", "add", DEVICE, "netns", client, "type", "veth"]
            + ["peer", "name", DEVICE, "netns", server],
            check=True,
        )
        for namespace, addresses in (
            (client, [f"{CLIENT}/24", f"{CLIENT6}/64"]),
            (server, [f"{SERVER}/24", f"{OTHER}/24", f"{SERVER6}/64"]),
        ):
            for address in addresses:
                no_dad = ["nodad"] if ":" in address else []  # usable at once
                ip(namespace, "addr", "add", address, "dev", DEVICE, *no_dad)
            ip(namespace, "link", "set", DEVICE, "up")
            ip(namespace, "link", "set", "lo", "up")
        yield client, server
    finally:
        for namespace in made:
            subprocess.run(["ip", "netns", "del", namespace], check=True)


def ip(namespace: str, *args: str) -> None:
    subprocess.run(["ip", "-n", namespace, *args], check=True)


def python_in(namespace: str, code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["ip", "netns", "exec", namespace, sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def output(process: subprocess.Popen[str], timeout: float = 60) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return out


def serve(namespace: str, code: str) -> subprocess.Popen[str]:
    """Starts a server that prints ``ready`` once it listens."""
    server = python_in(namespace, code, str(PORT))
    assert server.stdout is not None
    assert server.stdout.readline().strip() == "ready", server.stderr.read()  # type: ignore[union-attr]
    return server


ECHO = """
    import socket, sys, threading
    listener = socket.create_server(
        ("::", int(sys.argv[1])), family=socket.AF_INET6, dualstack_ipv6=True
    )
    print("ready", flush=True)
    def echo(connection):
        with connection:
            while data := connection.recv(65536):
                connection.sendall(data)
    while True:
        threading.Thread(target=echo, args=(listener.accept()[0],), daemon=True).start()
"""

RTT = """
    import socket, sys, time
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rtts = []
        for _ in range(5):
            start = time.monotonic()
            connection.sendall(b"x")
            assert connection.recv(1) == b"x"
            rtts.append((time.monotonic() - start) * 1000)
    print(min(rtts))
"""


def rtt_ms(namespace: str, address: str) -> float:
    """The smallest of 5 round trips of one byte over one TCP connection, in milliseconds."""
    return float(output(python_in(namespace, RTT, address, str(PORT))))


def snapshot(namespace: str) -> tuple[str, ...]:
    """What chaos.netem may touch in a namespace: nftables rules, qdiscs and filters."""
    return tuple(
        in_namespace(namespace, *command).stdout
        for command in (
            ["nft", "list", "ruleset"],
            ["tc", "qdisc", "show"],
            ["tc", "filter", "show", "dev", DEVICE],
        )
    )


@pytest.fixture
def echo_server(link: tuple[str, str]) -> Iterator[None]:
    server = serve(link[1], ECHO)
    yield
    server.kill()
    server.communicate()


@pytest.mark.parametrize("server", [SERVER, SERVER6])
def test_delay_raises_the_round_trip_time_until_exit(link, echo_server, server):
    client = link[0]
    before = snapshot(client)
    assert rtt_ms(client, server) < 20
    with Netem(client, DEVICE, delay_ms=100) as netem:
        assert netem.mode in ("netem", "nfqueue")
        assert rtt_ms(client, server) >= 90
    assert rtt_ms(client, server) < 20
    assert snapshot(client) == before


def test_delay_to_peers_leaves_other_addresses_alone(link, echo_server):
    client = link[0]
    before = snapshot(client)
    with Netem(client, DEVICE, delay_ms=100, jitter_ms=5, peers=[SERVER]):
        assert rtt_ms(client, SERVER) >= 90
        assert rtt_ms(client, OTHER) < 20
    assert snapshot(client) == before


UDP_RECEIVE = """
    import socket, sys
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    receiver.bind(("0.0.0.0", int(sys.argv[1])))
    print("ready", flush=True)
    receiver.settimeout(30)
    received = []
    try:
        while True:
            received.append(receiver.recv(2048).decode())
            receiver.settimeout(2)
    except TimeoutError:
        pass
    print(" ".join(received))
"""

UDP_SEND = """
    import socket, sys, time
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    count, rate = int(sys.argv[3]), int(sys.argv[4])
    start = time.monotonic()
    for number in range(count):
        sender.sendto(b"%d" % number, (sys.argv[1], int(sys.argv[2])))
        if number % 10 == 9:
            time.sleep(max(0, start + (number + 1) / rate - time.monotonic()))
"""


def udp(client: str, server: str, count: int, rate: int, **netem: float) -> list[int]:
    """The numbers of the datagrams that arrived at the server, in order of arrival, of
    ``count`` sent from the client at ``rate`` a second through ``Netem(**netem)``."""
    receiver = serve(server, UDP_RECEIVE)
    with Netem(client, DEVICE, **netem):
        output(python_in(client, UDP_SEND, SERVER, str(PORT), str(count), str(rate)))
    return [int(number) for number in output(receiver).split()]


@pytest.mark.parametrize("delay_ms", [0, 1])
def test_loss_drops_about_that_share_of_datagrams_silently(link, delay_ms):
    """As on the wire, the sender sees no error for a datagram lost (``output`` fails if
    ``sendto`` raised)."""
    client, server = link
    before = snapshot(client)
    received = len(udp(client, server, 500, 10_000, delay_ms=delay_ms, loss_percent=30))
    assert 0.15 <= 1 - received / 500 <= 0.45, received
    assert snapshot(client) == before


SINK = """
    import hashlib, socket, sys
    listener = socket.create_server(("0.0.0.0", int(sys.argv[1])))
    listener.settimeout(120)  # ends on its own should the test fail
    print("ready", flush=True)
    connection, _ = listener.accept()
    digest, size = hashlib.sha256(), 0
    while data := connection.recv(65536):
        digest.update(data)
        size += len(data)
    print(size, digest.hexdigest(), flush=True)
    connection.close()
"""

SOURCE = """
    import hashlib, os, socket, sys, time
    data = os.urandom(int(sys.argv[3]))
    start = time.monotonic()
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60) as connection:
        connection.sendall(data)
        connection.shutdown(socket.SHUT_WR)
        connection.recv(1)
    print(len(data), hashlib.sha256(data).hexdigest())
    print(time.monotonic() - start)
"""


def tcp_transfer(client: str, server: str, size: int, **netem: float) -> float:
    """Sends ``size`` random bytes over TCP from the client to the server through
    ``Netem(**netem)``; checks that they all arrived, as sent; the seconds it took."""
    sink = serve(server, SINK)
    with Netem(client, DEVICE, **netem):
        sent, seconds = output(python_in(client, SOURCE, SERVER, str(PORT), str(size)), 120).split(
            "\n"
        )[:2]
        assert output(sink, timeout=120) == sent + "\n"
    return float(seconds)


def test_a_tcp_transfer_through_loss_and_delay_arrives_intact(link):
    tcp_transfer(*link, 1 << 20, delay_ms=20, loss_percent=5)


def test_tcp_through_delay_is_not_throttled_by_its_own_queued_packets(link):
    """TCP stops sending while its packets wait in the host (TCP small queues): had the
    substitute held them, this would take some 40 s (0.26 MB/s); it takes about 1 s."""
    assert tcp_transfer(*link, 10 << 20, delay_ms=20) < 10


def test_jitter_reorders_and_a_held_packet_holds_back_no_other(link):
    """Each datagram is let through when its own delay is up, whatever came before it."""
    received = udp(*link, 200, 1000, delay_ms=50, jitter_ms=40)
    assert sorted(received) == list(range(200))
    assert received != sorted(received)


def test_packets_held_at_exit_go_out_then(link):
    """Leaving the context does not lose what the delay still holds."""
    assert sorted(udp(*link, 200, 10_000, delay_ms=5000)) == list(range(200))


def test_the_substitute_keeps_up_with_a_broker_cluster(link):
    """A few thousand packets a second, as a broker cluster under test sends, all arrive (the
    substitute passes about 14,000 a second on a loaded 2-core machine)."""
    assert len(udp(*link, 8000, 4000, delay_ms=5)) == 8000
