"""A real wireserver broker for the API tests: ``wireserver serve`` in a subprocess on
``PLAINTEXT://127.0.0.1:0`` with temporary log dirs, plus helpers to talk to it with the real
admin clients and with raw requests built from kafka-python's message classes."""

from __future__ import annotations

import itertools
import os
import re
import socket
import struct
import subprocess
import sys
import time
import uuid

import pytest

READY = re.compile(r"wireserver ready: .* listening on PLAINTEXT://([\d.]+):(\d+)")


class RunningBroker:
    def __init__(self, tmp_path, overrides=()):
        self.log_dirs = [str(tmp_path / "logs-a"), str(tmp_path / "logs-b")]
        args = [
            sys.executable,
            "-m",
            "wireserver.cli",
            "serve",
            "--log-level",
            "WARNING",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "--override",
            f"log.dirs={','.join(self.log_dirs)}",
            "--override",
            "node.id=1",
        ]
        for item in overrides:
            args += ["--override", item]
        self.stderr_path = tmp_path / "broker.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        )
        deadline = time.monotonic() + 20
        line = b""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            match = READY.search(line.decode())
            if match:
                self.host, self.port = match.group(1), int(match.group(2))
                self.bootstrap = f"{self.host}:{self.port}"
                return
        self.stop()
        raise RuntimeError(
            f"broker did not start: {line!r} {self.stderr_path.read_text(errors='replace')}"
        )

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    running = RunningBroker(tmp_path_factory.mktemp("broker"))
    yield running
    running.stop()


@pytest.fixture
def topic_name():
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def kadmin(broker):
    from kafka import KafkaAdminClient

    client = KafkaAdminClient(
        bootstrap_servers=broker.bootstrap, client_id="tests", request_timeout_ms=10000
    )
    yield client
    client.close()


@pytest.fixture(scope="module")
def cadmin(broker):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": broker.bootstrap, "socket.timeout.ms": 10000})


def wait(futures, timeout=15):
    """Results of a confluent-kafka futures dict, exceptions returned rather than raised."""
    out = {}
    for key, future in futures.items():
        try:
            out[key] = future.result(timeout)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            out[key] = exc
    return out


class RawClient:
    """One socket; sends a kafka-python request object, returns the decoded response."""

    _ids = itertools.count(1)

    def __init__(self, broker):
        self.sock = socket.create_connection((broker.host, broker.port), timeout=10)

    def send(self, request_class, response_class, version, **fields):
        request = request_class(version=version, **fields)
        request.with_header(correlation_id=next(self._ids), client_id="raw-tests")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        size = struct.unpack(">i", self._read(4))[0]
        frame = struct.pack(">i", size) + self._read(size)
        return response_class.decode(frame, version=version, header=True, framed=True)

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            data += chunk
        return data

    def close(self):
        self.sock.close()


@pytest.fixture
def raw(broker):
    client = RawClient(broker)
    yield client
    client.close()
