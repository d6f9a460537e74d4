"""The controls of one broker: commands checked and applied, the active ones listed and undone,
and the two hooks the Kafka listener (``wireserver.server``) calls when controls are on.

A command is a dict (the same in Python and as JSON over HTTP) naming its ``control``:

- ``error``: the next ``count`` requests of ``api`` (matching ``topic``/``partition``/``group``)
  are not handled; they get ``error_responses.error_response`` with the code on every item.
  Not handling them is the point: a client that retries produces no duplicate.
- ``latency``: matching requests are handled at once, their responses held ``ms``.
- ``disconnect``: matching requests close their connection instead of being answered, after
  being handled (``handle``: the lost-acknowledgement case) or not.
- ``refuse_connections``: new Kafka connections are closed as soon as accepted.
- ``throttle``: Kafka's quota throttling (KIP-219): ``throttle_time_ms`` in the response, sent
  at once, then the connection reads nothing for ``ms`` (counted from when the response is
  ready: it leaves then unless an earlier one on the connection is still pending); request
  versions from before client-side throttling get their response held ``ms`` instead, as
  Kafka does.
- ``clock``: the broker's clock (``clock.BrokerClock``) moves ``advance_ms`` ahead.
- ``down``: the Kafka listeners stop and every client connection is closed; undo listens again.

APIs are named as in Kafka's message definitions ("Produce", "FindCoordinator") or by key,
error codes by Kafka's name or number. A bad command raises ``ControlError`` naming what was
wrong, and changes nothing. Each applied command gets an id; one with a ``count`` leaves the
list once used up. Where several controls of one kind match a request, the oldest applies.
Latency and throttle holds run on the reactor's own time, which no ``clock`` control moves.

Everything here runs on the reactor thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet import defer, task
from twisted.internet.error import CannotListenError

from wireserver.controls import ControlError, UnknownControl
from wireserver.controls.error_responses import REFUSED, error_response, request_targets
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.messages import PRODUCE_KEY, Request

if TYPE_CHECKING:
    from wireserver.controls.clock import BrokerClock
    from wireserver.protocol.registry import ApiRegistry, ApiSpec

log = logging.getLogger("wireserver.controls")

REQUIRED = object()

#: Each control's fields and their defaults (``REQUIRED``: no default).
CONTROLS: dict[str, dict[str, Any]] = {
    "error": {
        "api": REQUIRED,
        "error": REQUIRED,
        "count": 1,
        "topic": None,
        "partition": None,
        "group": None,
        "message": None,
    },
    "latency": {"ms": REQUIRED, "api": None, "client_id": None, "count": None},
    "disconnect": {"api": None, "count": 1, "handle": True, "client_id": None},
    "refuse_connections": {"count": None},
    "throttle": {"api": REQUIRED, "ms": REQUIRED, "client_id": None, "count": None},
    "clock": {"advance_ms": REQUIRED},
    "down": {},
}

#: The first request version whose client throttles itself (KIP-219: the broker answers at
#: once and mutes the connection), for the APIs where wireserver serves older versions too;
#: from the "on quota violation, brokers send out responses before throttling" note of each
#: response's message definition. Every other API with a throttle time: all served versions.
CLIENT_THROTTLES_FROM = {
    "Produce": 6,
    "Fetch": 8,
    "ListOffsets": 3,
    "Metadata": 6,
    "OffsetCommit": 4,
    "OffsetFetch": 4,
    "FindCoordinator": 2,
    "JoinGroup": 3,
    "Heartbeat": 2,
    "LeaveGroup": 2,
    "SyncGroup": 2,
    "DescribeGroups": 2,
    "ListGroups": 2,
}


def raise_throttle_time(response: Any, request: Request, ms: int) -> Any:
    """``response`` with ``throttle_time_ms`` at least ``ms``, where its version has the field
    (the throttle control and the client quotas both answer this way)."""
    if response is not None:
        throttle_time = request.spec.response_class.fields.get("throttle_time_ms")
        if throttle_time is not None and throttle_time.for_version_q(request.api_version):
            response.throttle_time_ms = max(response.throttle_time_ms or 0, ms)
    return response


class ControlsHost(Protocol):
    """What the controls use of their broker (``wireserver.broker.Broker`` provides it)."""

    registry: ApiRegistry
    metadata: Any

    def now_ms(self) -> int: ...

    def listeners_down(self) -> Any: ...

    def listeners_up(self) -> None: ...


# -- checking commands ------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _api(value: Any, registry: ApiRegistry) -> ApiSpec:
    spec = None
    if _is_int(value):
        spec = registry.get(value)
    elif isinstance(value, str):
        spec = next((spec for spec in registry if spec.name == value), None)
    else:
        raise ControlError(f"'api' must be a Kafka API name or key number, not {value!r}")
    if spec is None:
        raise ControlError(f"unknown API {value!r}")
    return spec


def _error_code(value: Any) -> ErrorCode:
    try:
        if _is_int(value):
            code = ErrorCode(value)
        elif isinstance(value, str):
            code = ErrorCode[value]
        else:
            raise ControlError(f"'error' must be a Kafka error name or code, not {value!r}")
    except (KeyError, ValueError):
        raise ControlError(f"unknown error code {value!r}") from None
    if code == ErrorCode.NONE:
        raise ControlError("error code 0 (NONE) is not an error")
    return code


def _count(value: Any) -> int | None:
    if value is None:
        return None
    if not _is_int(value) or not 1 <= value <= MAX_MS:
        raise ControlError(f"'count' must be an integer of at least 1, or null; not {value!r}")
    return value


#: The largest ms a hold or throttle takes: Kafka's throttle_time_ms is an int32.
MAX_MS = 2**31 - 1
#: The furthest one clock jump goes: a hundred years.
MAX_ADVANCE_MS = 100 * 365 * 24 * 3600 * 1000


def _between(name: str, least: int, most: int = MAX_MS) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if not _is_int(value):
            raise ControlError(f"{name!r} must be an integer, not {value!r}")
        if value < least:
            which = "negative" if least == 0 else f"less than {least}"
            raise ControlError(f"{name!r} must not be {which} ({value})")
        if value > most:
            raise ControlError(f"{name!r} must be at most {most} ({value})")
        return value

    return check


def _text(name: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value is not None and not isinstance(value, str):
            raise ControlError(f"{name!r} must be a string or null, not {value!r}")
        return value

    return check


def _partition(value: Any) -> int | None:
    return None if value is None else _between("partition", 0)(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ControlError(f"'handle' must be true or false, not {value!r}")
    return value


#: How each field is checked (``api`` and ``error`` apart: they need the registry).
FIELD_CHECKS: dict[str, Callable[[Any], Any]] = {
    "count": _count,
    "topic": _text("topic"),
    "partition": _partition,
    "group": _text("group"),
    "message": _text("message"),
    "client_id": _text("client_id"),
    "ms": _between("ms", 0),
    "advance_ms": _between("advance_ms", 1, MAX_ADVANCE_MS),
    "handle": _boolean,
}


@dataclass
class Control:
    """One active control: its command as checked (``fields``), and what matching needs."""

    id: int
    control: str
    fields: dict[str, Any]
    remaining: int | None
    spec: ApiSpec | None = None
    code: ErrorCode | None = None

    def answer(self) -> dict[str, Any]:
        return {"id": self.id, "control": self.control, **self.fields, "remaining": self.remaining}

    def matches(self, request: Request) -> bool:
        spec = self.spec
        if spec is not None and spec.key != request.header.api_key:
            return False
        client_id = self.fields.get("client_id")
        return client_id is None or client_id == request.header.client_id


def check_command(command: Any, registry: ApiRegistry) -> tuple[str, dict[str, Any], Any, Any]:
    """The control named, its fields with defaults filled in (``api`` and ``error`` by
    name), the API spec and the error code; ``ControlError`` naming the first thing wrong."""
    if not isinstance(command, dict):
        raise ControlError(f"a command must be an object, not {type(command).__name__}")
    name = command.get("control")
    if not isinstance(name, str) or name not in CONTROLS:
        if "control" not in command:
            raise ControlError(f"missing field 'control' (one of: {', '.join(CONTROLS)})")
        raise ControlError(f"unknown control {name!r} (one of: {', '.join(CONTROLS)})")
    defaults = CONTROLS[name]
    unknown = sorted(set(command) - set(defaults) - {"control"})
    if unknown:
        raise ControlError(f"unknown field {unknown[0]!r} for control {name!r}")
    missing = [
        key for key, default in defaults.items() if default is REQUIRED and key not in command
    ]
    if missing:
        raise ControlError(f"missing field {missing[0]!r} for control {name!r}")
    fields: dict[str, Any] = {}
    spec = code = None
    for key, default in defaults.items():
        value = command.get(key, default)
        if value is None and default is REQUIRED:
            raise ControlError(f"field {key!r} of control {name!r} must not be null")
        if key == "api":
            if value is None:
                fields[key] = None
                continue
            spec = _api(value, registry)
            fields[key] = spec.name
        elif key == "error":
            code = _error_code(value)
            fields[key] = code.name
        else:
            fields[key] = FIELD_CHECKS[key](value)
    if name == "error" and fields["partition"] is not None and fields["topic"] is None:
        raise ControlError("'partition' needs 'topic'")
    if name == "error" and spec.name in REFUSED:
        raise ControlError(f"no error can be injected into {spec.name}: {REFUSED[spec.name]}")
    if name == "throttle" and "throttle_time_ms" not in spec.response_class.fields:
        raise ControlError(f"{spec.name} responses have no throttle_time_ms")
    return name, fields, spec, code


# -- the controls of one broker ---------------------------------------------------------------


class BrokerControls:
    """The active controls of one broker, by id, and what they do to its requests."""

    def __init__(self, host: ControlsHost, clock: BrokerClock):
        self.host = host
        self.clock = clock
        #: the reactor's own time, for holds and mutes: a clock jump must not shorten them
        self.wall = clock.reactor
        self.active: dict[int, Control] = {}
        self._next_id = 1

    # -- commands --------------------------------------------------------------------------

    def apply(self, command: Any) -> Any:
        """Check ``command`` and apply it: its answer (``Control.answer``), or for ``down`` a
        Deferred of it that fires once the listeners are closed."""
        name, fields, spec, code = check_command(command, self.host.registry)
        if name == "down" and any(c.control == "down" for c in self.active.values()):
            raise ControlError("the listeners are down already (undo that control first)")
        remaining = fields.get("count")
        control = Control(self._next_id, name, fields, remaining, spec, code)
        self._next_id += 1
        self.active[control.id] = control
        log.info("control %d applied: %s", control.id, control.answer())
        if name == "clock":
            self.clock.advance(fields["advance_ms"] / 1000.0)
        elif name == "down":
            closed = self.host.listeners_down()
            return closed.addCallback(lambda _: control.answer())
        return control.answer()

    def undo(self, control_id: int) -> dict[str, Any]:
        """Remove an active control and undo what it did: the clock moves back by what it
        advanced, the listeners listen again. ``UnknownControl`` for an id not active."""
        control = self.active.get(control_id)
        if control is None:
            raise UnknownControl(f"no active control {control_id}")
        if control.control == "down":
            try:
                self.host.listeners_up()
            except CannotListenError as exc:  # the port was taken meanwhile: still down
                raise ControlError(f"cannot listen again: {exc}") from None
        elif control.control == "clock":
            self.clock.move_back(control.fields["advance_ms"] / 1000.0)
        del self.active[control_id]
        log.info("control %d undone", control.id)
        return control.answer()

    def listing(self) -> dict[str, Any]:
        return {
            "controls": [control.answer() for control in self.active.values()],
            "clock_offset_ms": round(self.clock.offset * 1000),
            "now_ms": self.host.now_ms(),
        }

    def reset(self) -> dict[str, Any]:
        """Undo every active control, newest first; the clock is back on the reactor's time."""
        undone = sorted(self.active, reverse=True)
        for control_id in undone:
            self.undo(control_id)
        self.clock.offset = 0.0
        return {"undone": sorted(undone)}

    def _use(self, control: Control) -> None:
        """Count one use; a control whose count is used up leaves the list."""
        if control.remaining is not None:
            control.remaining -= 1
            if control.remaining <= 0:
                self.active.pop(control.id, None)
                log.info("control %d used up", control.id)

    # -- hooks of wireserver.server ------------------------------------------------------

    def refuses(self, connection: Any) -> bool:
        """At a new connection: close it at once if connections are refused."""
        for control in self.active.values():
            if control.control == "refuse_connections":
                self._use(control)
                connection.drop(f"connection refused by control {control.id}")
                return True
        return False

    def dispatch(self, connection: Any, slot: Any) -> None:
        """Handle (or not) and answer (or not) the request in ``slot`` as the active controls
        say; with none matching, exactly as without controls."""
        request = slot.request
        chosen: dict[str, Control] = {}
        for control in self.active.values():
            kind = control.control
            if kind in chosen or kind in ("refuse_connections", "clock", "down"):
                continue
            if control.matches(request) and (
                kind != "error" or self._error_matches(control, request)
            ):
                chosen[kind] = control
        for control in chosen.values():
            if control.control != "error" or "disconnect" not in chosen:
                self._use(control)
        disconnect = chosen.get("disconnect")
        if disconnect is not None:
            why = f"disconnected by control {disconnect.id}"
            if disconnect.fields["handle"]:
                connection.handle(slot).addBoth(lambda _: connection.drop(why))
            else:
                connection.drop(why)
            return
        error = chosen.get("error")
        if error is not None:
            if request.header.api_key == PRODUCE_KEY and request.body.acks == 0:
                # No response carries the error: Kafka closes the connection when such a
                # produce fails, and the client refreshes its metadata.
                connection.drop(f"acks=0 produce failed by control {error.id}")
                return
            if request.spec.name == "ApiVersions":
                # Its error response is read at v0 whatever the version (KIP-511): the
                # server answers v0 for the body-less form of the request.
                slot.request = replace(request, body=None)
            response = defer.maybeDeferred(
                self._error_answer, error, request, connection.listener_name
            )
        else:
            response = connection.handle(slot)
        latency = chosen.get("latency")
        if latency is not None:
            response.addCallback(self._hold, latency.fields["ms"])
        throttle = chosen.get("throttle")
        client_throttles = False
        if throttle is not None:
            ms = throttle.fields["ms"]
            client_throttles = request.api_version >= CLIENT_THROTTLES_FROM.get(
                request.spec.name, 0
            )
            response.addCallback(raise_throttle_time, request, ms)
            if not client_throttles:
                response.addCallback(self._hold, ms)
        connection.answer(slot, response)
        if client_throttles:
            response.addCallback(lambda _: connection.throttle(throttle.fields["ms"]))

    def _error_matches(self, control: Control, request: Request) -> bool:
        if request.body is None:  # an ApiVersions of a version not served: nothing to answer
            return False
        topic, partition, group = (control.fields[k] for k in ("topic", "partition", "group"))
        if topic is None and group is None:
            return True
        names = self.host.metadata.topic_names
        targets = request_targets(request, lambda topic_id: names().get(topic_id))
        if group is not None and group not in targets.groups:
            return False
        if topic is not None:
            if topic not in targets.topics:
                return False
            partitions = targets.topics[topic]
            if partition is not None and (partitions is None or partition not in partitions):
                return False
        return True

    def _error_answer(self, control: Control, request: Request, listener_name: str) -> Any:
        brokers = [
            (endpoint.node_id, endpoint.host, endpoint.port, endpoint.rack)
            for endpoint in self.host.metadata.broker_endpoints(listener_name)
        ]
        code = int(control.code)
        return error_response(request, code, control.fields["message"], brokers=brokers)

    def _hold(self, response: Any, ms: int) -> Any:
        return task.deferLater(self.wall, ms / 1000.0, lambda: response)
