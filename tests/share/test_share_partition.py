"""A share-partition (``wireserver.share.partition``) over a real log, its locks on a
``twisted.internet.task.Clock``, and its state records (``wireserver.share.state``)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.task import Clock

from tests.share.conftest import SETTINGS
from tests.storage.helpers import make_batch, open_log
from wireserver.protocol.errors import ErrorCode
from wireserver.share.partition import (
    ACCEPT,
    GAP,
    REJECT,
    RELEASE,
    RENEW,
    AcknowledgeError,
    RecordState,
    SharePartition,
)
from wireserver.share.state import (
    ShareState,
    apply_update,
    changed_batches,
    coordinator_key,
    decode_key,
    decode_snapshot,
    encode_key,
    encode_snapshot,
    encode_update,
)


def partition(clock, **overrides):
    settings = {**SETTINGS, **overrides}
    released = []
    share = SharePartition("g", "t", 0, clock, settings.__getitem__, lambda: released.append(1))
    return share, released


def test_members_get_disjoint_records_whole_batches(log):
    share, _ = partition(Clock())
    first = share.acquire("a", log, 3, 1 << 20, False)
    # whole batches: 3 records asked, 4 acquired (two batches of two)
    assert first.ranges == [(0, 3, 1)]
    second = share.acquire("b", log, 10, 1 << 20, False)
    assert second.ranges == [(4, 5, 1)]
    assert share.acquire("c", log, 10, 1 << 20, False).ranges == []


def test_record_limit_cuts_a_batch(log):
    share, _ = partition(Clock())
    assert share.acquire("a", log, 3, 1 << 20, False, strict=True).ranges == [(0, 2, 1)]
    assert share.acquire("b", log, 3, 1 << 20, False, strict=True).ranges == [(3, 5, 1)]


def test_accept_moves_the_start_offset_release_redelivers(log):
    share, released = partition(Clock())
    share.acquire("a", log, 10, 1 << 20, False)
    share.acknowledge("a", [(0, 1, [ACCEPT]), (2, 3, [RELEASE, REJECT]), (4, 5, [GAP])])
    assert share.start_offset == 2
    assert released == [1]
    again = share.acquire("b", log, 10, 1 << 20, False)
    assert again.ranges == [(2, 2, 2)]
    share.acknowledge("b", [(2, 2, [ACCEPT])])
    assert share.start_offset == share.end_offset == 6


def test_records_are_the_stored_batches_that_hold_acquired_offsets(log):
    whole = bytes(log.read(0, 1 << 20).data)
    size = len(whole) // 3  # three batches of two records, the same size
    share, _ = partition(Clock())
    assert share.acquire("a", log, 10, 1 << 20, False).records == whole
    share.acknowledge("a", [(0, 1, [RELEASE]), (2, 3, [ACCEPT]), (4, 5, [RELEASE])])
    again = share.acquire("b", log, 10, 1 << 20, False)
    assert again.ranges == [(0, 1, 2), (4, 5, 2)]
    # the first and last batches, as stored; not the middle one
    assert again.records == whole[:size] + whole[2 * size :]


def test_only_the_holder_acknowledges_all_or_nothing(log):
    share, _ = partition(Clock())
    share.acquire("a", log, 2, 1 << 20, False)
    with pytest.raises(AcknowledgeError) as refused:
        share.acknowledge("b", [(0, 1, [ACCEPT])])
    assert refused.value.error == ErrorCode.INVALID_RECORD_STATE
    with pytest.raises(AcknowledgeError):  # offset 2 was never acquired: nothing applies
        share.acknowledge("a", [(0, 2, [ACCEPT])])
    assert share.records[0].state is RecordState.ACQUIRED
    with pytest.raises(AcknowledgeError) as malformed:
        share.acknowledge("a", [(0, 1, [ACCEPT, ACCEPT, ACCEPT])])
    assert malformed.value.error == ErrorCode.INVALID_REQUEST


def test_lock_expiry_redelivers_until_the_delivery_limit(log):
    clock = Clock()
    share, released = partition(clock)
    for delivery in (1, 2, 3):
        got = share.acquire("a", log, 2, 1 << 20, False)
        assert got.ranges == [(0, 1, delivery)]
        clock.advance(29.9)
        assert share.records[0].state is RecordState.ACQUIRED
        clock.advance(0.2)
    # the third expiry archives them: the limit is 3 deliveries
    assert share.start_offset == 2
    assert share.acquire("a", log, 2, 1 << 20, False).ranges == [(2, 3, 1)]
    assert released == [1, 1]


def test_renew_starts_the_lock_again_unless_the_group_disables_it(log):
    clock = Clock()
    share, released = partition(clock)
    share.acquire("a", log, 2, 1 << 20, False)
    clock.advance(20)
    share.acknowledge("a", [(0, 1, [RENEW])], renew=True)
    clock.advance(20)  # 40 s after the fetch, 20 s after the renewal: still held
    assert share.records[0].state is RecordState.ACQUIRED
    clock.advance(10.1)
    assert share.records[0].state is RecordState.AVAILABLE
    assert released == [1]
    # a RENEW outside a renew acknowledgement is malformed
    share.acquire("a", log, 2, 1 << 20, False)
    with pytest.raises(AcknowledgeError) as malformed:
        share.acknowledge("a", [(0, 1, [RENEW])])
    assert malformed.value.error == ErrorCode.INVALID_REQUEST

    refusing, _ = partition(clock, **{"share.renew.acknowledge.enable": False})
    refusing.acquire("a", log, 2, 1 << 20, False)
    with pytest.raises(AcknowledgeError) as refused:
        refusing.acknowledge("a", [(0, 0, [ACCEPT]), (1, 1, [RENEW])], renew=True)
    assert (refused.value.error, str(refused.value)) == (
        ErrorCode.INVALID_RECORD_STATE,
        "Renewing acquisition locks is not enabled for the group.",
    )
    # all or nothing: the accepted record is still held
    assert refusing.records[0].state is RecordState.ACQUIRED


def test_a_lock_ends_with_its_last_record_and_stop_leaves_no_timer(log):
    """A lock timer outliving its records fired after the broker had stopped, writing state
    into closed logs (CI, stop 32): the timer goes with the last record, and ``stop`` cancels
    what is left."""
    clock = Clock()
    share, _ = partition(clock)
    share.acquire("a", log, 2, 1 << 20, False)
    share.acquire("b", log, 2, 1 << 20, False)
    assert len(clock.getDelayedCalls()) == 2
    share.acknowledge("a", [(0, 0, [ACCEPT])])
    assert len(clock.getDelayedCalls()) == 2
    share.acknowledge("a", [(1, 1, [REJECT])])
    assert len(clock.getDelayedCalls()) == 1
    changes = []
    share.changed = lambda: changes.append(1)
    share.stop()
    assert clock.getDelayedCalls() == []
    clock.advance(60)
    assert changes == []


def test_a_member_that_leaves_gives_its_records_back(log):
    share, released = partition(Clock())
    share.acquire("a", log, 2, 1 << 20, False)
    share.acquire("b", log, 2, 1 << 20, False)
    share.release_member("a")
    assert released == [1]
    assert share.acquire("c", log, 10, 1 << 20, False).ranges == [(0, 1, 2), (4, 5, 1)]


def test_state_is_written_with_the_start_offset_it_changed_at(log):
    """As Kafka's SharePartition: a write carries the start offset the change was made at, and
    the start moves past the records it finished once written (DescribeShareGroupOffsets shows
    the persisted one); a member leaving with nothing held writes nothing."""
    written = []
    share = SharePartition(
        "g",
        "t",
        0,
        Clock(),
        SETTINGS.__getitem__,
        lambda: None,
        lambda: written.append((share.start_offset, share.state_batches())),
    )
    share.acquire("a", log, 10, 1 << 20, False)
    share.acknowledge("a", [(0, 3, [ACCEPT])])
    assert written[-1] == (
        0,
        [(0, 3, RecordState.ACKNOWLEDGED, 1), (4, 5, RecordState.AVAILABLE, 1)],
    )
    assert share.start_offset == 4
    share.acknowledge("a", [(4, 5, [ACCEPT])])
    assert written[-1] == (4, [(4, 5, RecordState.ACKNOWLEDGED, 1)])
    count = len(written)
    share.release_member("a")
    assert len(written) == count and share.start_offset == 6


def test_max_record_locks_bounds_what_is_in_flight(log):
    share, _ = partition(Clock(), **{"share.partition.max.record.locks": 2})
    assert share.acquire("a", log, 10, 1 << 20, False).ranges == [(0, 1, 1)]
    assert share.acquire("b", log, 10, 1 << 20, False).ranges == []
    share.acknowledge("a", [(0, 1, [ACCEPT])])
    assert share.acquire("b", log, 10, 1 << 20, False).ranges == [(2, 3, 1)]


def test_latest_starts_at_the_high_watermark(log):
    share, _ = partition(Clock(), **{"share.auto.offset.reset": "latest"})
    assert share.acquire("a", log, 10, 1 << 20, False).ranges == []
    assert share.start_offset == 6


def test_state_batches_restore_the_same_state(log):
    share, _ = partition(Clock())
    share.acquire("a", log, 10, 1 << 20, False)
    share.acknowledge("a", [(0, 0, [RELEASE]), (1, 2, [ACCEPT]), (3, 3, [REJECT])])
    batches = share.state_batches()
    assert batches == [
        (0, 0, RecordState.AVAILABLE, 1),
        (1, 2, RecordState.ACKNOWLEDGED, 1),
        (3, 3, RecordState.ARCHIVED, 1),
        (4, 5, RecordState.AVAILABLE, 1),  # still acquired: available once restored
    ]
    restored, _ = partition(Clock())
    restored.restore(share.start_offset, batches)
    assert restored.acquire("b", log, 10, 1 << 20, False).ranges == [(0, 0, 2), (4, 5, 2)]


def test_state_records_round_trip_as_kafka_lays_them_out():
    topic_id = uuid.UUID("6f1c6a4e-0d38-4a85-8d42-1f0e0cf5a9b1")
    key = ("group", topic_id, 3)
    assert decode_key(encode_key(0, key)) == (0, key)
    # Kafka's Uuid.toString in the coordinator key
    assert coordinator_key(key) == "group:bxxqTg04SoWNQh8ODPWpsQ:3"
    state = ShareState(10, [(10, 11, 2, 1), (12, 12, 0, 3)], 4, 1, 1234, leader_epoch=7)
    value = encode_snapshot(state, now_ms=5678)
    assert decode_snapshot(value) == state
    # an update over it: a new start offset and one batch replaced
    decoded = decode_snapshot(value)
    apply_update(decoded, _update_value(5, 11, [(12, 12, 2, 3)]))
    assert decoded.start_offset == 11
    assert decoded.batches == [(11, 11, 2, 1), (12, 12, 2, 3)]


def _update_value(snapshot_epoch, start, batches):
    """A ShareUpdateValue v0: SnapshotEpoch, LeaderEpoch, StartOffset, StateBatches, tags."""
    out = bytearray((0).to_bytes(2, "big"))
    out += snapshot_epoch.to_bytes(4, "big") + (0).to_bytes(4, "big")
    out += start.to_bytes(8, "big", signed=True)
    out.append(len(batches) + 1)
    for first, last, state, count in batches:
        out += first.to_bytes(8, "big") + last.to_bytes(8, "big")
        out += state.to_bytes(1, "big") + count.to_bytes(2, "big") + b"\x00"
    out.append(0)
    return bytes(out)


def test_update_records_are_encoded_as_kafka_lays_them_out():
    assert encode_update(5, 0, 11, [(12, 12, 2, 3)]) == _update_value(5, 11, [(12, 12, 2, 3)])


def _per_offset(start, batches):
    return {o: (s, c) for f, last, s, c in batches for o in range(max(f, start), last + 1)}


#: a state: start offset and per-offset (delivery state, delivery count) above it
_records = st.dictionaries(
    st.integers(0, 40), st.tuples(st.sampled_from([0, 2, 4]), st.integers(0, 5)), max_size=25
)


@given(st.integers(0, 10), _records, st.integers(0, 20), _records)
def test_an_update_read_back_over_the_state_before_gives_the_state_after(
    start, before, new_start, after
):
    """What ``changed_batches`` puts in a ShareUpdate, applied as a load applies it, turns the
    state before into the state written; a state it cannot reach that way takes a snapshot."""
    old = ShareState(start, [(o, o, s, c) for o, (s, c) in sorted(before.items()) if o >= start])
    # the new state keeps every record at or above its start (as a share-partition does)
    after = {**{o: v for o, v in before.items() if o >= new_start}, **after}
    new = [(o, o, s, c) for o, (s, c) in sorted(after.items()) if o >= new_start]
    delta = changed_batches(old, new_start, new)
    if new_start < start:
        assert delta is None
        return
    assert delta is not None
    assert len(delta) <= len(new)
    reloaded = ShareState(old.start_offset, list(old.batches))
    apply_update(reloaded, encode_update(0, 0, new_start, delta))
    assert reloaded.start_offset == new_start
    assert _per_offset(new_start, reloaded.batches) == _per_offset(new_start, new)


def test_a_record_leaving_the_state_above_the_start_takes_a_snapshot():
    old = ShareState(0, [(0, 3, 0, 1)])
    assert changed_batches(old, 0, [(0, 1, 0, 1), (3, 3, 0, 1)]) is None
    assert changed_batches(old, 2, [(2, 2, 2, 1), (3, 3, 0, 1)]) == [(2, 2, 2, 1)]


def test_reads_are_sized_for_the_records_wanted_and_continue_when_short(tmp_path):
    """A fetch allowed 50 MB but asking 20 records of 10 KB (2 per batch) reads about what
    it needs: it starts at READ_MIN_BYTES when the partition knows nothing better, reads on
    from where the first read stopped, and sends exactly the batches it acquired."""
    from wireserver.share.partition import READ_MIN_BYTES
    from wireserver.storage.batches import iter_headers

    log = open_log(tmp_path / "big-0")
    for _ in range(40):
        log.append(make_batch(2, value_size=10_000), 0)
    log.high_watermark = log.log_end_offset
    reads = []
    plain_read = log.read

    def read(offset, max_bytes, **kwargs):
        reads.append(max_bytes)
        return plain_read(offset, max_bytes, **kwargs)

    log.read = read
    share, _ = partition(Clock())
    share.bytes_per_record = 1.0  # as if the log had held tiny records
    got = share.acquire("a", log, 20, 50 << 20, False)
    assert got.ranges == [(0, 19, 1)]
    assert [h.base_offset for _, h in iter_headers(got.records)] == list(range(0, 20, 2))
    assert reads[0] == READ_MIN_BYTES and len(reads) >= 2
    assert sum(reads) < 4 * len(got.records)
    # the next fetch knows the records' size: one read of about what 20 records take
    reads.clear()
    again = share.acquire("b", log, 20, 50 << 20, False)
    assert again.ranges == [(20, 39, 1)]
    assert len(reads) == 1 and reads[0] < 2 * len(again.records)
    log.close()
