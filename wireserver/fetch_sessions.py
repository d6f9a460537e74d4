"""Fetch sessions (KIP-227): a client that fetches the same partitions over and over sends the
full list once, then only what changed; the broker answers with only the partitions that have
something new.

Session id / epoch in a request mean (Kafka's ``FetchMetadata``):

- id 0, epoch -1: a full fetch without a session;
- id 0, epoch 0: a full fetch that opens a new session (its id comes back in the response);
- id N, epoch 0: close session N and open a new one with a full fetch;
- id N, epoch -1: close session N, full fetch without a session;
- id N, epoch E > 0: an incremental fetch in session N, whose next epoch must be E.

The rules are Kafka's (``FetchManager``, ``FetchSession``, ``FetchSessionCacheShard``); how
``wireserver.apis.fetch`` applies them is described there.
"""

from __future__ import annotations

import collections
import random
import uuid
from collections.abc import Hashable
from dataclasses import dataclass, field

FINAL_EPOCH = -1
INITIAL_EPOCH = 0
INT32_MAX = 2**31 - 1
#: Kafka splits its cache in 8 shards (``NumFetchSessionCacheShards``), each with an eighth of
#: ``max.incremental.fetch.session.cache.slots`` and its own range of session ids. Kafka does it
#: against lock contention; we keep the split because it decides which sessions compete for a
#: slot: a new session goes to the next shard in turn and can only evict within that shard.
SHARDS = 8
#: Kafka's ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`` (a constant, not a config key): a
#: session unused this long may be evicted by anyone; one younger than this is safe from
#: consumers' new sessions.
EVICTION_MS = 120_000


def next_epoch(epoch: int) -> int:
    """Kafka's ``FetchMetadata.nextEpoch``: 1 follows the largest epoch, never 0."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch >= INT32_MAX else epoch + 1


@dataclass(slots=True)  # one per partition of every full fetch
class CachedPartition:
    """What the session knows of one partition: the client's position and what we last told it."""

    topic: str | None
    topic_id: uuid.UUID | None  # v13+ requests name topics by id
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1  # the fetching follower's own log start (v5+), for DeleteRecords
    sent_high_watermark: int = -1
    sent_last_stable_offset: int = -1
    sent_log_start_offset: int = -1


@dataclass
class FetchSession:
    id: int
    privileged: bool  # opened by a follower
    uses_topic_ids: bool  # opened by a Fetch v13+; later requests must be v13+ too
    creation_ms: int
    epoch: int = 1  # the epoch the next request must carry
    partitions: collections.OrderedDict[Hashable, CachedPartition] = field(
        default_factory=collections.OrderedDict
    )
    last_used_ms: int = 0
    # What the cache recorded at the last touch; eviction goes by these, as Kafka's does.
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def advance(self) -> None:
        self.epoch = next_epoch(self.epoch)

    def evictable_key(self) -> tuple:
        return (self.privileged, self.cached_size, self.id)


class CacheShard:
    """One shard of the cache: at most ``max_entries`` sessions with ids in
    ``[max(1, number * id_range), (number + 1) * id_range)``."""

    def __init__(
        self, max_entries: int, eviction_ms: int, number: int, id_range: int, rng: random.Random
    ):
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.low, self.high = max(1, number * id_range), (number + 1) * id_range
        self.sessions: dict[int, FetchSession] = {}
        self._rng = rng

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """A session was used: note the time and its size now. It becomes evictable by new
        sessions of anyone once it is older than ``eviction_ms`` (a consumer's at once for a
        follower's new session)."""
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        aged = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_all = aged
        session.evictable_by_privileged = aged or not session.privileged

    def maybe_create(
        self, now_ms: int, privileged: bool, uses_topic_ids: bool, partitions
    ) -> FetchSession | None:
        """A new session, or None when the shard is full and no session may be evicted for
        it (the client then fetches without a session)."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(
            privileged, len(partitions), now_ms
        ):
            return None
        while True:
            session_id = self._rng.randrange(self.low, self.high)
            if session_id not in self.sessions:
                break
        session = FetchSession(
            session_id,
            privileged,
            uses_topic_ids,
            now_ms,
            epoch=next_epoch(INITIAL_EPOCH),
            partitions=partitions,
        )
        self.sessions[session_id] = session
        self.touch(session, now_ms)
        return session

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's ``tryEvict``: the least recently used session if it has been idle longer
        than ``eviction_ms``; else the least valuable evictable one (unprivileged before
        privileged, then fewest partitions), only if the new session is worth more."""
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stale.last_used_ms > self.eviction_ms:
            del self.sessions[stale.id]
            return True
        evictable = [
            s
            for s in self.sessions.values()
            if (s.evictable_by_privileged if privileged else s.evictable_by_all)
        ]
        if not evictable:
            return False
        victim = min(evictable, key=FetchSession.evictable_key)
        if (privileged, size, 0) < victim.evictable_key():
            return False
        del self.sessions[victim.id]
        return True


class FetchSessionCache:
    """Open sessions, at most ``max.incremental.fetch.session.cache.slots`` (Kafka: 1000) split
    over :data:`SHARDS` shards. Sessions belong to the broker, not to a connection: a client
    that reconnects carries on with its session."""

    def __init__(
        self,
        max_sessions: int = 1000,
        eviction_ms: int = EVICTION_MS,
        rng: random.Random | None = None,
    ):
        rng = rng or random.Random()
        self._id_range = INT32_MAX // SHARDS
        self.shards = [
            CacheShard(max_sessions // SHARDS, eviction_ms, number, self._id_range, rng)
            for number in range(SHARDS)
        ]
        self._next_shard = 0

    def __len__(self) -> int:
        return sum(len(shard.sessions) for shard in self.shards)

    def _shard(self, session_id: int) -> CacheShard | None:
        index = session_id // self._id_range
        return self.shards[index] if 0 <= index < SHARDS else None

    def get(self, session_id: int) -> FetchSession | None:
        shard = self._shard(session_id)
        return shard.sessions.get(session_id) if shard is not None else None

    def remove(self, session_id: int) -> None:
        shard = self._shard(session_id)
        if shard is not None:
            shard.sessions.pop(session_id, None)

    def touch(self, session: FetchSession, now_ms: int) -> None:
        shard = self._shard(session.id)
        assert shard is not None  # a cached session's id lies in its shard's range
        shard.touch(session, now_ms)

    def maybe_create(
        self, now_ms: int, privileged: bool, uses_topic_ids: bool, partitions
    ) -> FetchSession | None:
        """Try the next shard in turn (each attempt moves the turn on, as Kafka's counter)."""
        shard = self.shards[self._next_shard % SHARDS]
        self._next_shard += 1
        return shard.maybe_create(now_ms, privileged, uses_topic_ids, partitions)
