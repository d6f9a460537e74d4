"""The operations HTTP listener (``metrics.listeners``): twisted.web on the broker's reactor.

Endpoints (GET and HEAD; any other method is 405, any other path 404):

- ``/metrics``: ``PrometheusExposition(host).render()`` in Prometheus' text format;
- ``/``: the status page (``wireserver/ops/status.html``: one page, inline CSS and JS, which
  fetches the JSON below every few seconds and redraws itself);
- ``/api/cluster``, ``/api/topics``, ``/api/groups``, ``/api/transactions``: the dicts of
  ``wireserver.ops.status`` as JSON; ``/api/`` lists them;
- with ``controls.enable``, ``/controls`` (``wireserver.controls.http``: POST, GET, DELETE).

Nothing served reads a record's key, value or headers.

Bad input is answered and logged (logger ``wireserver.ops``, one line naming the peer) and
the connection closed, on the reactor without waiting for the rest of the request: a request
line or header that does not parse is 400, a request line over ``MAX_REQUEST_LINE`` bytes
414, a header section over ``MAX_HEADER_BYTES`` bytes or ``MAX_HEADERS`` lines 431, a body on
GET or HEAD, or any body over ``MAX_BODY_BYTES``, 413, and a request not complete within
``REQUEST_TIMEOUT_S`` of the connection (or of the previous response) 408. twisted.web's
own limits are looser (16 KiB per line, 500 headers, an idle timeout that every byte resets,
so that a client sending a byte every few seconds is never dropped): these replace them.

With ``metrics.basic.auth.users`` set, every request needs HTTP basic authentication with one
of those users (compared in constant time); without it the answer is 401 with a
``WWW-Authenticate`` challenge.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
from functools import partial
from importlib import resources as package_files
from typing import TYPE_CHECKING, Any

from twisted.web import http, resource, server

from wireserver.ops import status
from wireserver.ops.prometheus import CONTENT_TYPE, PrometheusExposition

if TYPE_CHECKING:
    from collections.abc import Callable

    from wireserver.ops.host import OpsHost

log = logging.getLogger("wireserver.ops")

#: The longest request line (method, URI, version) accepted: longer is 414 URI Too Long.
MAX_REQUEST_LINE = 8192
#: The most bytes of request line and headers together: more is 431.
MAX_HEADER_BYTES = 8192
#: The most header lines: more is 431.
MAX_HEADERS = 64
#: Only ``/controls`` takes a body (a JSON command of a few hundred bytes); a larger one is 413
#: Content Too Large.
MAX_BODY_BYTES = 1024
#: A request must be complete this long after the connection opened or the previous response
#: was sent, else 408 Request Timeout.
REQUEST_TIMEOUT_S = 10.0

#: The JSON endpoints under /api/, each a function of the host.
API: dict[str, Callable[[OpsHost], dict[str, Any]]] = {
    "cluster": status.cluster_status,
    "topics": status.topics_status,
    "groups": status.groups_status,
    "transactions": status.transactions_status,
}

REASONS = {
    400: b"Bad Request",
    408: b"Request Timeout",
    413: b"Content Too Large",
    414: b"URI Too Long",
    431: b"Request Header Fields Too Large",
}


def _peer(transport: Any) -> str:
    try:
        address = transport.getPeer()
        return f"{address.host}:{address.port}"
    except Exception:  # noqa: BLE001 - a transport already gone
        return "?"


class OpsChannel(http.HTTPChannel):
    """twisted.web's HTTP/1.1 channel with this listener's limits (see the module docstring).
    Line lengths and counts are checked here before the parent parses a line; a rejected
    request is answered at once and the channel reads nothing more."""

    MAX_LENGTH = MAX_REQUEST_LINE  # LineReceiver: a longer line is lineLengthExceeded
    # The parent's own limits stay above ours, so that ours answer first (with 431, not 400).
    maxHeaders = MAX_HEADERS * 2
    totalHeadersSize = MAX_HEADER_BYTES * 2

    def __init__(self) -> None:
        super().__init__()
        self._in_head = False
        self._head_bytes = 0
        self._head_lines = 0
        self._rejected = False
        self._deadline: Any = None
        self._served = 0  # requests received whole on this connection
        self._started_next = False  # bytes of a request not yet whole

    # -- the request deadline ---------------------------------------------------------------

    def connectionMade(self) -> None:  # noqa: N802 - Twisted's name
        super().connectionMade()
        self.site.channels.add(self)
        self._start_deadline()

    def _start_deadline(self) -> None:
        self._cancel_deadline()
        self._deadline = self.callLater(REQUEST_TIMEOUT_S, self._too_slow)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        # A kept-alive connection that has been quiet since its last answer is closed as
        # browsers expect (they keep idle connections open); only a request begun and not
        # finished, or a connection never used, is a client worth a warning.
        idle = self._served > 0 and not self._started_next
        self._reject(408, f"no complete request within {REQUEST_TIMEOUT_S:g} s", quiet=idle)

    def allContentReceived(self) -> None:  # noqa: N802
        self._cancel_deadline()
        self._served += 1
        self._started_next = False
        super().allContentReceived()

    def requestDone(self, request: Any) -> None:  # noqa: N802
        super().requestDone(request)
        if self.persistent and not self._rejected:
            self._start_deadline()

    def connectionLost(self, reason: Any) -> None:  # noqa: N802
        self._cancel_deadline()
        self.site.channels.discard(self)
        super().connectionLost(reason)

    # -- limits ------------------------------------------------------------------------------

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        if not self._rejected:
            self._started_next = True
            super().dataReceived(data)

    def lineReceived(self, line: bytes) -> None:  # noqa: N802
        if self._rejected:
            return
        if not self._in_head:
            if line:  # the request line (an empty line before it is tolerated)
                self._in_head = True
                self._head_bytes = len(line)
                self._head_lines = 0
        elif line:
            self._head_bytes += len(line)
            self._head_lines += 1
            if self._head_bytes > MAX_HEADER_BYTES:
                self._reject(431, f"header section over {MAX_HEADER_BYTES} bytes")
                return
            if self._head_lines > MAX_HEADERS:
                self._reject(431, f"more than {MAX_HEADERS} header lines")
                return
        else:
            self._in_head = False
        super().lineReceived(line)

    def lineLengthExceeded(self, line: bytes) -> None:  # noqa: N802
        if self._in_head:
            self._reject(431, f"a header line over {MAX_REQUEST_LINE} bytes")
        else:
            self._reject(414, f"a request line over {MAX_REQUEST_LINE} bytes")

    def allHeadersReceived(self) -> None:  # noqa: N802
        method = getattr(self, "_command", b"")
        # self.length: the Content-Length, None for a chunked body, 0 for none.
        if self.length is None or self.length > MAX_BODY_BYTES:
            self._reject(413, f"a request body over {MAX_BODY_BYTES} bytes")
            return
        if self.length and method in (b"GET", b"HEAD"):
            self._reject(413, f"a body on {method.decode('ascii', 'replace')}")
            return
        super().allHeadersReceived()

    def _respondToBadRequestAndDisconnect(self) -> None:  # noqa: N802 - twisted.web's 400
        self._reject(400, "malformed request")

    def _reject(self, code: int, why: str, quiet: bool = False) -> None:
        """Answer ``code``, log it and close; everything the client sends later is dropped."""
        if self._rejected:
            return
        self._rejected = True
        self._cancel_deadline()
        self.setTimeout(None)
        log.log(
            logging.DEBUG if quiet else logging.WARNING,
            "ops listener: %d %s from %s",
            code,
            why,
            _peer(self.transport),
        )
        reason = REASONS.get(code, b"Error")
        self.transport.write(
            b"HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % (code, reason)
        )
        self.transport.loseConnection()


class OpsSite(server.Site):
    """The listener's site: ``OpsChannel``s, basic authentication when users are set, and
    request logging through stdlib logging (not twisted.web's access log file and its
    once-a-second timer)."""

    protocol = OpsChannel
    displayTracebacks = False

    def __init__(self, root: resource.Resource, reactor: Any, users: dict[str, str]):
        # twisted.web's idle timeout stays as a backstop behind REQUEST_TIMEOUT_S.
        super().__init__(root, timeout=REQUEST_TIMEOUT_S * 3, reactor=reactor)
        #: the open connections, dropped when the listener stops
        self.channels: set[OpsChannel] = set()
        self.users = {
            user.encode("utf-8"): password.encode("utf-8") for user, password in users.items()
        }

    def startFactory(self) -> None:  # noqa: N802
        pass

    def stopFactory(self) -> None:  # noqa: N802
        pass

    def log(self, request: Any) -> None:
        log.debug(
            "ops listener: %s %s %d from %s",
            request.method.decode("ascii", "replace"),
            request.uri.decode("ascii", "replace")[:200],
            request.code,
            _peer(request.transport),
        )

    def getResourceFor(self, request: Any) -> Any:  # noqa: N802
        if self.users and not self._authenticated(request):
            log.warning(
                "ops listener: 401 for %s from %s",
                request.uri.decode("ascii", "replace")[:200],
                _peer(request.transport),
            )
            return Unauthorized()
        return super().getResourceFor(request)

    def _authenticated(self, request: Any) -> bool:
        """Basic credentials of a configured user. Every user's password is compared (in
        constant time), so the time taken does not tell which user names exist."""
        header = request.getHeader(b"authorization") or b""
        scheme, _, encoded = header.partition(b" ")
        if scheme.lower() != b"basic":
            return False
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        user, sep, password = decoded.partition(b":")
        if not sep:
            return False
        matched = False
        for known_user, known_password in self.users.items():
            same_user = hmac.compare_digest(user, known_user)
            same_password = hmac.compare_digest(password, known_password)
            matched |= same_user and same_password
        return matched


def _plain(request: Any, code: int, text: str) -> bytes:
    request.setResponseCode(code)
    request.setHeader(b"content-type", b"text/plain; charset=utf-8")
    return text.encode("utf-8") + b"\n"


class Unauthorized(resource.Resource):
    isLeaf = True

    def render(self, request: Any) -> bytes:
        request.setHeader(b"www-authenticate", b'Basic realm="wireserver", charset="UTF-8"')
        return _plain(request, 401, "authentication required")


class NotFound(resource.Resource):
    isLeaf = True

    def render(self, request: Any) -> bytes:
        return _plain(request, 404, "not found")


class Endpoint(resource.Resource):
    """One path, no children (``/metrics/x`` and ``/metrics/`` are 404), GET and HEAD only
    (twisted.web answers HEAD from ``get`` without the body); anything else is 405."""

    isLeaf = True

    def render(self, request: Any) -> bytes:
        request.setHeader(b"x-content-type-options", b"nosniff")
        if request.postpath:
            return NotFound().render(request)
        if request.method not in (b"GET", b"HEAD"):
            request.setHeader(b"allow", b"GET, HEAD")
            return _plain(request, 405, "method not allowed")
        return self.get(request)

    def get(self, request: Any) -> bytes:
        raise NotImplementedError


class MetricsResource(Endpoint):
    def __init__(self, host: OpsHost):
        super().__init__()
        self.exposition = PrometheusExposition(host)
        self.reactor = host.reactor

    def get(self, request: Any) -> Any:
        """Collected on the reactor, formatted off it (``render_in_thread``): the answer is
        written when the text is ready, unless the client went away meanwhile."""
        gone: list[bool] = []
        request.notifyFinish().addErrback(lambda _failure: gone.append(True))

        def answer(body: bytes) -> None:
            if gone:
                return
            request.setHeader(b"content-type", CONTENT_TYPE.encode("ascii"))
            request.write(body)
            request.finish()

        def failed(failure: Any) -> None:
            log.error("/metrics failed: %s", failure.getTraceback())
            if not gone:
                request.write(_plain(request, 500, "metrics failed"))
                request.finish()

        rendered = self.exposition.render_in_thread(self.reactor)
        rendered.addCallbacks(answer, failed)
        return server.NOT_DONE_YET


class JsonResource(Endpoint):
    def __init__(self, build: Callable[[], dict[str, Any]]):
        super().__init__()
        self.build = build

    def get(self, request: Any) -> bytes:
        request.setHeader(b"content-type", b"application/json")
        request.setHeader(b"cache-control", b"no-store")
        return json.dumps(self.build(), indent=1).encode("utf-8") + b"\n"


class Redirect(Endpoint):
    def __init__(self, location: bytes):
        super().__init__()
        self.location = location

    def get(self, request: Any) -> bytes:
        request.redirect(self.location)
        return b""


class StatusPage(Endpoint):
    """``/``: the page."""

    def __init__(self, page: bytes):
        super().__init__()
        self.page = page

    def get(self, request: Any) -> bytes:
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        request.setHeader(b"cache-control", b"no-store")
        # The page fetches only its own origin and runs only its own inline script.
        request.setHeader(
            b"content-security-policy",
            b"default-src 'none'; connect-src 'self'; script-src 'unsafe-inline'; "
            b"style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
        )
        return self.page


class Paths(resource.Resource):
    """The path table: ``/``, ``/metrics``, ``/api`` (to ``/api/``), ``/api/`` and each
    ``/api/<name>``, and ``prefixes`` (``/controls`` with ``controls.enable``); any other
    path is 404."""

    def __init__(self, host: OpsHost):
        super().__init__()
        page = package_files.files("wireserver.ops").joinpath("status.html").read_bytes()
        index = {"endpoints": [f"/api/{name}" for name in API]}
        self.paths: dict[tuple[bytes, ...], resource.Resource] = {
            (b"",): StatusPage(page),
            (b"metrics",): MetricsResource(host),
            (b"api",): Redirect(b"/api/"),
            (b"api", b""): JsonResource(lambda: index),
        }
        for name, build in API.items():
            self.paths[(b"api", name.encode("ascii"))] = JsonResource(partial(build, host))
        #: first path segment -> the resource of every path under it (``/controls``)
        self.prefixes: dict[bytes, resource.Resource] = {}

    def getChildWithDefault(self, path: bytes, request: Any) -> resource.Resource:  # noqa: N802
        # Take the whole path at once: the table has no wildcards. A prefix's resource is
        # given the rest of the path in ``postpath``.
        prefixed = self.prefixes.get(path)
        if prefixed is not None:
            return prefixed
        segments = (path, *request.postpath)
        request.prepath.extend(request.postpath)
        request.postpath = []
        return self.paths.get(segments, NotFound())
