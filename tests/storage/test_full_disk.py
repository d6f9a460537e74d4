"""Every write path of the storage layer on a full disk (a real tmpfs, ENOSPC from the kernel):
each raises ``KafkaStorageError`` (KAFKA_STORAGE_ERROR) after reporting to the log dirs' failure
channel, which takes the dir offline; nothing half-written is taken for data, and the logs open
again once space is freed."""

from __future__ import annotations

import os

import pytest

from tests.small_fs import fill, small_filesystem
from tests.storage.cleaner_helpers import compacted_log, keyed_batch
from tests.storage.helpers import FakeClock, config, make_batch, open_log, record_offsets
from wireserver.protocol.errors import ErrorCode
from wireserver.storage import checkpoint as ckpt
from wireserver.storage import index as index_module
from wireserver.storage.cleaner import cleanable_offsets, prepare_cleaning
from wireserver.storage.errors import KafkaStorageError
from wireserver.storage.manager import LogManager


@pytest.fixture
def disk(tmp_path):
    """A 512 KiB tmpfs holding the log dir ``<mount>/logs``."""
    with small_filesystem(tmp_path / "fs", "512k") as mount:
        logs = os.path.join(mount, "logs")
        os.makedirs(logs)
        yield logs


def big_batch(kib: int = 16) -> bytearray:
    return make_batch(count=kib, value_size=1024)


def assert_failed(excinfo, log_dir: str) -> None:
    assert excinfo.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert excinfo.value.log_dir == log_dir
    assert isinstance(excinfo.value.__cause__, OSError)


def test_an_append_on_a_full_disk_fails_and_takes_the_dir_offline(disk):
    log = open_log(os.path.join(disk, "t-0"))
    log.append(make_batch(3), 0)
    filler = fill(disk)
    with pytest.raises(KafkaStorageError) as excinfo:
        log.append(big_batch(), 0)
    assert_failed(excinfo, disk)
    assert "Error while appending records to t-0 in dir" in str(excinfo.value)
    assert log.failures.is_offline(disk)
    assert log.log_end_offset == 3
    os.unlink(filler)
    # Offline until restart: nothing more is written, even with space again.
    operations = (lambda: log.append(make_batch(1), 0), lambda: log.read(0, 1024), log.flush)
    for operation in operations:
        with pytest.raises(KafkaStorageError, match="already offline due to a previous IO"):
            operation()
    assert log.log_end_offset == 3


@pytest.mark.parametrize("how", ["marker", "follower"])
def test_markers_and_follower_appends_fail_the_same_way(disk, how):
    log = open_log(os.path.join(disk, "t-0"))
    log.append(make_batch(3), 0)
    log.roll()  # an empty segment: its first byte needs a new page
    fill(disk)
    with pytest.raises(KafkaStorageError) as excinfo:
        if how == "marker":
            log.append_marker(7, 0, commit=False)
        else:
            batch = big_batch()
            batch[0:8] = (3).to_bytes(8, "big")
            log.append_as_follower(batch)
    assert_failed(excinfo, disk)
    assert "Error while appending records to t-0" in str(excinfo.value)
    assert log.log_end_offset == 3


def test_index_entries_that_cannot_be_written_fail_the_flush(disk):
    """An entry is held for a write of a run of them (``storage.index``): the append whose
    batch fits in the .log's page is acknowledged, and the flush that must write the entry
    fails the dir, leaving no partial entry in the file."""
    log = open_log(os.path.join(disk, "t-0"), config(index_interval_bytes=0))
    log.append(make_batch(1), 0)  # the first batch is never indexed: .index stays empty
    fill(disk)
    index = log.active_segment.offset_index.path
    log.append(make_batch(1), 0)  # fits in the .log's page; its index entry is held
    assert log.log_end_offset == 2
    with pytest.raises(KafkaStorageError) as excinfo:
        log.flush()
    assert_failed(excinfo, disk)
    assert os.path.getsize(index) == 0
    assert log.failures.is_offline(disk)


def test_a_run_of_index_entries_that_cannot_be_written_fails_its_append(disk, monkeypatch):
    monkeypatch.setattr(index_module, "PENDING_ENTRIES", 1)  # every entry written at once
    log = open_log(os.path.join(disk, "t-0"), config(index_interval_bytes=0))
    log.append(make_batch(1), 0)
    fill(disk)
    index = log.active_segment.offset_index.path
    with pytest.raises(KafkaStorageError) as excinfo:
        log.append(make_batch(1), 0)  # fits in the .log's page; its index entry needs a new one
    assert_failed(excinfo, disk)
    assert os.path.getsize(index) == 0
    assert log.log_end_offset == 1


def test_a_roll_that_cannot_snapshot_producer_state_fails(disk):
    log = open_log(os.path.join(disk, "t-0"))
    log.append(keyed_batch([(b"k", b"v")], producer_id=5, epoch=0, sequence=0), 0)
    fill(disk)
    with pytest.raises(KafkaStorageError) as excinfo:
        log.roll()
    assert_failed(excinfo, disk)
    assert "Error while rolling log segment for t-0" in str(excinfo.value)
    names = os.listdir(os.path.join(disk, "t-0"))
    assert not [n for n in names if n.endswith(".tmp")], names


def test_closing_on_a_full_disk_reports_and_still_closes_every_file(disk):
    log = open_log(os.path.join(disk, "t-0"))
    log.append(keyed_batch([(b"k", b"v")], producer_id=5, epoch=0, sequence=0), 0)
    fill(disk)
    with pytest.raises(KafkaStorageError):
        log.close()
    assert log.closed and all(seg.closed for seg in log.segments)
    assert log.failures.is_offline(disk)


def test_checkpoints_on_a_full_disk_leave_the_old_file_and_no_temporary(disk):
    manager = LogManager([disk], {}, FakeClock())
    manager.load()
    manager.create_topic("t", 1)
    manager.get_log("t", 0).append(make_batch(2), 0)
    manager.checkpoint()
    path = os.path.join(disk, ckpt.RECOVERY_POINT_CHECKPOINT)
    before = open(path).read()
    manager.get_log("t", 0).flush()
    fill(disk)
    manager.checkpoint()  # reported, not raised: Kafka logs the disk error and carries on
    assert manager.failures.is_offline(disk)
    assert manager.live_log_dirs == []
    assert open(path).read() == before
    assert not [n for n in os.listdir(disk) if n.endswith(".tmp")]


def test_the_cleaner_output_on_a_full_disk_fails_and_is_removed(disk):
    directory = os.path.join(disk, "t-0")
    log = compacted_log(directory)
    for i in range(16):
        log.append(keyed_batch([(b"k%d" % (i % 3), b"v" * 100)], ts=1000 + i), 0)
    log.high_watermark = log.log_end_offset
    job = prepare_cleaning(log, cleanable_offsets(log, None, 10_000), now_ms=10_000)
    assert job is not None
    fill(disk)
    with pytest.raises(KafkaStorageError) as excinfo:
        job.run()
    assert_failed(excinfo, disk)
    assert "Failed to clean up log for t-0 in dir" in str(excinfo.value)
    assert not [n for n in os.listdir(directory) if n.endswith(".cleaned")]
    job.abandon()


def test_a_topic_that_cannot_be_created_leaves_nothing_behind(disk):
    manager = LogManager([disk], {}, FakeClock())
    manager.load()
    filler = fill(disk)
    with pytest.raises(KafkaStorageError) as excinfo:
        manager.create_topic("full", 3)
    assert_failed(excinfo, disk)
    assert "Error while creating log for full-0 in dir" in str(excinfo.value)
    assert "full" not in manager.topics
    assert not [n for n in os.listdir(disk) if n.startswith("full")]
    os.unlink(filler)
    manager.close_files()  # the halt that follows (the process ends: its dir lock goes)
    again = LogManager([disk], {}, FakeClock())
    again.load()
    assert "full" not in again.topics


def test_a_log_torn_by_a_full_disk_opens_again_once_space_is_freed(disk):
    """A batch only partly written when ENOSPC hit, a torn index entry and checkpoint temporary
    files do not stop the next start: recovery cuts the torn tail and rebuilds the index."""
    manager = LogManager([disk], {}, FakeClock())
    manager.load()
    manager.create_topic("t", 1)
    log = manager.get_log("t", 0)
    for _ in range(5):
        log.append(make_batch(2), 0)
    filler = fill(disk, leave=4096)  # one page: the next batch is cut short
    with pytest.raises(KafkaStorageError):
        log.append(big_batch(), 0)
    segment = log.active_segment
    assert os.path.getsize(segment.log_path) > segment.size  # a torn batch on disk
    os.unlink(filler)
    with open(segment.offset_index.path, "ab") as index:
        index.write(b"\0\0\0\x01")  # half an entry
    for name in (ckpt.RECOVERY_POINT_CHECKPOINT, "t-0/" + ckpt.LEADER_EPOCH_CHECKPOINT):
        with open(os.path.join(disk, name + ".tmp"), "wb") as tmp:
            tmp.write(b"0\n")
    manager.close_files()  # the halt: nothing flushed, no clean-shutdown marker
    again = LogManager([disk], {}, FakeClock())
    again.load()
    reopened = again.get_log("t", 0)
    assert reopened.truncated_bytes > 0
    assert reopened.log_end_offset == 10
    assert record_offsets(reopened.read(0, 1 << 20).data) == list(range(10))
    reopened.append(make_batch(1), 0)
    assert reopened.log_end_offset == 11
    again.close()


def test_a_producer_id_block_that_cannot_be_reserved_fails_the_log_dir(disk):
    """The block file lives in the first log dir: a full disk there is that dir's failure."""
    from wireserver.producer_ids import ProducerIdManager

    ids = ProducerIdManager(disk, block_size=2)
    assert [ids.generate(), ids.generate()] == [0, 1]
    fill(disk)
    with pytest.raises(KafkaStorageError) as excinfo:
        ids.generate()
    assert_failed(excinfo, disk)
    assert ids.failures.is_offline(disk)
    assert ProducerIdManager(disk).next_block_start == 2  # the reserved block still holds


def test_with_two_log_dirs_only_the_full_one_goes_offline(disk, tmp_path):
    other = str(tmp_path / "other")
    manager = LogManager([disk, other], {}, FakeClock())
    manager.load()
    manager.create_topic("t", 2)  # one partition in each dir
    on_disk = next(p for p in range(2) if manager.get_log("t", p).log_dir == disk)
    elsewhere = manager.get_log("t", 1 - on_disk)
    fill(disk)
    with pytest.raises(KafkaStorageError):
        manager.get_log("t", on_disk).append(big_batch(), 0)
    assert manager.live_log_dirs == [other]
    elsewhere.append(make_batch(2), 0)
    assert elsewhere.log_end_offset == 2
    manager.create_topic("later", 2)  # new partitions go to the live dir only
    assert {manager.get_log("later", p).log_dir for p in range(2)} == {other}
    manager.checkpoint()
    assert ckpt.read_offsets(os.path.join(other, ckpt.RECOVERY_POINT_CHECKPOINT))
