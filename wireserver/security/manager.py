"""The broker's security state: TLS contexts and SASL settings per listener, the SCRAM
credential store, the delegation tokens and the authorizer. ``Broker.security`` is one of these."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wireserver.security import ConnectionSecurity
from wireserver.security.acls import Authorizer
from wireserver.security.principals import SslPrincipalMapper
from wireserver.security.sasl import SUPPORTED_MECHANISMS, SaslAuthenticator, SaslListenerSettings
from wireserver.security.scram import ScramStore
from wireserver.security.tokens import DelegationTokens

if TYPE_CHECKING:
    from wireserver.config import BrokerConfig

log = logging.getLogger(__name__)


class SecurityManager:
    """Given the broker config and the clock SASL's re-authentication deadlines are read on."""

    def __init__(self, config: BrokerConfig, now_ms: Callable[[], int]):
        self.now_ms = now_ms
        self.config = config
        directory = config.log_dirs[0]
        self.scram = ScramStore(directory)
        self.tokens = DelegationTokens(config, directory, now_ms)
        self.authorizer = Authorizer.from_config(config, directory)
        self.protocols = {
            listener.name: listener.security_protocol for listener in config.listeners
        }
        self.sasl: dict[str, SaslListenerSettings] = {}
        self.tls: dict[str, Any] = {}
        #: listener -> its ssl.principal.mapping.rules (SSL and SASL_SSL listeners)
        self.principal_mappers: dict[str, SslPrincipalMapper] = {}
        for listener in config.listeners:
            protocol = listener.security_protocol
            if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
                settings = SaslListenerSettings.from_config(
                    config, listener.name, self.scram, self.tokens
                )
                if not settings.mechanisms:
                    raise ValueError(
                        f"listener {listener.name} uses {protocol} but none of "
                        f"sasl.enabled.mechanisms is supported (we serve "
                        f"{', '.join(SUPPORTED_MECHANISMS)})"
                    )
                self.sasl[listener.name] = settings
            if protocol in ("SSL", "SASL_SSL"):
                from wireserver.security import tls

                self.tls[listener.name] = tls.ServerContextFactory(
                    tls.server_context(config, listener.name)
                )
                self.principal_mappers[listener.name] = SslPrincipalMapper(
                    config.listener_value(listener.name, "ssl.principal.mapping.rules")
                )

    def listen(self, reactor: Any, listener: Any, factory: Any, interface: str) -> Any:
        """Bind ``listener`` with TLS when its protocol asks for it."""
        context = self.tls.get(listener.name)
        if context is not None:
            # Not listenSSL: its TLS layer schedules writes on the global reactor, and the
            # embedded broker runs on a private one. The TLS wrapper takes the clock to use.
            from twisted.protocols.tls import TLSMemoryBIOFactory

            factory = TLSMemoryBIOFactory(context, False, factory, clock=reactor)
        return reactor.listenTCP(listener.port, factory, interface=interface)

    def new_connection(self, listener: str, host: str) -> ConnectionSecurity:
        security = ConnectionSecurity(
            listener=listener, protocol=self.protocols.get(listener, "PLAINTEXT"), host=host
        )
        security.tls_principal_done = not security.uses_tls
        settings = self.sasl.get(listener)
        if settings is not None:
            security.authenticator = SaslAuthenticator(settings, self.now_ms)
        return security
