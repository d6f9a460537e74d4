"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546, KIP-599, KIP-612): what is set
(``store``: entities and their quota keys, kept on disk or in ZooKeeper) and what is measured
(``rates``: Kafka's windowed rate sensors, one manager per quota kind).

An entity is a tuple of ``(entity type, name)`` pairs sorted by type (``client-id``, ``ip``,
``user``), the name None for ``<default>``: ``(("user", "alice"),)``,
``(("client-id", None), ("user", "alice"))``, ``(("ip", "10.0.0.1"),)``.

How a quota reaches a client: ``wireserver.server`` records each request against the managers
(``Quotas.produce`` the request's bytes, ``Quotas.request`` the reactor time its handler took),
the Fetch handler records its response's bytes (``Quotas.fetch``); a manager with no quota set
for its key costs one attribute test per request. A violation gives the response
``throttle_time_ms`` and mutes the connection that long (KIP-219), or for request versions
older than client-side throttling holds the response that long instead.
"""

from __future__ import annotations

from typing import Any

from wireserver.quotas.rates import QuotaManager
from wireserver.quotas.store import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotaStore,
)


class Quotas:
    """A broker's quotas: the store and one manager per kind measured per user/client-id."""

    def __init__(self, store: ClientQuotaStore, window_ms: int, samples: int):
        self.store = store
        self.produce = QuotaManager(store, PRODUCER_BYTE_RATE, window_ms, samples)
        self.fetch = QuotaManager(store, CONSUMER_BYTE_RATE, window_ms, samples)
        #: Kafka's ClientRequestQuotaManager caps its throttle time at one window
        self.request = QuotaManager(
            store, REQUEST_PERCENTAGE, window_ms, samples, max_throttle_ms=window_ms
        )
        store.listeners.append(self._changed)
        self._changed()

    def _changed(self) -> None:
        for manager in (self.produce, self.fetch, self.request):
            manager.refresh()

    @property
    def enforcing(self) -> bool:
        """Whether any per-request quota is set (else the server records nothing)."""
        return self.produce.active or self.fetch.active or self.request.active


def quota_user(security: Any) -> str:
    """The user a connection's requests count against: its principal's name
    (``ANONYMOUS`` without authentication), as Kafka's quota managers use it."""
    principal = security.principal if security is not None else "User:ANONYMOUS"
    return principal.partition(":")[2] or principal
