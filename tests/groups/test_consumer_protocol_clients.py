"""The consumer group protocol (KIP-848) with real clients on a real broker: librdkafka
(confluent-kafka, ``group.protocol=consumer``) and the Java 4.x consumer through Kafka's
console consumer, plus ConsumerGroupDescribe and ListGroups through the admin client."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from wireserver.testing import EmbeddedBroker  # noqa: E402

OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
}
PARTITIONS = 6


@pytest.fixture(scope="module")
def kafka():
    with EmbeddedBroker(overrides=OVERRIDES) as broker:
        yield broker


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, value=str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


class Tracked:
    """A KIP-848 member that notes what it owns and the values it is given. ``decode`` turns a
    value into what ``values`` keeps: the tests' own topics hold decimal numbers, but a member
    subscribed to ``__consumer_offsets`` is given binary records (its own auto-commits among
    them) and keeps them as they are."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str, decode=int):
        self.name = name
        self.decode = decode
        self.owned: set[int] = set()
        self.values: list = []
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 200,
            }
        )
        self.consumer.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke)

    def _assign(self, consumer, partitions):
        self.owned |= {p.partition for p in partitions}

    def _revoke(self, consumer, partitions):
        self.owned -= {p.partition for p in partitions}

    def poll(self) -> None:
        message = self.consumer.poll(0.05)
        if message is not None and message.error() is None:
            self.values.append(self.decode(message.value()))


def poll_until(members, condition, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
        if condition():
            return
    raise AssertionError(
        f"timed out waiting for {what}: "
        + ", ".join(f"{m.name} owns {sorted(m.owned)}" for m in members)
    )


def exclusive_and_complete(members) -> bool:
    owned = [p for m in members for p in m.owned]
    return len(owned) == len(set(owned)) == PARTITIONS and all(m.owned for m in members)


def settled(members, sizes: list[int]) -> bool:
    """Every partition owned once, in the uniform assignor's shares. Exclusive and complete
    alone is not settled: a member still holding a partition it is about to revoke and one
    not yet given its second can add up to every partition ([1, 2, 3] on the way to [2, 2,
    2])."""
    return exclusive_and_complete(members) and sorted(len(m.owned) for m in members) == sizes


def test_confluent_consumers_share_partitions_and_take_over_on_leave(kafka):
    bootstrap = kafka.bootstrap_servers
    create_topic(bootstrap, "kip848")
    members = [Tracked(bootstrap, "g848", "kip848", f"c{i}") for i in range(3)]
    try:
        poll_until(members, lambda: settled(members, [2, 2, 2]), what="3 members settled")
        produce(bootstrap, "kip848", 0, 600)
        poll_until(members, lambda: sum(len(m.values) for m in members) >= 600, what="600 records")
        everything = [v for m in members for v in m.values]
        assert sorted(everything) == list(range(600)), "each record exactly once"
        for m in members:
            assert {v % PARTITIONS for v in m.values} <= m.owned

        # ConsumerGroupDescribe and ListGroups through the admin client.
        admin = AdminClient({"bootstrap.servers": bootstrap})
        described = admin.describe_consumer_groups(["g848"])["g848"].result(timeout=30)
        assert str(described.type).endswith("CONSUMER")
        assert len(described.members) == 3
        assignments = sorted(
            tp.partition
            for member in described.members
            for tp in member.assignment.topic_partitions
        )
        assert assignments == list(range(PARTITIONS))
        listed = admin.list_consumer_groups().result(timeout=30)
        assert any(g.group_id == "g848" and str(g.type).endswith("CONSUMER") for g in listed.valid)

        # One member leaves: its partitions go to the other two, nothing is owned twice.
        gone = members.pop()
        gone.consumer.close()
        poll_until(members, lambda: settled(members, [3, 3]), what="2 members settled")
        produce(bootstrap, "kip848", 600, 300)
        poll_until(
            members,
            lambda: (
                sum(len(v) for v in [[x for x in m.values if x >= 600] for m in members]) >= 300
            ),
            what="300 more records",
        )
        later = [v for m in members for v in m.values if v >= 600]
        assert sorted(later) == list(range(600, 900))
    finally:
        for m in members:
            m.consumer.close()


def test_java_console_consumer_with_consumer_protocol(kafka):
    from compat_tests import reference

    try:
        reference.resolve()
    except Exception as exc:  # noqa: BLE001 - no JVM or jars on this machine
        if reference.must_not_skip():
            pytest.fail(f"no Kafka CLI tools under CI: {exc}")
        pytest.skip(f"no Kafka CLI tools: {exc}")
    bootstrap = kafka.bootstrap_servers
    create_topic(bootstrap, "kip848-java", 3)
    produce_count = 30
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(produce_count):
        producer.produce("kip848-java", value=f"v{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    proc = reference.run_tool(
        "kafka-console-consumer",
        [
            "--topic",
            "kip848-java",
            "--group",
            "java848",
            "--from-beginning",
            "--max-messages",
            str(produce_count),
            "--timeout-ms",
            "60000",
            "--consumer-property",
            "group.protocol=consumer",
        ],
        bootstrap=bootstrap,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("v")]
    assert sorted(lines) == sorted(f"v{i}" for i in range(produce_count))
    # The group is a consumer group that committed its offsets.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups(["java848"])["java848"].result(timeout=30)
    assert str(described.type).endswith("CONSUMER")


def test_regex_subscription_includes_internal_topics(kafka):
    """A KIP-848 regex subscription is resolved by the broker against every topic, internal
    ones included, as Kafka's coordinator does: a member subscribed to ``^__consumer_off.*``
    is assigned every partition of ``__consumer_offsets`` (they used to be left out)."""
    bootstrap = kafka.bootstrap_servers
    member = Tracked(bootstrap, "g848-internal", "^__consumer_off.*", "internal", decode=bytes)
    try:
        poll_until([member], lambda: member.owned, what="a first assignment")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        partitions = len(
            admin.list_topics("__consumer_offsets", timeout=30)
            .topics["__consumer_offsets"]
            .partitions
        )
        poll_until(
            [member],
            lambda: len(member.owned) == partitions,
            what="every __consumer_offsets partition",
        )
        assignment = member.consumer.assignment()
        assert {tp.topic for tp in assignment} == {"__consumer_offsets"}
        assert sorted(tp.partition for tp in assignment) == list(range(partitions))
    finally:
        member.consumer.close()


def test_regex_subscription_leaves_out_topics_the_member_cannot_describe():
    """With ACLs, the broker resolves a regex subscription to the matching topics the member's
    principal may DESCRIBE, as Kafka's coordinator does; the others are not assigned (they used
    to be: librdkafka, unable to describe them, left them out, but nobody else got them)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    with EmbeddedBroker(
        sasl="PLAIN", users={"alice": "alice-secret"}, authorizer=True, overrides=OVERRIDES
    ) as broker:
        broker.create_topic("rx-visible", partitions=2)
        broker.create_topic("rx-hidden", partitions=2)
        admin_name, admin_password = broker.admin_user
        sasl = {
            "bootstrap.servers": broker.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
        }
        admin = AdminClient({**sasl, "sasl.username": admin_name, "sasl.password": admin_password})
        allow = [(ResourceType.GROUP, "g-rx"), (ResourceType.TOPIC, "rx-visible")]
        for future in admin.create_acls(
            [
                AclBinding(
                    kind,
                    name,
                    ResourcePatternType.LITERAL,
                    "User:alice",
                    "*",
                    AclOperation.READ,
                    AclPermissionType.ALLOW,
                )
                for kind, name in allow
            ]
        ).values():
            future.result(timeout=30)
        consumer = Consumer(
            {
                **sasl,
                "sasl.username": "alice",
                "sasl.password": "alice-secret",
                "group.id": "g-rx",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.subscribe(["^rx-.*"])
            deadline = time.monotonic() + 30
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(0.1)
            end = time.monotonic() + 2  # any later assignment would arrive meanwhile
            while time.monotonic() < end:
                consumer.poll(0.1)
            visible = [("rx-visible", 0), ("rx-visible", 1)]
            assert sorted((tp.topic, tp.partition) for tp in consumer.assignment()) == visible
            # What the coordinator assigned, as the admin (a super user) sees it.
            [member] = admin.describe_consumer_groups(["g-rx"])["g-rx"].result(timeout=30).members
            assert (
                sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions)
                == visible
            )
        finally:
            consumer.close()


def test_an_empty_consumer_group_goes_back_to_the_classic_protocol(kafka):
    """A group whose consumer-protocol members all left is taken by a classic consumer
    (kafka-python, JoinGroup): it becomes a classic group and resumes from the offsets the
    consumer-protocol members committed."""
    from kafka import KafkaConsumer, TopicPartition

    bootstrap = kafka.bootstrap_servers
    create_topic(bootstrap, "back-to-classic", 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce("back-to-classic", value=str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    modern = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "back",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    modern.subscribe(["back-to-classic"])
    seen = []
    deadline = time.monotonic() + 60
    while len(seen) < 4 and time.monotonic() < deadline:
        message = modern.poll(0.2)
        if message is not None and message.error() is None:
            seen.append(int(message.value()))
    assert seen[:4] == [0, 1, 2, 3]
    modern.commit(message, asynchronous=False)  # offset 4: the next record to read
    modern.close()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups(["back"])["back"].result(timeout=30)
    assert str(described.type).endswith("CONSUMER") and not described.members

    classic = KafkaConsumer(
        "back-to-classic",
        bootstrap_servers=bootstrap,
        group_id="back",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10000,
    )
    try:
        values = [int(record.value) for record in classic]
        assert values == list(range(4, 10))
        assert classic.committed(TopicPartition("back-to-classic", 0)) == 4
    finally:
        classic.close()
    described = admin.describe_consumer_groups(["back"])["back"].result(timeout=30)
    assert str(described.type).endswith("CLASSIC")
