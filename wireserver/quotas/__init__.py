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
older than client-side throttling holds the response that long instead. CreateTopics,
CreatePartitions and DeleteTopics take their partitions from ``Quotas.mutation``
(``MutationBudget``); a new connection counts against its IP's ``Quotas.connections``.
"""

from __future__ import annotations

from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.quotas.rates import ConnectionRateManager, MutationQuotaManager, QuotaManager
from wireserver.quotas.store import (
    CONNECTION_CREATION_RATE,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotaStore,
)


class Quotas:
    """A broker's quotas: the store and one manager per quota key."""

    def __init__(
        self,
        store: ClientQuotaStore,
        window_ms: int,
        samples: int,
        mutation_window_ms: int = 1000,
        mutation_samples: int = 11,
    ):
        self.store = store
        self.produce = QuotaManager(store, PRODUCER_BYTE_RATE, window_ms, samples)
        self.fetch = QuotaManager(store, CONSUMER_BYTE_RATE, window_ms, samples)
        #: Kafka's ClientRequestQuotaManager caps its throttle time at one window
        self.request = QuotaManager(
            store, REQUEST_PERCENTAGE, window_ms, samples, max_throttle_ms=window_ms
        )
        #: ``controller.quota.window.*``: the bucket holds that many windows of the rate
        self.mutation = MutationQuotaManager(
            store, CONTROLLER_MUTATION_RATE, mutation_window_ms, mutation_samples
        )
        self.connections = ConnectionRateManager(
            store, CONNECTION_CREATION_RATE, window_ms, samples
        )
        store.listeners.append(self._changed)
        self._changed()

    def _changed(self) -> None:
        for manager in (self.produce, self.fetch, self.request, self.mutation, self.connections):
            manager.refresh()

    @property
    def enforcing(self) -> bool:
        """Whether any per-request quota is set (else the server records nothing)."""
        return (
            self.produce.active or self.fetch.active or self.request.active or self.mutation.active
        )


def quota_user(security: Any) -> str:
    """The user a connection's requests count against: its principal's name
    (``ANONYMOUS`` without authentication), as Kafka's quota managers use it."""
    principal = security.principal if security is not None else "User:ANONYMOUS"
    return principal.partition(":")[2] or principal


#: Kafka's message of THROTTLING_QUOTA_EXCEEDED
THROTTLED_MESSAGE = "The throttling quota has been exceeded."


class MutationBudget:
    """One CreateTopics, CreatePartitions or DeleteTopics request's use of its client's
    ``controller_mutation_rate``: ``take(partitions)`` before each topic's change, False when
    a strict request must answer that topic THROTTLING_QUOTA_EXCEEDED; the throttle time goes
    to ``ctx.throttle_ms`` (the server sets the response's and mutes the connection)."""

    def __init__(self, ctx: Any, strict: bool):
        self.ctx = ctx
        self.strict = strict
        self.user = quota_user(ctx.security)
        self.client_id = ctx.client_id or ""

    def take(self, partitions: int) -> bool:
        ctx = self.ctx
        accepted, throttle_ms = ctx.services.quotas.mutation.take(
            self.user, self.client_id, partitions, ctx.services.now_ms(), self.strict
        )
        ctx.throttle_ms = max(ctx.throttle_ms, throttle_ms)
        return accepted


def mutation_budget(ctx: Any, strict_from: int) -> MutationBudget | None:
    """The request's budget, None when no ``controller_mutation_rate`` is set (nothing is
    recorded then); strict from request version ``strict_from`` (KIP-599)."""
    if not ctx.services.quotas.mutation.active:
        return None
    return MutationBudget(ctx, ctx.version >= strict_from)


THROTTLED = ErrorCode.THROTTLING_QUOTA_EXCEEDED
