"""Moving a partition's log between the log dirs of one broker (storage.log_move), on temporary
dirs: the copy follows appends, the swap keeps offsets, producer state and leader epochs, and a
restart in the middle resumes the move or finishes a cut swap."""

from __future__ import annotations

import os

import pytest

from tests.storage.helpers import FakeClock, record_offsets
from wireserver.protocol.records import RecordBatchBuilder
from wireserver.storage.errors import KafkaStorageError, LogDirNotFoundError, OutOfOrderSequence
from wireserver.storage.manager import LogManager


def idempotent_batch(sequence: int, count: int = 5, producer_id: int = 7) -> bytearray:
    builder = RecordBatchBuilder()
    builder.producer_id, builder.producer_epoch, builder.base_sequence = producer_id, 0, sequence
    for i in range(count):
        builder.append(1000 + i, b"k%d" % (sequence + i), b"v" * 100)
    return builder.build()


def open_manager(dirs) -> LogManager:
    manager = LogManager([str(d) for d in dirs], {}, FakeClock())
    manager.load()
    return manager


@pytest.fixture
def two_dirs(tmp_path):
    return [str(tmp_path / "a"), str(tmp_path / "b")]


def setup(two_dirs, batches: int = 20):
    """A manager with topic ``t`` (one partition) holding ``batches`` idempotent batches,
    and the dir it is not in."""
    manager = open_manager(two_dirs)
    manager.create_topic("t", 1)
    log = manager.get_log("t", 0)
    for i in range(batches):
        log.append(idempotent_batch(i * 5), leader_epoch=3 if i >= 10 else 0)
    log.high_watermark = log.log_end_offset
    other = next(d for d in two_dirs if d != log.log_dir)
    return manager, log, other


def all_offsets(log) -> list[int]:
    return record_offsets(log.read(log.log_start_offset, 1 << 30).data)


def test_a_move_copies_while_appends_go_on_then_swaps_in_place(two_dirs):
    manager, log, other = setup(two_dirs)
    source = log.log_dir
    move = manager.move_log(("t", 0), other)
    assert os.path.basename(move.future.directory).startswith("t-0.")
    assert move.future.directory.endswith("-future")
    assert move.lag == 100
    while move.copy(1200):  # a few batches a step, with appends in between
        if log.log_end_offset < 150:
            log.append(idempotent_batch(log.log_end_offset), leader_epoch=3)
    assert move.caught_up
    log.high_watermark = log.log_end_offset
    manager.complete_move(("t", 0))
    manager.dir_remover.join()
    assert manager.get_log("t", 0) is log  # the same object, now in the other dir
    assert log.log_dir == other and log.directory == os.path.join(other, "t-0")
    assert not os.path.exists(os.path.join(source, "t-0"))
    assert [n for n in os.listdir(source) if n.startswith("t-0")] == []
    assert all_offsets(log) == list(range(150))
    assert log.high_watermark == 150
    assert log.leader_epoch_cache.entries == [(0, 0), (3, 50)]
    # Producer state came along: a retried batch is a duplicate, a gap is refused.
    assert log.append(idempotent_batch(145), leader_epoch=3).duplicate
    with pytest.raises(OutOfOrderSequence):
        log.append(idempotent_batch(160), leader_epoch=3)
    log.append(idempotent_batch(150), leader_epoch=3)
    manager.close()
    again = open_manager(two_dirs)
    moved = again.get_log("t", 0)
    assert moved.log_dir == other
    assert all_offsets(moved) == list(range(155))
    # The copied indexes hold: nothing re-scanned or rebuilt on a clean start.
    assert (moved.recovered_segments, moved.rebuilt_indexes) == (0, 0)
    assert moved.leader_epoch_cache.entries == [(0, 0), (3, 50)]
    again.close()


def test_retention_during_the_copy_restarts_the_future_at_the_new_log_start(two_dirs):
    manager, log, other = setup(two_dirs)
    move = manager.move_log(("t", 0), other)
    move.copy(600)
    log.roll()
    log.append(idempotent_batch(100), leader_epoch=3)
    log.high_watermark = log.log_end_offset
    log.delete_records_before(100)
    while move.copy(1 << 20):
        pass
    assert move.future.log_start_offset == 100
    manager.complete_move(("t", 0))
    assert log.log_start_offset == 100 and all_offsets(log) == list(range(100, 105))


def test_bad_destinations(two_dirs, tmp_path):
    manager, log, other = setup(two_dirs, batches=1)
    with pytest.raises(LogDirNotFoundError, match="is not found in the config"):
        manager.check_log_dir(str(tmp_path / "elsewhere"))
    manager.failures.fail(other, "test", OSError(5, "EIO"))
    with pytest.raises(KafkaStorageError, match="is offline"):
        manager.check_log_dir(other)
    assert manager.move_log(("t", 0), log.log_dir) is None  # already there: nothing to do


def test_a_preferred_dir_places_the_partition_made_later(two_dirs):
    manager = open_manager(two_dirs)
    for target in reversed(two_dirs):
        manager.prefer_log_dir(("late", 0), target)
        manager.create_topic("late", 1)
        assert manager.get_log("late", 0).log_dir == target
        assert ("late", 0) not in manager.preferred_dirs  # used once
        manager.delete_topic("late")


def test_a_restart_mid_move_resumes_from_the_future_log(two_dirs):
    manager, log, other = setup(two_dirs)
    move = manager.move_log(("t", 0), other)
    move.copy(1200)
    copied = move.future.log_end_offset
    assert 0 < copied < 100
    manager.close()
    again = open_manager(two_dirs)
    (resumed,) = again.moves.values()
    assert resumed.destination == other
    assert resumed.future.log_end_offset == copied
    while resumed.copy(1 << 20):
        pass
    again.complete_move(("t", 0))
    assert again.get_log("t", 0).log_dir == other
    assert all_offsets(again.get_log("t", 0)) == list(range(100))


def test_a_swap_cut_between_its_renames_completes_on_the_next_start(two_dirs):
    manager, log, other = setup(two_dirs)
    move = manager.move_log(("t", 0), other)
    while move.copy(1 << 20):
        pass
    move.future.flush()
    manager.close()
    # The crash: the current dir renamed for deletion, the future dir not yet renamed.
    os.replace(log.directory, log.directory + ".0123456789abcdef0123456789abcdef-delete")
    again = open_manager(two_dirs)
    assert not again.moves
    promoted = again.get_log("t", 0)
    assert promoted.log_dir == other
    assert all_offsets(promoted) == list(range(100))


def test_deleting_the_topic_gives_the_move_up(two_dirs):
    manager, log, other = setup(two_dirs, batches=2)
    move = manager.move_log(("t", 0), other)
    manager.delete_topic("t")
    manager.dir_remover.join()
    assert not manager.moves
    assert not os.path.exists(move.future.directory)
    assert [n for n in os.listdir(other) if n.startswith("t-0")] == []


def test_the_cleaner_checkpoint_moves_along(two_dirs):
    from wireserver.storage import checkpoint as ckpt

    manager, log, other = setup(two_dirs, batches=2)
    source = log.log_dir
    ckpt.write_offsets(os.path.join(source, ckpt.CLEANER_OFFSET_CHECKPOINT), {("t", 0): 7})
    move = manager.move_log(("t", 0), other)
    while move.copy(1 << 20):
        pass
    manager.complete_move(("t", 0))
    assert ckpt.read_offsets(os.path.join(other, ckpt.CLEANER_OFFSET_CHECKPOINT)) == {("t", 0): 7}
    assert ckpt.read_offsets(os.path.join(source, ckpt.CLEANER_OFFSET_CHECKPOINT)) == {}


def test_a_transaction_begun_after_the_move_holds_the_last_stable_offset(two_dirs):
    """The moved log reads its open transactions from the moved producer state: one begun
    after the swap holds the last stable offset until its commit marker."""
    manager, log, other = setup(two_dirs, batches=2)
    move = manager.move_log(("t", 0), other)
    while move.copy(1 << 20):
        pass
    manager.complete_move(("t", 0))
    manager.dir_remover.join()
    assert log.log_dir == other
    builder = RecordBatchBuilder(
        producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    builder.append(1000, b"k", b"in a transaction")
    log.append(builder.build(), leader_epoch=0)
    log.high_watermark = log.log_end_offset
    assert log.fetch_offsets() == (11, 10, 0)  # held at the transaction's first offset
    log.append_marker(9, 0, True)
    log.high_watermark = log.log_end_offset
    assert log.fetch_offsets() == (12, 12, 0)
    manager.close()
