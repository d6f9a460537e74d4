"""How this broker secures its own connections to other brokers (replica fetches), from the
inter-broker listener's settings, as Kafka's inter-broker ``ChannelBuilder`` does.

The listener is ``config.inter_broker_listener`` (``inter.broker.listener.name`` or
``security.inter.broker.protocol``); the broker connects to the other broker's endpoint of
that name. On a SASL listener it logs in with ``sasl.mechanism.inter.broker.protocol`` and the
``username`` / ``password`` options of the listener's JAAS config for that mechanism
(``listener.name.<listener>.<mechanism>.sasl.jaas.config``; for PLAIN the ``user_<name>``
options of the same entry are the server-side users). On a TLS listener it verifies the other
broker's certificate against the listener's trust store and the host name it connects to
(Kafka's default ``ssl.endpoint.identification.algorithm=https``), and presents the listener's
own certificate, which a listener with ``ssl.client.auth=required`` asks for.

``InterBrokerSecurity.from_config`` is checked when a cluster broker starts, so a broker that
could not log in to its peers refuses to start with a ``ConfigValueError`` naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wireserver.security.sasl import CLIENT_MECHANISMS, client_mechanism, parse_jaas
from wireserver.storage.configdef import ConfigValueError


@dataclass(frozen=True)
class InterBrokerSecurity:
    listener: str
    protocol: str
    mechanism: str | None = None  # SASL listeners only
    username: str = ""
    password: str = ""
    config: Any = None  # the BrokerConfig, for the listener's ssl.* keys

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @classmethod
    def from_config(cls, config: Any) -> InterBrokerSecurity:
        listener = config.inter_broker_listener
        name, protocol = listener.name, listener.security_protocol
        if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
            return cls(name, protocol, config=config)
        mechanism = (config["sasl.mechanism.inter.broker.protocol"] or "").upper()
        if mechanism not in CLIENT_MECHANISMS:
            raise ConfigValueError(
                "sasl.mechanism.inter.broker.protocol",
                mechanism,
                f"the inter-broker listener {name} uses {protocol}; brokers can log in to "
                f"each other with {', '.join(CLIENT_MECHANISMS)}",
            )
        enabled = [
            m.strip().upper() for m in config.listener_value(name, "sasl.enabled.mechanisms") or []
        ]
        if mechanism not in enabled:
            raise ConfigValueError(
                "sasl.mechanism.inter.broker.protocol",
                mechanism,
                "must be included in sasl.enabled.mechanisms when SASL is used for "
                "inter-broker communication",
            )
        key = f"listener.name.{name.lower()}.{mechanism.lower()}.sasl.jaas.config"
        text = config.listener_value(name, "sasl.jaas.config", mechanism=mechanism)
        try:
            modules = parse_jaas(text) if text else []
        except ValueError as exc:
            raise ConfigValueError(key, "[hidden]", str(exc)) from None
        for module in modules:
            if module.options.get("username") and "password" in module.options:
                return cls(
                    name,
                    protocol,
                    mechanism,
                    module.options["username"],
                    module.options["password"],
                    config,
                )
        raise ConfigValueError(
            key,
            "[hidden]" if text else None,
            f"the broker logs in to the other brokers with {mechanism} "
            f"as the username and password of this JAAS config",
        )

    def sasl_client(self) -> Any:
        """A fresh client-side SASL exchange for one connection."""
        return client_mechanism(self.mechanism, self.username, self.password)

    def tls_options(self, host: str) -> Any:
        """Twisted's client TLS options for a connection to ``host``: the listener's trust
        store, and its own certificate chain and key (as the server side uses them)."""
        from cryptography.hazmat.primitives import serialization
        from twisted.internet import ssl

        from wireserver.security import tls

        trusted = tls.truststore(self.config, self.listener)
        if not trusted:
            raise ConfigValueError(
                "ssl.truststore.location",
                None,
                f"the inter-broker listener {self.listener} uses TLS; its "
                f"trust store must hold the CA of the other brokers",
            )
        pem = serialization.Encoding.PEM
        trust = ssl.trustRootFromCertificates(
            [ssl.Certificate.loadPEM(cert.public_bytes(pem)) for cert in trusted]
        )
        certs, key = tls.keystore(self.config, self.listener)
        key_pem = key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        own = ssl.PrivateCertificate.loadPEM(
            b"".join(cert.public_bytes(pem) for cert in certs[:1]) + key_pem
        )
        return ssl.optionsForClientTLS(host, trustRoot=trust, clientCertificate=own)
