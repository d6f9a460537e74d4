"""Kafka's own Java tools against wireserver's consumer groups: ``kafka-consumer-groups``
lists, describes and resets offsets (--to-earliest, --to-offset, --shift-by; --dry-run
changes nothing; an active group refuses), a consumer resumes where the reset put it, and
the Java console consumer joins a KIP-848 group (``group.protocol=consumer``), consumes and
commits, and commits and fetches offsets with the versions it uses against Kafka 4.4 (topic ids
in OffsetCommit / OffsetFetch v10 for a consumer-protocol group)."""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests import reference as kafka_reference
from wireserver.testing import EmbeddedBroker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def reference():
    kafka_reference.require_tools()
    return kafka_reference


@pytest.fixture(scope="module")
def kafka():
    with EmbeddedBroker() as broker:
        yield broker


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)


def produce(bootstrap: str, topic: str, partitions: int, count: int) -> None:
    """Record i goes to partition i % partitions with value ``v<i>``."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def consume(bootstrap: str, topic: str, group: str, count: int, timeout: float = 30.0):
    """Join ``group``, read ``count`` records (then a little longer, to catch extras),
    commit and leave. Returns the values read."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[str] = []
    try:
        deadline = time.monotonic() + timeout
        extra_until = None
        while time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
            if len(values) >= count:
                extra_until = extra_until or time.monotonic() + 0.5
                if time.monotonic() > extra_until:
                    break
        if values:
            consumer.commit(asynchronous=False)
        return values
    finally:
        consumer.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p) for p in range(partitions)]
    )
    found = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    return [tp.offset for tp in sorted(found.topic_partitions, key=lambda tp: tp.partition)]


def groups_tool(reference, bootstrap: str, *args: str, ok: bool = True):
    proc = reference.run_tool("kafka-consumer-groups", list(args), bootstrap=bootstrap, timeout=90)
    if ok:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def rows(output: str, topic: str) -> list[list[str]]:
    """The table rows for ``topic``: the columns after GROUP and TOPIC."""
    return sorted(
        (
            line.split()[2:]
            for line in output.splitlines()
            if len(line.split()) > 2 and line.split()[1] == topic
        ),
        key=lambda row: int(row[0]),
    )


def test_list_and_describe(kafka, reference):
    bootstrap = kafka.bootstrap_servers
    create_topic(bootstrap, "tools-describe", 3)
    produce(bootstrap, "tools-describe", 3, 9)
    assert len(consume(bootstrap, "tools-describe", "describe-group", 9)) == 9

    listed = groups_tool(reference, bootstrap, "--list").stdout.split()
    assert "describe-group" in listed

    described = groups_tool(reference, bootstrap, "--describe", "--group", "describe-group")
    # PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID (no members: -)
    assert [row[:5] for row in rows(described.stdout, "tools-describe")] == [
        [str(p), "3", "3", "0", "-"] for p in range(3)
    ]

    state = groups_tool(reference, bootstrap, "--describe", "--group", "describe-group", "--state")
    [line] = [line for line in state.stdout.splitlines() if line.startswith("describe-group")]
    assert line.split()[-2:] == ["Empty", "0"]

    produce(bootstrap, "tools-describe", 3, 3)
    lagging = groups_tool(reference, bootstrap, "--describe", "--group", "describe-group")
    assert [row[1:4] for row in rows(lagging.stdout, "tools-describe")] == [["3", "4", "1"]] * 3


def test_reset_offsets_then_resume(kafka, reference):
    bootstrap = kafka.bootstrap_servers
    topic, group = "tools-reset", "reset-group"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, 2, 12)
    assert len(consume(bootstrap, topic, group, 12)) == 12
    assert committed(bootstrap, group, topic, 2) == [6, 6]

    def reset(*how: str, execute: bool = True) -> list[list[str]]:
        proc = groups_tool(
            reference,
            bootstrap,
            "--reset-offsets",
            "--group",
            group,
            "--topic",
            topic,
            *how,
            "--execute" if execute else "--dry-run",
        )
        return rows(proc.stdout, topic)  # PARTITION NEW-OFFSET

    # --dry-run shows the plan and changes nothing.
    assert reset("--to-earliest", execute=False) == [["0", "0"], ["1", "0"]]
    assert reset("--shift-by", "-2", execute=False) == [["0", "4"], ["1", "4"]]
    assert committed(bootstrap, group, topic, 2) == [6, 6]

    # --to-earliest: the group reads everything again.
    assert reset("--to-earliest") == [["0", "0"], ["1", "0"]]
    assert committed(bootstrap, group, topic, 2) == [0, 0]
    assert sorted(consume(bootstrap, topic, group, 12)) == sorted(f"v{i}" for i in range(12))
    assert committed(bootstrap, group, topic, 2) == [6, 6]

    # --to-offset 4 on both partitions: offsets 4 and 5 of each.
    assert reset("--to-offset", "4") == [["0", "4"], ["1", "4"]]
    assert sorted(consume(bootstrap, topic, group, 4)) == sorted(["v8", "v9", "v10", "v11"])

    # --shift-by -2 from the end (6): the last two of each partition again.
    assert reset("--shift-by", "-2") == [["0", "4"], ["1", "4"]]
    assert sorted(consume(bootstrap, topic, group, 4)) == sorted(["v8", "v9", "v10", "v11"])
    assert committed(bootstrap, group, topic, 2) == [6, 6]

    # A group with an active member cannot be reset.
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert consumer.assignment()
        refused = groups_tool(
            reference,
            bootstrap,
            "--reset-offsets",
            "--group",
            group,
            "--topic",
            topic,
            "--to-earliest",
            "--execute",
            ok=False,
        )
        assert "inactive" in refused.stdout + refused.stderr
    finally:
        consumer.close()
    assert committed(bootstrap, group, topic, 2) == [6, 6]


def test_java_console_consumer_kip848_commits(kafka, reference):
    bootstrap = kafka.bootstrap_servers
    topic, group = "tools-kip848", "java-kip848"
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, 3, 30)
    proc = reference.run_tool(
        "kafka-console-consumer",
        [
            "--topic",
            topic,
            "--group",
            group,
            "--from-beginning",
            "--max-messages",
            "30",
            "--timeout-ms",
            "60000",
            "--consumer-property",
            "group.protocol=consumer",
        ],
        bootstrap=bootstrap,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(line for line in proc.stdout.splitlines() if line.startswith("v")) == sorted(
        f"v{i}" for i in range(30)
    )

    # It committed on close: kafka-consumer-groups shows every partition at its end, no lag.
    described = groups_tool(reference, bootstrap, "--describe", "--group", group)
    assert [row[:4] for row in rows(described.stdout, topic)] == [
        [str(p), "10", "10", "0"] for p in range(3)
    ]
    assert committed(bootstrap, group, topic, 3) == [10, 10, 10]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found = admin.describe_consumer_groups([group])[group].result(timeout=30)
    assert str(found.type).endswith("CONSUMER") and not found.members

    # A second KIP-848 run in the same group reads only what came after the commit.
    produce(bootstrap, topic, 3, 6)
    again = reference.run_tool(
        "kafka-console-consumer",
        [
            "--topic",
            topic,
            "--group",
            group,
            "--max-messages",
            "6",
            "--timeout-ms",
            "60000",
            "--consumer-property",
            "group.protocol=consumer",
        ],
        bootstrap=bootstrap,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(line for line in again.stdout.splitlines() if line.startswith("v")) == sorted(
        f"v{i}" for i in range(6)
    )
    assert committed(bootstrap, group, topic, 3) == [12, 12, 12]


#: The Java client's NetworkClient at DEBUG (it logs each request's header) on stderr.
DEBUG_REQUESTS_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn">
  <Appenders>
    <Console name="stderr" target="SYSTEM_ERR"><PatternLayout pattern="%p %m%n"/></Console>
  </Appenders>
  <Loggers>
    <Logger name="org.apache.kafka.clients.NetworkClient" level="debug"/>
    <Root level="warn"><AppenderRef ref="stderr"/></Root>
  </Loggers>
</Configuration>
"""
SENT = re.compile(r"Sending (\w+) request with header RequestHeader\(apiKey=\w+, apiVersion=(\d+)")


def console_consume(reference, log_config, bootstrap, topic, group, count, protocol, *extra):
    """Run kafka-console-consumer in ``group`` until it read ``count`` records (it commits on
    close): the values it printed and {request name: versions it sent}."""
    args = ["--topic", topic, "--group", group, "--max-messages", str(count), *extra]
    args += ["--timeout-ms", "60000", "--consumer-property", f"group.protocol={protocol}"]
    command = [
        f"-Dlog4j2.configurationFile={log_config}"
        if part.startswith("-Dlog4j2.configurationFile=")
        else part
        for part in reference.tool_command(
            "kafka-console-consumer", [*args, "--bootstrap-server", bootstrap]
        )
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sent: dict[str, set[int]] = {}
    for name, version in SENT.findall(proc.stderr):
        sent.setdefault(name, set()).add(int(version))
    return sorted(line for line in proc.stdout.splitlines() if line.startswith("v")), sent


@pytest.mark.parametrize("protocol,version", [("classic", 9), ("consumer", 10)])
def test_java_consumer_commits_and_resumes_with_kafka_44_versions(
    kafka, reference, tmp_path, protocol, version
):
    """Kafka 4.4's consumer commits and fetches by topic id (v10) in a consumer-protocol group;
    its classic coordinator still builds them by name (v9), against Kafka as against us."""
    bootstrap = kafka.bootstrap_servers
    topic, group = f"tools-v10-{protocol}", f"java-v10-{protocol}"
    log_config = tmp_path / "log4j2.xml"
    log_config.write_text(DEBUG_REQUESTS_LOG4J2)
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, 2, 10)
    values, sent = console_consume(
        reference, log_config, bootstrap, topic, group, 10, protocol, "--from-beginning"
    )
    assert values == sorted(f"v{i}" for i in range(10))
    assert sent["OFFSET_FETCH"] == sent["OFFSET_COMMIT"] == {version}
    assert committed(bootstrap, group, topic, 2) == [5, 5]

    # A restarted consumer fetches the commit and reads only what came after it.
    produce(bootstrap, topic, 2, 4)
    values, sent = console_consume(reference, log_config, bootstrap, topic, group, 4, protocol)
    assert values == sorted(f"v{i}" for i in range(4))
    assert sent["OFFSET_FETCH"] == sent["OFFSET_COMMIT"] == {version}
    assert committed(bootstrap, group, topic, 2) == [7, 7]


def configs_tool(reference, bootstrap: str, *args: str):
    proc = reference.run_tool("kafka-configs", list(args), bootstrap=bootstrap, timeout=90)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_kafka_configs_on_groups(kafka, reference):
    """kafka-configs --entity-type groups: set, describe (it asks ListConfigResources for a
    group that has configs but no members) and delete a group's configs."""
    bootstrap = kafka.bootstrap_servers
    group = "configured-only"
    assert (
        configs_tool(
            reference,
            bootstrap,
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            group,
            "--add-config",
            "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000",
        ).strip()
        == f"Completed updating config for group {group}."
    )
    lines = [
        f"Dynamic configs for group {group} are:",
        "  consumer.heartbeat.interval.ms=6000 sensitive=false "
        "synonyms={DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=6000, "
        "DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}",
        "  consumer.session.timeout.ms=50000 sensitive=false "
        "synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, "
        "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}",
    ]  # as Kafka 4.4 lists them
    assert (
        configs_tool(
            reference, bootstrap, "--describe", "--entity-type", "groups", "--entity-name", group
        ).splitlines()
        == lines
    )
    every = configs_tool(reference, bootstrap, "--describe", "--entity-type", "groups")
    assert "\n".join(lines) in every
    assert configs_tool(
        reference,
        bootstrap,
        "--describe",
        "--entity-type",
        "groups",
        "--entity-name",
        "no-such-group",
    ).strip() == ("The group 'no-such-group' doesn't exist and doesn't have dynamic config.")
    configs_tool(
        reference,
        bootstrap,
        "--alter",
        "--entity-type",
        "groups",
        "--entity-name",
        group,
        "--delete-config",
        "consumer.heartbeat.interval.ms",
    )
    assert (
        configs_tool(
            reference, bootstrap, "--describe", "--entity-type", "groups", "--entity-name", group
        ).splitlines()
        == lines[::2]
    )
    # with none left the group is forgotten, as Kafka 4.4 does
    configs_tool(
        reference,
        bootstrap,
        "--alter",
        "--entity-type",
        "groups",
        "--entity-name",
        group,
        "--delete-config",
        "consumer.session.timeout.ms",
    )
    assert (
        configs_tool(
            reference, bootstrap, "--describe", "--entity-type", "groups", "--entity-name", group
        ).strip()
        == f"The group '{group}' doesn't exist and doesn't have dynamic config."
    )
