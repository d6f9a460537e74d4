"""Fetch sessions (KIP-227): a client that fetches the same partitions over and over sends the
full list once, then only what changed; the broker answers with only the partitions that have
something new.

Session id / epoch in a request mean (Kafka's ``FetchMetadata``):

- id 0, epoch -1: a full fetch without a session;
- id 0, epoch 0: a full fetch that opens a new session (its id comes back in the response);
- id N, epoch 0: close session N and open a new one with a full fetch;
- id N, epoch -1: close session N, full fetch without a session;
- id N, epoch E > 0: an incremental fetch in session N, whose next epoch must be E.
"""

from __future__ import annotations

import collections
import random
from dataclasses import dataclass, field
from typing import Hashable

FINAL_EPOCH = -1
INITIAL_EPOCH = 0
INT32_MAX = 2**31 - 1


@dataclass
class CachedPartition:
    """What the session knows of one partition: the client's position and what we last told it."""

    topic: str | None
    topic_id: object
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
    epoch: int  # the epoch the next request must carry
    partitions: "collections.OrderedDict[Hashable, CachedPartition]" = field(
        default_factory=collections.OrderedDict)

    def advance(self) -> None:
        self.epoch = 1 if self.epoch >= INT32_MAX else self.epoch + 1


class FetchSessionCache:
    """Open sessions, bounded by ``max.incremental.fetch.session.cache.slots`` (Kafka: 1000).
    When full, the least recently used session is evicted."""

    def __init__(self, max_sessions: int = 1000, rng: random.Random | None = None):
        self.max_sessions = max_sessions
        self._sessions: "collections.OrderedDict[int, FetchSession]" = collections.OrderedDict()
        self._rng = rng or random.Random()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
        return session

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    def create(self) -> FetchSession | None:
        if self.max_sessions <= 0:
            return None
        while len(self._sessions) >= self.max_sessions:
            self._sessions.popitem(last=False)
        while True:
            session_id = self._rng.randint(1, INT32_MAX)
            if session_id not in self._sessions:
                break
        session = FetchSession(session_id, 1)
        self._sessions[session_id] = session
        return session
