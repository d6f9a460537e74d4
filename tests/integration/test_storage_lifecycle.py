"""What a user sees of storage through a real broker: retention deleting old segments and
moving ListOffsets earliest, topics and their configs surviving restarts, and recovery from a
torn or corrupted tail after a crash."""

from __future__ import annotations

import glob
import json
import logging
import os
import re
import time

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from wireserver.testing import EmbeddedBroker, wait_for


def produce(bootstrap, topic, values, partition=0):
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "1", "enable.idempotence": False}
    )
    delivered = []
    for value in values:
        producer.produce(
            topic,
            value,
            partition=partition,
            on_delivery=lambda err, msg: delivered.append((err, msg.offset())),
        )
        producer.flush(10)  # one batch per record, so small segments roll often
    assert [err for err, _ in delivered] == [None] * len(values)
    return [offset for _, offset in delivered]


def earliest_and_latest(bootstrap, topic, partition=0):
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return consumer.get_watermark_offsets(
            confluent_kafka.TopicPartition(topic, partition), timeout=10
        )
    finally:
        consumer.close()


def consume_all(bootstrap, topic, expected, partition=0):
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign(
        [confluent_kafka.TopicPartition(topic, partition, confluent_kafka.OFFSET_BEGINNING)]
    )
    got = []
    deadline = time.monotonic() + 20
    while len(got) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append((message.offset(), message.value()))
    consumer.close()
    return got


def create(bootstrap, topic, config):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(10)


def storage_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "wireserver.storage.log"]


def test_retention_deletes_old_segments_and_moves_earliest(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    with EmbeddedBroker(
        "thread", data_dir=str(tmp_path), overrides={"log.retention.check.interval.ms": 200}
    ) as broker:
        bootstrap = broker.bootstrap_servers
        create(bootstrap, "aging", {"internal.segment.bytes": "200", "retention.bytes": "400"})
        produce(bootstrap, "aging", [b"x" * 100 for _ in range(12)])
        low, high = wait_for(
            lambda: (lambda w: w if w[0] > 0 else None)(earliest_and_latest(bootstrap, "aging"))
        )
        assert high == 12 and 0 < low < 12
        segments = glob.glob(os.path.join(str(tmp_path), "aging-0", "*.log"))
        assert min(int(os.path.basename(s)[:20]) for s in segments) == low
        assert [offset for offset, _ in consume_all(bootstrap, "aging", high - low)] == list(
            range(low, high)
        )
        node = broker.node_id
    # The broker said so in Kafka's words: the partition led here, each roll, each deletion.
    messages = [r.getMessage() for r in caplog.records]
    assert f"[Broker id={node}] Leader aging-0 with topic id Some(" in next(
        m for m in messages if "Leader aging-0" in m
    )
    assert any(
        re.fullmatch(
            rf"\[Broker id={node}\] Leader aging-0 with topic id Some\([\w-]{{22}}\) starts at "
            rf"leader epoch 0 from offset 0 with partition epoch 0, high watermark 0, ISR "
            rf"\[{node}\], adding replicas \[\] and removing replicas \[\] \. Previous leader "
            r"None and previous leader epoch was -1\.",
            m,
        )
        for m in messages
    )
    lines = storage_lines(caplog)
    ident = re.escape(f"partition=aging-0, dir={tmp_path}]")
    rolled = [
        int(m.group(1))
        for line in lines
        if (
            m := re.fullmatch(
                rf"\[LocalLog {ident} Rolled new log segment at offset (\d+) in \d+ ms\.", line
            )
        )
    ]
    assert rolled and rolled == sorted(rolled) and rolled[-1] < high
    segment = r"LogSegment\(baseOffset=(\d+), size=\d+, lastModifiedTime=\d+, largestRecordTimestamp=\d+\)"
    deleted = [
        int(m.group(1))
        for line in lines
        if (
            m := re.fullmatch(
                rf"\[UnifiedLog {ident} Deleting segment {segment} due to log retention size 400 "
                r"breach\. Log size after deletion will be \d+\.",
                line,
            )
        )
    ]
    assert deleted and deleted[0] == 0 and all(base < low for base in deleted)
    assert (
        f"[UnifiedLog partition=aging-0, dir={tmp_path}] Incremented log start offset to {low} "
        "due to segment deletion" in lines
    )


def test_retention_by_time(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    with EmbeddedBroker(
        "thread", data_dir=str(tmp_path), overrides={"log.retention.check.interval.ms": 200}
    ) as broker:
        bootstrap = broker.bootstrap_servers
        create(bootstrap, "brief", {"internal.segment.bytes": "200", "retention.ms": "1000"})
        produce(bootstrap, "brief", [b"y" * 100 for _ in range(6)])
        low, high = wait_for(
            lambda: (lambda w: w if w[0] == w[1] else None)(
                earliest_and_latest(bootstrap, "brief")
            ),
            timeout=30,
        )
        assert low == high == 6
    ident = re.escape(f"[UnifiedLog partition=brief-0, dir={tmp_path}]")
    deleted = [
        line
        for line in storage_lines(caplog)
        if re.fullmatch(
            rf"{ident} Deleting segment LogSegment\(baseOffset=\d+, size=\d+, "
            r"lastModifiedTime=\d+, largestRecordTimestamp=\d+\) due to log retention time "
            r"1000ms breach based on the largest record timestamp in the segment",
            line,
        )
    ]
    assert len(deleted) >= 6  # one line per segment, each segment one batch


@pytest.mark.parametrize("mode", ["thread", "subprocess"])
def test_topics_and_configs_survive_restart(tmp_path, mode):
    broker = EmbeddedBroker(mode, data_dir=str(tmp_path)).start()
    try:
        bootstrap = broker.bootstrap_servers
        create(bootstrap, "kept", {"retention.ms": "123456", "cleanup.policy": "delete"})
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_partitions([confluent_kafka.admin.NewPartitions("kept", 3)])["kept"].result(10)
        produce(bootstrap, "kept", [b"a", b"b"], partition=2)
        broker.restart()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        after = admin.list_topics(timeout=10).topics["kept"]
        assert sorted(after.partitions) == [0, 1, 2]
        resource = ConfigResource(ConfigResource.Type.TOPIC, "kept")
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["retention.ms"].value == "123456"
        assert (
            configs["retention.ms"].source
            == confluent_kafka.admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        )
        assert [v for _, v in consume_all(broker.bootstrap_servers, "kept", 2, partition=2)] == [
            b"a",
            b"b",
        ]
    finally:
        broker.close()


def test_topics_deleted_in_one_request_stay_deleted_after_a_kill(tmp_path):
    """The broker saves its topic list once for a whole DeleteTopics request, and before it
    answers: killed right after the answer, it starts without any of the deleted topics."""
    broker = EmbeddedBroker("subprocess", data_dir=str(tmp_path)).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        names = [f"t{i}" for i in range(6)]
        for future in admin.create_topics([NewTopic(n, 2, 1) for n in names]).values():
            future.result(10)
        for future in admin.delete_topics(names[:4], operation_timeout=10).values():
            future.result(10)
        broker.kill()  # SIGKILL: nothing written after the answer
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        listed = admin.list_topics(timeout=10).topics
        assert sorted(n for n in listed if n.startswith("t")) == ["t4", "t5"]
        assert not [n for n in os.listdir(tmp_path) if re.fullmatch(r"t[0-3]-\d", n)]
    finally:
        broker.close()


def test_topics_created_in_one_request_keep_their_configs_after_a_kill(tmp_path):
    """The broker saves its topic list once for a whole CreateTopics request, and before it
    answers: killed right after the answer, it starts with every topic of the request and
    the configs they were created with (the list is where a topic's overrides are kept)."""
    broker = EmbeddedBroker("subprocess", data_dir=str(tmp_path)).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        names = [f"c{i}" for i in range(4)]
        topics = [
            NewTopic(n, 2, 1, config={"retention.ms": str(1000 + i)}) for i, n in enumerate(names)
        ]
        for future in admin.create_topics(topics).values():
            future.result(10)
        broker.kill()  # SIGKILL: nothing written after the answer
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        resources = [ConfigResource(ConfigResource.Type.TOPIC, n) for n in names]
        retention = {
            resource.name: future.result(10)["retention.ms"].value
            for resource, future in admin.describe_configs(resources).items()
        }
        assert retention == {n: str(1000 + i) for i, n in enumerate(names)}
    finally:
        broker.close()


def test_a_stored_override_refused_since_is_dropped_at_start(tmp_path, caplog):
    """A segment.bytes under 1 MiB in the stored topics (as a broker from before Kafka 4.1's
    minimum wrote it): the broker still starts and serves the topic, with segment.bytes'
    default and its other overrides, and logs what it ignored."""
    broker = EmbeddedBroker("thread", data_dir=str(tmp_path)).start()
    try:
        create(broker.bootstrap_servers, "old", {"retention.ms": "123456"})
        produce(broker.bootstrap_servers, "old", [b"a"])
        broker.stop()
        path = tmp_path / "wireserver-topics.json"
        doc = json.loads(path.read_text())
        [entry] = [t for t in doc["topics"] if t["name"] == "old"]
        entry["overrides"]["segment.bytes"] = "500"
        path.write_text(json.dumps(doc))
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        resource = ConfigResource(ConfigResource.Type.TOPIC, "old")
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["segment.bytes"].value == "1073741824"
        assert configs["retention.ms"].value == "123456"
        assert [v for _, v in consume_all(broker.bootstrap_servers, "old", 1)] == [b"a"]
        assert "segment.bytes: Value must be at least 1048576" in caplog.text
    finally:
        broker.close()


def damage_last_batch(log_path: str, how: str) -> None:
    size = os.path.getsize(log_path)
    with open(log_path, "r+b") as handle:
        if how == "torn":
            handle.truncate(size - 7)  # the last batch loses its tail
        else:
            handle.seek(size - 3)
            byte = handle.read(1)
            handle.seek(size - 3)
            handle.write(bytes([byte[0] ^ 0xFF]))  # the last batch fails its CRC


@pytest.mark.parametrize("how", ["torn", "corrupt"])
def test_recovery_truncates_a_damaged_tail(tmp_path, how):
    broker = EmbeddedBroker("subprocess", data_dir=str(tmp_path)).start()
    try:
        bootstrap = broker.bootstrap_servers
        create(bootstrap, "crash", {})
        produce(bootstrap, "crash", [b"r%d" % i for i in range(5)])
        broker.kill()
        damage_last_batch(os.path.join(str(tmp_path), "crash-0", "00000000000000000000.log"), how)
        broker.start()
        bootstrap = broker.bootstrap_servers
        assert "segments recovered" in broker.log_text()
        assert earliest_and_latest(bootstrap, "crash") == (0, 4)
        assert [v for _, v in consume_all(bootstrap, "crash", 4)] == [b"r%d" % i for i in range(4)]
        assert produce(bootstrap, "crash", [b"after"]) == [4]
        assert [v for _, v in consume_all(bootstrap, "crash", 5)][-1] == b"after"
    finally:
        broker.close()
