"""The log cleaner in a running broker, seen through real clients: a compacted topic keeps the
latest record of each key at its original offset, tombstones go after ``delete.retention.ms``,
``cleanup.policy`` changed at run time takes effect without a restart, the result survives a
restart, and ``__consumer_offsets`` is compacted, so a restart replays its live keys rather
than its history."""

from __future__ import annotations

import logging
import os
import re
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from tests.integration.compacted_records import latest, latest_only, produce, read_all
from wireserver.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT
from wireserver.testing import EmbeddedBroker, wait_for

#: A cleaner that looks every 100 ms, and small segments (Kafka's ``internal.segment.bytes``).
CLEANER = {"log.cleaner.backoff.ms": 100, "num.partitions": 1}
EAGER = {
    "cleanup.policy": "compact",
    "internal.segment.bytes": "4096",
    "min.cleanable.dirty.ratio": "0.01",
    "segment.ms": "200",
}
KEYS = [f"k{i}".encode() for i in range(8)]


def roll(bootstrap: str, topic: str) -> None:
    """Let ``segment.ms`` pass, then append one record of its own key: the segments before it
    become inactive, the only ones the cleaner cleans."""
    time.sleep(0.3)
    produce(bootstrap, topic, [(b"roll", str(time.time()).encode())])


def first_at_or_after(bootstrap: str, topic: str, *, timestamp=None, offset=None) -> int:
    """The offset ListOffsets gives for ``timestamp``, or of the first record a consumer
    assigned at ``offset`` receives."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "probe", "enable.auto.commit": False}
    )
    try:
        if timestamp is not None:
            (found,) = consumer.offsets_for_times([TopicPartition(topic, 0, timestamp)], 10)
            return found.offset
        consumer.assign([TopicPartition(topic, 0, offset)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                return msg.offset()
        raise AssertionError(f"nothing read from offset {offset}")
    finally:
        consumer.close()


def records_in(partition_log) -> int:
    """Records in a partition log's segments, from the batch headers (read from the test's
    thread: a segment the cleaner swaps out meanwhile makes it try again at the next poll)."""
    try:
        return sum(
            header.record_count for seg in list(partition_log.segments) for _, header in seg.walk()
        )
    except (OSError, ValueError):
        return 1 << 62


def commit(consumer: Consumer, position: TopicPartition) -> None:
    """A synchronous commit, again while the client still looks for its coordinator."""
    deadline = time.monotonic() + 20
    while True:
        try:
            consumer.commit(offsets=[position], asynchronous=False)
            return
        except KafkaException as exc:
            error = exc.args[0]
            waiting = error.code() == KafkaError._WAIT_COORD
            if not (waiting or error.retriable()) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def alter(bootstrap: str, topic: str, key: str, value: str) -> None:
    """IncrementalAlterConfigs SET of one topic key, as ``kafka-configs --alter`` sends it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(10)


def create(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(10)


#: Kafka's ``recordStats`` summary of one cleaning (LogCleaner.scala), line for line.
SUMMARY = re.compile(
    r"\[kafka-log-cleaner-thread-0\]: \n"
    r"\tLog cleaner thread 0 cleaned log compacted-0 \(dirty section = \[(\d+), (\d+)\]\)\n"
    r"\t[\d,.]+ MB of log processed in [\d.]+ seconds \([\w,.]+ MB/sec\)\.\n"
    r"\tIndexed [\d,.]+ MB in [\d.]+ seconds \([\w,.]+ Mb/sec, [\w.]+% of total time\)\n"
    r"\tBuffer utilization: [\d.]+%\n"
    r"\tCleaned [\d,.]+ MB in [\d.]+ seconds \([\w,.]+ Mb/sec, [\w.]+% of total time\)\n"
    r"\tStart size: [\d,.]+ MB \(([\d,]+) messages\)\n"
    r"\tEnd size: [\d,.]+ MB \(([\d,]+) messages\)\n"
    r"\t[\d.]+% size reduction \([\d.]+% fewer messages\)\n"
)


def test_a_compacted_topic_keeps_the_latest_record_of_each_key_at_its_offset(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    with EmbeddedBroker(overrides=CLEANER, data_dir=tmp_path) as broker:
        bootstrap = broker.bootstrap_servers
        create(bootstrap, "compacted", {**EAGER, "delete.retention.ms": "1500"})
        updates = [(key, b"v%d-%s" % (n, key) * 20) for n in range(30) for key in KEYS]
        last = produce(bootstrap, "compacted", updates)
        last.update(produce(bootstrap, "compacted", [(KEYS[0], None), (KEYS[1], None)]))
        roll(bootstrap, "compacted")
        cleaned = wait_for(
            lambda: (r := read_all(bootstrap, "compacted")) and latest_only(r) and r,
            30,
            0.2,
            what="the cleaner to keep one record per key",
        )
        kept = latest(cleaned)
        # The latest record of every key, tombstones included, at the offset it was written at.
        assert kept == last
        # The cleaner said what it did in Kafka's words.
        lines = [r.getMessage() for r in caplog.records if r.name == "wireserver.log_cleaner"]
        assert "Cleaner 0: Beginning cleaning of log compacted-0" in lines
        first = next(m for line in lines if (m := SUMMARY.fullmatch(line)))
        start, end, read, written = (int(g.replace(",", "")) for g in first.groups())
        assert start == 0 < end and written < read
        assert cleaned[0][0] > 0  # the first offsets are holes now: nothing is renumbered
        # ListOffsets by timestamp, and a consumer seeking into a hole, land on the next record
        # the cleaner kept.
        kept_offsets = [offset for offset, _, _ in cleaned]
        assert first_at_or_after(bootstrap, "compacted", timestamp=0) == kept_offsets[0]
        for hole in (0, kept_offsets[0] - 1):
            assert first_at_or_after(bootstrap, "compacted", offset=hole) == kept_offsets[0]
        # Tombstones go once delete.retention.ms passed after the cleaning that reached them.
        produce(bootstrap, "compacted", [(KEYS[2], b"again")])
        roll(bootstrap, "compacted")
        time.sleep(1.6)
        produce(bootstrap, "compacted", [(KEYS[3], b"again")])
        roll(bootstrap, "compacted")
        wait_for(
            lambda: (
                not any(key in (KEYS[0], KEYS[1]) for _, key, _ in read_all(bootstrap, "compacted"))
            ),
            30,
            0.2,
            what="the tombstones to go after delete.retention.ms",
        )
        before_restart = read_all(bootstrap, "compacted")
        assert os.path.exists(tmp_path / CLEANER_OFFSET_CHECKPOINT)
    with EmbeddedBroker(overrides=CLEANER, data_dir=tmp_path) as broker:
        # What the cleaner kept loads again: the same latest record of each key at the same
        # offset (a cleaning may still have run in between, removing superseded records).
        after = read_all(broker.bootstrap_servers, "compacted")
        assert set(after) <= set(before_restart)
        assert latest(after) == latest(before_restart)


def test_cleanup_policy_changed_at_run_time_takes_effect(tmp_path):
    with EmbeddedBroker(overrides=CLEANER, data_dir=tmp_path) as broker:
        bootstrap = broker.bootstrap_servers
        create(bootstrap, "policy", {**EAGER, "cleanup.policy": "delete"})
        produce(bootstrap, "policy", [(key, b"x" * 200) for _ in range(20) for key in KEYS])
        roll(bootstrap, "policy")
        time.sleep(0.5)
        assert not latest_only(read_all(bootstrap, "policy"))  # "delete": nothing compacts
        alter(bootstrap, "policy", "cleanup.policy", "compact")
        wait_for(
            lambda: latest_only(read_all(bootstrap, "policy")),
            30,
            0.2,
            what="the topic to be compacted after its policy changed",
        )


@pytest.mark.parametrize("commits", [600])
def test_consumer_offsets_is_compacted_and_a_restart_replays_the_live_keys(tmp_path, commits):
    overrides = {**CLEANER, "offsets.topic.num.partitions": 1}
    with EmbeddedBroker(overrides=overrides, data_dir=tmp_path) as broker:
        bootstrap = broker.bootstrap_servers
        create(bootstrap, "committed", {"cleanup.policy": "delete"})
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "busy", "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition("committed", 0)])
        commit(consumer, TopicPartition("committed", 0, 0))
        # Small segments for the test (``offsets.topic.segment.bytes`` is at least 1 MiB as a
        # topic's segment.bytes): the cleaner never cleans the active one.
        alter(bootstrap, "__consumer_offsets", "internal.segment.bytes", "4096")
        for n in range(1, commits):
            commit(consumer, TopicPartition("committed", 0, n))
        consumer.close()
        offsets_log = broker.broker.logs.get_log("__consumer_offsets", 0)
        wait_for(
            lambda: records_in(offsets_log) < commits / 4,
            60,
            0.1,
            what="__consumer_offsets to be compacted",
        )
    with EmbeddedBroker(overrides=overrides, data_dir=tmp_path) as broker:
        # One group, one committed offset: a handful of live records, not the history (the
        # active segment, which the cleaner never touches, holds a few more).
        # The groups load in the background: count once the load is over.
        runtime = broker.broker.groups.runtime
        wait_for(lambda: not runtime.loading, 30, 0.05, what="__consumer_offsets to load")
        replayed = runtime.replayed_records
        assert 0 < replayed < commits / 4, replayed
        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap_servers, "group.id": "busy"},
        )
        (committed,) = consumer.committed([TopicPartition("committed", 0)], timeout=10)
        consumer.close()
        assert committed.offset == commits - 1


def test_a_deleted_topic_leaves_the_cleaner_checkpoint(tmp_path):
    with EmbeddedBroker(overrides=CLEANER, data_dir=tmp_path) as broker:
        bootstrap = broker.bootstrap_servers
        create(bootstrap, "gone", EAGER)
        produce(bootstrap, "gone", [(key, b"x" * 300) for _ in range(10) for key in KEYS])
        roll(bootstrap, "gone")
        checkpoint = tmp_path / CLEANER_OFFSET_CHECKPOINT
        wait_for(
            lambda: checkpoint.exists() and "gone 0 " in checkpoint.read_text(),
            30,
            0.1,
            what="a cleaning of the topic",
        )
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.delete_topics(["gone"])["gone"].result(10)
        wait_for(lambda: "gone 0 " not in checkpoint.read_text(), 10, 0.1, what="its entry gone")


def test_the_broker_policy_changed_at_run_time_compacts_topics_without_their_own(tmp_path):
    with EmbeddedBroker(overrides=CLEANER, data_dir=tmp_path) as broker:
        bootstrap = broker.bootstrap_servers
        configs = {k: v for k, v in EAGER.items() if k != "cleanup.policy"}
        create(bootstrap, "inherits", configs)
        produce(bootstrap, "inherits", [(key, b"x" * 200) for _ in range(20) for key in KEYS])
        roll(bootstrap, "inherits")
        time.sleep(0.5)
        assert not latest_only(read_all(bootstrap, "inherits"))  # the default is "delete"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        entry = ConfigEntry(
            "log.cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET
        )
        node = str(broker.broker.node_id)
        default = ConfigResource(ConfigResource.Type.BROKER, node, incremental_configs=[entry])
        admin.incremental_alter_configs([default])[default].result(10)
        wait_for(
            lambda: latest_only(read_all(bootstrap, "inherits")),
            30,
            0.2,
            what="the topic to be compacted under the broker's new default",
        )
        # DescribeConfigs (what kafka-configs and kafka-topics --describe show) says so too.
        topic = ConfigResource(ConfigResource.Type.TOPIC, "inherits")
        described = admin.describe_configs([topic])[topic].result(10)["cleanup.policy"]
        assert described.value == "compact"
        assert described.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
