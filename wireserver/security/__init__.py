"""Security: TLS listeners, SASL authentication, principals and ACL authorization.

- ``tls``: the pyOpenSSL context of an SSL / SASL_SSL listener, built from Kafka's ``ssl.*``
  keys (PEM only), and the principal of a client certificate (its subject DN, as Kafka's
  default principal builder reports it).
- ``sasl``: the per-connection authentication state machine and the PLAIN, SCRAM-SHA-256/512
  and OAUTHBEARER (unsecured JWS) mechanisms.
- ``scram``: salted SCRAM credentials, persisted in the first log dir (in cluster mode kept in
  ZooKeeper by ``wireserver.cluster.scram_credentials``).
- ``acls``: Kafka's ACL model, the ACL store (persisted in the first log dir) and
  ``authorize``, the one check every handler calls.
- ``certs``: a CA and certificates for tests (``EmbeddedBroker(tls=True)``).

``ConnectionSecurity`` is what a connection knows about its peer: principal, host, and (on SASL
listeners) its authenticator. Handlers see it as ``ctx.security``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ANONYMOUS = "User:ANONYMOUS"


@dataclass(slots=True)
class ConnectionSecurity:
    """The security side of one connection."""

    listener: str
    protocol: str = "PLAINTEXT"
    principal: str = ANONYMOUS
    host: str = "*"
    authenticator: Any = None  # sasl.SaslAuthenticator on SASL listeners
    tls_principal_done: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


def _authorizer(ctx: Any) -> tuple[Any, ConnectionSecurity | None]:
    """(the broker's authorizer or None, the connection's security or None)."""
    manager = getattr(ctx.services, "security", None)
    return getattr(manager, "authorizer", None), getattr(ctx, "security", None)


def authorize(ctx: Any, operation: Any, resource_type: Any, name: str) -> bool:
    """May the principal of ``ctx``'s connection do ``operation`` on the resource? Always True
    without an authorizer (``authorizer.class.name`` unset) or outside a client connection."""
    authorizer, security = _authorizer(ctx)
    if authorizer is None or security is None:
        return True
    return authorizer.authorize(security.principal, security.host, operation, resource_type, name)


def authorize_by_resource_type(ctx: Any, operation: Any, resource_type: Any) -> bool:
    """May the principal of ``ctx``'s connection do ``operation`` on some resource of the
    type (see ``Authorizer.authorize_by_resource_type``)? True without an authorizer."""
    authorizer, security = _authorizer(ctx)
    if authorizer is None or security is None:
        return True
    return authorizer.authorize_by_resource_type(
        security.principal, security.host, operation, resource_type
    )


def authorizer_enabled(ctx: Any) -> bool:
    return getattr(getattr(ctx.services, "security", None), "authorizer", None) is not None
