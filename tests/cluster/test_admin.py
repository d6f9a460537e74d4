"""Topic administration and group metadata on a 3-broker cluster, each admin request sent to
one chosen broker (raw requests, so that the client does not route it to the controller):
DeleteTopics, CreatePartitions and IncrementalAlterConfigs reach every broker through
ZooKeeper, as in Kafka's ZooKeeper era; JoinGroup/SyncGroup answers wait until the group's
record is replicated, so a new coordinator has the group."""

from __future__ import annotations

import json
import os

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from tests.cluster.conftest import Cluster, wait_for, zk_client
from tests.cluster.coordinators import find_coordinator
from tests.cluster.topics import create, log_dirs, records_on_disk, send, topic_error
from tests.integration import raw
from wireserver.protocol.served import SERVED
from wireserver.testing import KafkaWire
from wireserver.testing.cluster import cluster_metadata as metadata

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-admin"
OVERRIDES = {
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "auto.leader.rebalance.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
}
RESOURCE_TOPIC, RESOURCE_GROUP, SET, DELETE = 2, 32, 0, 1
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 1, 5, 8
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, COORDINATOR_NOT_AVAILABLE = 3, 6, 15
INVALID_REPLICATION_ASSIGNMENT, MEMBER_ID_REQUIRED = 39, 79


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, CHROOT, OVERRIDES).start()
    yield nodes
    nodes.close()


@pytest.fixture(scope="module")
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def produce(cluster: Cluster, topic: str, values, partition: int = -1, **settings) -> list:
    """Delivery errors (None for success) of ``values`` sent with acks=all."""
    config = {"bootstrap.servers": cluster.bootstrap, "acks": "all"}
    config.update(settings)
    producer = Producer(config)
    errors: list = []
    for value in values:
        producer.produce(
            topic,
            value,
            key=b"key",
            partition=partition,
            on_delivery=lambda err, msg: errors.append(err),
        )
    producer.flush(60)
    return errors


def poll(consumer: Consumer, count: int) -> list:
    """The next ``count`` messages (errors skipped), failing after 30 s without one."""
    messages: list = []
    while len(messages) < count:
        msg = consumer.poll(30)
        assert msg is not None, f"only {len(messages)} of {count} messages"
        if not msg.error():
            messages.append(msg)
    return messages


def read_partition(cluster: Cluster, topic: str, partition: int, count: int) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "reader", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    try:
        return [msg.value() for msg in poll(consumer, count)]
    finally:
        consumer.close()


def delete_topic(broker, topic: str) -> int:
    request_class = SERVED.get(20).request_class
    response = send(
        broker,
        request_class(
            version=6,
            timeout_ms=30000,
            topics=[request_class.DeleteTopicState(name=topic, topic_id=None)],
        ),
    )
    ((name, error),) = [(r.name, r.error_code) for r in response.responses]
    assert name == topic
    return error


def test_delete_topic_via_one_broker_is_gone_everywhere(cluster, zk):
    topic = "doomed"
    create(cluster, topic, partitions=2, rf=3)
    assert produce(cluster, topic, [b"old-%d" % i for i in range(10)], partition=0) == [None] * 10
    for broker in cluster.brokers.values():
        wait_for(
            lambda: len(log_dirs(broker, topic)) == 2,
            30,
            what=f"broker {broker.node_id} to open the topic's logs",
        )

    assert delete_topic(cluster.brokers[1], topic) == 0
    # The receiving broker answers once the topic left its metadata.
    assert topic_error(cluster.brokers[1], topic) == UNKNOWN_TOPIC_OR_PARTITION
    for broker in cluster.brokers.values():
        wait_for(
            lambda: topic_error(broker, topic) == UNKNOWN_TOPIC_OR_PARTITION,
            30,
            what=f"broker {broker.node_id} to forget the topic",
        )
        wait_for(
            lambda: log_dirs(broker, topic) == [],
            30,
            what=f"broker {broker.node_id} to delete the topic's logs",
        )
    for path in (
        f"/brokers/topics/{topic}",
        f"/config/topics/{topic}",
        f"/admin/delete_topics/{topic}",
    ):
        assert zk.exists(path) is None, path

    # The name is free again; the new topic starts empty.
    create(cluster, topic, partitions=1, rf=3)
    assert produce(cluster, topic, [b"new-0", b"new-1"], partition=0) == [None, None]
    assert read_partition(cluster, topic, 0, 2) == [b"new-0", b"new-1"]
    for broker in cluster.brokers.values():
        wait_for(
            lambda: log_dirs(broker, topic) == [os.path.join(broker.data_dir, f"{topic}-0")],
            30,
            what=f"broker {broker.node_id} to open the new topic",
        )


def test_a_broker_keeps_logs_for_its_replicas_only(cluster):
    """As Kafka's brokers do: a topic of 6 partitions with one replica each gives each broker a
    log for its own partitions and no other (a broker used to keep one for every partition),
    and a Produce or a Fetch for a partition a broker is no replica of answers
    NOT_LEADER_OR_FOLLOWER (Kafka's ``getPartitionOrError``), so that the client looks for its
    leader again; the partition's own broker serves it."""
    topic = "hosted-here"
    create(cluster, topic, partitions=6, rf=1)
    placed = wait_for(
        lambda: (
            (p := metadata(cluster.brokers[1].bootstrap_servers, topic)[2]) and len(p) == 6 and p
        ),
        30,
        what="the topic's 6 partitions in Metadata",
    )
    replica_of = {index: replicas for index, (_, _, replicas, _) in placed.items()}
    assert all(len(replicas) == 1 for replicas in replica_of.values()), replica_of
    for broker_id, broker in cluster.brokers.items():
        mine = [p for p, replicas in sorted(replica_of.items()) if replicas == [broker_id]]
        expected = sorted(os.path.join(broker.data_dir, f"{topic}-{p}") for p in mine)
        wait_for(
            lambda broker=broker, expected=expected: log_dirs(broker, topic) == expected,
            30,
            what=f"broker {broker_id} to hold the logs of partitions {mine} only",
        )
    partition = 0
    (owner,) = replica_of[partition]
    other = cluster.brokers[next(b for b in cluster.brokers if b != owner)]
    batch = raw.v2_batch([b"where"])
    with KafkaWire(other.bootstrap_servers) as wire:
        answer = wire.request(raw.produce(topic, {partition: batch}))
        assert raw.produce_errors(answer) == {partition: NOT_LEADER_OR_FOLLOWER}
        (fetched_topic,) = wire.request(raw.fetch(topic, partition, 0)).responses
        assert [p.error_code for p in fetched_topic.partitions] == [NOT_LEADER_OR_FOLLOWER]
    with KafkaWire(cluster.brokers[owner].bootstrap_servers) as wire:
        answer = wire.request(raw.produce(topic, {partition: batch}))
        assert raw.produce_errors(answer) == {partition: 0}
        assert [r.value for r in raw.fetched(wire.request(raw.fetch(topic, partition, 0)))] == [
            b"where"
        ]


def test_broker_down_during_deletion_drops_the_logs_when_it_returns(cluster):
    gone, renewed = "gone-while-away", "renewed-while-away"
    for topic in (gone, renewed):
        create(cluster, topic, partitions=1, rf=3)
        assert produce(cluster, topic, [b"old"] * 5) == [None] * 5
    absent = cluster.brokers[3]
    wait_for(
        lambda: all(records_on_disk(absent.data_dir, t, 0) == 5 for t in (gone, renewed)),
        30,
        what="broker 3 to replicate both topics",
    )
    absent.kill()
    # Once its registration expired, broker 3 gets no replica of the re-created topic.
    wait_for(
        lambda: 3 not in metadata(cluster.brokers[1].bootstrap_servers, gone)[1],
        60,
        what="broker 3's registration to expire",
    )
    assert delete_topic(cluster.brokers[1], gone) == 0
    assert delete_topic(cluster.brokers[1], renewed) == 0
    create(cluster, renewed, partitions=1, rf=2)
    assert produce(cluster, renewed, [b"new"]) == [None]

    absent.start()
    wait_for(
        lambda: (
            topic_error(absent, gone) == UNKNOWN_TOPIC_OR_PARTITION and log_dirs(absent, gone) == []
        ),
        60,
        what="broker 3 to drop the deleted topic",
    )
    # The re-created topic is placed on brokers 1 and 2: broker 3 deletes the old one's log
    # and keeps none for it, as a Kafka broker keeps logs for its own replicas only.
    assert 3 not in metadata(absent.bootstrap_servers, renewed)[2][0][2]
    wait_for(
        lambda: topic_error(absent, renewed) == 0 and log_dirs(absent, renewed) == [],
        60,
        what="broker 3 to know the new topic and hold no log of it",
    )


def create_partitions(broker, topic: str, count: int, assignments=None):
    request_class = SERVED.get(37).request_class
    topic_class = request_class.CreatePartitionsTopic
    entry = topic_class(
        name=topic,
        count=count,
        assignments=None
        if assignments is None
        else [topic_class.CreatePartitionsAssignment(broker_ids=ids) for ids in assignments],
    )
    response = send(
        broker, request_class(version=3, topics=[entry], timeout_ms=30000, validate_only=False)
    )
    return [(r.name, r.error_code) for r in response.results]


def test_create_partitions_via_one_broker_reaches_every_broker(cluster):
    topic = "grown"
    create(cluster, topic, partitions=1, rf=2)
    assert create_partitions(cluster.brokers[2], topic, 4) == [(topic, 0)]
    # The receiving broker answers once every new partition has a leader.
    _, _, partitions = metadata(cluster.brokers[2].bootstrap_servers, topic)
    assert sorted(partitions) == [0, 1, 2, 3]
    assert all(leader >= 0 for leader, _, _, _ in partitions.values())
    for leader, _, replicas, _isr in partitions.values():
        assert len(replicas) == 2 and len(set(replicas)) == 2 and leader in replicas
    # Kafka's placement continues the round robin: the preferred leaders rotate over brokers.
    assert {partitions[p][2][0] for p in range(4)} == {1, 2, 3}
    for broker in cluster.brokers.values():
        wait_for(
            lambda: metadata(broker.bootstrap_servers, topic)[2].keys() == partitions.keys(),
            30,
            what=f"broker {broker.node_id} to see 4",
        )
    # A manual assignment is taken as given; brokers that do not exist are refused.
    assert create_partitions(cluster.brokers[2], topic, 6, [[1, 99], [2, 3]]) == [
        (topic, INVALID_REPLICATION_ASSIGNMENT)
    ]
    assert create_partitions(cluster.brokers[2], topic, 5, [[3, 1]]) == [(topic, 0)]
    assert metadata(cluster.brokers[2].bootstrap_servers, topic)[2][4][2] == [3, 1]

    # Every partition takes acks=all writes and reads them back; both replicas hold them.
    for partition in range(5):
        values = [b"%d-%d" % (partition, i) for i in range(5)]
        assert produce(cluster, topic, values, partition=partition) == [None] * 5
        assert read_partition(cluster, topic, partition, 5) == values
    _, _, partitions = metadata(cluster.brokers[1].bootstrap_servers, topic)
    for partition, (_, _, replicas, _) in partitions.items():
        for replica in replicas:
            wait_for(
                lambda: records_on_disk(cluster.brokers[replica].data_dir, topic, partition) == 5,
                30,
                what=f"broker {replica} to hold {topic}-{partition}",
            )


def alter_topic_configs(broker, topic: str, changes: dict[str, tuple[int, str | None]]):
    request_class = SERVED.get(44).request_class
    resource_class = request_class.AlterConfigsResource
    response = send(
        broker,
        request_class(
            version=1,
            validate_only=False,
            resources=[
                resource_class(
                    resource_type=RESOURCE_TOPIC,
                    resource_name=topic,
                    configs=[
                        resource_class.AlterableConfig(name=name, config_operation=op, value=value)
                        for name, (op, value) in changes.items()
                    ],
                )
            ],
        ),
    )
    return [r.error_code for r in response.responses]


def described(broker, topic: str, names: list[str]) -> dict[str, tuple[str, int]]:
    """name -> (value, config source) from DescribeConfigs on one broker."""
    request_class = SERVED.get(32).request_class
    response = send(
        broker,
        request_class(
            version=4,
            include_synonyms=False,
            include_documentation=False,
            resources=[
                request_class.DescribeConfigsResource(
                    resource_type=RESOURCE_TOPIC, resource_name=topic, configuration_keys=names
                )
            ],
        ),
    )
    (result,) = response.results
    assert result.error_code == 0
    return {c.name: (c.value, c.config_source) for c in result.configs}


def kill_and_wait_for_isr(cluster: Cluster, victim: int, topic: str, size: int) -> None:
    cluster.brokers[victim].kill()
    survivor = next(b for b in cluster.brokers.values() if b.running)
    wait_for(
        lambda: all(
            len(isr) == size and victim not in isr
            for _, _, _, isr in metadata(survivor.bootstrap_servers, topic)[2].values()
        ),
        60,
        what=f"broker {victim} to leave the ISR of {topic}",
    )


def restart_and_wait_for_isr(cluster: Cluster, victim: int, topic: str) -> None:
    cluster.brokers[victim].start()
    wait_for(
        lambda: all(
            victim in isr
            for _, _, _, isr in metadata(cluster.brokers[victim].bootstrap_servers, topic)[
                2
            ].values()
        ),
        90,
        what=f"broker {victim} to rejoin the ISR of {topic}",
    )


def test_topic_configs_via_one_broker_apply_everywhere(cluster, zk):
    topic = "tuned"
    create(cluster, topic, partitions=1, rf=3)
    changes = {
        "retention.ms": (SET, "3600000"),
        "cleanup.policy": (SET, "compact"),
        "min.insync.replicas": (SET, "3"),
    }
    assert alter_topic_configs(cluster.brokers[3], topic, changes) == [0]
    expected = {
        "retention.ms": ("3600000", DYNAMIC_TOPIC_CONFIG),
        "cleanup.policy": ("compact", DYNAMIC_TOPIC_CONFIG),
        "min.insync.replicas": ("3", DYNAMIC_TOPIC_CONFIG),
    }
    for broker in cluster.brokers.values():
        wait_for(
            lambda: described(broker, topic, list(expected)) == expected,
            30,
            what=f"broker {broker.node_id} to apply the config",
        )
    notices = [
        zk.get(f"/config/changes/{child}")[0] for child in zk.get_children("/config/changes")
    ]
    assert b'{"version":2,"entity_path":"topics/tuned"}' in notices

    # min.insync.replicas=3 takes effect on the leader: with one follower down, acks=all fails.
    assert produce(cluster, topic, [b"all-in-sync"]) == [None]
    controller, _, partitions = metadata(cluster.brokers[1].bootstrap_servers, topic)
    leader, _, replicas, _ = partitions[0]
    victim = next(r for r in sorted(replicas, key=lambda r: r == controller) if r != leader)
    kill_and_wait_for_isr(cluster, victim, topic, 2)
    errors = produce(cluster, topic, [b"too-few"], retries=0, **{"enable.idempotence": False})
    assert [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS]
    # Back to the broker default (1): acks=all works again with two in sync.
    assert alter_topic_configs(
        cluster.brokers[leader], topic, {"min.insync.replicas": (DELETE, None)}
    ) == [0]
    assert produce(cluster, topic, [b"two-in-sync"]) == [None]
    restart_and_wait_for_isr(cluster, victim, topic)
    # The restarted broker read the config from ZooKeeper.
    assert described(cluster.brokers[victim], topic, ["min.insync.replicas", "cleanup.policy"]) == {
        "min.insync.replicas": ("1", DEFAULT_CONFIG),
        "cleanup.policy": ("compact", DYNAMIC_TOPIC_CONFIG),
    }

    # The legacy AlterConfigs replaces the whole set, everywhere.
    request_class = SERVED.get(33).request_class
    resource_class = request_class.AlterConfigsResource
    response = send(
        cluster.brokers[1],
        request_class(
            version=2,
            validate_only=False,
            resources=[
                resource_class(
                    resource_type=RESOURCE_TOPIC,
                    resource_name=topic,
                    configs=[resource_class.AlterableConfig(name="retention.ms", value="7200000")],
                )
            ],
        ),
    )
    assert [r.error_code for r in response.responses] == [0]
    expected = {
        "retention.ms": ("7200000", DYNAMIC_TOPIC_CONFIG),
        "cleanup.policy": ("delete", DEFAULT_CONFIG),
    }
    for broker in cluster.brokers.values():
        wait_for(
            lambda: described(broker, topic, list(expected)) == expected,
            30,
            what=f"broker {broker.node_id} to apply the replaced config",
        )


def group_configs(
    broker, group: str, changes: dict[str, str] | None = None, incremental: bool = True
):
    """Set ``changes`` on ``group`` through ``broker`` (error codes), or with None describe its
    consumer.* keys there: name -> (value, config source)."""
    if changes is None:
        request_class = SERVED.get(32).request_class
        response = send(
            broker,
            request_class(
                version=4,
                include_synonyms=False,
                include_documentation=False,
                resources=[
                    request_class.DescribeConfigsResource(
                        resource_type=RESOURCE_GROUP,
                        resource_name=group,
                        configuration_keys=[
                            "consumer.session.timeout.ms",
                            "consumer.heartbeat.interval.ms",
                        ],
                    )
                ],
            ),
        )
        (result,) = response.results
        assert result.error_code == 0
        return {c.name: (c.value, c.config_source) for c in result.configs}
    request_class = SERVED.get(44 if incremental else 33).request_class
    resource_class = request_class.AlterConfigsResource
    entries = [
        resource_class.AlterableConfig(name=name, config_operation=SET, value=value)
        if incremental
        else resource_class.AlterableConfig(name=name, value=value)
        for name, value in changes.items()
    ]
    response = send(
        broker,
        request_class(
            validate_only=False,
            resources=[
                resource_class(resource_type=RESOURCE_GROUP, resource_name=group, configs=entries)
            ],
            version=1 if incremental else 2,
        ),
    )
    return [r.error_code for r in response.responses]


def test_group_configs_via_one_broker_apply_everywhere_and_outlive_a_restart(cluster, zk):
    """A group's configs live in ZooKeeper (/config/groups/<sanitized id>): set through one
    broker, every broker (whichever coordinates the group) has them, a restarted broker reads
    them back, and the legacy AlterConfigs replaces the whole set everywhere."""
    group = "team/a b"  # any characters: the znode name is sanitized
    assert group_configs(
        cluster.brokers[3],
        group,
        {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"},
    ) == [0]
    expected = {
        "consumer.session.timeout.ms": ("50000", GROUP_CONFIG),
        "consumer.heartbeat.interval.ms": ("6000", GROUP_CONFIG),
    }
    for broker in cluster.brokers.values():
        wait_for(
            lambda: group_configs(broker, group) == expected,
            30,
            what=f"broker {broker.node_id} to apply the group config",
        )
    assert json.loads(zk.get("/config/groups/team%2Fa%20b")[0]) == {
        "version": 1,
        "config": {
            "consumer.session.timeout.ms": "50000",
            "consumer.heartbeat.interval.ms": "6000",
        },
    }
    cluster.brokers[2].kill()
    cluster.brokers[2].start()
    assert group_configs(cluster.brokers[2], group) == expected
    assert group_configs(
        cluster.brokers[1], group, {"consumer.session.timeout.ms": "55000"}, incremental=False
    ) == [0]
    expected = {
        "consumer.session.timeout.ms": ("55000", GROUP_CONFIG),
        "consumer.heartbeat.interval.ms": ("5000", DEFAULT_CONFIG),
    }
    for broker in cluster.brokers.values():
        wait_for(
            lambda: group_configs(broker, group) == expected,
            30,
            what=f"broker {broker.node_id} to apply the replaced group config",
        )


def test_group_survives_coordinator_kill(cluster):
    topic, group = "grouped", "survivor"
    create(cluster, topic, partitions=1, rf=3)
    assert produce(cluster, topic, [b"%d" % i for i in range(30)]) == [None] * 30
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 30000,
            "heartbeat.interval.ms": 500,
        }
    )
    consumer.subscribe([topic])
    try:
        assert [msg.offset() for msg in poll(consumer, 30)] == list(range(30))
        consumer.commit(asynchronous=False)
        error, coordinator = find_coordinator(cluster.brokers[1].bootstrap_servers, group)
        assert error == 0
        member = consumer.memberid()

        cluster.brokers[coordinator].kill()
        survivor = next(b for b in cluster.brokers.values() if b.running)
        moved = wait_for(
            lambda: (
                (r := find_coordinator(survivor.bootstrap_servers, group))[0] == 0
                and r[1] != coordinator
                and r[1]
            ),
            60,
            what="a new coordinator",
        )
        # The new coordinator loaded the group as SyncGroup left it, member included...
        admin = AdminClient({"bootstrap.servers": survivor.bootstrap_servers})
        description = admin.describe_consumer_groups([group])[group].result(30)
        assert description.coordinator.id == moved
        assert member in [m.member_id for m in description.members]
        # ...and its committed offsets.
        (committed,) = (
            admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
            )[group]
            .result(30)
            .topic_partitions
        )
        assert committed.offset == 30

        # The consumer carries on from where it was.
        assert produce(cluster, topic, [b"%d" % i for i in range(30, 35)]) == [None] * 5
        assert [msg.offset() for msg in poll(consumer, 5)] == list(range(30, 35))
    finally:
        consumer.close()
    restart_and_wait_for_isr(cluster, coordinator, "__consumer_offsets")


def join_and_sync(broker, group: str) -> tuple[int, int]:
    """One member joins ``group`` and, as its leader, syncs an assignment: (JoinGroup error,
    SyncGroup error)."""
    join_class, sync_class = SERVED.get(11).request_class, SERVED.get(14).request_class
    with KafkaWire(broker.bootstrap_servers, timeout=60) as wire:

        def join(member_id):
            return wire.request(
                join_class(
                    version=5,
                    group_id=group,
                    session_timeout_ms=30000,
                    rebalance_timeout_ms=30000,
                    member_id=member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=[join_class.JoinGroupRequestProtocol(name="range", metadata=b"")],
                )
            )

        joined = join("")
        if joined.error_code == MEMBER_ID_REQUIRED:
            joined = join(joined.member_id)
        if joined.error_code != 0:
            return joined.error_code, -1
        synced = wire.request(
            sync_class(
                version=3,
                group_id=group,
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                group_instance_id=None,
                assignments=[
                    sync_class.SyncGroupRequestAssignment(
                        member_id=joined.member_id, assignment=b"assigned"
                    )
                ],
            )
        )
    return joined.error_code, synced.error_code


def coordinated_group(cluster: Cluster, prefix: str, avoiding: int) -> tuple[str, int]:
    """A group name whose coordinator is a running broker other than ``avoiding``."""
    observer = next(b for b in cluster.brokers.values() if b.running)
    for i in range(100):
        error, coordinator = find_coordinator(observer.bootstrap_servers, f"{prefix}-{i}")
        if error == 0 and coordinator != avoiding:
            return f"{prefix}-{i}", coordinator
    raise AssertionError("no group with a live coordinator")


def test_sync_group_answers_after_the_group_record_is_replicated(cluster):
    offsets = "__consumer_offsets"
    victim = 3
    group, coordinator = coordinated_group(cluster, "cautious", victim)
    assert alter_topic_configs(
        cluster.brokers[coordinator], offsets, {"min.insync.replicas": (SET, "3")}
    ) == [0]
    try:
        for broker in cluster.brokers.values():
            wait_for(
                lambda: (
                    described(broker, offsets, ["min.insync.replicas"])
                    == {"min.insync.replicas": ("3", DYNAMIC_TOPIC_CONFIG)}
                ),
                30,
                what=f"broker {broker.node_id} to apply the config",
            )
        assert join_and_sync(cluster.brokers[coordinator], group) == (0, 0)
        # With a replica of the group's partition down the group record cannot reach
        # min.insync.replicas: the assignment is not handed out (as Kafka's acks=-1 storeGroup).
        kill_and_wait_for_isr(cluster, victim, offsets, 2)
        group, coordinator = coordinated_group(cluster, "short", victim)
        assert join_and_sync(cluster.brokers[coordinator], group) == (0, COORDINATOR_NOT_AVAILABLE)
        restart_and_wait_for_isr(cluster, victim, offsets)
        group, coordinator = coordinated_group(cluster, "restored", -1)
        assert join_and_sync(cluster.brokers[coordinator], group) == (0, 0)
    finally:
        observer = next(b for b in cluster.brokers.values() if b.running)
        alter_topic_configs(observer, offsets, {"min.insync.replicas": (DELETE, None)})
