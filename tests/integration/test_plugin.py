"""The pytest plugin and the KafkaContainer stand-in, used the way a project's tests would."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from wireserver.testing import EmbeddedBroker, KafkaContainer, KafkaWireError, wait_for


def produce_and_consume(bootstrap: str, topic: str, count: int = 5, partition: int = 0) -> list:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=[bootstrap], enable_idempotence=False)
    for i in range(count):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=partition)
    producer.flush(10)
    producer.close(10)
    consumer = KafkaConsumer(
        bootstrap_servers=[bootstrap],
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    consumer.assign([TopicPartition(topic, partition)])
    got: list = []
    deadline = time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            got.extend((m.key, m.value) for m in records)
    consumer.close()
    return got


def test_kafka_broker_fixture(kafka_broker, kafka_bootstrap):
    assert kafka_bootstrap == kafka_broker.bootstrap_servers
    kafka_broker.create_topic("orders", partitions=4, configs={"retention.ms": 60000})
    assert "orders" in kafka_broker.topics()
    with pytest.raises(KafkaWireError) as exists:
        kafka_broker.create_topic("orders")
    assert exists.value.error_code == 36  # TOPIC_ALREADY_EXISTS
    assert produce_and_consume(kafka_bootstrap, "orders", partition=3) == [
        (b"k%d" % i, b"v%d" % i) for i in range(5)
    ]


def test_delete_all_topics(broker):
    for name in ("a", "b", "c"):
        broker.create_topic(f"wipe-{name}", partitions=2)
    assert {"wipe-a", "wipe-b", "wipe-c"} <= set(broker.topics())
    deleted = broker.delete_all_topics()
    assert {"wipe-a", "wipe-b", "wipe-c"} <= set(deleted)
    assert broker.topics() == []
    # A topic created again under the same name starts empty.
    assert produce_and_consume(broker.bootstrap_servers, "wipe-a", count=2) == [
        (b"k0", b"v0"),
        (b"k1", b"v1"),
    ]
    broker.delete_all_topics()


PLUGIN_USER_TESTS = """
from kafka import KafkaProducer


def test_first_leaves_a_topic(kafka_broker, kafka_bootstrap):
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, enable_idempotence=False)
    producer.send("leftover", b"x").get(10)
    producer.close()
    assert kafka_broker.topics() == ["leftover"]


def test_second_starts_clean(kafka_broker):
    assert kafka_broker.topics() == []


def test_same_broker_for_the_session(kafka_broker_session, kafka_bootstrap):
    assert kafka_bootstrap == kafka_broker_session.bootstrap_servers
"""


@pytest.mark.parametrize("mode", ["thread", "subprocess", "external"])
def test_plugin_in_a_user_project(tmp_path, mode):
    """A project with wireserver installed gets the fixtures with no conftest at all (the
    pytest11 entry point), and each test starts with no topics. ``external`` points the
    fixtures at a broker that is already running (``--kafka-bootstrap``). The shared broker
    is asked for in thread mode too (``--wireserver-fresh=false``); tests/testing/ runs the
    fixtures in each of their ways."""
    (tmp_path / "test_user.py").write_text(textwrap.dedent(PLUGIN_USER_TESTS))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    with EmbeddedBroker() as running:
        option = (
            f"--kafka-bootstrap={running.bootstrap_servers}"
            if mode == "external"
            else f"--wireserver-mode={mode}"
        )
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                option,
                "--wireserver-fresh=false",
                "test_user.py",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "3 passed" in result.stdout
        assert running.topics() == []  # the external broker was cleaned up too


def test_kafka_container_drop_in():
    """What a testcontainers-based test looks like after changing only its import."""
    with (
        KafkaContainer("confluentinc/cp-kafka:7.6.0")
        .with_env("KAFKA_NUM_PARTITIONS", "2")
        .with_env("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "true") as kafka
    ):
        bootstrap = kafka.get_bootstrap_server()
        host, port = bootstrap.rsplit(":", 1)
        assert host == kafka.get_container_host_ip() and int(port) == kafka.get_exposed_port(9093)
        assert produce_and_consume(bootstrap, "tc-topic", partition=1) == [
            (b"k%d" % i, b"v%d" % i) for i in range(5)
        ]
    with pytest.raises(ConnectionRefusedError):  # stopped with the block
        socket.create_connection((host, int(port)), timeout=5)


def test_kafka_container_start_stop():
    container = KafkaContainer()
    container.start()
    try:
        assert produce_and_consume(container.get_bootstrap_server(), "t") == [
            (b"k%d" % i, b"v%d" % i) for i in range(5)
        ]
    finally:
        container.stop()


def test_kafka_container_has_controls():
    """The stand-in does what the Docker container cannot: a broker that goes down and comes
    back on the same address with its data."""
    from kafka import KafkaConsumer

    with KafkaContainer() as kafka:
        bootstrap = kafka.get_bootstrap_server()
        host, port = bootstrap.rsplit(":", 1)
        produce_and_consume(bootstrap, "kept", count=2)
        with kafka.controls.down():
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((host, int(port)), timeout=5)
        consumer = KafkaConsumer(
            "kept", bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
        )
        try:
            assert wait_for(lambda: consumer.poll(timeout_ms=500), 20, what="kept records")
        finally:
            consumer.close()


@pytest.mark.parametrize("mode", ["thread", "subprocess"])
def test_restart_keeps_port_and_data(mode, tmp_path):
    data_dir = tmp_path / "kept"
    with EmbeddedBroker(mode, data_dir=data_dir) as kafka:
        bootstrap = kafka.bootstrap_servers
        produce_and_consume(bootstrap, "kept", count=3)
        kafka.restart()
        assert kafka.bootstrap_servers == bootstrap
        assert produce_and_consume(bootstrap, "kept", count=6)[:3] == [
            (b"k%d" % i, b"v%d" % i) for i in range(3)
        ]
    assert data_dir.is_dir()  # a data dir we passed in is kept
    assert (data_dir / "meta.properties").exists()


def test_several_thread_brokers_at_once():
    """One reactor thread hosts any number of brokers, started and stopped independently."""
    brokers = [EmbeddedBroker().start() for _ in range(3)]
    try:
        assert len({b.port for b in brokers}) == 3
        brokers[1].close()
        for b in (brokers[0], brokers[2]):
            b.create_topic("mine")
            assert b.topics() == ["mine"]
    finally:
        for b in brokers:
            b.close()


def test_bad_config_fails_fast():
    from wireserver.storage.configdef import ConfigValueError

    with pytest.raises(ConfigValueError):
        EmbeddedBroker(overrides={"num.partitions": "zero"}).start()
    broker = EmbeddedBroker("subprocess", overrides={"num.partitions": "zero"})
    with pytest.raises(Exception) as failed:
        broker.start()
    assert "num.partitions" in str(failed.value)
    broker.close()
