"""A real ``wireserver serve`` subprocess that can be stopped (SIGTERM), killed (SIGKILL) and
restarted on the same data dir and port, and a TCP proxy between clients and the broker that
can lose a Produce response on purpose.

Clients connect to what Metadata advertises, so the broker advertises the proxy's port
(``advertised.listeners``) and every connection after bootstrap goes through the proxy too.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

import pytest

READY = re.compile(r"wireserver ready: .* listening on PLAINTEXT://([\d.]+):(\d+)")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRODUCE = 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, tmp_path, *, port: int = 0, advertised_port: int | None = None):
        self.data_dir = str(tmp_path / "data")
        self.port = port
        self.advertised_port = advertised_port
        self.stderr_path = tmp_path / "broker.stderr"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        args = [
            sys.executable,
            "-m",
            "wireserver.cli",
            "serve",
            "--log-level",
            "INFO",
            "--override",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "--override",
            f"log.dirs={self.data_dir}",
            "--override",
            "node.id=1",
        ]
        if self.advertised_port is not None:
            args += [
                "--override",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.advertised_port}",
            ]
        stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, cwd=ROOT)
        stderr.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            match = READY.search(line.decode())
            if match:
                if self.port == 0 and self.advertised_port is None:
                    self.port = int(match.group(2))
                return
        self.kill()
        raise RuntimeError(
            "broker did not start: " + self.stderr_path.read_text(errors="replace")[-3000:]
        )

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.advertised_port or self.port}"

    def stop(self) -> None:
        """SIGTERM: a clean shutdown (producer state snapshot, clean-shutdown marker)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        """SIGKILL: no snapshot at the end, recovery on the next start."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log(self) -> str:
        return self.stderr_path.read_text(errors="replace")


class Proxy:
    """127.0.0.1 TCP proxy. Armed with ``drop_next_produce_response`` it forwards the next
    Produce request, waits for the broker's answer (so the append happened), and instead of
    forwarding it either closes the client connection at once (``hold=False``) or keeps the
    answer back until ``release()`` closes the client connection (``hold=True``)."""

    def __init__(self, port: int, upstream_port: int):
        self.port = port
        self.upstream_port = upstream_port
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))
        self.server.listen(32)
        self._armed = False
        self._hold = False
        self._lock = threading.Lock()
        self.intercepted = threading.Event()  # a Produce response was kept from the client
        self._release = threading.Event()
        self.dropped = 0
        self.produce_requests = 0
        self._closed = False
        self._sockets: set[socket.socket] = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def drop_next_produce_response(self, *, hold: bool = False) -> None:
        with self._lock:
            self._armed, self._hold = True, hold
            self.intercepted.clear()
            self._release.clear()

    def release(self) -> None:
        self._release.set()

    def close(self) -> None:
        self._closed = True
        self._release.set()
        self.server.close()
        for sock in list(self._sockets):
            _close(sock)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)  # broker down: the client reconnects later
                continue
            self._sockets.update((client, upstream))
            state = {"watch": None}  # correlation id of the Produce whose answer to drop
            threading.Thread(
                target=self._requests, args=(client, upstream, state), daemon=True
            ).start()
            threading.Thread(
                target=self._responses, args=(upstream, client, state), daemon=True
            ).start()

    def _requests(self, client, upstream, state) -> None:
        try:
            while True:
                frame = _read_frame(client)
                if frame is None:
                    break
                api_key, _version, correlation = struct.unpack_from(">hhi", frame, 4)
                if api_key == PRODUCE:
                    self.produce_requests += 1
                    with self._lock:
                        if self._armed and state["watch"] is None:
                            self._armed = False
                            state["watch"] = correlation
                upstream.sendall(frame)
        except OSError:
            pass
        _close(client)
        _close(upstream)

    def _responses(self, upstream, client, state) -> None:
        try:
            while True:
                frame = _read_frame(upstream)
                if frame is None:
                    break
                (correlation,) = struct.unpack_from(">i", frame, 4)
                if state["watch"] is not None and correlation == state["watch"]:
                    self.dropped += 1
                    self.intercepted.set()
                    if self._hold:
                        self._release.wait(60)
                    break
                client.sendall(frame)
        except OSError:
            pass
        _close(client)
        _close(upstream)


def _read_exact(sock, n: int) -> bytes | None:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _read_frame(sock) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    body = _read_exact(sock, size)
    return None if body is None else head + body


def _close(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


@pytest.fixture
def broker(tmp_path):
    running = Broker(tmp_path)
    yield running
    running.stop()


@pytest.fixture
def proxied(tmp_path):
    """(broker, proxy): the broker listens on a fixed port and advertises the proxy's."""
    broker_port, proxy_port = free_port(), free_port()
    proxy = Proxy(proxy_port, broker_port)
    running = Broker(tmp_path, port=broker_port, advertised_port=proxy_port)
    yield running, proxy
    proxy.close()
    running.stop()


@pytest.fixture
def topic_name():
    return f"idem-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def read_all(bootstrap: str, topic: str, partition: int = 0, timeout: float = 20) -> list[bytes]:
    """Every value of a partition, from the log start to its end, with a plain consumer
    (``assign`` + ``seek_to_beginning``; no group)."""
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, partition)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        group_id=None,
        request_timeout_ms=10000,
    )
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        values: list[bytes] = []
        offsets: list[int] = []
        deadline = time.monotonic() + timeout
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                for record in records:
                    values.append(record.value)
                    offsets.append(record.offset)
        assert offsets == list(range(len(offsets))), "offsets are not consecutive from 0"
        return values
    finally:
        consumer.close()


class RawClient:
    """One socket to the broker; sends kafka-python request objects, decodes the answers."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self._correlation = 0

    def send(self, request_class, response_class, version: int, **fields):
        self._correlation += 1
        request = request_class(version=version, **fields)
        request.with_header(correlation_id=self._correlation, client_id="idempotence-tests")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        frame = _read_frame(self.sock)
        if frame is None:
            raise ConnectionError("broker closed the connection")
        return response_class.decode(frame, version=version, header=True, framed=True)

    def close(self) -> None:
        _close(self.sock)
