"""``/controls`` on the operations listener (``controls.enable``): the rules of
``wireserver.controls.rules`` over HTTP, in JSON.

- ``POST /controls`` with a command object: 201 and the applied control;
- ``GET /controls``: 200 ``{"controls": [...], "clock_offset_ms": X, "now_ms": T}``;
- ``DELETE /controls/<id>``: 200 and the undone control, 404 if no such control is active,
  409 if it cannot be undone now (a ``down`` whose port another process took meanwhile);
- ``DELETE /controls``: 200 ``{"undone": [ids]}``, every control undone.

A bad command is 400 ``{"error": "<what was wrong>"}`` and changes nothing; another method is
405. Only peers on loopback are answered (403 otherwise): a test broker's controls are for
the tests on its machine, even when its operations listener listens wider.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from typing import TYPE_CHECKING, Any

from twisted.internet import defer
from twisted.web import resource, server

from wireserver.controls import ControlError, UnknownControl

if TYPE_CHECKING:
    from wireserver.controls.rules import BrokerControls

log = logging.getLogger("wireserver.controls")


def _json(request: Any, code: int, body: dict[str, Any]) -> bytes:
    request.setResponseCode(code)
    request.setHeader(b"content-type", b"application/json")
    request.setHeader(b"cache-control", b"no-store")
    return json.dumps(body).encode("utf-8") + b"\n"


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1, and 127.x written as an IPv4-mapped IPv6 address."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


class ControlsResource(resource.Resource):
    """``/controls`` and ``/controls/<id>``."""

    isLeaf = True

    def __init__(self, controls: BrokerControls):
        super().__init__()
        self.controls = controls

    def render(self, request: Any) -> Any:
        peer = request.getClientAddress()
        host = getattr(peer, "host", "")
        if not is_loopback(host):
            log.warning("/controls: 403 for %s (not loopback)", host)
            return _json(
                request, 403, {"error": f"controls answer loopback peers only, not {host}"}
            )
        path = [segment for segment in request.postpath]
        if path in ([], [b""]):
            return self._collection(request)
        if len(path) == 1:
            return self._one(request, path[0])
        return _json(request, 404, {"error": "not found"})

    def _collection(self, request: Any) -> Any:
        method = request.method
        if method == b"GET":
            return _json(request, 200, self.controls.listing())
        if method == b"DELETE":
            return _json(request, 200, self.controls.reset())
        if method == b"POST":
            try:
                command = json.loads(request.content.read().decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                return _json(request, 400, {"error": f"the body is not JSON: {exc}"})
            return self._apply(request, command)
        return self._not_allowed(request, b"GET, POST, DELETE")

    def _one(self, request: Any, segment: bytes) -> Any:
        if request.method != b"DELETE":
            return self._not_allowed(request, b"DELETE")
        try:
            control_id = int(segment.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            return _json(
                request, 404, {"error": f"no control {segment.decode('utf-8', 'replace')!r}"}
            )
        try:
            return _json(request, 200, self.controls.undo(control_id))
        except UnknownControl as exc:
            return _json(request, 404, {"error": str(exc)})
        except ControlError as exc:
            return _json(request, 409, {"error": str(exc)})

    def _apply(self, request: Any, command: Any) -> Any:
        """Answered when the control is in place (``down``: once the ports are closed)."""
        gone: list[bool] = []
        request.notifyFinish().addErrback(lambda _failure: gone.append(True))

        def answer(code: int, body: dict[str, Any]) -> None:
            if not gone:
                request.write(_json(request, code, body))
                request.finish()

        def failed(failure: Any) -> None:
            if failure.check(ControlError):
                answer(400, {"error": str(failure.value)})
            else:
                log.error("/controls failed: %s", failure.getTraceback())
                answer(500, {"error": f"control failed: {failure.value}"})

        applied = defer.maybeDeferred(self.controls.apply, command)
        applied.addCallbacks(lambda body: answer(201, body), failed)
        return server.NOT_DONE_YET

    @staticmethod
    def _not_allowed(request: Any, allow: bytes) -> bytes:
        request.setHeader(b"allow", allow)
        return _json(request, 405, {"error": f"method {request.method.decode()} not allowed"})
