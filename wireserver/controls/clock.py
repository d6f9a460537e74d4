"""``BrokerClock``: the reactor a broker with controls uses, with a clock that can jump ahead.

Everything in the broker that waits or reads the time goes through ``Broker.reactor``
(session timers, ``LoopingCall``s, purgatory deadlines, ``now_ms``). With ``controls.enable``
that reactor is this proxy: ``seconds()`` is the real reactor's time plus an offset, and
``advance`` adds to the offset and re-arms every timer the broker set so that those now due
run at once, as they would have had the time really passed. A test sees a transaction time
out or a member's session expire without waiting for it.

Thread-mode test brokers share one reactor (``wireserver.testing.embedded.ReactorThread``), so
the offset lives here, per broker; the reactor itself is never patched. The timers remembered
are the ``DelayedCall``s made through this proxy, kept while active: a fired or cancelled one
is dropped on the next pruning, so the list stays as small as the set of pending timers.
"""

from __future__ import annotations

from typing import Any

from zope.interface import directlyProvides, providedBy


class BrokerClock:
    """A proxy of ``reactor`` whose ``seconds()`` runs ``offset`` seconds ahead of it."""

    def __init__(self, reactor: Any):
        self.reactor = reactor
        #: seconds added to the real reactor's time
        self.offset = 0.0
        self._timers: list[Any] = []
        self._prune_at = 64
        # Twisted checks interfaces (IReactorTime, IReactorTCP, ...) on what it is given.
        directlyProvides(self, providedBy(reactor))

    def seconds(self) -> float:
        return self.reactor.seconds() + self.offset

    def callLater(self, delay: float, func: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N802
        call = self.reactor.callLater(delay, func, *args, **kwargs)
        self._timers.append(call)
        if len(self._timers) >= self._prune_at:
            self._timers = [timer for timer in self._timers if timer.active()]
            # Amortised: prune again only once the list has doubled from what is live.
            self._prune_at = max(64, 2 * len(self._timers))
        return call

    def advance(self, seconds: float) -> None:
        """Move this broker's time ``seconds`` ahead: each pending timer fires ``seconds``
        sooner than it would have, at once when that is already past."""
        if seconds < 0:
            raise ValueError(f"cannot advance the clock by a negative amount ({seconds})")
        self.offset += seconds
        now = self.reactor.seconds()
        self._timers = [timer for timer in self._timers if timer.active()]
        for timer in self._timers:
            timer.reset(max(0.0, timer.getTime() - now - seconds))

    def move_back(self, seconds: float) -> None:
        """Undo of ``advance``: the time reads ``seconds`` earlier again. Timers keep their
        real-time deadlines (those that fired stay fired)."""
        self.offset -= seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self.reactor, name)
