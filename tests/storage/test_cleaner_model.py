"""Model-based test of compaction: for random keyed logs (updates, tombstones, idempotent
producers, committed, aborted and open transactions, rolls and compression), two cleanings keep
exactly what a simple model says, every record at its original offset.

The model, per cleaning of the dirty range [first dirty, end): a record below ``end`` stays when
it is not in an aborted transaction and no later record of its key in the dirty range (outside
aborted transactions) exists; a tombstone also needs its delete horizon not to have passed, and
the horizon is set by the first cleaning that covers it (the second cleaning runs after the
first one's horizon). Records at or above ``end`` always stay."""

from __future__ import annotations

import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.storage.cleaner_helpers import all_batches, compacted_log, kept_records, keyed_batch
from tests.storage.helpers import FakeClock
from wireserver.protocol.compression import Codec
from wireserver.storage.cleaner import clean

KEYS = [b"a", b"b", b"c", b"d"]
RETENTION = 1000

records = st.lists(
    st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.binary(min_size=1, max_size=4))),
    min_size=1,
    max_size=3,
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), records, st.sampled_from([Codec.NONE, Codec.GZIP])),
        st.tuples(st.just("idempotent"), st.sampled_from([1, 2]), records),
        st.tuples(st.just("txn"), st.sampled_from([10, 11]), records),
        st.tuples(st.just("end"), st.sampled_from([10, 11]), st.booleans()),
        st.tuples(st.just("roll")),
    ),
    min_size=1,
    max_size=40,
)


class Writer:
    """Appends the ops and remembers which offsets are aborted and each producer's last
    batch."""

    def __init__(self, log):
        self.log = log
        self.sequences: dict[int, int] = {}
        self.open: dict[int, list[tuple[int, int]]] = {}  # pid -> offset ranges of its txn
        self.aborted: set[int] = set()
        self.last_batch: dict[int, tuple[int, int]] = {}

    def apply(self, op) -> None:
        log = self.log
        if op[0] == "put":
            log.append(keyed_batch(op[1], compression=op[2]), 0)
        elif op[0] == "idempotent":
            pid, pairs = op[1], op[2]
            seq = self.sequences.get(pid, 0)
            done = log.append(keyed_batch(pairs, producer_id=pid, epoch=0, sequence=seq), 0)
            self.sequences[pid] = seq + len(pairs)
            self.last_batch[pid] = (done.base_offset, done.last_offset)
        elif op[0] == "txn":
            pid, pairs = op[1], op[2]
            batch = keyed_batch(pairs, producer_id=pid, epoch=0, transactional=True)
            done = log.append(batch, 0, check_sequences=False)
            self.open.setdefault(pid, []).append((done.base_offset, done.last_offset))
        elif op[0] == "end":
            self.end(op[1], op[2])
        else:
            log.roll()
        log.high_watermark = log.log_end_offset

    def end(self, pid: int, commit: bool) -> None:
        if pid not in self.open:
            return
        self.log.append_marker(pid, 0, commit)
        for first, last in self.open.pop(pid):
            if not commit:
                self.aborted.update(range(first, last + 1))
        self.log.high_watermark = self.log.log_end_offset


def model_round(current, aborted, first_dirty, end, covered_before) -> list:
    """What one cleaning of [first_dirty, end) keeps of ``current`` (records before it)."""
    latest: dict[bytes, int] = {}
    for offset, key, _ in current:
        if first_dirty <= offset < end and offset not in aborted:
            latest[key] = offset
    kept = []
    for offset, key, value in current:
        if offset >= end:
            kept.append((offset, key, value))
        elif offset in aborted or offset < latest.get(key, -1):
            continue
        elif value is None and offset < covered_before:
            continue  # its horizon, set by the earlier cleaning, has passed
        else:
            kept.append((offset, key, value))
    return kept


@settings(max_examples=40, deadline=None)
@given(ops, st.booleans())
def test_cleaning_keeps_what_the_model_keeps(operations, end_open_transactions):
    with tempfile.TemporaryDirectory() as tmp:
        clock = FakeClock(10_000)
        log = compacted_log(
            f"{tmp}/t-0", clock, internal_segment_bytes=300, delete_retention_ms=RETENTION
        )
        writer = Writer(log)
        for op in operations:
            writer.apply(op)
        log.roll()
        log.append(keyed_batch([(b"filler", b"1")]), 0)
        log.high_watermark = log.log_end_offset
        original = kept_records(log)

        first = clean(log, now_ms=clock.now, use_checkpoint=False, last_clean_offset=0)
        end1 = first.first_dirty_offset if first is not None else 0
        expected = model_round(original, writer.aborted, 0, end1, covered_before=0)
        assert kept_records(log) == expected
        check_producers_last_batches(log, writer, end1)

        if end_open_transactions:
            for pid in list(writer.open):
                writer.end(pid, commit=pid == 10)
        log.roll()
        log.append(keyed_batch([(b"filler", b"2")]), 0)
        log.high_watermark = log.log_end_offset
        clock.now += RETENTION + 1
        before_second = kept_records(log)
        second = clean(log, now_ms=clock.now, use_checkpoint=False, last_clean_offset=end1)
        expected = before_second
        if second is not None:
            end2 = second.first_dirty_offset
            expected = model_round(before_second, writer.aborted, end1, end2, end1)
            check_producers_last_batches(log, writer, end2)
        assert kept_records(log) == expected

        log.close()
        reopened = compacted_log(f"{tmp}/t-0", clock, internal_segment_bytes=300)
        assert kept_records(reopened) == expected
        reopened.close()


def check_producers_last_batches(log, writer: Writer, end: int) -> None:
    """Each idempotent producer's last batch is still there (maybe empty), offsets unchanged."""
    ranges = {(b.base_offset, b.last_offset) for b in all_batches(log)}
    for pid, (base, last) in writer.last_batch.items():
        assert (base, last) in ranges, (pid, base, last)
