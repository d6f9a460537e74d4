"""The operations listener's lifecycle (``Broker.ops``): kept apart from ``wireserver.ops.http``
so that a broker without ``metrics.listeners`` never imports twisted.web nor the Prometheus
client (which bring the ssl module and OpenSSL into a plaintext broker's memory)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from wireserver.config import METRICS_LISTENER_NAME

if TYPE_CHECKING:
    from wireserver.config import Listener
    from wireserver.ops.host import OpsHost
    from wireserver.ops.http import OpsSite

log = logging.getLogger("wireserver.ops")


class OpsListener:
    """The ``metrics.listeners`` of one broker: ``start`` binds them (after the Kafka
    listeners), ``stop`` closes them and drops their connections; ``bound`` holds them with
    their real ports and ``urls`` their addresses."""

    def __init__(self, host: OpsHost):
        self.host = host
        self.ports: list[Any] = []
        self.bound: list[Listener] = []
        self.site: OpsSite | None = None

    def start(self) -> None:
        listeners = self.host.config.metrics_listeners
        if not listeners:
            return
        from wireserver.ops.http import OpsSite, Paths

        reactor = self.host.wall_reactor
        paths = Paths(self.host)
        if self.host.controls is not None:
            from wireserver.controls.http import ControlsResource

            paths.prefixes[b"controls"] = ControlsResource(self.host.controls)
        self.site = OpsSite(paths, reactor, self.host.config.metrics_users)
        for listener in listeners:
            factory: Any = self.site
            if listener.security_protocol == "HTTPS":
                from twisted.protocols.tls import TLSMemoryBIOFactory

                from wireserver.security import tls

                context = tls.ServerContextFactory(
                    tls.server_context(self.host.config, METRICS_LISTENER_NAME)
                )
                factory = TLSMemoryBIOFactory(context, False, self.site, clock=reactor)
            interface = "" if listener.host in ("", "0.0.0.0") else listener.host
            port = reactor.listenTCP(listener.port, factory, interface=interface)
            self.ports.append(port)
            self.bound.append(listener.with_port(port.getHost().port))
        for url in self.urls:
            log.info("operations listener at %s (status page /, /metrics, /api/)", url)

    @property
    def urls(self) -> list[str]:
        """``http://127.0.0.1:9404`` and the like, one per bound listener."""
        urls = []
        for listener in self.bound:
            host = "127.0.0.1" if listener.host in ("", "0.0.0.0") else listener.host
            host = f"[{host}]" if ":" in host else host
            urls.append(f"{listener.security_protocol.lower()}://{host}:{listener.port}")
        return urls

    def stop(self) -> Any:
        """Stop listening and drop open connections; a Deferred that fires once the ports
        are closed."""
        from twisted.internet import defer

        ports, self.ports = self.ports, []
        closing = [defer.maybeDeferred(port.stopListening) for port in ports]
        for channel in list(self.site.channels if self.site is not None else ()):
            channel.transport.abortConnection()
        return defer.gatherResults(closing)
