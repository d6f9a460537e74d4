"""TLS for SSL and SASL_SSL listeners, with pyOpenSSL (through Twisted's ``listenSSL``).

Keys are read per listener (``listener.name.<name>.ssl.*`` first, then ``ssl.*``). Only PEM
stores are supported: ``ssl.keystore.type=PEM`` with either ``ssl.keystore.location`` (a file
holding the certificate chain and the private key) or the inline
``ssl.keystore.certificate.chain`` / ``ssl.keystore.key``; ``ssl.key.password`` (or
``ssl.keystore.password``) decrypts an encrypted key. ``ssl.truststore.location`` /
``ssl.truststore.certificates`` hold the CAs that client certificates must chain to, and
``ssl.client.auth`` (none / requested / required) says whether to ask for one.

The principal of a client with a certificate is ``User:`` + the certificate's subject DN in
RFC 2253 form (``CN=alice,OU=eng,O=Example``), as Kafka's default principal builder reports
it, or what the listener's ``ssl.principal.mapping.rules`` make of the DN
(``wireserver.security.principals``); without a certificate it is ``User:ANONYMOUS``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import SSL, crypto
from twisted.internet.interfaces import IOpenSSLServerConnectionCreator
from zope.interface import implementer


class ListenerSettings(Protocol):
    """What TLS reads of the broker's configuration (``wireserver.config.BrokerConfig``): a
    listener's effective value of a key, ``listener.name.<name>.<key>`` first."""

    def listener_value(self, listener: str, name: str) -> Any: ...


class TlsConfigError(ValueError):
    """The ssl.* keys of a listener do not describe a usable key store."""


class TlsReconfigError(ValueError):
    """A listener's new key or trust store is refused (Kafka's ``SslFactory`` validation of a
    dynamic update); the message is what Kafka logs."""


#: Kafka's PEM key store holds its one key entry under this alias (shown in its messages).
PEM_ALIAS = "kafka"


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise TlsConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def _split_pem(data: bytes) -> tuple[list[x509.Certificate], bytes | None]:
    """Certificates and the (first) private key block found in PEM ``data``."""
    certs = x509.load_pem_x509_certificates(data) if b"-----BEGIN CERTIFICATE" in data else []
    key = None
    start = data.find(b"-----BEGIN ")
    while start != -1:
        line_end = data.find(b"-----", start + 11)
        label = data[start + 11 : line_end]
        end_marker = b"-----END " + label + b"-----"
        end = data.find(end_marker, line_end)
        if end == -1:
            break
        if label.endswith(b"PRIVATE KEY"):
            key = data[start : end + len(end_marker)]
            break
        start = data.find(b"-----BEGIN ", end)
    return certs, key


def _password(config: ListenerSettings, listener: str) -> bytes | None:
    for name in ("ssl.key.password", "ssl.keystore.password"):
        value = config.listener_value(listener, name)
        if value:
            return value.encode()
    return None


def keystore(config: ListenerSettings, listener: str) -> tuple[list[x509.Certificate], Any]:
    """The listener's certificate chain and private key."""
    kind = (config.listener_value(listener, "ssl.keystore.type") or "JKS").upper()
    chain_pem = config.listener_value(listener, "ssl.keystore.certificate.chain")
    key_pem = config.listener_value(listener, "ssl.keystore.key")
    location = config.listener_value(listener, "ssl.keystore.location")
    if chain_pem or key_pem:
        if not (chain_pem and key_pem):
            raise TlsConfigError(
                f"listener {listener}: ssl.keystore.certificate.chain and "
                f"ssl.keystore.key must be given together"
            )
        certs, _ = _split_pem(chain_pem.encode())
        _, key_block = _split_pem(key_pem.encode())
    elif location:
        if kind != "PEM" and not location.endswith((".pem", ".crt")):
            raise TlsConfigError(
                f"listener {listener}: ssl.keystore.type {kind} is not "
                f"supported; use ssl.keystore.type=PEM"
            )
        certs, key_block = _split_pem(_read(location))
    else:
        raise TlsConfigError(
            f"listener {listener} uses TLS but has no key store "
            f"(ssl.keystore.location or ssl.keystore.certificate.chain)"
        )
    if not certs or key_block is None:
        raise TlsConfigError(
            f"listener {listener}: the key store needs a certificate and a private key in PEM"
        )
    try:
        key = serialization.load_pem_private_key(key_block, _password(config, listener))
    except (TypeError, ValueError) as exc:
        raise TlsConfigError(f"listener {listener}: cannot load the private key: {exc}") from None
    return certs, key


def truststore(config: ListenerSettings, listener: str) -> list[x509.Certificate]:
    inline = config.listener_value(listener, "ssl.truststore.certificates")
    location = config.listener_value(listener, "ssl.truststore.location")
    if inline:
        return _split_pem(inline.encode())[0]
    if location:
        return _split_pem(_read(location))[0]
    return []


def has_keystore(config: ListenerSettings, listener: str) -> bool:
    return bool(
        config.listener_value(listener, "ssl.keystore.location")
        or config.listener_value(listener, "ssl.keystore.certificate.chain")
        or config.listener_value(listener, "ssl.keystore.key")
    )


_TLS_VERSIONS = {"TLSv1.2": SSL.TLS1_2_VERSION, "TLSv1.3": SSL.TLS1_3_VERSION}


@dataclass
class ListenerTls:
    """A listener's TLS context and what it was built from: the values of the store keys (a
    change of one rebuilds it), the key store's chain and key, the trusted certificates."""

    settings: tuple[Any, ...]  # (the values of the store keys)
    certs: list[x509.Certificate]
    key: Any
    trusted: list[x509.Certificate]
    context: SSL.Context


def store_settings(config: ListenerSettings, listener: str, keys: Iterable[str]) -> tuple[Any, ...]:
    """The listener's values of ``keys``: Kafka's ``SslConfigs.RECONFIGURABLE_CONFIGS``
    (``wireserver.config.LISTENER_ONLY_KEYS``), whose change rebuilds its context."""
    return tuple(config.listener_value(listener, name) for name in sorted(keys))


def build(config: ListenerSettings, listener: str, keys: Iterable[str] = ()) -> ListenerTls:
    """Read the listener's stores (the files again) and make its server context; ``keys``:
    the store keys whose values it remembers (``store_settings``)."""
    certs, key = keystore(config, listener)
    trusted = truststore(config, listener)
    context = _server_context(config, listener, certs, key, trusted)
    return ListenerTls(store_settings(config, listener, keys), certs, key, trusted, context)


def server_context(config: ListenerSettings, listener: str) -> SSL.Context:
    """A pyOpenSSL server context for ``listener``."""
    return build(config, listener).context


def _server_context(
    config: ListenerSettings,
    listener: str,
    certs: list[x509.Certificate],
    key: Any,
    trusted: list[x509.Certificate],
) -> SSL.Context:
    context = SSL.Context(SSL.TLS_SERVER_METHOD)
    enabled = [
        v
        for v in config.listener_value(listener, "ssl.enabled.protocols") or []
        if v in _TLS_VERSIONS
    ]
    if enabled:
        context.set_min_proto_version(min(_TLS_VERSIONS[v] for v in enabled))
        context.set_max_proto_version(max(_TLS_VERSIONS[v] for v in enabled))
    context.use_certificate(crypto.X509.from_cryptography(certs[0]))
    for extra in certs[1:]:
        context.add_extra_chain_cert(crypto.X509.from_cryptography(extra))
    context.use_privatekey(key)
    context.check_privatekey()
    store = context.get_cert_store()
    for cert in trusted:
        store.add_cert(crypto.X509.from_cryptography(cert))
    client_auth = (config.listener_value(listener, "ssl.client.auth") or "none").lower()
    if client_auth == "required":
        mode = SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT
    elif client_auth == "requested":
        mode = SSL.VERIFY_PEER
    else:
        mode = SSL.VERIFY_NONE
    if mode != SSL.VERIFY_NONE and not trusted:
        raise TlsConfigError(
            f"listener {listener}: ssl.client.auth={client_auth} needs a "
            f"trust store (ssl.truststore.location)"
        )
    context.set_verify(mode, lambda conn, cert, errno, depth, ok: bool(ok))
    # A session id context is required when client certificates are verified and sessions
    # are cached.
    context.set_session_id(f"wireserver-{listener}".encode()[:32])
    return context


# -- dynamic update (Kafka's SslFactory.createNewSslEngineFactory) ---------------------------


def java_dn(name: x509.Name) -> str:
    """A DN as Java's ``X500Principal.toString`` prints it: most specific first, ", "."""
    return ", ".join(rdn.rfc4514_string() for rdn in reversed(name.rdns))


def _sans(cert: x509.Certificate) -> set[tuple[int, str]]:
    """Subject alternative names as Java's ``getSubjectAlternativeNames`` lists them: (type,
    value), 2 = DNS name, 7 = IP address (IPv6 written out in full, as Java does)."""
    try:
        extension = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return set()
    names: set[tuple[int, str]] = set()
    for name in extension.value:
        if isinstance(name, x509.DNSName):
            names.add((2, name.value))
        elif isinstance(name, x509.IPAddress):
            address = name.value
            if isinstance(address, ipaddress.IPv6Address):
                text = ":".join(f"{int(group, 16):x}" for group in address.exploded.split(":"))
            else:
                text = str(address)
            names.add((7, text))
        elif isinstance(name, x509.RFC822Name):
            names.add((1, name.value))
        elif isinstance(name, x509.UniformResourceIdentifier):
            names.add((6, name.value))
    return names


def _java_sans(names: set[tuple[int, str]]) -> str:
    return "[" + ", ".join(f"[{kind}, {value}]" for kind, value in sorted(names)) + "]"


def _ensure_compatible(old: ListenerTls, new: ListenerTls, allow_dn: bool, allow_san: bool) -> None:
    """Kafka's ``CertificateEntries.ensureCompatible``: the new key store's certificate keeps
    the old one's subject DN (unless ``ssl.allow.dn.changes``) and all of its SANs (unless
    ``ssl.allow.san.changes``)."""
    old_cert, new_cert = old.certs[0], new.certs[0]
    if not allow_dn and old_cert.subject != new_cert.subject:
        old_dn, new_dn = java_dn(old_cert.subject), java_dn(new_cert.subject)
        if old_dn.lower() != new_dn.lower():
            raise TlsConfigError(
                "org.apache.kafka.common.config.ConfigException: Keystore DistinguishedName "
                f"does not match:  existing={{alias={PEM_ALIAS}, DN={old_dn}}}, "
                f"new={{alias={PEM_ALIAS}, DN={new_dn}}}"
            )
    old_sans, new_sans = _sans(old_cert), _sans(new_cert)
    if not allow_san and not old_sans <= new_sans:
        raise TlsConfigError(
            "org.apache.kafka.common.config.ConfigException: Keystore SubjectAltNames do not "
            f"match:  existing={{alias={PEM_ALIAS}, SAN={_java_sans(old_sans)}}}, "
            f"new={{alias={PEM_ALIAS}, SAN={_java_sans(new_sans)}}}"
        )


def _client_context(side: ListenerTls) -> SSL.Context:
    """A client context with ``side``'s key store (its client certificate) and trust store
    (the system's CAs without one, as Java's default trust manager)."""
    context = SSL.Context(SSL.TLS_CLIENT_METHOD)
    context.use_certificate(crypto.X509.from_cryptography(side.certs[0]))
    for extra in side.certs[1:]:
        context.add_extra_chain_cert(crypto.X509.from_cryptography(extra))
    context.use_privatekey(side.key)
    if side.trusted:
        for cert in side.trusted:
            context.get_cert_store().add_cert(crypto.X509.from_cryptography(cert))
    else:
        context.set_default_verify_paths()
    context.set_verify(SSL.VERIFY_PEER, lambda conn, cert, errno, depth, ok: bool(ok))
    return context


def _handshake(client_side: ListenerTls, server_side: ListenerTls) -> None:
    """Kafka's ``SslEngineValidator.validate`` one way: a client built from ``client_side``
    completes a handshake with a server built from ``server_side``, in memory."""
    client = SSL.Connection(_client_context(client_side), None)
    client.set_connect_state()
    server = SSL.Connection(server_side.context, None)
    server.set_accept_state()
    done = {id(client): False, id(server): False}
    for _ in range(20):
        for conn in (client, server):
            if not done[id(conn)]:
                try:
                    conn.do_handshake()
                    done[id(conn)] = True
                except SSL.WantReadError:
                    pass
                except SSL.Error as exc:
                    raise TlsConfigError(f"javax.net.ssl.SSLHandshakeException: {exc}") from None
        for source, sink in ((client, server), (server, client)):
            try:
                sink.bio_write(source.bio_read(1 << 16))
            except SSL.WantReadError:
                pass
        if all(done.values()):
            return
    raise TlsConfigError("javax.net.ssl.SSLException: the handshake did not complete")


def check_reconfiguration(
    old: ListenerTls,
    config: ListenerSettings,
    listener: str,
    keys: Iterable[str],
    *,
    inter_broker: bool,
) -> ListenerTls:
    """The listener's stores as ``config`` now describes them (files read again), checked
    against ``old`` as Kafka's ``SslFactory`` checks a dynamic update: the key store cannot
    go away, its certificate keeps its DN and SANs, a trust store cannot be added where there
    was none, and on the inter-broker listener a handshake must succeed both ways between
    the old and the new stores. Raises ``TlsReconfigError`` with Kafka's message."""
    try:
        if not has_keystore(config, listener):
            raise TlsConfigError(
                "org.apache.kafka.common.config.ConfigException: Cannot remove the SSL "
                "keystore from an existing listener for which a keystore was configured."
            )
        new = build(config, listener, keys)
        _ensure_compatible(
            old,
            new,
            bool(config.listener_value(listener, "ssl.allow.dn.changes")),
            bool(config.listener_value(listener, "ssl.allow.san.changes")),
        )
        if not old.trusted and new.trusted:
            raise TlsConfigError(
                "org.apache.kafka.common.config.ConfigException: Cannot add SSL truststore to "
                "an existing listener for which no truststore was configured."
            )
        if inter_broker:
            _handshake(old, new)
            _handshake(new, old)
    except (TlsConfigError, SSL.Error, ValueError) as exc:
        raise TlsReconfigError(
            f"Validation of dynamic config update of SSLFactory failed: {exc}"
        ) from None
    return new


@implementer(IOpenSSLServerConnectionCreator)
class ServerContextFactory:
    """What Twisted's TLS layer wants: a new server ``SSL.Connection`` per accepted socket,
    all from the listener's current context. ``swap`` puts in a new one (a dynamic change of
    its stores): connections accepted from then on use it, open ones keep theirs."""

    def __init__(self, context: SSL.Context):
        self._context = context

    def swap(self, context: SSL.Context) -> None:
        self._context = context

    def getContext(self) -> SSL.Context:  # noqa: N802 - Twisted's interface
        return self._context

    def serverConnectionForTLS(self, protocol: Any) -> SSL.Connection:  # noqa: N802
        return SSL.Connection(self._context, None)


def peer_principal(transport: Any, mapper: Any = None) -> str | None:
    """``User:<name>`` of the client's certificate, or None without one: the subject DN, or
    what ``mapper`` (a ``principals.SslPrincipalMapper``) makes of it; raises
    ``principals.NoMatchingRule`` when no rule applies."""
    get = getattr(transport, "getPeerCertificate", None)
    if get is None:
        return None
    try:
        cert = get()
    except Exception:  # noqa: BLE001 - no TLS session yet
        return None
    if cert is None:
        return None
    dn = cert.to_cryptography().subject.rfc4514_string()
    return "User:" + (mapper.name(dn) if mapper is not None else dn)
