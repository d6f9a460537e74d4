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


_TLS_VERSIONS = {"TLSv1.2": SSL.TLS1_2_VERSION, "TLSv1.3": SSL.TLS1_3_VERSION}


def server_context(config: ListenerSettings, listener: str) -> SSL.Context:
    """A pyOpenSSL server context for ``listener``."""
    certs, key = keystore(config, listener)
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
    trusted = truststore(config, listener)
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


@implementer(IOpenSSLServerConnectionCreator)
class ServerContextFactory:
    """What Twisted's TLS layer wants: a new server ``SSL.Connection`` per accepted socket,
    all from the listener's one context."""

    def __init__(self, context: SSL.Context):
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
