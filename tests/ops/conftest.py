"""Helpers of the operations listener tests: plain HTTP(S) requests with the standard library,
and raw bytes for what a well-behaved client would never send."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self):
        return json.loads(self.body)


def get(
    url: str,
    path: str,
    method: str = "GET",
    *,
    auth: tuple[str, str] | None = None,
    context: ssl.SSLContext | None = None,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """One request to the listener at ``url`` (``http://host:port`` or ``https://...``)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=30, context=context
        )
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = dict(headers or {})
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        connection.close()


def get_json(url: str, path: str, **options) -> dict:
    reply = get(url, path, **options)
    assert reply.status == 200, (path, reply.status, reply.body[:200])
    assert reply.headers["content-type"] == "application/json"
    return reply.json()


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def raw(url: str, data: bytes) -> bytes:
    """Send ``data`` on a new connection and return all the server answers before closing."""
    with connect(url) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it answered and closed while we were still sending
        return read_until_closed(sock)


def status_of(response: bytes) -> int:
    """The status code of a raw HTTP/1.1 response."""
    assert response.startswith(b"HTTP/1.1 "), response[:100]
    return int(response.split(b" ", 2)[1])
