"""Dynamic broker configs outlive the broker on one node: set with Kafka's ``kafka-configs``
(per broker and as the cluster default), they are described with Kafka's sources and in force
after a restart on the same data dir, and one deleted stays deleted. ``message.max.bytes`` is
the key: a producer sees it at once (a record over it is refused with MSG_SIZE_TOO_LARGE)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.reference import require_tools, run_tool
from tests.apis.broker_configs import KEY, limit_in_force
from wireserver.testing import EmbeddedBroker, wait_for

pytestmark = pytest.mark.integration

DEFAULT_LIMIT, BROKER_LIMIT = 20000, 5000


def kafka_configs(broker: EmbeddedBroker, *args: str) -> str:
    """Run ``kafka-configs --entity-type brokers ARGS`` against ``broker``: its output."""
    done = run_tool(
        "kafka-configs",
        ["--entity-type", "brokers", *args],
        bootstrap=broker.bootstrap_servers,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_broker_and_default_configs_survive_a_restart(tmp_path):
    require_tools()
    broker = EmbeddedBroker("thread", overrides={"node.id": "1"}, data_dir=tmp_path / "data")
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("limits", 1, 1)])["limits"].result(30)

        out = kafka_configs(
            broker, "--entity-default", "--alter", "--add-config", f"{KEY}={DEFAULT_LIMIT}"
        )
        assert "Completed updating default config for brokers in the cluster." in out
        out = kafka_configs(
            broker, "--entity-name", "1", "--alter", "--add-config", f"{KEY}={BROKER_LIMIT}"
        )
        assert "Completed updating config for broker 1." in out
        assert limit_in_force(broker, "limits", BROKER_LIMIT)

        broker.restart()
        # the per-broker value over the cluster default over Kafka's default
        described = kafka_configs(broker, "--entity-name", "1", "--describe")
        assert (
            f"{KEY}={BROKER_LIMIT} sensitive=false synonyms={{"
            f"DYNAMIC_BROKER_CONFIG:{KEY}={BROKER_LIMIT}, "
            f"DYNAMIC_DEFAULT_BROKER_CONFIG:{KEY}={DEFAULT_LIMIT}, "
            f"DEFAULT_CONFIG:{KEY}=1048588}}"
        ) in described
        described = kafka_configs(broker, "--entity-default", "--describe")
        assert (
            "Default configs for brokers in the cluster are:\n"
            f"  {KEY}={DEFAULT_LIMIT} sensitive=false "
            f"synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:{KEY}={DEFAULT_LIMIT}}}\n"
        ) in described
        assert limit_in_force(broker, "limits", BROKER_LIMIT)

        # deleting the broker's value leaves the default in force, after a restart too
        kafka_configs(broker, "--entity-name", "1", "--alter", "--delete-config", KEY)
        assert limit_in_force(broker, "limits", DEFAULT_LIMIT)
        broker.restart()
        assert limit_in_force(broker, "limits", DEFAULT_LIMIT)
        described = kafka_configs(broker, "--entity-name", "1", "--describe")
        assert described.strip() == "Dynamic configs for broker 1 are:"
    finally:
        broker.close()


def log_start(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return low
    finally:
        consumer.close()


def test_retention_defaults_changed_at_runtime_delete_at_once(tmp_path):
    """``log.retention.bytes`` (per broker) and ``log.retention.ms`` (cluster default) changed
    at run time reach topics that do not override them at the next retention pass; a topic
    that overrides the key keeps its records."""
    require_tools()
    overrides = {"node.id": "1", "log.retention.check.interval.ms": "100"}
    with EmbeddedBroker("thread", overrides=overrides, data_dir=tmp_path / "data") as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        tiny = {"internal.segment.bytes": "1000"}
        topics = {
            "by-bytes": NewTopic("by-bytes", 1, 1, config={**tiny, "retention.ms": "-1"}),
            "by-time": NewTopic("by-time", 1, 1, config={**tiny, "retention.bytes": "-1"}),
        }
        for future in admin.create_topics(list(topics.values())).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        for topic in topics:
            for _ in range(20):
                producer.produce(topic, b"x" * 500)
                producer.flush(30)
        time.sleep(0.5)  # five retention passes under Kafka's defaults: nothing goes
        assert [log_start(bootstrap, topic) for topic in topics] == [0, 0]

        kafka_configs(
            broker, "--entity-name", "1", "--alter", "--add-config", "log.retention.bytes=3000"
        )
        wait_for(lambda: log_start(bootstrap, "by-bytes") > 0, 20, 0.1, what="a deletion")
        assert log_start(bootstrap, "by-time") == 0  # its own retention.bytes holds

        kafka_configs(broker, "--entity-default", "--alter", "--add-config", "log.retention.ms=1")
        wait_for(lambda: log_start(bootstrap, "by-time") > 0, 20, 0.1, what="a deletion")
