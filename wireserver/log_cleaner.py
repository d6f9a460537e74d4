"""The log cleaner: compacts the logs of compacted topics in the background (Kafka's
``LogCleaner`` and ``LogCleanerManager``), without ever blocking the reactor.

Every ``log.cleaner.backoff.ms`` (and at once after a cleaning) it looks for work: among the
logs whose ``cleanup.policy`` includes ``compact`` and that no cleaner thread holds, the one
with the highest dirty ratio above its ``min.cleanable.dirty.ratio``, or one with records past
``max.compaction.lag.ms`` (those first, as Kafka). Up to ``log.cleaner.threads`` logs are
cleaned at a time. A cleaning (``wireserver.storage.cleaner``) is prepared on the reactor, run
on a thread of the cleaner's own pool (it reads the old segments and writes the new ones), and
swapped in on the reactor; appends, fetches and retention go on meanwhile, and a cleaning that
finds its segments changed (retention, DeleteRecords, truncation) gives itself up. Progress is
kept in each log dir's ``cleaner-offset-checkpoint``.

The key-hash maps share ``log.cleaner.dedupe.buffer.size`` between the threads, and the threads
share ``log.cleaner.io.max.bytes.per.second``. A log whose cleaning fails (a corrupt segment) is
left alone until the broker restarts (Kafka's uncleanable partitions). Configuration is read at
each look, so ``cleanup.policy`` and the cleaner's dynamic keys take effect without a restart.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet import threads
from twisted.python.threadpool import ThreadPool

from wireserver.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT, read_offsets, write_offsets
from wireserver.storage.cleaner import (
    CleanableOffsets,
    CleaningJob,
    cleanable_offsets,
    cleaner_checkpoint_path,
    prepare_cleaning,
    write_cleaner_checkpoint,
)

if TYPE_CHECKING:
    from wireserver.config import BrokerConfig
    from wireserver.storage.log import Log
    from wireserver.storage.manager import LogManager

log = logging.getLogger(__name__)

TP = tuple[str, int]
#: The cleaner threads' niceness (``_run``): the lowest priority.
CLEANER_NICENESS = 19
#: ``sys.setswitchinterval`` while cleanings run (``_share_the_interpreter``).
CLEANING_SWITCH_INTERVAL_S = 0.0005


class CleaningCancelled(Exception):
    """The broker is stopping: the cleaning on this thread gives up."""


class Throttler:
    """Kafka's ``Throttler``: the cleaner threads together read and write at most ``rate()``
    bytes per second. Every ``CHECK_INTERVAL_S`` the bytes seen are compared with what the rate
    allows, and a thread that got ahead sleeps the difference (on its own thread, never the
    reactor's). The default rate (the largest double) means no limit. Once ``cancelled`` it
    raises ``CleaningCancelled`` instead, so a stopping broker does not wait for a long
    cleaning to finish."""

    CHECK_INTERVAL_S = 0.3

    def __init__(
        self,
        rate: Callable[[], float],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.rate = rate
        self.clock = clock
        self.sleep = sleep
        self.lock = threading.Lock()
        self.period_start = clock()
        self.period_bytes = 0
        self.cancelled = False

    def __call__(self, nbytes: int) -> None:
        if self.cancelled:
            raise CleaningCancelled()
        rate = self.rate()
        if rate <= 0 or rate >= 1e300:
            return
        with self.lock:
            self.period_bytes += nbytes
            elapsed = self.clock() - self.period_start
            if elapsed < self.CHECK_INTERVAL_S:
                return
            ahead = self.period_bytes / rate - elapsed
            self.period_start = self.clock() + max(ahead, 0.0)
            self.period_bytes = 0
        if ahead > 0:
            self.sleep(ahead)


class LogCleaner:
    """Given the logs, the broker config, the reactor and the clock (see the module
    docstring)."""

    def __init__(
        self, logs: LogManager, config: BrokerConfig, reactor: Any, now_ms: Callable[[], int]
    ):
        self.logs = logs
        self.config = config
        self.reactor = reactor
        self.now_ms = now_ms
        self.pool: ThreadPool | None = None
        self.in_progress: dict[TP, CleaningJob] = {}
        # Which of Kafka's numbered cleaners (0 .. log.cleaner.threads - 1) runs each job:
        # only for the log lines, which name them as Kafka's do.
        self.cleaner_ids: dict[TP, int] = {}
        self.uncleanable: set[TP] = set()
        self.throttle = Throttler(lambda: float(config["log.cleaner.io.max.bytes.per.second"]))
        self.cleanings = 0  # cleanings swapped in since start
        self._wakeup: Any = None
        self._switch_interval: float | None = None  # the process's, while cleanings run
        self.stopped = True

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        if not self.config["log.cleaner.enable"]:
            return
        self.stopped = False
        self.pool = ThreadPool(minthreads=0, maxthreads=1, name="log-cleaner")
        self.pool.start()
        self._schedule(0)

    def stop(self) -> None:
        """Stop looking for work; a cleaning under way finishes its file writes on its thread,
        then is given up (its segments are not swapped in)."""
        self.stopped = True
        self.throttle.cancelled = True
        if self._wakeup is not None and self._wakeup.active():
            self._wakeup.cancel()
        self._wakeup = None
        if self.pool is not None:
            self.pool.stop()
            self.pool = None
        for job in self.in_progress.values():
            job.abandon()
        self.in_progress.clear()
        self._share_the_interpreter()

    def forget_topic(self, name: str) -> None:
        """A deleted topic leaves the cleaner checkpoints, as in Kafka: a topic created again
        under its name starts dirty from its first offset."""
        for directory in self.logs.log_dirs:
            path = os.path.join(directory, CLEANER_OFFSET_CHECKPOINT)
            offsets = read_offsets(path)
            kept = {tp: offset for tp, offset in offsets.items() if tp[0] != name}
            if len(kept) != len(offsets):
                write_offsets(path, kept)

    def _schedule(self, delay_s: float) -> None:
        if self.stopped or (self._wakeup is not None and self._wakeup.active()):
            return
        self._wakeup = self.reactor.callLater(delay_s, self._look)

    # -- choosing ----------------------------------------------------------------------------

    def _threads(self) -> int:
        return max(0, int(self.config["log.cleaner.threads"]))

    def _candidates(self) -> list[tuple[TP, Log, CleanableOffsets]]:
        """Compacted logs that need cleaning now, the most urgent first: past
        ``max.compaction.lag.ms`` (longest overdue first), then by dirty ratio."""
        now = self.now_ms()
        found = []
        checkpoints: dict[str, dict[TP, int]] = {}  # each log dir's file, read once a look
        for tp, partition_log in self.logs.logs():
            if tp in self.in_progress or tp in self.uncleanable or partition_log.closed:
                continue
            if tp in self.logs.moves:  # moving to another log dir: cleaned once there
                continue
            if not partition_log.config.compact:
                continue
            path = cleaner_checkpoint_path(partition_log)
            if path not in checkpoints:
                checkpoints[path] = read_offsets(path)
            offsets = cleanable_offsets(partition_log, checkpoints[path].get(tp), now)
            if offsets.should_clean(partition_log.config.min_cleanable_dirty_ratio):
                found.append((tp, partition_log, offsets))
        found.sort(key=lambda c: (-c[2].max_compaction_delay_ms, -c[2].dirty_ratio))
        return found

    def _look(self) -> None:
        self._wakeup = None
        if self.stopped:
            return
        threads_now = self._threads()
        if self.pool is not None:
            self.pool.adjustPoolsize(minthreads=0, maxthreads=max(1, threads_now))
        free = threads_now - len(self.in_progress)
        if free > 0:
            for tp, partition_log, offsets in self._candidates()[:free]:
                self._start_cleaning(tp, partition_log, offsets)
        if not self.in_progress:
            self._schedule(self.config["log.cleaner.backoff.ms"] / 1000.0)

    # -- cleaning -----------------------------------------------------------------------------

    def _start_cleaning(self, tp: TP, partition_log: Log, offsets: CleanableOffsets) -> bool:
        if offsets.checkpoint_was_invalid:
            write_cleaner_checkpoint(partition_log, offsets.first_dirty_offset)
        shared = max(1, self._threads())
        job = prepare_cleaning(
            partition_log,
            offsets,
            now_ms=self.now_ms(),
            dedupe_buffer_bytes=int(self.config["log.cleaner.dedupe.buffer.size"]) // shared,
            load_factor=float(self.config["log.cleaner.io.buffer.load.factor"]),
        )
        if job is None:
            return False
        assert self.pool is not None
        self.in_progress[tp] = job
        busy = {self.cleaner_ids[t] for t in self.in_progress if t in self.cleaner_ids}
        cleaner_id = self.cleaner_ids[tp] = next(i for i in range(len(busy) + 1) if i not in busy)
        log.info("Cleaner %d: Beginning cleaning of log %s", cleaner_id, partition_log.name)
        self._share_the_interpreter()
        ran = threads.deferToThreadPool(self.reactor, self.pool, self._run, job)
        ran.addCallbacks(
            lambda _: self._finished(tp, partition_log, job),
            lambda failure: self._failed(tp, job, failure),
        )
        ran.addErrback(lambda failure: log.error("log cleaner: %s", failure.getTraceback()))
        ran.addBoth(lambda _: self._schedule(0))
        return True

    def _run(self, job: CleaningJob) -> None:
        """On a cleaner thread: the cleaning at the lowest CPU priority (Linux nice 19, per
        thread), so that the reactor thread, which answers clients, gets the CPU first."""
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), CLEANER_NICENESS)
        except (AttributeError, OSError):  # not Linux, or not allowed: run as is
            pass
        job.run(self.throttle)

    def _share_the_interpreter(self) -> None:
        """While a cleaner thread runs Python, the reactor thread waits for the interpreter
        lock after each of its system calls, up to the switch interval (5 ms by default) each
        time: produce latency would grow by tens of milliseconds. While cleanings run, the
        interval is ``CLEANING_SWITCH_INTERVAL_S``; the process's own comes back after."""
        if self.in_progress and self._switch_interval is None:
            self._switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(CLEANING_SWITCH_INTERVAL_S)
        elif not self.in_progress and self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None

    def _finished(self, tp: TP, partition_log: Log, job: CleaningJob) -> None:
        cleaner_id = self.cleaner_ids.pop(tp, 0)
        if self.in_progress.pop(tp, None) is None:
            return  # stopped meanwhile: given up already
        self._share_the_interpreter()
        result = job.commit()
        if not result.committed:
            log.info("cleaning of %s-%d given up: its segments changed meanwhile", *tp)
            return
        write_cleaner_checkpoint(partition_log, result.first_dirty_offset)
        self.cleanings += 1
        if log.isEnabledFor(logging.INFO):
            log.info(
                "%s",
                cleaning_summary(
                    cleaner_id,
                    partition_log.name,
                    job.first_dirty_offset,
                    result.first_dirty_offset,
                    result.stats,
                ),
            )

    def _failed(self, tp: TP, job: CleaningJob, failure: Any) -> None:
        self.cleaner_ids.pop(tp, None)
        if self.in_progress.pop(tp, None) is None:
            return
        self._share_the_interpreter()
        job.abandon()
        self.uncleanable.add(tp)
        log.error(
            "cleaning of %s-%d failed; it is left alone until restart: %s",
            tp[0],
            tp[1],
            failure.getTraceback(),
        )


def _java_double(value: float, grouping: bool = True) -> str:
    """Java's ``%,.1f`` (``%.1f`` without ``grouping``) of a double: NaN and Infinity
    spelled as Java spells them."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return f"{value:,.1f}" if grouping else f"{value:.1f}"


def _div(a: float, b: float) -> float:
    """Java's double division: x/0 is Infinity (NaN for 0/0), not an exception."""
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


def cleaning_summary(cleaner_id: int, name: str, start: int, end: int, stats: Any) -> str:
    """Kafka's ``CleanerThread.recordStats`` summary of one cleaning, line for line (its
    logger prefix, ``[kafka-log-cleaner-thread-N]: ``, included)."""

    def mb(n: float) -> float:
        return n / (1024 * 1024)

    f = _java_double

    def g(value: float) -> str:
        return _java_double(value, grouping=False)

    elapsed, index = stats.elapsed_s, stats.elapsed_index_s
    clean = elapsed - index
    read, written = stats.bytes_read, stats.bytes_written
    return (
        f"[kafka-log-cleaner-thread-{cleaner_id}]: \n"
        f"\tLog cleaner thread {cleaner_id} cleaned log {name} (dirty section = [{start}, {end}])\n"
        f"\t{f(mb(read))} MB of log processed in {f(elapsed)} seconds "
        f"({f(_div(mb(read), elapsed))} MB/sec).\n"
        f"\tIndexed {f(mb(stats.map_bytes_read))} MB in {g(index)} seconds "
        f"({f(_div(mb(stats.map_bytes_read), index))} Mb/sec, "
        f"{g(_div(100 * index, elapsed))}% of total time)\n"
        f"\tBuffer utilization: {g(100 * stats.map_utilization)}%\n"
        f"\tCleaned {f(mb(read))} MB in {g(clean)} seconds "
        f"({f(_div(mb(read), clean))} Mb/sec, {g(_div(100 * clean, elapsed))}% of total time)\n"
        f"\tStart size: {f(mb(read))} MB ({stats.records_read:,d} messages)\n"
        f"\tEnd size: {f(mb(written))} MB ({stats.records_kept:,d} messages)\n"
        f"\t{g(100.0 * (1.0 - _div(written, read)))}% size reduction "
        f"({g(100.0 * (1.0 - _div(stats.records_kept, stats.records_read)))}% fewer messages)\n"
    )
