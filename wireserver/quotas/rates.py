"""Kafka's quota measurement: a windowed rate per quota "id" and the throttle time of a
violation (``org.apache.kafka.common.metrics.stats.Rate``, ``QuotaUtils``,
``ClientQuotaManager`` and its ``DefaultQuotaCallback``).

- ``Rate`` is Kafka 4's: it keeps ``samples + 1`` windows of ``window_ms`` (one more than
  ``quota.window.num``, so the windows overlapping the last ``samples`` windows' time all
  count); a record lands in the current window, or opens the next one (reusing the oldest) once
  the current is ``window_ms`` old. A window with no record in the last ``samples`` windows'
  time is emptied. The rate is the sum of the windows over the time since the oldest began,
  that time counted as at least ``samples - 1`` whole windows (so a new client may send up to
  that much at once, as in Kafka).
- A record that takes the rate above the quota is a violation; the throttle time is
  ``(rate - quota) / quota * window`` (the delay that brings the rate back to the quota if
  nothing more comes), capped at one window for ``request_percentage`` as Kafka's
  ``ClientRequestQuotaManager`` caps it.
- Which quota applies to a (user, client-id), and which clients share one rate, follow
  Kafka's precedence, most specific first: user+client, user+default client, user, default
  user+client, default user+default client, default user, client, default client. A quota set
  on a user alone is shared by all that user's clients; one set on a client-id, on a
  user+client or on a default is per (user or not, client-id).
"""

from __future__ import annotations

from typing import Any

from wireserver.quotas.store import CLIENT_ID, IP, USER, Entity


def _entity(user: Any = False, client: Any = False) -> Entity:
    """The store key of a user/client-id entity (False: that type absent, None: default)."""
    pairs = []
    if client is not False:
        pairs.append((CLIENT_ID, client))
    if user is not False:
        pairs.append((USER, user))
    return tuple(pairs)


def throttle_ms(measured: float, limit: float, window: int, cap_ms: int | None = None) -> int:
    """Kafka's ``QuotaUtils.throttleTime``: the delay (ms) that brings a rate ``measured`` over
    ``window`` ms back to ``limit`` if nothing more comes, at most ``cap_ms``; 0 within the
    limit. A limit of 0 or less (a connection creation rate may be 0) throttles for the cap."""
    if measured <= limit:
        return 0
    if limit <= 0:
        return int(cap_ms) if cap_ms is not None else 0
    throttle = round((measured - limit) / limit * window)
    return int(throttle if cap_ms is None else min(throttle, cap_ms))


class Rate:
    """One quota id's windowed rate (per second): Kafka 4.4's ``Rate`` over a ``WindowedSum``
    (``SampledStat``). Kafka before it kept ``samples`` windows and emptied one by when it
    began, which frees a client's allowance at other moments: a client reading as fast as its
    quota allows gets bursts and throttles of about a window either way, and where they fall
    is what a client sees of the difference."""

    __slots__ = ("starts", "last_records", "values", "current")

    def __init__(self, now_ms: int):
        self.starts = [now_ms]
        self.last_records = [now_ms]
        self.values = [0.0]
        self.current = 0

    def record(self, value: float, now_ms: int, window_ms: int, samples: int) -> None:
        current = self.current
        if now_ms - self.starts[current] >= window_ms:
            current = self.current = (current + 1) % (samples + 1)
            if current == len(self.starts):
                self.starts.append(now_ms)
                self.last_records.append(now_ms)
                self.values.append(0.0)
            else:
                self._empty(current, now_ms)
        self.values[current] += value
        self.last_records[current] = now_ms

    def _empty(self, index: int, now_ms: int) -> None:
        self.starts[index] = self.last_records[index] = now_ms
        self.values[index] = 0.0

    def measure(self, now_ms: int, window_ms: int, samples: int) -> tuple[float, int]:
        """The rate per second and the window (ms) it was measured over."""
        expire = samples * window_ms
        for index, last in enumerate(self.last_records):
            if now_ms - last >= expire:
                self._empty(index, now_ms)
        elapsed = now_ms - min(self.starts)
        full = elapsed // window_ms
        if full < samples - 1:
            elapsed += (samples - 1 - full) * window_ms
        elapsed = max(elapsed, 1)
        return sum(self.values) * 1000.0 / elapsed, elapsed


class QuotaManager:
    """The rates of one quota key (``producer_byte_rate``, ...) for every client it limits.
    ``active`` is False while no entity sets the key: callers skip recording then."""

    def __init__(
        self,
        store: Any,
        key: str,
        window_ms: int,
        samples: int,
        max_throttle_ms: int | None = None,
    ):
        self.store = store
        self.key = key
        self.window_ms = window_ms
        self.samples = samples
        self.max_throttle_ms = max_throttle_ms
        self.active = False
        self.limits: dict[Entity, float] = {}
        self.rates: dict[tuple[str, str], Rate] = {}
        self._resolved: dict[tuple[str, str], tuple[tuple[str, str], float | None]] = {}

    def refresh(self) -> None:
        """Re-read the limits after a change in the store."""
        key = self.key
        self.limits = {
            entity: quotas[key] for entity, quotas in self.store.entities().items() if key in quotas
        }
        self.active = bool(self.limits)
        self._resolved = {}

    def resolve(self, user: str, client_id: str) -> tuple[tuple[str, str], float | None]:
        """The quota id (user tag, client-id tag) whose rate this client adds to, and its
        limit (None: unlimited)."""
        found = self._resolved.get((user, client_id))
        if found is None:
            found = self._resolved[(user, client_id)] = self._resolve(user, client_id)
        return found

    def _resolve(self, user: str, client_id: str) -> tuple[tuple[str, str], float | None]:
        limits = self.limits
        # Kafka's DefaultQuotaCallback.quotaMetricTags: which clients share a rate
        if _entity(user, client_id) in limits or _entity(user, None) in limits:
            tags = (user, client_id)
        elif _entity(user) in limits:
            tags = (user, "")
        elif _entity(None, client_id) in limits or _entity(None, None) in limits:
            tags = (user, client_id)
        elif _entity(None) in limits:
            tags = (user, "")
        else:
            tags = ("", client_id)
        # ... and quotaLimit: the most specific quota for those tags
        tag_user, tag_client = tags
        if tag_user and tag_client:
            candidates = [
                _entity(tag_user, tag_client),
                _entity(tag_user, None),
                _entity(None, tag_client),
                _entity(None, None),
            ]
        elif tag_user:
            candidates = [_entity(tag_user), _entity(None)]
        elif tag_client:
            candidates = [_entity(client=tag_client), _entity(client=None)]
        else:
            candidates = []
        limit = next((limits[c] for c in candidates if c in limits), None)
        return tags, limit

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Add ``value`` to the client's rate; the throttle time (ms) if that violates its
        quota, else 0."""
        tags, limit = self.resolve(user, client_id)
        if limit is None:
            return 0
        rate = self.rates.get(tags)
        if rate is None:
            rate = self.rates[tags] = Rate(now_ms)
        window_ms, samples = self.window_ms, self.samples
        rate.record(value, now_ms, window_ms, samples)
        measured, window = rate.measure(now_ms, window_ms, samples)
        return throttle_ms(measured, limit, window, self.max_throttle_ms)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded ``value`` (a throttled fetch answers without its records)."""
        tags, limit = self.resolve(user, client_id)
        rate = self.rates.get(tags)
        if limit is not None and rate is not None:
            rate.record(-value, now_ms, self.window_ms, self.samples)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most one request may add without being throttled for certain (Kafka's
        ``maxValueInQuotaWindow``: Fetch answers no more bytes than this); None: no limit."""
        _, limit = self.resolve(user, client_id)
        if limit is None:
            return None
        return limit * (self.samples - 1) * self.window_ms / 1000.0


class MutationQuotaManager(QuotaManager):
    """``controller_mutation_rate`` (KIP-599, Kafka's ``ControllerMutationQuotaManager``): a
    token bucket per quota id, holding up to ``rate * samples * window`` partition mutations
    (full at first) and refilled at the rate. A strict request (CreateTopics v6+,
    CreatePartitions v3+, DeleteTopics v5+) is refused a mutation while the bucket is below
    zero, and is not throttled for the mutation that takes it below; a permissive one (older
    versions) is never refused and is throttled as soon as the bucket is below zero. The
    throttle time is the time to refill to zero."""

    def __init__(self, store: Any, key: str, window_ms: int, samples: int):
        super().__init__(store, key, window_ms, samples)
        self.buckets: dict[tuple[str, str], list[float]] = {}  # tags -> [tokens, at ms]

    def take(
        self, user: str, client_id: str, permits: float, now_ms: int, strict: bool
    ) -> tuple[bool, int]:
        """Record ``permits`` partition mutations: (accepted, throttle time in ms)."""
        tags, limit = self.resolve(user, client_id)
        if limit is None:
            return True, 0
        burst = limit * self.samples * self.window_ms / 1000.0
        bucket = self.buckets.get(tags)
        if bucket is None:
            bucket = self.buckets[tags] = [burst, now_ms]
        tokens, at = bucket
        tokens = min(burst, tokens + limit * max(0, now_ms - at) / 1000.0)
        if strict and tokens < 0:
            bucket[:] = [tokens, now_ms]
            return False, round(-tokens / limit * 1000)
        tokens -= permits
        bucket[:] = [tokens, now_ms]
        if strict or tokens >= 0:
            return True, 0
        return True, round(-tokens / limit * 1000)


class ConnectionRateManager(QuotaManager):
    """``connection_creation_rate`` per client IP (Kafka's ``ConnectionQuotas``): the IP's own
    quota, else the default IP's; a connection that takes the IP's rate over it is not
    counted and is closed, unread, after the throttle time (at most one window). Its limits
    are keyed by IP (None: the default), its rates by IP."""

    def refresh(self) -> None:
        key = self.key
        self.ip_limits: dict[str | None, float] = {
            dict(entity)[IP]: quotas[key]
            for entity, quotas in self.store.entities().items()
            if key in quotas and IP in dict(entity)
        }
        self.active = bool(self.ip_limits)

    def connection(self, ip: str, now_ms: int) -> int:
        """Count a new connection from ``ip``: the throttle time (ms) when it is refused."""
        limit = self.ip_limits.get(ip, self.ip_limits.get(None))
        if limit is None:
            return 0
        rate = self.rates.get((ip, ""))
        if rate is None:
            rate = self.rates[(ip, "")] = Rate(now_ms)
        window_ms, samples = self.window_ms, self.samples
        rate.record(1.0, now_ms, window_ms, samples)
        measured, window = rate.measure(now_ms, window_ms, samples)
        if measured <= limit:
            return 0
        rate.record(-1.0, now_ms, window_ms, samples)
        return throttle_ms(measured, limit, window, window_ms)
