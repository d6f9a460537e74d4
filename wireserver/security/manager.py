"""The broker's security state: TLS contexts and SASL settings per listener, the SCRAM
credential store, the delegation tokens and the authorizer. ``Broker.security`` is one of these."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wireserver.config import LISTENER_ONLY_KEYS
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
        #: listener -> what its TLS context was built from (``tls.ListenerTls``)
        self.tls_state: dict[str, Any] = {}
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

                state = tls.build(config, listener.name, LISTENER_ONLY_KEYS)
                self.tls_state[listener.name] = state
                self.tls[listener.name] = tls.ServerContextFactory(state.context)
                self.principal_mappers[listener.name] = SslPrincipalMapper(
                    config.listener_value(listener.name, "ssl.principal.mapping.rules")
                )

    def prepare_tls(
        self, settings: Any, *, reload: bool = False, checked: bool = True
    ) -> dict[str, Any]:
        """New TLS contexts (``tls.ListenerTls`` by listener) for the listeners whose store
        keys (``LISTENER_ONLY_KEYS``) ``settings`` (a ``BrokerConfig``, or a change about to be
        made) sets otherwise; with ``reload``, for the others instead, their files read again
        (Kafka's ``reloadOnly``: a per-broker change reloads the stores of the listeners it
        does not change, so that the same path set again picks up a file replaced in place).
        ``checked``: as Kafka's ``SslFactory`` checks an update
        (``tls.check_reconfiguration``), raising ``tls.TlsReconfigError``; otherwise the
        stores are only read."""
        from wireserver.security import tls

        inter_broker = self.config.inter_broker_listener.name
        keys = LISTENER_ONLY_KEYS
        fresh: dict[str, Any] = {}
        for name, old in self.tls_state.items():
            if reload != (tls.store_settings(settings, name, keys) == old.settings):
                continue
            if checked:
                fresh[name] = tls.check_reconfiguration(
                    old, settings, name, keys, inter_broker=name == inter_broker
                )
            else:
                try:
                    fresh[name] = tls.build(settings, name, keys)
                except (tls.TlsConfigError, ValueError) as exc:
                    raise tls.TlsReconfigError(str(exc)) from None
        return fresh

    def install_tls(self, fresh: dict[str, Any]) -> None:
        """Put the contexts of ``prepare_tls`` in: new connections use them from now on."""
        for name, state in fresh.items():
            self.tls_state[name] = state
            self.tls[name].swap(state.context)
            cert = state.certs[0]
            log.info(
                "listener %s: new connections get the certificate %s (serial %x, valid to %s)",
                name,
                cert.subject.rfc4514_string(),
                cert.serial_number,
                cert.not_valid_after_utc.isoformat(),
            )

    def follow_tls(self) -> None:
        """After the dynamic layers changed (a change through another path, a restart in
        cluster mode reading ZooKeeper): rebuild the listeners whose store keys changed. The
        change was checked where it was made; a store that cannot be read is logged and the
        listener keeps the one it has, as Kafka keeps its config when an update fails."""
        from wireserver.security import tls

        try:
            self.install_tls(self.prepare_tls(self.config, checked=False))
        except tls.TlsReconfigError as exc:
            log.error("Failed to update the TLS stores of a listener: %s", exc)

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
