"""Moving a partition's log to another log dir of the same broker (KIP-113, Kafka's future
replica and ``ReplicaAlterLogDirsThread``).

A move makes a *future log* in the destination dir, ``<topic>-<partition>.<uuid hex>-future``
(Kafka's name), starting at the current log's log start offset. ``copy`` appends the current
log's batches to it as a follower appends the leader's (offsets, leader epochs and producer
ids kept; control batches rebuild the transaction index), a bounded number of bytes a call, so
the caller decides how often and how much (``wireserver.replica.alter_log_dirs`` runs it in
small steps on the reactor, under ``replica.alter.log.dirs.io.max.bytes.per.second``). The
partition keeps taking appends meanwhile; the future log follows them. If the current log is
truncated (a follower after a leader change) the copy starts over; if its log start moves past
what was copied (retention, DeleteRecords) the future log restarts at the new log start.

Once the future log has every batch (``caught_up``), ``swap`` replaces the current log with
it, as Kafka's ``replaceCurrentWithFutureLog``: the future log is fsynced with the current
log's producer-state snapshot and leader epoch checkpoint written into it (they describe the
same offsets), then the current dir is renamed ``<topic>-<partition>.<uuid>-delete`` and the
future dir takes the partition's name. The ``Log`` object that replication, fetch sessions and
the purgatory hold stays the same: it is reopened in place on the new dir (``Log.move_to``).
Its entry in ``cleaner-offset-checkpoint`` moves along (Kafka's ``alterCheckpointDir``), so a
compacted partition is not cleaned again from its start.

A restart in the middle: a ``-future`` dir next to the partition's current log is a move under
way, resumed from what it holds (its tail recovered, as after a crash); a ``-future`` dir whose
partition has no current log any more is a swap cut between its two renames (the current dir
was already ``-delete``), and becomes the partition's log. Nothing in between can be lost: the
future log is complete and fsynced before the current dir is renamed.
"""

from __future__ import annotations

import logging
import os
import uuid

from wireserver.storage import checkpoint as ckpt
from wireserver.storage.errors import OffsetOutOfRange
from wireserver.storage.log import Log, parse_partition_dir
from wireserver.storage.producer_state import encode_snapshot, snapshot_name

logger = logging.getLogger(__name__)

FUTURE_SUFFIX = "-future"


def future_dir_name(topic: str, partition: int) -> str:
    """Kafka's ``UnifiedLog.logFutureDirName``: ``<topic>-<partition>.<uuid hex>-future``."""
    return f"{topic}-{partition}.{uuid.uuid4().hex}{FUTURE_SUFFIX}"


def parse_future_dir(name: str) -> tuple[str, int]:
    """``t-0.<uuid>-future`` → (``t``, 0). Raises ValueError for anything else."""
    if not name.endswith(FUTURE_SUFFIX):
        raise ValueError(f"not a future log directory name: {name!r}")
    stem, dot, tag = name[: -len(FUTURE_SUFFIX)].rpartition(".")
    if not dot or len(tag) != 32:
        raise ValueError(f"not a future log directory name: {name!r}")
    return parse_partition_dir(stem)


class LogMove:
    """One partition's log on its way from ``current.log_dir`` to ``destination``."""

    def __init__(self, current: Log, future: Log, destination: str):
        self.current = current
        self.future = future
        self.destination = destination
        future.topic, future.partition = current.topic, current.partition
        self._truncations = current.truncations
        self.copied_bytes = 0

    @property
    def lag(self) -> int:
        """Kafka's offset lag of a future replica: current log end - future log end."""
        return self.current.log_end_offset - self.future.log_end_offset

    @property
    def caught_up(self) -> bool:
        return (
            self.future.log_end_offset == self.current.log_end_offset
            and self.current.truncations == self._truncations
        )

    def _realign(self) -> None:
        """Start over where the current log no longer matches what was copied."""
        current, future = self.current, self.future
        if (
            current.truncations != self._truncations
            or future.log_end_offset > current.log_end_offset
            or future.log_end_offset < current.log_start_offset
        ):
            future.truncate_fully_and_start_at(current.log_start_offset)
            self._truncations = current.truncations

    def copy(self, max_bytes: int) -> int:
        """Append the current log's next batches (at most ``max_bytes``, at least one whole
        batch) to the future log; the bytes copied. ``KafkaStorageError`` when either dir
        fails (the dir goes offline, as for any write)."""
        self._realign()
        current, future = self.current, self.future
        if future.log_end_offset >= current.log_end_offset:
            return 0
        try:
            result = current.read(future.log_end_offset, max_bytes)
        except OffsetOutOfRange:  # the log start moved meanwhile: next call realigns
            return 0
        data = result.data  # bytes: never a FileRecords without zero_copy
        if not data:
            return 0
        future.append_as_follower(data)
        self.copied_bytes += len(data)
        return len(data)

    def flush_future(self) -> None:
        """fsync what was copied so far (safe on a worker thread while nothing copies)."""
        self.future.flush()

    def swap(self) -> str:
        """Replace the current log with the caught-up future log (see the module docstring);
        the renamed ``-delete`` dir of the old log, for the caller to remove."""
        current, future = self.current, self.future
        if not self.caught_up:
            raise RuntimeError(f"{current.name}: the future log has not caught up")
        future.flush()
        with current.failures.guard(self.destination, f"Error while swapping in {future.name}"):
            ckpt.write_epochs(
                os.path.join(future.directory, ckpt.LEADER_EPOCH_CHECKPOINT),
                current.leader_epoch_cache.entries,
            )
            ckpt.atomic_write(
                os.path.join(future.directory, snapshot_name(current.log_end_offset)),
                encode_snapshot(current.producer_state.producers.values()),
            )
        future.close(durable=True)
        source_dir = current.log_dir
        final = os.path.join(self.destination, os.path.basename(current.directory))
        doomed = f"{current.directory}.{uuid.uuid4().hex}-delete"
        for seg in current.segments:
            seg.close()
        with current.failures.guard(source_dir, f"Error while renaming dir for {current.name}"):
            os.replace(current.directory, doomed)
            ckpt.fsync_dir(source_dir)
        try:
            with current.failures.guard(
                self.destination, f"Error while renaming dir for {future.name}"
            ):
                os.replace(future.directory, final)
                ckpt.fsync_dir(self.destination)
        except Exception:
            os.replace(doomed, current.directory)  # the old log stays the partition's
            current.move_to(current.directory)
            raise
        with current.failures.guard(self.destination, f"Error while opening {final}"):
            current.move_to(final)
        self._move_cleaner_checkpoint(source_dir)
        logger.info(
            "The current replica is successfully replaced with the future replica for %s",
            current.name,
        )
        return doomed

    def _move_cleaner_checkpoint(self, source_dir: str) -> None:
        """Carry the partition's first dirty offset to the destination dir's cleaner checkpoint
        (best effort: without it the partition is only cleaned again from its start)."""
        tp = (self.current.topic, self.current.partition)
        source = os.path.join(source_dir, ckpt.CLEANER_OFFSET_CHECKPOINT)
        target = os.path.join(self.destination, ckpt.CLEANER_OFFSET_CHECKPOINT)
        try:
            offsets = ckpt.read_offsets(source)
            if tp not in offsets:
                return
            moved = ckpt.read_offsets(target)
            moved[tp] = offsets.pop(tp)
            ckpt.write_offsets(target, moved)
            ckpt.write_offsets(source, offsets)
        except (OSError, ckpt.CheckpointError) as exc:
            logger.warning("%s: cleaner checkpoint not moved: %s", self.current.name, exc)
