"""The leader epoch cache of one partition (Kafka's ``LeaderEpochFileCache``, KIP-101/KIP-279).

Entries ``(epoch, start offset)``: the first offset written in each leader epoch, both strictly
increasing. Persisted to the partition's ``leader-epoch-checkpoint`` on every change. A new
epoch (``assign``) is written without fsync, and the log's next flush syncs it before it moves
the recovery point (``sync``), as Kafka does since 3.8 (KAFKA-15046): becoming leader of
thousands of partitions at once cost two fsyncs each. Recovery re-adds the epochs of the batches
it re-scans above the recovery point, so one lost in a crash comes back. Truncations still
write with fsync.
"""

from __future__ import annotations

import bisect
import os

from wireserver.storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    CheckpointError,
    fsync_dir,
    read_epochs,
    write_epochs,
)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, directory: str, *, persist: bool = True):
        self.path = os.path.join(directory, LEADER_EPOCH_CHECKPOINT)
        self.persist = persist
        try:
            entries = read_epochs(self.path)
        except CheckpointError:
            entries = []
        self._entries: list[tuple[int, int]] = []
        self.unsynced = False  # written since the last fsync (``assign``)
        for epoch, offset in entries:
            self._assign(epoch, offset)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1][0] if self._entries else None

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            return False
        if self._entries:
            last_epoch, last_offset = self._entries[-1]
            if epoch == last_epoch and start_offset >= last_offset:
                return False
            if epoch < last_epoch and start_offset >= last_offset:
                return False  # a stale epoch after a newer one: ignore, as Kafka does
        # Keep both columns increasing: drop entries this one supersedes.
        self._entries = [(e, o) for e, o in self._entries if e < epoch and o < start_offset]
        self._entries.append((epoch, start_offset))
        return True

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` if it is new."""
        if self._assign(epoch, start_offset) and self._persists():
            write_epochs(self.path, self._entries, sync=False)
            self.unsynced = True

    def sync(self) -> None:
        """fsync what ``assign`` wrote (on the log's flush, any thread)."""
        if not self.unsynced:
            return
        self.unsynced = False  # cleared first: an assign racing with the fsync sets it again
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        except BaseException:
            self.unsynced = True
            raise
        finally:
            os.close(fd)
        fsync_dir(os.path.dirname(self.path))

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """KIP-101/279: (largest epoch <= requested, end offset of that epoch), where the end
        offset is the start of the next higher epoch, or the log end for the latest epoch.
        (-1, -1) when the requested epoch is undefined or above every known epoch."""
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1][0]:
            return requested_epoch, log_end_offset
        epochs = [e for e, _ in self._entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher_start = self._entries[higher][1]
        if higher == 0:
            return requested_epoch, higher_start
        return self._entries[higher - 1][0], higher_start

    def epoch_for_offset(self, offset: int) -> int | None:
        """The leader epoch that wrote ``offset``, if known."""
        starts = [o for _, o in self._entries]
        i = bisect.bisect_right(starts, offset) - 1
        return self._entries[i][0] if i >= 0 else None

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop epochs starting at or after ``end_offset`` (log truncation)."""
        kept = [(e, o) for e, o in self._entries if o < end_offset]
        if kept != self._entries:
            self._entries = kept
            self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop epochs wholly before ``start_offset``; the epoch covering it now starts there."""
        starts = [o for _, o in self._entries]
        i = bisect.bisect_right(starts, start_offset) - 1
        if i < 0:
            return
        kept = [(self._entries[i][0], start_offset)] + self._entries[i + 1 :]
        if kept != self._entries:
            self._entries = kept
            self.flush()

    def clear(self) -> None:
        self._entries = []
        self.flush()

    def _persists(self) -> bool:
        return self.persist and os.path.isdir(os.path.dirname(self.path))

    def flush(self, *, sync: bool = True) -> None:
        if self._persists():
            write_epochs(self.path, self._entries, sync=sync)
            self.unsynced = not sync
