"""Share groups (KIP-932) on a 3-broker cluster, with Kafka's Java ``KafkaShareConsumer``
(``tests/share/ShareClient.java``): the share-partition lives on the topic partition's leader,
its state on the share coordinator (the leader of its ``__share_group_state`` partition,
replicated 3 ways with min ISR 2), reached over the inter-broker connection when that is
another broker.

- kill -9 of the topic partition's leader while one member holds records and others were
  acknowledged: nothing whose acknowledgement was answered is delivered again, and every
  other record (those held then, those produced after) is delivered and accepted once;
- kill -9 of the broker that is both the partition's leader and the share coordinator of
  the share-partition: the state written there survives (the new leader reads it from the new
  coordinator, which loaded it from its replica of ``__share_group_state``).

The group id is chosen so that its share coordinator is the broker the scenario needs
(``coordinator_of``); FindCoordinator's share key type names the same broker.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from compat_tests.reference import run_tool
from compat_tests.share_members import ShareMember, compiled_share_client, set_group_configs
from tests.cluster.conftest import Cluster, wait_for
from wireserver.coordinator_runtime import SHARE_STATE_TOPIC, partition_for
from wireserver.protocol.errors import ErrorCode
from wireserver.share.state import coordinator_key
from wireserver.testing import KafkaWire
from wireserver.testing.cluster import cluster_metadata, metadata_response

pytestmark = pytest.mark.integration

STATE_PARTITIONS = 3
OVERRIDES = {
    # the group coordinator fails over too
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "share.coordinator.state.topic.num.partitions": str(STATE_PARTITIONS),
    # Kafka's default (the test kit's brokers default to 1)
    "share.coordinator.state.topic.replication.factor": "3",
    "group.share.min.record.lock.duration.ms": "1000",
}


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, "/wireserver-share", OVERRIDES).start()
    yield nodes
    nodes.close()


@pytest.fixture(scope="module")
def classpath() -> str:
    return compiled_share_client()


@pytest.fixture(autouse=True)
def all_brokers_back(cluster):
    yield
    for broker in cluster.brokers.values():
        if not broker.running:
            broker.start()
    cluster.wait_ready(60)


def live(cluster: Cluster):
    return [b for b in cluster.brokers.values() if b.running]


def partitions(cluster: Cluster, topic: str) -> dict:
    """{partition: (leader, leader epoch, replicas, isr)}."""
    return cluster_metadata(live(cluster)[0].bootstrap_servers, topic)[2]


def topic_id(cluster: Cluster, topic: str) -> uuid.UUID:
    with KafkaWire(live(cluster)[0].bootstrap_servers) as wire:
        return metadata_response(wire, topic).topics[0].topic_id


def find_share_coordinator(cluster: Cluster, key: str, key_type: int = 2) -> tuple[int, int]:
    """(error, node id) of FindCoordinator v6 key type 2 (share) for ``key`` (0: a group's
    coordinator)."""
    with KafkaWire(live(cluster)[0].bootstrap_servers) as wire:
        response = wire.request(
            FindCoordinatorRequest(version=6, key_type=key_type, coordinator_keys=[key])
        )
    (found,) = response.coordinators
    return found.error_code, found.node_id


def state_leaders(cluster: Cluster) -> dict[int, int]:
    """{__share_group_state partition: leader}, once every partition has a live leader (the
    topic is created by the first share coordinator lookup)."""
    running = {b.node_id for b in live(cluster)}

    def ready():
        error, _ = find_share_coordinator(cluster, "probe:AAAAAAAAAAAAAAAAAAAAAA:0")
        leaders = {p: s[0] for p, s in partitions(cluster, SHARE_STATE_TOPIC).items()}
        if error == ErrorCode.NONE and len(leaders) == STATE_PARTITIONS:
            if all(leader in running for leader in leaders.values()):
                return leaders
        return None

    return wait_for(ready, 60, 0.3, what="__share_group_state led by live brokers")


def coordinator_of(cluster: Cluster, tid: uuid.UUID, wanted: int) -> str:
    """A new group id whose share-partition ``<group>:<tid>:0`` has its state on ``wanted``
    (the leader of its ``__share_group_state`` partition); FindCoordinator agrees."""
    leaders = state_leaders(cluster)
    assert wanted in leaders.values(), leaders
    for attempt in range(1000):
        group = f"sg-{attempt}-{uuid.uuid4().hex[:6]}"
        key = coordinator_key((group, tid, 0))
        if leaders[partition_for(key, STATE_PARTITIONS)] == wanted:
            assert find_share_coordinator(cluster, key) == (ErrorCode.NONE, wanted)
            return group
    raise AssertionError(f"no group id maps to broker {wanted}")


def new_topic(cluster: Cluster, replicas: list[int]) -> str:
    """One partition on ``replicas`` (the first leads), min ISR 2, in sync everywhere."""
    name = f"shared-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(name, 1, replica_assignment=[replicas], config={"min.insync.replicas": "2"})
    admin.create_topics([topic])[name].result(30)
    wait_for(
        lambda: (p := partitions(cluster, name).get(0)) and p[0] == replicas[0] and len(p[3]) == 3,
        60,
        0.2,
        what=f"{name} led by {replicas[0]} with every replica in sync",
    )
    return name


def produce(cluster: Cluster, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, "acks": "all"})
    for value in values:
        producer.produce(topic, value=value.encode())
    assert producer.flush(60) == 0


def acked(member: ShareMember) -> set[int]:
    """The offsets whose acceptance the member's commit reported done."""
    return {int(line.split()[2]) for line in list(member.lines) if line.startswith("acked ")}


def member(cluster: Cluster, classpath: str, topic: str, group: str, *extra: str) -> ShareMember:
    return ShareMember(
        classpath, cluster.bootstrap, topic, group, *extra, first_record_wait_ms=60000
    )


def test_partition_leader_killed_nothing_acknowledged_again_nothing_unacknowledged_lost(
    cluster, classpath
):
    # The partition is led by 1, then by 2; the state is on 3: both reach it over RPCs.
    topic = new_topic(cluster, [1, 2, 3])
    group = coordinator_of(cluster, topic_id(cluster, topic), 3)
    set_group_configs(cluster.bootstrap, group, share_auto_offset_reset="earliest")
    first = [f"first-{i}" for i in range(30)]
    produce(cluster, topic, first)
    reader = member(cluster, classpath, topic, group)
    early = reader.finish(timeout=120)
    assert sorted(v for _, _, v in early) == sorted(first)
    assert acked(reader) == {o for o, _, _ in early}  # every acceptance answered

    held = [f"held-{i}" for i in range(20)]
    produce(cluster, topic, held)
    holder = member(cluster, classpath, topic, group, "hold")
    holder.wait_for(lambda: len(holder.records()) > 0, timeout=120)
    cluster.brokers[1].kill()
    wait_for(lambda: partitions(cluster, topic)[0][0] == 2, 60, 0.2, what="2 leads")
    later = [f"later-{i}" for i in range(30)]
    produce(cluster, topic, later)
    readers = [member(cluster, classpath, topic, group) for _ in range(2)]
    got = [r.finish(timeout=180) for r in readers]
    holder.kill()

    values = [v for records in got for _, _, v in records]
    # nothing acknowledged before the kill comes back; every other record does
    assert not set(values) & set(first), values
    assert set(values) == set(held) | set(later)
    # and each record was accepted by exactly one of them
    accepted = [acked(r) for r in readers]
    assert not accepted[0] & accepted[1]
    offsets = {o for records in got for o, _, _ in records}
    assert accepted[0] | accepted[1] == offsets
    # including what the holder had acquired (and never acknowledged) when its leader died
    assert {v for _, _, v in holder.records()} <= set(values)


def test_share_coordinator_killed_with_the_leader_the_state_survives(cluster, classpath):
    leaders = state_leaders(cluster)
    coordinator = sorted(set(leaders.values()))[0]
    others = [b for b in (1, 2, 3) if b != coordinator]
    # The coordinator also leads the partition: killing it moves both.
    topic = new_topic(cluster, [coordinator, *others])
    group = coordinator_of(cluster, topic_id(cluster, topic), coordinator)
    set_group_configs(cluster.bootstrap, group, share_auto_offset_reset="earliest")
    values = [f"r{i}" for i in range(20)]
    produce(cluster, topic, values)
    first = member(cluster, classpath, topic, group, "accept=10")
    before = first.finish(timeout=120)
    accepted = {v for o, _, v in before if o in acked(first)}
    assert len(accepted) == 10, first.lines[-20:]
    released = {v for _, _, v in before} - accepted

    cluster.brokers[coordinator].kill()
    wait_for(
        lambda: partitions(cluster, topic)[0][0] in others, 60, 0.2, what="a new partition leader"
    )
    after = member(cluster, classpath, topic, group).finish(timeout=180)
    assert sorted(v for _, _, v in after) == sorted(set(values) - accepted)
    # what the first member got and released counted as a delivery
    assert {v for _, count, v in after if count >= 2} == released


def share_groups_tool(cluster: Cluster, *args: str) -> str:
    result = run_tool("kafka-share-groups", list(args), bootstrap=cluster.bootstrap)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def offsets_of(cluster: Cluster, group: str, topic: str) -> list[list[str]]:
    """kafka-share-groups --describe's rows of ``topic``: group, topic, partition, start
    offset, lag (the leader epoch column is left out)."""
    described = share_groups_tool(cluster, "--describe", "--group", group)
    rows = [line.split() for line in described.splitlines() if topic in line]
    return [row[:3] + row[-2:] if len(row) > 5 else row for row in rows]


def test_share_group_offsets_described_reset_and_deleted_across_brokers(cluster, classpath):
    """The share-group offset APIs with the group's coordinator, the partition's leader and
    its share coordinator on three different brokers: the group coordinator reads the state
    (ReadShareGroupStateSummary) and the high watermark (ListOffsets) from the other two,
    resets it (InitializeShareGroupState) and deletes it (DeleteShareGroupState); the
    leader's share-partition, dropped when the group's last session ended, reads the state
    set meanwhile when the next member comes."""
    state_on = state_leaders(cluster)
    wait_for(
        lambda: find_share_coordinator(cluster, "probe", 0)[0] == ErrorCode.NONE,
        60,
        0.3,
        what="__consumer_offsets",
    )
    offsets_on = {p: s[0] for p, s in partitions(cluster, "__consumer_offsets").items()}
    # three roles on three brokers, as leadership stands after the tests before
    roles = [
        (leader, coordinator, share_coordinator)
        for leader in (1, 2, 3)
        for coordinator in set(offsets_on.values()) - {leader}
        for share_coordinator in set(state_on.values()) - {leader, coordinator}
    ]
    assert roles, (offsets_on, state_on)
    leader, coordinator, share_coordinator = roles[0]
    topic = new_topic(cluster, [leader, *({1, 2, 3} - {leader})])
    tid = topic_id(cluster, topic)
    group = None
    for attempt in range(2000):
        candidate = f"so-{attempt}-{uuid.uuid4().hex[:6]}"
        state_partition = partition_for(coordinator_key((candidate, tid, 0)), STATE_PARTITIONS)
        offsets_partition = partition_for(candidate, len(offsets_on))
        if (state_on[state_partition], offsets_on[offsets_partition]) == (
            share_coordinator,
            coordinator,
        ):
            group = candidate
            break
    assert group is not None, (offsets_on, state_on)
    assert find_share_coordinator(cluster, group, 0) == (ErrorCode.NONE, coordinator)
    set_group_configs(
        cluster.bootstrap, group, share_auto_offset_reset="earliest", share_delivery_count_limit=2
    )
    values = ["a", "reject-1", "release-1", "b"]
    produce(cluster, topic, values)
    first = member(cluster, classpath, topic, group).finish(timeout=120)
    assert sorted(v for _, _, v in first) == sorted(values + ["release-1"])
    # everything done with: the start offset last persisted (2, written with release-1's
    # archiving before the start moved past it), no lag
    assert offsets_of(cluster, group, topic) == [[group, topic, "0", "2", "0"]]

    share_groups_tool(
        cluster, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"
    )
    assert offsets_of(cluster, group, topic) == [[group, topic, "0", "0", "4"]]
    # the partition leader reads the reset state: every record again, first deliveries
    again = member(cluster, classpath, topic, group).finish(timeout=120)
    assert sorted(v for _, count, v in again if count == 1) == sorted(values), again

    assert "Successful" in share_groups_tool(
        cluster, "--delete-offsets", "--group", group, "--topic", topic
    )
    assert "has no offset information" in share_groups_tool(cluster, "--describe", "--group", group)
    anew = member(cluster, classpath, topic, group).finish(timeout=120)
    assert sorted(v for _, _, v in anew) == sorted(values + ["release-1"]), anew
    assert offsets_of(cluster, group, topic) == [[group, topic, "0", "2", "0"]]

    # deleting the group deletes its state at the share coordinator on another broker
    deleted = run_tool(
        "kafka-share-groups", ["--delete", "--group", group], bootstrap=cluster.bootstrap
    )
    assert "was successful" in deleted.stdout, deleted.stdout + deleted.stderr
    assert find_share_coordinator(cluster, coordinator_key((group, tid, 0)))[1] == share_coordinator
    last = member(cluster, classpath, topic, group).finish(timeout=120)
    assert sorted(v for _, _, v in last) == sorted(values + ["release-1"]), last


def test_dead_letters_reach_a_dlq_partition_led_by_another_broker(cluster, classpath):
    """The share-partition's leader (1) sends the dead-letter records to the leader of the
    DLQ partition (2) with a Produce, as Kafka's broker does."""
    topic = new_topic(cluster, [1, 2, 3])
    dlq = f"dlq.{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    made = NewTopic(
        dlq,
        1,
        replica_assignment=[[2, 3, 1]],
        config={"errors.deadletterqueue.group.enable": "true"},
    )
    admin.create_topics([made])[dlq].result(30)
    wait_for(lambda: partitions(cluster, dlq).get(0, (None,))[0] == 2, 60, 0.2, what="2 leads")
    group = f"dlq-{uuid.uuid4().hex[:8]}"
    set_group_configs(
        cluster.bootstrap,
        group,
        share_auto_offset_reset="earliest",
        errors_deadletterqueue_topic_name=dlq,
    )
    produce(cluster, topic, ["a", "reject-1", "b"])
    got = member(cluster, classpath, topic, group).finish(timeout=120)
    assert sorted(v for _, _, v in got) == ["a", "b", "reject-1"]

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"r-{group}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(dlq, 0, 0)])
    letters = []
    deadline = time.monotonic() + 30
    try:
        while not letters and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                letters.append(message)
    finally:
        consumer.close()
    assert [dict(m.headers()) for m in letters] == [
        {
            "__dlq.errors.topic": topic.encode(),
            "__dlq.errors.partition": b"0",
            "__dlq.errors.offset": b"1",
            "__dlq.errors.group": group.encode(),
            "__dlq.errors.delivery.count": b"1",
            "__dlq.errors.message": b"Offset rejected by client.",
        }
    ]
