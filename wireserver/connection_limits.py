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

All are dynamic (AlterConfigs): read when a connection opens or closes, and once a second by
the broker's connection check (``close_excess``).
"""

from __future__ import annotations

import collections
import logging
import socket
from collections.abc import Iterable
from typing import Any

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


class ConnectionLimits:
    """The broker's open connections by address and by listener, and the listening ports
    whose accepting a full listener pauses."""

    def __init__(self, config: Any, inter_broker_listener: str):
        self.config = config
        self.inter_broker_listener = inter_broker_listener
        self.by_ip: collections.Counter[str] = collections.Counter()
        self.by_listener: collections.Counter[str] = collections.Counter()
        self.total = 0
        self.ports: dict[str, list[Any]] = collections.defaultdict(list)
        self.not_accepting: set[str] = set()
        self._overrides: tuple[str, dict[str, int]] = ("", {})

    def listen(self, listener: str, port: Any) -> None:
        self.ports[listener].append(port)
        self._update_accepting()

    def forget_ports(self) -> None:
        """The listeners are down (their ports closed)."""
        self.ports.clear()
        self.not_accepting.clear()

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

    def slot_available(self, listener: str) -> bool:
        """Kafka's ``connectionSlotAvailable``."""
        if self.by_listener[listener] >= self.config.listener_value(listener, "max.connections"):
            return False
        return listener == self.inter_broker_listener or self.total < self.config["max.connections"]

    def _update_accepting(self) -> None:
        for listener, ports in self.ports.items():
            accepting = self.slot_available(listener)
            if accepting == (listener not in self.not_accepting):
                continue
            if accepting:
                self.not_accepting.discard(listener)
                log.info("listener %s accepts connections again", listener)
            else:
                self.not_accepting.add(listener)
                log.info("listener %s has its maximum of connections: not accepting", listener)
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
            (c for c in connections if c.listener_name != self.inter_broker_listener),
            key=lambda c: c.last_active,
        )
        for connection in others[:excess]:
            connection.drop("the broker is past max.connections")
