"""``kafka_cluster`` as a project's tests see it, driven with kafka-python: three brokers in
Metadata, a replicated topic written and read, the shared cluster tidied between tests (topics
gone, a killed broker back), a marked test's cluster of its own (subprocesses, or brokers on
the test process's reactor thread); and what happens without ZooKeeper (a skip naming why, a
failure under ``CI=true``)."""

from __future__ import annotations

import os

import pytest

from tests.testing.userrun import NOTE, read_notes, run_user_tests
from wireserver.cluster.zookeeper import available

CLUSTER_TESTS = (
    NOTE
    + """
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient


def admin_of(cluster):
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap)


def broker_ids(cluster):
    admin = admin_of(cluster)
    ids = sorted(broker["broker_id"] for broker in admin.describe_cluster()["brokers"])
    admin.close()
    return ids


def test_three_brokers_and_a_replicated_topic(kafka_cluster):
    note("bootstrap", kafka_cluster.bootstrap)
    assert broker_ids(kafka_cluster) == [1, 2, 3]
    admin = admin_of(kafka_cluster)
    admin.create_topics(
        {"replicated": {"num_partitions": 2, "replication_factor": 3}}, wait_for_metadata=True
    )
    [topic] = admin.describe_topics(["replicated"])
    admin.close()
    assert [sorted(p["replica_nodes"]) for p in topic["partitions"]] == [[1, 2, 3]] * 2
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap, acks="all")
    for value in (b"a", b"b", b"c"):
        producer.send("replicated", value, partition=0).get(20)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=kafka_cluster.bootstrap, group_id=None,
                             auto_offset_reset="earliest", consumer_timeout_ms=20000)
    consumer.assign([TopicPartition("replicated", 0)])
    assert [next(consumer).value for _ in range(3)] == [b"a", b"b", b"c"]
    consumer.close()
    kafka_cluster.brokers[3].kill()  # the next test gets all three again


def test_the_next_test_gets_it_whole_and_empty(kafka_cluster):
    note("bootstrap", kafka_cluster.bootstrap)
    assert all(broker.running for broker in kafka_cluster.brokers.values())
    assert broker_ids(kafka_cluster) == [1, 2, 3]
    admin = admin_of(kafka_cluster)
    assert [name for name in admin.list_topics() if not name.startswith("__")] == []
    admin.close()


@pytest.mark.wireserver(brokers=2, overrides={"default.replication.factor": 2})
def test_a_cluster_of_its_own(kafka_cluster, kafka_cluster_session):
    note("own", kafka_cluster.bootstrap)
    assert kafka_cluster is not kafka_cluster_session
    assert kafka_cluster.zk_connect != kafka_cluster_session.zk_connect  # its own chroot
    assert broker_ids(kafka_cluster) == [1, 2]
    admin = admin_of(kafka_cluster)
    admin.create_topics({"defaults": {}}, wait_for_metadata=True)
    [topic] = admin.describe_topics(["defaults"])
    admin.close()
    assert len(topic["partitions"][0]["replica_nodes"]) == 2


@pytest.mark.wireserver(mode="thread")
def test_a_thread_mode_cluster(kafka_cluster):
    note("own", kafka_cluster.bootstrap)
    assert {broker.mode for broker in kafka_cluster.brokers.values()} == {"thread"}
    assert broker_ids(kafka_cluster) == [1, 2, 3]
    admin = admin_of(kafka_cluster)
    admin.create_topics({"in-process": {"replication_factor": 3}}, wait_for_metadata=True)
    admin.close()
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap, acks="all")
    producer.send("in-process", b"replicated", partition=0).get(20)
    producer.close()
"""
)


def test_kafka_cluster(pytester):
    if not available():
        if os.environ.get("CI") == "true":
            pytest.fail("ZooKeeper is not installed (scripts/test installs it)")
        pytest.skip("ZooKeeper is not installed (apt-get install zookeeper)")
    result = run_user_tests(pytester, CLUSTER_TESTS, timeout=300)
    result.assert_outcomes(passed=4)
    notes = read_notes(pytester)
    shared_before, shared_after = notes["bootstrap"]
    assert shared_before == shared_after  # the same brokers, on the same ports
    assert len(shared_before.split(",")) == 3
    for own in notes["own"]:
        assert not set(own.split(",")) & set(shared_before.split(","))


NEEDS_ZOOKEEPER = """
def test_needs_a_cluster(kafka_cluster):
    pass
"""


@pytest.mark.parametrize("ci", ["true", None], ids=["CI", "not-CI"])
def test_without_zookeeper(pytester, monkeypatch, ci):
    """No ``java`` on the PATH: the ZooKeeper fixture cannot run."""
    monkeypatch.setenv("PATH", str(pytester.path / "no-such-bin"))
    if ci:
        monkeypatch.setenv("CI", ci)
    else:
        monkeypatch.delenv("CI", raising=False)
    result = run_user_tests(pytester, NEEDS_ZOOKEEPER)
    if ci:
        result.assert_outcomes(errors=1)
    else:
        result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*kafka_cluster needs ZooKeeper (apt-get install zookeeper)*"])
