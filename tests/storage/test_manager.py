"""LogManager: topics, configs and offsets survive restarts; recovery after a crash."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from tests.storage.helpers import FakeClock, make_batch, record_offsets
from wireserver.storage import checkpoint as ckpt
from wireserver.storage.configdef import ConfigValueError
from wireserver.storage.errors import (
    InvalidPartitionsError,
    InvalidTopicError,
    TopicExistsError,
    UnknownTopicError,
)
from wireserver.storage.manager import TOPICS_FILE, LogManager, validate_topic_name


def manager(dirs, **defaults):
    m = LogManager([str(d) for d in dirs], defaults, FakeClock())
    m.load()
    return m


@pytest.mark.parametrize("name", ["a", "my-topic", "A.b_c-1", "x" * 249, "..."])
def test_valid_topic_names(name):
    validate_topic_name(name)


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "a b", "a/b", "é", "a:b"])
def test_invalid_topic_names(name):
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)


def test_create_and_restart_keeps_topics_configs_and_data(tmp_path):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    m = manager(dirs, **{"retention.ms": 1234})
    tid = uuid.uuid4()
    info = m.create_topic(
        "orders", 3, {"internal.segment.bytes": "500", "cleanup.policy": "compact"}, topic_id=tid
    )
    assert info.topic_id == tid and info.config.segment_size == 500
    assert info.config.retention_ms == 1234  # broker default
    m.create_topic("logs", 1)
    for p in range(3):
        log = m.get_log("orders", p)
        for _ in range(10):
            log.append(make_batch(2), 0)
        log.high_watermark = 15
    m.get_log("orders", 1).delete_records_before(6)
    # partitions are spread over both dirs
    placed = {os.path.dirname(m.get_log("orders", p).directory) for p in range(3)}
    assert len(placed) == 2
    m.close()
    for d in dirs:
        assert os.path.exists(d / ckpt.CLEAN_SHUTDOWN_MARKER)

    m2 = manager(dirs, **{"retention.ms": 1234})
    assert all(m2.clean_shutdown.values())
    assert set(m2.topics) == {"orders", "logs"}
    info2 = m2.topics["orders"]
    assert info2.topic_id == tid and info2.num_partitions == 3
    assert dict(info2.overrides) == {"internal.segment.bytes": "500", "cleanup.policy": "compact"}
    assert info2.config == info.config
    for p in range(3):
        log = m2.get_log("orders", p)
        assert log.recovered_segments == 0
        assert log.log_end_offset == 20 and log.high_watermark == 15
    assert m2.get_log("orders", 1).log_start_offset == 6
    assert record_offsets(m2.get_log("orders", 0).read(0, 1 << 20).data) == list(range(20))
    for d in dirs:
        assert not os.path.exists(d / ckpt.CLEAN_SHUTDOWN_MARKER)
    pdir = m2.get_log("orders", 2).directory
    assert ckpt.read_partition_metadata(pdir) == tid
    with open(os.path.join(pdir, "partition.metadata")) as f:
        assert f.read() == f"version: 0\ntopic_id: {ckpt.topic_id_to_base64(tid)}\n"
    m2.close()


def test_crash_means_recovery(tmp_path):
    m = manager([tmp_path])
    m.create_topic("t", 1, {"internal.segment.bytes": "400"})
    log = m.get_log("t", 0)
    for i in range(20):
        log.append(make_batch(3, ts=i), 0)
    m.checkpoint()  # recovery point 0: nothing flushed yet
    m.close_files()  # a crash: no flush, checkpoint or marker; then tear the tail
    segs = sorted(n for n in os.listdir(log.directory) if n.endswith(".log"))
    last = os.path.join(log.directory, segs[-1])
    with open(last, "r+b") as f:
        f.truncate(os.path.getsize(last) - 10)
    m2 = manager([tmp_path])
    assert m2.clean_shutdown == {str(tmp_path): False}
    log2 = m2.get_log("t", 0)
    assert log2.recovered_segments == len(log2.segments)
    assert log2.log_end_offset == 57


@pytest.mark.parametrize("left_by_the_crash", ["missing", "empty", "torn", "garbage"])
def test_a_partition_metadata_file_lost_in_a_crash_is_written_again(tmp_path, left_by_the_crash):
    """New partitions write ``partition.metadata`` without fsync: a crash may leave it missing,
    empty or torn, and the next start writes it again from the topics file."""
    m = manager([tmp_path])
    info = m.create_topic("t", 2)
    m.get_log("t", 1).append(make_batch(2), 0)
    pdir = m.get_log("t", 1).directory
    path = os.path.join(pdir, "partition.metadata")
    content = {"missing": None, "empty": b"", "torn": b"version: 0\ntop", "garbage": b"\xff\xfe"}
    if content[left_by_the_crash] is None:
        os.unlink(path)
    else:
        with open(path, "wb") as f:
            f.write(content[left_by_the_crash])
    m.close_files()  # the crash
    m2 = manager([tmp_path])
    assert m2.topics["t"].topic_id == info.topic_id
    assert ckpt.read_partition_metadata(pdir) == info.topic_id
    assert m2.get_log("t", 1).log_end_offset == 2


def test_missing_checkpoints_after_crash_rescan_everything(tmp_path):
    m = manager([tmp_path])
    m.create_topic("t", 1, {"internal.segment.bytes": "400"})
    log = m.get_log("t", 0)
    for i in range(20):
        log.append(make_batch(3, ts=i), 0)
    log.flush()
    log.high_watermark = 60
    m.checkpoint()
    with open(tmp_path / ckpt.RECOVERY_POINT_CHECKPOINT) as f:
        assert f.read() == "0\n1\nt 0 60\n"
    m.close_files()  # a crash (nothing written), checkpoints intact: no re-scan but the last
    m3 = manager([tmp_path])
    assert m3.get_log("t", 0).recovered_segments == 1
    assert m3.get_log("t", 0).high_watermark == 60
    for name in (
        ckpt.RECOVERY_POINT_CHECKPOINT,
        ckpt.LOG_START_OFFSET_CHECKPOINT,
        ckpt.REPLICATION_OFFSET_CHECKPOINT,
    ):
        os.unlink(tmp_path / name)
    m3.close_files()
    m2 = manager([tmp_path])
    log2 = m2.get_log("t", 0)
    assert log2.recovered_segments == len(log2.segments) > 1
    assert log2.log_end_offset == 60 and log2.high_watermark == 0


def test_topic_errors(tmp_path):
    m = manager([tmp_path])
    m.create_topic("a.b", 1)
    with pytest.raises(TopicExistsError):
        m.create_topic("a.b", 1)
    with pytest.raises(InvalidTopicError):
        m.create_topic("a_b", 1)  # collides with a.b
    with pytest.raises(InvalidPartitionsError):
        m.create_topic("z", 0)
    with pytest.raises(ConfigValueError):
        m.create_topic("z", 1, {"no.such.key": "1"})
    with pytest.raises(ConfigValueError):
        m.create_topic("z", 1, {"retention.ms": "abc"})
    assert "z" not in m.topics
    with pytest.raises(UnknownTopicError):
        m.delete_topic("nope")
    with pytest.raises(InvalidPartitionsError):
        m.add_partitions("a.b", 1)


def test_delete_add_partitions_alter_config(tmp_path):
    m = manager([tmp_path])
    m.create_topic("t", 2)
    m.create_topic("u", 1)
    m.get_log("t", 0).append(make_batch(1), 0)
    info = m.add_partitions("t", 4)
    assert info.num_partitions == 4 and m.get_log("t", 3) is not None
    info = m.alter_topic_config("t", {"retention.ms": "5000"})
    assert info.config.retention_ms == 5000
    assert m.get_log("t", 2).config.retention_ms == 5000
    m.delete_topic("u")
    assert m.get_log("u", 0) is None
    assert "u-0" not in os.listdir(tmp_path)  # renamed at once, removed by a thread
    m.close()
    assert not any(n.startswith("u-") for n in os.listdir(tmp_path))
    m2 = manager([tmp_path])
    assert set(m2.topics) == {"t"}
    assert m2.topics["t"].num_partitions == 4
    assert m2.topics["t"].config.retention_ms == 5000
    with open(tmp_path / TOPICS_FILE) as f:
        doc = json.load(f)
    assert doc["topics"][0]["name"] == "t"


def test_a_cluster_broker_keeps_logs_for_the_partitions_it_hosts_only(tmp_path):
    """A cluster broker's LogManager knows every partition of a topic but keeps logs for the
    ones named hosted (its replicas), and a restart does not make the others; a partition
    assigned later gets an empty log, one moved away loses its own."""
    m = LogManager([str(tmp_path)], {}, FakeClock())
    m.hosts_every_partition = False
    m.load()
    m.create_topic("t", 4, hosted={1, 3})
    assert m.topics["t"].num_partitions == 4
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith("t-")) == ["t-1", "t-3"]
    assert m.get_log("t", 0) is None and m.get_log("t", 1) is not None
    m.add_partitions("t", 6, hosted={1, 3, 5})
    assert m.topics["t"].num_partitions == 6
    assert m.get_log("t", 4) is None and m.get_log("t", 5) is not None
    m.get_log("t", 1).append(make_batch(2), 0)
    m.close()
    m = LogManager([str(tmp_path)], {}, FakeClock())
    m.hosts_every_partition = False
    m.load()
    assert sorted(tp for tp, _ in m.logs()) == [("t", 1), ("t", 3), ("t", 5)]
    assert m.get_log("t", 1).log_end_offset == 2
    assert m.host_partition("t", 0).log_end_offset == 0
    assert m.host_partition("t", 1).log_end_offset == 2  # kept as it is
    m.drop_partition("t", 1)
    assert m.get_log("t", 1) is None and m.topics["t"].num_partitions == 6
    m.close()
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith("t-")) == ["t-0", "t-3", "t-5"]


def test_topics_are_found_by_id_through_every_change_and_a_restart(tmp_path):
    """Produce and Fetch from v13 name topics by id: the manager keeps the id -> name index
    as topics are made, changed, deleted, made again under the same name and reloaded."""
    m = manager([tmp_path])
    first = m.create_topic("t", 1).topic_id
    other = m.create_topic("u", 1).topic_id
    assert dict(m.topic_names_by_id) == {first: "t", other: "u"}
    m.add_partitions("t", 3)
    m.alter_topic_config("t", {"retention.ms": "5000"})
    assert dict(m.topic_names_by_id) == {first: "t", other: "u"}
    m.delete_topic("t")
    assert first not in m.topic_names_by_id
    again = m.create_topic("t", 1).topic_id
    assert again != first and dict(m.topic_names_by_id) == {again: "t", other: "u"}
    m.close()
    reloaded = manager([tmp_path])
    assert dict(reloaded.topic_names_by_id) == {again: "t", other: "u"}
    with pytest.raises(TypeError):
        reloaded._topics.pop("t")  # a change that would bypass the index is refused
    reloaded.close()


def test_the_count_of_names_changed_moves_with_names_only(tmp_path):
    """A regex subscription is resolved again when topic names come or go; a config or
    partition change to an existing topic does not count."""
    m = manager([tmp_path])
    start = m.topic_names_changed
    m.create_topic("t", 1)
    assert m.topic_names_changed == start + 1
    m.add_partitions("t", 3)
    m.alter_topic_config("t", {"retention.ms": "5000"})
    assert m.topic_names_changed == start + 1
    m.delete_topic("t")
    m.create_topic("t", 1)
    assert m.topic_names_changed == start + 3
    m.close()


def test_deleting_leaves_checkpoints_until_the_partition_is_made_again(tmp_path):
    """Deleting N topics does not rewrite the checkpoints N times; a partition made again
    under a deleted one's name is not recovered from the old log's recovery point."""
    m = manager([tmp_path])
    m.create_topic("t", 1)
    log = m.get_log("t", 0)
    log.append(make_batch(5), 0)
    log.flush()
    m.checkpoint()
    recovery_points = tmp_path / ckpt.RECOVERY_POINT_CHECKPOINT
    assert ckpt.read_offsets(str(recovery_points))[("t", 0)] == 5
    m.delete_topic("t")
    assert ckpt.read_offsets(str(recovery_points))[("t", 0)] == 5
    m.create_topic("t", 1)
    assert ("t", 0) not in ckpt.read_offsets(str(recovery_points))
    m.get_log("t", 0).append(make_batch(2), 0)
    m.close_files()  # a crash: the next start recovers the new log from offset 0
    m2 = manager([tmp_path])
    assert m2.get_log("t", 0).log_end_offset == 2
    m2.close()


def test_manager_retention_and_checkpoint_files(tmp_path):
    clock = FakeClock(0)
    m = LogManager([str(tmp_path)], {"retention.bytes": 500}, clock)
    m.load()
    m.create_topic("t", 1, {"internal.segment.bytes": "300"})
    log = m.get_log("t", 0)
    for _ in range(30):
        log.append(make_batch(2), 0)
    log.high_watermark = log.log_end_offset
    assert m.apply_retention(0) > 0
    assert log.log_start_offset > 0
    m.checkpoint()
    assert ckpt.read_offsets(str(tmp_path / ckpt.LOG_START_OFFSET_CHECKPOINT)) == {
        ("t", 0): log.log_start_offset
    }
    assert ckpt.read_offsets(str(tmp_path / ckpt.REPLICATION_OFFSET_CHECKPOINT)) == {("t", 0): 60}


def test_atomic_checkpoint_write(tmp_path):
    path = str(tmp_path / "cp")
    ckpt.write_offsets(path, {("a", 0): 5, ("b-c", 12): 7})
    with open(path) as f:
        assert f.read() == "0\n2\na 0 5\nb-c 12 7\n"
    # A crash mid-write leaves a .tmp file behind; the checkpoint itself is whole.
    with open(path + ".tmp", "w") as f:
        f.write("0\n5\ngarb")
    assert ckpt.read_offsets(path) == {("a", 0): 5, ("b-c", 12): 7}
    ckpt.write_offsets(path, {("a", 0): 6})
    assert not os.path.exists(path + ".tmp")
    assert ckpt.read_offsets(path) == {("a", 0): 6}
    with open(path, "w") as f:
        f.write("0\n3\na 0 1\n")
    with pytest.raises(ckpt.CheckpointError):
        ckpt.read_offsets(path)
    assert ckpt.read_offsets(str(tmp_path / "missing")) == {}


def test_topic_id_base64_round_trip():
    tid = uuid.uuid4()
    text = ckpt.topic_id_to_base64(tid)
    assert len(text) == 22 and "=" not in text
    assert ckpt.topic_id_from_base64(text) == tid


def test_the_flush_tick_walks_only_logs_that_can_become_due(tmp_path):
    clock = FakeClock(0)
    m = LogManager([str(tmp_path)], {}, clock)
    m.load()
    m.create_topic("quiet", 100)  # Kafka's defaults: flush.ms and flush.messages never
    m.create_topic("timed", 1, {"flush.ms": "1000"})
    for p in range(100):
        m.get_log("quiet", p).append(make_batch(1), 0)
    timed = m.get_log("timed", 0)
    timed.append(make_batch(1), 0)
    assert m.logs_due_for_flush(0) == []
    # Unflushed data under "never" cannot become due without another append: not walked.
    assert m._flush_watch == {timed}
    assert m.logs_due_for_flush(1000) == [timed]
    timed.flush(now_ms=1000)
    assert m.logs_due_for_flush(1000) == [] and not m._flush_watch
    # A roll makes a quiet log due (Kafka flushes a rolled segment).
    quiet = m.get_log("quiet", 7)
    quiet.roll()
    quiet.append(make_batch(1), 0)
    assert m.logs_due_for_flush(1000) == [quiet]
    quiet.flush(now_ms=1000)
    assert m.logs_due_for_flush(1000) == [] and not m._flush_watch
    # A config that now sets flush.ms brings unflushed logs back under watch.
    m.alter_topic_config("quiet", {"flush.ms": "500"})
    assert m.get_log("quiet", 3) in m.logs_due_for_flush(2000)
    # A deleted topic's logs are dropped from the watch, never flushed.
    m.delete_topic("quiet")
    assert m.logs_due_for_flush(5000) == [] and not m._flush_watch
    m.close()


def test_a_clean_close_syncs_each_log_dir_once_then_marks_it_clean(tmp_path, monkeypatch):
    synced = []
    real_sync = ckpt.sync_file_system
    monkeypatch.setattr(ckpt, "sync_file_system", lambda d: (synced.append(d), real_sync(d)))
    m = manager([tmp_path])
    m.create_topic("t", 3)
    for p in range(3):
        m.get_log("t", p).append(make_batch(2), 0)
    m.close()
    assert synced == [str(tmp_path)]
    assert os.path.exists(tmp_path / ckpt.CLEAN_SHUTDOWN_MARKER)
    points = ckpt.read_offsets(str(tmp_path / ckpt.RECOVERY_POINT_CHECKPOINT))
    assert points == {("t", 0): 2, ("t", 1): 2, ("t", 2): 2}
    m2 = manager([tmp_path])
    assert [m2.get_log("t", p).log_end_offset for p in range(3)] == [2, 2, 2]
    assert sum(m2.get_log("t", p).recovered_segments for p in range(3)) == 0
    m2.close()


def test_a_log_dir_whose_sync_fails_at_close_is_not_marked_clean(tmp_path, monkeypatch):
    m = manager([tmp_path])
    m.create_topic("t", 1)
    m.get_log("t", 0).append(make_batch(2), 0)

    def failing(directory):
        raise OSError(5, "Input/output error", directory)

    monkeypatch.setattr(ckpt, "sync_file_system", failing)
    m.close()
    assert not os.path.exists(tmp_path / ckpt.CLEAN_SHUTDOWN_MARKER)
    monkeypatch.undo()
    m2 = manager([tmp_path])  # recovered, as after a crash
    assert m2.get_log("t", 0).log_end_offset == 2
    m2.close()
