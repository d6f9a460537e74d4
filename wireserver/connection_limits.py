"""How many client connections a broker keeps open: Kafka's ``ConnectionQuotas`` counts.

- ``max.connections.per.ip`` and ``max.connections.per.ip.overrides`` (``host:count`` pairs,
  hosts resolved to addresses): a connection from an address that already has its maximum is
  closed at once, unread, and logged as Kafka's acceptor logs it ("Rejected connection from
  <ip>, address already has the configured maximum of <n> connections.").
- ``max.connections`` (the whole broker) and ``listener.name.<l>.max.connections`` (one
  listener, the broker's value unless set): once a listener has its maximum, or the broker has
  its own on any listener but the inter-broker one, the listener accepts no connection until
  one closes; the connections wait in the socket's backlog, as Kafka's acceptor waits for a
  slot. The inter-broker listener may take the broker past ``max.connections``; the least
  recently active connections of the other listeners are then closed (``close_excess``), as
  Kafka's processors close one per poll while the broker is over its maximum.

- ``max.connection.creation.rate`` (new connections a second, the whole broker, every listener
  but the inter-broker one) and ``listener.name.<l>.max.connection.creation.rate`` (one
  listener, the broker's value unless set): a connection that takes either rate past its limit
  waits for the throttle time (``quota.window.num`` windows of ``quota.window.size.seconds``,
  at most one window) before it is read, and its listener accepts nothing meanwhile; the
  connections after it wait their turn, each counted when its turn comes (``admit``). Kafka's
  acceptor thread waits the same way, one connection after the other.

All are dynamic (AlterConfigs): read when a connection opens or closes, and once a second by
the broker's connection check (``close_excess``).
"""

from __future__ import annotations

import collections
import logging
import socket
from collections.abc import Callable, Iterable
from typing import Any

from wireserver.quotas.rates import Rate, throttle_ms

log = logging.getLogger("wireserver.server")


def parse_ip_overrides(value: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` pairs, comma separated; hosts are
    resolved to addresses (Kafka's ``InetAddress.getByName``). Raises ``ValueError`` for a
    pair that is not ``host:count`` or a host that does not resolve, as Kafka refuses the
    value (the config checks it when it is set)."""
    overrides: dict[str, int] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        host, _, count = item.strip().rpartition(":")
        if not host or not count.strip().isdigit():
            raise ValueError(f"Invalid entry {item.strip()!r}: expected host:count")
        try:
            address = socket.gethostbyname(host.strip("[]"))
        except OSError:
            raise ValueError(f"Unknown host {host!r}") from None
        overrides[address] = int(count)
    return overrides


def _go_on(later: Callable[[], None]) -> None:
    """Go on with a connection that waited its turn; a failure there is that connection's
    alone, not a listener left throttled for good."""
    try:
        later()
    except Exception:  # noqa: BLE001 - logged; the connections after it still go on
        log.exception("failed to go on with a connection after its throttle")


class ConnectionLimits:
    """The broker's open connections by address and by listener, and the listening ports
    whose accepting a full listener pauses."""

    def __init__(self, config: Any, inter_broker_listener: str, reactor: Any):
        self.config = config
        self.inter_broker_listener = inter_broker_listener
        self.several_listeners = len({listener.name for listener in config.listeners}) > 1
        #: its ``seconds()`` times the creation rates, its ``callLater`` ends a throttle
        self.reactor = reactor
        self.by_ip: collections.Counter[str] = collections.Counter()
        self.by_listener: collections.Counter[str] = collections.Counter()
        self.total = 0
        self.ports: dict[str, list[Any]] = collections.defaultdict(list)
        self.not_accepting: set[str] = set()
        #: not accepting for want of a slot (``max.connections``), not a creation throttle
        self.full: set[str] = set()
        self._overrides: tuple[str, dict[str, int]] = ("", {})
        #: connection creation rates: the broker's (key None) and each listener's
        self.creation_rates: dict[str | None, Rate] = {}
        #: per listener throttled on its creation rate, the connections waiting their turn
        #: (each a function that goes on with it); the first has been counted already
        self.throttled: dict[str, collections.deque[Callable[[], None]]] = {}

    def listen(self, listener: str, port: Any) -> None:
        self.ports[listener].append(port)
        self._update_accepting()

    def forget_ports(self) -> None:
        """The listeners are down (their ports closed)."""
        self.ports.clear()
        self.not_accepting.clear()
        self.full.clear()

    def ip_limit(self, ip: str) -> int:
        raw = self.config["max.connections.per.ip.overrides"] or ""
        if raw != self._overrides[0]:
            try:
                overrides = parse_ip_overrides(raw)
            except ValueError as exc:  # checked when set; a host may stop resolving since
                log.warning("max.connections.per.ip.overrides not applied: %s", exc)
                overrides = {}
            self._overrides = (raw, overrides)
        return self._overrides[1].get(ip, self.config["max.connections.per.ip"])

    def opened(self, listener: str, ip: str) -> bool:
        """Count a new connection; False (not counted, to be closed) when its address has
        its maximum already."""
        limit = self.ip_limit(ip)
        if self.by_ip[ip] >= limit:
            log.info(
                "Rejected connection from %s, address already has the configured maximum of "
                "%d connections.",
                ip,
                limit,
            )
            return False
        self.by_ip[ip] += 1
        self.by_listener[listener] += 1
        self.total += 1
        self._update_accepting()
        return True

    def closed(self, listener: str, ip: str) -> None:
        self.by_ip[ip] -= 1
        if self.by_ip[ip] <= 0:
            del self.by_ip[ip]
        self.by_listener[listener] -= 1
        self.total -= 1
        self._update_accepting()

    def admit(self, listener: str, later: Callable[[], None]) -> bool:
        """A connection accepted on ``listener``: True to go on with it now, or False and
        ``later()`` once the throttles of ``max.connection.creation.rate`` allow (Kafka's
        ``waitForConnectionSlot``)."""
        waiting = self.throttled.get(listener)
        if waiting is not None:
            waiting.append(later)  # accepted in the same turn as a throttled one
            return False
        throttle_ms = self._creation_throttle_ms(listener)
        if throttle_ms <= 0:
            return True
        self.throttled[listener] = collections.deque([later])
        self._update_accepting()
        self.reactor.callLater(throttle_ms / 1000.0, self._throttle_ended, listener)
        return False

    def _throttle_ended(self, listener: str) -> None:
        waiting = self.throttled[listener]
        _go_on(waiting.popleft())  # counted when its throttle began
        while waiting:
            throttle_ms = self._creation_throttle_ms(listener)
            if throttle_ms > 0:
                self.reactor.callLater(throttle_ms / 1000.0, self._throttle_ended, listener)
                return
            _go_on(waiting.popleft())
        del self.throttled[listener]
        self._update_accepting()

    def _creation_throttle_ms(self, listener: str) -> int:
        """Count a new connection on ``listener`` in the broker's creation rate (not for the
        inter-broker listener) and the listener's; how long (ms) it must wait: the longer
        of the two throttles (Kafka's ``recordConnectionAndGetThrottleTimeMs``)."""
        now_ms = int(self.reactor.seconds() * 1000)
        throttle_ms = 0
        if not self.protected(listener):
            throttle_ms = self._record(None, self.config["max.connection.creation.rate"], now_ms)
        limit = self.config.listener_value(listener, "max.connection.creation.rate")
        return max(throttle_ms, self._record(listener, limit, now_ms))

    def uncount_creation(self, listener: str) -> None:
        """A connection refused for its address's ``connection_creation_rate`` is taken back
        out of the broker's and the listener's creation rates, as Kafka does."""
        now_ms = int(self.reactor.seconds() * 1000)
        window_ms, samples = self._window()
        for key in (listener, None) if not self.protected(listener) else (listener,):
            rate = self.creation_rates.get(key)
            if rate is not None:
                rate.record(-1.0, now_ms, window_ms, samples)

    def _window(self) -> tuple[int, int]:
        return self.config["quota.window.size.seconds"] * 1000, self.config["quota.window.num"]

    def _record(self, key: str | None, limit: int, now_ms: int) -> int:
        """Kafka's ``recordAndGetThrottleTimeMs``: the connection stays counted either way."""
        window_ms, samples = self._window()
        rate = self.creation_rates.get(key)
        if rate is None:
            rate = self.creation_rates[key] = Rate(now_ms)
        rate.record(1.0, now_ms, window_ms, samples)
        measured, window = rate.measure(now_ms, window_ms, samples)
        return throttle_ms(measured, limit, window, window_ms)

    def protected(self, listener: str) -> bool:
        """Kafka's ``protectedListener``: the inter-broker listener, when the broker has
        others, is kept apart from the broker-wide limits (``max.connections`` and
        ``max.connection.creation.rate``), so that clients cannot keep brokers out."""
        return listener == self.inter_broker_listener and self.several_listeners

    def slot_available(self, listener: str) -> bool:
        """Kafka's ``connectionSlotAvailable``."""
        if self.by_listener[listener] >= self.config.listener_value(listener, "max.connections"):
            return False
        return self.protected(listener) or self.total < self.config["max.connections"]

    def _update_accepting(self) -> None:
        for listener, ports in self.ports.items():
            full = not self.slot_available(listener)
            if full != (listener in self.full):
                if full:
                    self.full.add(listener)
                    log.info("listener %s has its maximum of connections", listener)
                else:
                    self.full.discard(listener)
                    log.info("listener %s has room for connections again", listener)
            accepting = not full and listener not in self.throttled
            if accepting == (listener not in self.not_accepting):
                continue
            if accepting:
                self.not_accepting.discard(listener)
            else:
                self.not_accepting.add(listener)
            for port in ports:
                if not getattr(port, "connected", True):
                    continue  # closed (the listeners went down)
                if accepting:
                    port.startReading()
                else:
                    port.stopReading()

    def close_excess(self, connections: Iterable[Any]) -> None:
        """Past ``max.connections`` (the inter-broker listener's connections, or a lowered
        maximum): close the least recently active connections of the other listeners. Also
        where a raised maximum lets a listener accept again before any connection closes."""
        self._update_accepting()
        excess = self.total - self.config["max.connections"]
        if excess <= 0:
            return
        others = sorted(
            (c for c in connections if not self.protected(c.listener_name)),
            key=lambda c: c.last_active,
        )
        for connection in others[:excess]:
            connection.drop("the broker is past max.connections")
