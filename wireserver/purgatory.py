"""The one mechanism for everything that waits: fetch long-polls now; acks=all, JoinGroup and
transaction markers later.

``watch(keys, timeout_s)`` returns a Deferred that fires with the key notified when any of
``keys`` is (so a watch on many keys learns which one; keys are non-empty tuples or other
truthy values), or ``False`` when the timeout passes first. Time comes from the injected reactor
(an ``IReactorTime``), so tests drive it with ``twisted.internet.task.Clock``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from twisted.internet import defer


class Purgatory:
    def __init__(self, clock: Any):  # an IReactorTime
        self.clock = clock
        self._watchers: dict[Hashable, set[_Watch]] = {}

    def watch(self, keys: Iterable[Hashable], timeout_s: float) -> defer.Deferred:
        watch = _Watch(self, list(keys))
        for key in watch.keys:
            self._watchers.setdefault(key, set()).add(watch)
        watch.timer = self.clock.callLater(max(0.0, timeout_s), watch.fire, False)
        return watch.deferred

    def notify(self, key: Hashable) -> int:
        """Wake every watch on ``key`` (each fires with ``key``); returns how many were
        woken. A partition's key, ``(kind, topic, partition)``, also wakes the watches on its
        topic's, ``(kind, topic)`` (each fires with that): a fetch following thousands of
        partitions waits on whole topics in one key each."""
        woken = self._wake(key)
        if type(key) is tuple and len(key) == 3:
            woken += self._wake(key[:2])
        return woken

    def _wake(self, key: Hashable) -> int:
        watches = self._watchers.pop(key, None)
        if not watches:
            return 0
        for watch in list(watches):
            watch.fire(key)
        return len(watches)

    def waiting(self, key: Hashable) -> int:
        return len(self._watchers.get(key, ()))

    def sizes(self) -> dict[Any, int]:
        """Waiting operations per key kind (the first item of a tuple key: ``"append"`` for
        fetches, ``"hw"`` for acks=all produces...), each counted once however many keys it
        watches: Kafka's purgatory sizes."""
        seen: dict[Any, set[_Watch]] = {}
        for key, watches in self._watchers.items():
            kind = key[0] if isinstance(key, tuple) and key else key
            seen.setdefault(kind, set()).update(watches)
        return {kind: len(watches) for kind, watches in seen.items()}

    def _forget(self, watch: _Watch) -> None:
        for key in watch.keys:
            watchers = self._watchers.get(key)
            if watchers is not None:
                watchers.discard(watch)
                if not watchers:
                    del self._watchers[key]


class _Watch:
    __slots__ = ("purgatory", "keys", "deferred", "timer")

    def __init__(self, purgatory: Purgatory, keys: list[Hashable]):
        self.purgatory = purgatory
        self.keys = keys
        self.deferred: defer.Deferred = defer.Deferred(self._cancelled)
        self.timer: Any = None

    def _cancelled(self, _deferred: defer.Deferred) -> None:
        self._stop_timer()
        self.purgatory._forget(self)

    def _stop_timer(self) -> None:
        if self.timer is not None and self.timer.active():
            self.timer.cancel()

    def fire(self, woken: Any) -> None:
        """``woken``: the key notified, or False at the timeout."""
        if self.deferred.called:
            return
        self._stop_timer()
        self.purgatory._forget(self)
        self.deferred.callback(woken)
