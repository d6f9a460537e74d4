"""Smoke tests for the reference Apache Kafka (compat_tests/reference).

They prove that the reference broker the compatibility suite compares
wireserver against really starts, and that both client stacks the suite uses
work against it: kafka-python, and Kafka's own Java CLI tools run from the
same cached jars. The three-node test is the slow one (~20-60 s on 2 cores).
"""

from __future__ import annotations

import os
import re
import time
import uuid
import zipfile
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from compat_tests.reference import (
    DEFAULT_KAFKA_VERSION,
    KAFKA_VERSION,
    TOOLS,
    reference_kafka,
    resolve,
    run_tool,
)
from compat_tests.reference.launcher import current_options, new_cluster_id

pytestmark = pytest.mark.integration


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def ref():
    started = time.monotonic()
    with reference_kafka(nodes=1) as reference:
        print(
            f"\n[reference] kind={reference.kind} version={reference.version} "
            f"bootstrap={reference.bootstrap_servers} "
            f"ready in {time.monotonic() - started:.1f}s"
        )
        yield reference


@pytest.fixture
def admin(ref):
    client = KafkaAdminClient(bootstrap_servers=ref.bootstrap_servers, client_id="reference-smoke")
    yield client
    client.close()


# ----------------------------------------------------------------- resolution


def test_pom_pins_the_same_version_as_the_code():
    """The pom's default is the code's (``WIRESERVER_KAFKA_VERSION`` picks another at run
    time, passed to Maven as ``-Dkafka.version``)."""
    pom = (Path(__file__).parent / "reference" / "pom.xml").read_text()
    assert f"<kafka.version>{DEFAULT_KAFKA_VERSION}</kafka.version>" in pom
    assert KAFKA_VERSION.startswith("4.")


def test_every_tool_main_class_is_in_the_jars():
    lib = resolve()
    classes = set()
    for jar in lib.glob("*.jar"):
        if jar.name.startswith(("kafka_2.13-", "kafka-tools-")):
            with zipfile.ZipFile(jar) as z:
                classes.update(
                    n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class")
                )
    missing = {tool: cls for tool, cls in TOOLS.items() if cls not in classes}
    assert not missing
    # the logging binding the pom adds on purpose
    assert any(j.name.startswith("log4j-slf4j2-impl-") for j in lib.glob("*.jar"))
    assert any(j.name.startswith("slf4j-api-2.") for j in lib.glob("*.jar"))


def test_renamed_options_follow_the_release():
    args = ["--consumer-property", "a=b", "--property", "print.key=true", "--topic", "t"]
    assert current_options("kafka-console-consumer", args, "4.1.1") == args
    assert current_options("kafka-console-consumer", args, "4.4.0") == [
        "--command-property",
        "a=b",
        "--formatter-property",
        "print.key=true",
        "--topic",
        "t",
    ]


def test_cluster_ids_are_safe_for_the_storage_tool():
    # 1 in 64 random ids starts with "-", which kafka-storage parses as an option.
    ids = [new_cluster_id() for _ in range(5000)]
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


# ----------------------------------------------------------------- one node


def test_metadata_lists_one_broker(ref, admin):
    cluster = admin.describe_cluster()
    assert len(cluster["brokers"]) >= 1
    if ref.kind == "local":
        assert [b["broker_id"] for b in cluster["brokers"]] == [0]
        assert ref.cluster.startup_seconds is not None
        print(f"\n[reference] 1-node startup {ref.cluster.startup_seconds:.1f}s")


def test_kafka_python_create_produce_consume(ref, admin):
    topic = _name("smoke-py")
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    producer = KafkaProducer(bootstrap_servers=ref.bootstrap_servers, acks="all")
    sent = [f"py-{i}".encode() for i in range(6)]
    for i, value in enumerate(sent):
        producer.send(topic, key=str(i).encode(), value=value).get(timeout=30)
    producer.close()

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=ref.bootstrap_servers,
        group_id=_name("smoke-py-group"),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    got = []
    deadline = time.monotonic() + 45
    while len(got) < len(sent) and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            got.extend(r.value for r in records)
    consumer.close()
    assert sorted(got) == sorted(sent)

    # The Java console consumer reads what kafka-python wrote.
    out = run_tool(
        "kafka-console-consumer",
        [
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            str(len(sent)),
            "--timeout-ms",
            "30000",
        ],
        bootstrap=ref.bootstrap_servers,
        timeout=90,
    )
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split()) == sorted(v.decode() for v in sent)


def test_java_console_producer_and_consumer(ref, admin):
    topic = _name("smoke-java")
    created = run_tool(
        "kafka-topics",
        ["--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1"],
        bootstrap=ref.bootstrap_servers,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    assert f"Created topic {topic}." in created.stdout

    lines = [f"java-{i}" for i in range(5)]
    produced = run_tool(
        "kafka-console-producer",
        ["--topic", topic],
        input="\n".join(lines) + "\n",
        bootstrap=ref.bootstrap_servers,
        timeout=60,
    )
    assert produced.returncode == 0, produced.stderr

    consumed = run_tool(
        "kafka-console-consumer",
        [
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            str(len(lines)),
            "--timeout-ms",
            "30000",
            "--group",
            _name("smoke-java-group"),
            "--consumer-property",
            "client.id=smoke",
            "--property",
            "print.key=false",
        ],
        bootstrap=ref.bootstrap_servers,
        timeout=90,
    )
    assert consumed.returncode == 0, consumed.stderr
    # one partition: order is kept; and no "Option ... is deprecated" line (4.2+ names)
    assert consumed.stdout.split("\n")[:-1] == lines

    # kafka-python reads what the Java producer wrote.
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=ref.bootstrap_servers,
        group_id=None,
        auto_offset_reset="earliest",
        consumer_timeout_ms=15000,
    )
    got = []
    for record in consumer:  # stops after 15 s without a record at worst
        got.append(record.value.decode())
        if len(got) == len(lines):
            break
    consumer.close()
    assert got == lines


def test_kafka_topics_describe(ref, admin):
    topic = _name("smoke-describe")
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    out = run_tool(
        "kafka-topics",
        ["--describe", "--topic", topic],
        bootstrap=ref.bootstrap_servers,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert re.search(
        rf"Topic: {topic}\s+TopicId: \S+\s+PartitionCount: 3\s+"
        rf"ReplicationFactor: 1",
        out.stdout,
    ), out.stdout
    assert len(re.findall(r"Partition: \d+\s+Leader: \d+", out.stdout)) == 3


# ----------------------------------------------------------------- three nodes (slow)


def three_node_cluster():
    """SLOW (~20-60 s): a 3-node KRaft quorum, a replication-factor-3 topic,
    and one node restarted through the fault API. Collected only with
    ``WIRESERVER_COMPAT_LONG=1`` (scripts/compat): in CI, test_cluster_compat.py starts the same
    3-node reference and runs its scenarios on it."""
    started = time.monotonic()
    with reference_kafka(nodes=3, controllable=True) as ref:
        cluster = ref.cluster
        print(f"\n[reference] 3-node startup {cluster.startup_seconds:.1f}s")
        admin = KafkaAdminClient(
            bootstrap_servers=ref.bootstrap_servers, client_id="reference-smoke-3"
        )
        try:
            brokers = admin.describe_cluster()["brokers"]
            assert sorted(b["broker_id"] for b in brokers) == [0, 1, 2]

            topic = _name("smoke-rf3")
            admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])
            out = run_tool(
                "kafka-topics",
                ["--describe", "--topic", topic],
                bootstrap=ref.bootstrap_servers,
                timeout=60,
            )
            assert out.returncode == 0, out.stderr
            assert "ReplicationFactor: 3" in out.stdout, out.stdout
            replicas = re.findall(r"Replicas: ([\d,]+)", out.stdout)
            assert len(replicas) == 3
            assert all(sorted(r.split(",")) == ["0", "1", "2"] for r in replicas)

            producer = KafkaProducer(bootstrap_servers=ref.bootstrap_servers, acks="all")
            producer.send(topic, b"before-restart").get(timeout=30)

            t = time.monotonic()
            cluster.restart(2, graceful=False)  # SIGKILL, then start and rejoin
            print(f"[reference] node 2 kill+restart {time.monotonic() - t:.1f}s")
            assert sorted(cluster.running_nodes()) == [0, 1, 2]

            producer.send(topic, b"after-restart").get(timeout=30)
            producer.close()
        finally:
            admin.close()
    print(f"[reference] 3-node test total {time.monotonic() - started:.1f}s")


if os.environ.get("WIRESERVER_COMPAT_LONG") == "1":
    test_three_node_cluster_slow = three_node_cluster
