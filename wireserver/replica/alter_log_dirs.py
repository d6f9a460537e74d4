"""Runs the moves of replicas between this broker's log dirs (Kafka's
``ReplicaAlterLogDirsManager`` and ``ReplicaAlterLogDirsThread``); the moves themselves are
``wireserver.storage.log_move``, started by AlterReplicaLogDirs.

The copying runs on the reactor in small steps: each step appends at most ``STEP_BYTES``
(Kafka's ``replica.fetch.max.bytes`` default, what its alter-log-dirs thread fetches a
partition at a time) to the future logs, the moving partitions taking turns, and the next step
is scheduled with ``callLater(0)``, so requests are served between steps whatever the size and
the number of the partitions moving. Under ``replica.alter.log.dirs.io.max.bytes.per.second`` (set for this broker) no
step runs while the measured rate is above it, as Kafka's thread skips its fetch while its
quota is exceeded. A future log that has caught up is fsynced on a worker thread (while no step
copies into it), then the few batches appended meanwhile are copied and it is swapped in on the
reactor. A partition being compacted is not swapped until its cleaning is done (Kafka pauses
the cleaning of a moving partition instead).

A move that fails (its destination dir failed) is given up; the dir is offline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twisted.internet import threads

from wireserver.storage.errors import KafkaStorageError

log = logging.getLogger(__name__)

TP = tuple[str, int]
#: Bytes one step copies of each moving partition.
STEP_BYTES = 1024 * 1024
#: Seconds between looks while every move waits (throttled, flushing, or a cleaning).
WAIT_S = 0.05


class AlterLogDirsMover:
    """``logs``: the LogManager (its ``moves``); ``quota``: the ``alter_log_dirs``
    ``ReplicationQuota``; ``cleaning(tp)``: whether the log cleaner holds the partition."""

    def __init__(
        self,
        logs: Any,
        quota: Any,
        reactor: Any,
        cleaning: Callable[[TP], bool] = lambda tp: False,
    ):
        self.logs = logs
        self.quota = quota
        self.reactor = reactor
        self.cleaning = cleaning
        self._call: Any = None
        self._flushing: set[TP] = set()
        # Per move: (truncations, size) of the future log when its last fsync on a worker
        # thread began: what the synchronous fsync of the swap has left to do.
        self._flushed: dict[TP, tuple[int, int]] = {}
        self._turn = 0  # which move copies first in the next step (round robin)
        self.stopped = False

    def wake(self) -> None:
        """Start stepping (a move was started, or resumed at start)."""
        self._schedule(0)

    def stop(self) -> None:
        self.stopped = True
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def _schedule(self, delay_s: float) -> None:
        if self.stopped or not self.logs.moves:
            return
        if self._call is not None and self._call.active():
            if delay_s > 0:
                return
            self._call.cancel()
        self._call = self.reactor.callLater(delay_s, self._step)

    def _step(self) -> None:
        """Copy at most ``STEP_BYTES`` in all (one partition's step, whatever the number of
        moves: the reactor is back to its clients within a few milliseconds), taking the
        moving partitions in turn; swap in those that have caught up."""
        self._call = None
        copied = 0
        moves = list(self.logs.moves.items())
        self._turn = self._turn % len(moves) if moves else 0
        for tp, move in moves[self._turn :] + moves[: self._turn]:
            if tp in self._flushing:
                continue
            try:
                if move.caught_up:
                    self._finish(tp, move)
                elif copied < STEP_BYTES and not self.quota.exceeded():
                    moved = move.copy(STEP_BYTES - copied)
                    self.quota.record(moved)
                    copied += moved
            except KafkaStorageError as exc:  # reported; a dir is offline now
                log.error("The move of %s-%d to %s failed: %s", *tp, move.destination, exc)
                self._give_up(tp)
            except Exception:  # noqa: BLE001 - one move's bug must not stop the others
                log.exception("The move of %s-%d to %s failed", *tp, move.destination)
                self._give_up(tp)
        self._turn += 1
        self._schedule(0 if copied else WAIT_S)

    def _give_up(self, tp: TP) -> None:
        self._flushed.pop(tp, None)
        self.logs.abort_move(tp)

    def _finish(self, tp: TP, move: Any) -> None:
        """Swap in a caught-up future log once the bulk of it is fsynced (off the reactor)."""
        if self.cleaning(tp):
            return
        future = move.future
        mark = (future.truncations, future.size_bytes)
        synced = self._flushed.get(tp)
        if synced is None or synced[0] != mark[0] or mark[1] - synced[1] > STEP_BYTES:
            self._flushing.add(tp)
            flushed = threads.deferToThreadPool(
                self.reactor, self.reactor.getThreadPool(), move.flush_future
            )

            def done(_: Any) -> None:
                self._flushing.discard(tp)
                if self.logs.moves.get(tp) is move:  # not given up meanwhile
                    self._flushed[tp] = mark
                self._schedule(0)

            def failed(failure: Any) -> None:
                self._flushing.discard(tp)
                log.error("The move of %s-%d failed: %s", *tp, failure.getErrorMessage())
                self._give_up(tp)

            flushed.addCallbacks(done, failed)
            return
        self._flushed.pop(tp, None)
        self.logs.complete_move(tp)
