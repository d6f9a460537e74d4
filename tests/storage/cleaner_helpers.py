"""Helpers for the log cleaner's tests: keyed batches, compacted logs, reading what is kept."""

from __future__ import annotations

from tests.storage.helpers import FakeClock, config, open_log
from wireserver.protocol.records import RecordBatch, RecordBatchBuilder, iter_batches
from wireserver.storage.log import Log


def keyed_batch(
    pairs,
    ts: int = 1000,
    *,
    producer_id: int = -1,
    epoch: int = -1,
    sequence: int = -1,
    transactional: bool = False,
    compression: int = 0,
) -> bytearray:
    """A batch of (key, value) records (value None: a tombstone), all stamped ``ts``."""
    builder = RecordBatchBuilder(
        compression=compression,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=transactional,
    )
    for key, value in pairs:
        builder.append(ts, key, value)
    return builder.build()


def compacted_log(path, clock: FakeClock | None = None, **overrides) -> Log:
    settings = {"cleanup_policy": "compact", "internal_segment_bytes": 400}
    settings.update(overrides)
    return open_log(path, config(**settings), clock or FakeClock())


def all_batches(log: Log) -> list[RecordBatch]:
    """Every batch of the log, empty ones included, from its first segment."""
    out = []
    for seg in log.segments:
        if seg.size:
            out.extend(iter_batches(memoryview(seg.read(0, seg.size))))
    return out


def kept_records(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record in the log, in offset order."""
    return [
        (r.offset, r.key, r.value)
        for b in all_batches(log)
        if not b.is_control
        for r in b.records()
    ]


def segment_ranges_do_not_overlap(log: Log) -> bool:
    segments = log.segments
    for seg, nxt in zip(segments, segments[1:]):
        if seg.base_offset >= nxt.base_offset or seg.next_offset > nxt.base_offset:
            return False
    return True
