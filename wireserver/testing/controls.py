"""The Python API of a test broker's controls (``EmbeddedBroker.controls``): make the broker
fail the way real clusters fail, from the test, and undo it.

    with kafka.controls.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2):
        producer.send("t", b"v").get(timeout=10)     # retried twice, then delivered
    kafka.controls.advance_clock(60_000)             # session timeouts fire now

A thread-mode broker's rules are called on its reactor thread; a subprocess broker's over
HTTP (``/controls`` on its operations listener). Both send the same command dicts and get the
same answer dicts (``wireserver.controls.rules`` lists the commands); a refused command raises
``ControlError`` naming what was wrong. Nothing here imports Twisted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from wireserver.controls import ControlError, UnknownControl

__all__ = ["Control", "ControlError", "Controls"]


class Control:
    """One applied control: ``id``, ``fields`` (the broker's answer), ``undo()``, and a
    context manager that undoes it on exit."""

    def __init__(self, controls: Controls, fields: dict[str, Any]):
        self.controls = controls
        self.fields = fields
        self.id: int = fields["id"]
        self._undone = False

    def undo(self) -> None:
        """Undo it; nothing happens if it was undone already or used up by its count."""
        if self._undone:
            return
        self._undone = True
        try:
            self.controls._transport.undo(self.id)
        except UnknownControl:
            pass

    def remaining(self) -> int | None:
        """Uses left: None for a control without a count, 0 once used up or undone."""
        for active in self.controls.active():
            if active["id"] == self.id:
                return active["remaining"]
        return 0

    def __enter__(self) -> Control:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.undo()

    def __repr__(self) -> str:
        return f"<Control {self.fields}>"


class Controls:
    """The controls of one broker."""

    def __init__(self, transport: Any):
        self._transport = transport

    def apply(self, command: dict[str, Any]) -> Control:
        """Apply a command dict as is (what the methods below build)."""
        return Control(self, self._transport.apply(command))

    def inject_error(
        self,
        api: str | int,
        error: str | int,
        *,
        count: int | None = 1,
        topic: str | None = None,
        partition: int | None = None,
        group: str | None = None,
        message: str | None = None,
    ) -> Control:
        command = {"control": "error", "api": api, "error": error, "count": count}
        optional = {"topic": topic, "partition": partition, "group": group, "message": message}
        return self.apply({**command, **_set(optional)})

    def add_latency(
        self,
        ms: int,
        *,
        api: str | int | None = None,
        client_id: str | None = None,
        count: int | None = None,
    ) -> Control:
        command = {"control": "latency", "ms": ms, "count": count}
        return self.apply({**command, **_set({"api": api, "client_id": client_id})})

    def disconnect(
        self,
        *,
        api: str | int | None = None,
        count: int | None = 1,
        handle: bool = True,
        client_id: str | None = None,
    ) -> Control:
        command = {"control": "disconnect", "count": count, "handle": handle}
        return self.apply({**command, **_set({"api": api, "client_id": client_id})})

    def refuse_connections(self, *, count: int | None = None) -> Control:
        return self.apply({"control": "refuse_connections", "count": count})

    def throttle(
        self, api: str | int, ms: int, *, client_id: str | None = None, count: int | None = None
    ) -> Control:
        command = {"control": "throttle", "api": api, "ms": ms, "count": count}
        return self.apply({**command, **_set({"client_id": client_id})})

    def advance_clock(self, ms: int) -> Control:
        """Move the broker's clock ``ms`` ahead: its timers due by then run now."""
        return self.apply({"control": "clock", "advance_ms": ms})

    def down(self) -> Control:
        """Stop the broker's Kafka listeners and close its client connections (``up()``)."""
        return self.apply({"control": "down"})

    def up(self) -> None:
        """Undo the active ``down``."""
        downs = [active for active in self.active() if active["control"] == "down"]
        if not downs:
            raise ControlError("the listeners are not down")
        self._transport.undo(downs[0]["id"])

    def active(self) -> list[dict[str, Any]]:
        return self._transport.listing()["controls"]

    def now_ms(self) -> int:
        """The broker's time (its clock, advanced by ``advance_clock``), in ms."""
        return self._transport.listing()["now_ms"]

    def reset(self) -> None:
        """Undo every control."""
        self._transport.reset()


def _set(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


def _as_json(value: Any) -> Any:
    """``value`` as it comes back from JSON, so that both transports see the same thing."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise ControlError(f"the command is not JSON: {exc}") from None


class ReactorTransport:
    """A thread-mode broker: its ``BrokerControls`` called on the reactor thread
    (``call``: ``ReactorThread.call``)."""

    def __init__(self, call: Callable[..., Any], rules: Any):
        self.call = call
        self.rules = rules

    def apply(self, command: dict[str, Any]) -> dict[str, Any]:
        return _as_json(self.call(self.rules.apply, _as_json(command)))

    def undo(self, control_id: int) -> dict[str, Any]:
        return _as_json(self.call(self.rules.undo, control_id))

    def listing(self) -> dict[str, Any]:
        return _as_json(self.call(self.rules.listing))

    def reset(self) -> dict[str, Any]:
        return _as_json(self.call(self.rules.reset))


class HttpTransport:
    """A broker in another process: ``/controls`` at ``base_url`` (its operations
    listener)."""

    def __init__(self, base_url: str, timeout: float = 30.0):
        self.url = base_url.rstrip("/") + "/controls"
        self.timeout = timeout

    def _request(self, method: str, path: str = "", body: Any = None) -> dict[str, Any]:
        # Imported here: ``urllib.request`` brings ``http.client`` and ``ssl``, and
        # ``wireserver serve`` imports this package (``wireserver cluster``'s arguments).
        import urllib.error
        import urllib.request

        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            with exc:
                try:
                    message = json.loads(exc.read())["error"]
                except (ValueError, KeyError, TypeError):
                    message = f"HTTP {exc.code} {exc.reason}"
            if exc.code == 404:
                raise UnknownControl(message) from None
            raise ControlError(message) from None

    def apply(self, command: dict[str, Any]) -> dict[str, Any]:
        return self._request("POST", body=_as_json(command))

    def undo(self, control_id: int) -> dict[str, Any]:
        return self._request("DELETE", f"/{control_id}")

    def listing(self) -> dict[str, Any]:
        return self._request("GET")

    def reset(self) -> dict[str, Any]:
        return self._request("DELETE")
