"""Share groups (KIP-932) with Kafka's own Java ``KafkaShareConsumer`` (``ShareClient.java``
in compat_tests/apps/share, compiled against the reference jars; compat_tests/share_members.py
runs it) and Kafka's tools against wireserver:
members sharing one partition see every record exactly once when they accept; a released
record is delivered again, to another member; records a member holds without acknowledging
go to another once the acquisition lock (a group config set with ``kafka-configs
--entity-type groups``) expires; a rejected record, and one released up to the
delivery count limit, are not delivered again; ``kafka-share-groups`` lists the group,
describes, resets and deletes its offsets and deletes it; AlterShareGroupOffsets on a group
that does not exist creates it, and its first member starts at the offset set; the state
survives a kill -9 of the broker."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests import reference as kafka_reference
from compat_tests.share_members import (
    ShareMember,
    compiled_share_client,
    produce_one_batch_each,
    set_group_configs,
)
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.messages_share import AlterShareGroupOffsetsRequest
from wireserver.testing import EmbeddedBroker, KafkaWire

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def classpath() -> str:
    return compiled_share_client()


@pytest.fixture(scope="module")
def kafka():
    # Kafka's floor for share.record.lock.duration.ms is 15 s; lowered so a test can wait one out.
    with EmbeddedBroker(overrides={"group.share.min.record.lock.duration.ms": 1000}) as broker:
        yield broker


def new_topic(kafka, partitions: int = 1) -> str:
    name = f"share-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
    return name


def produce(kafka, topic: str, values: list[str]) -> None:
    produce_one_batch_each(kafka.bootstrap_servers, topic, values)


def group_configs(kafka, group: str, **configs: object) -> None:
    set_group_configs(kafka.bootstrap_servers, group, **configs)


def describe(kafka, group: str) -> str:
    result = kafka_reference.run_tool(
        "kafka-share-groups",
        ["--describe", "--group", group, "--members"],
        bootstrap=kafka.bootstrap_servers,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def share_groups(kafka, *args: str) -> str:
    result = kafka_reference.run_tool(
        "kafka-share-groups", list(args), bootstrap=kafka.bootstrap_servers
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_members_sharing_a_partition_see_each_record_once(kafka, classpath):
    topic, group = new_topic(kafka), f"g-{uuid.uuid4().hex[:8]}"
    first = ShareMember(classpath, kafka.bootstrap_servers, topic, group)
    second = ShareMember(classpath, kafka.bootstrap_servers, topic, group)
    first.wait_for(lambda: "subscribed" in first.lines)
    second.wait_for(lambda: "subscribed" in second.lines)
    # Both members hold partition 0: the share assignor gives it to every member.
    deadline = time.monotonic() + 60
    while (out := describe(kafka, group)).count(f"{topic}:0") < 2:
        assert time.monotonic() < deadline, out
        time.sleep(0.5)
    values = [f"v{i}" for i in range(200)]
    produce(kafka, topic, values)
    got = first.finish() + second.finish()
    assert sorted(value for _, _, value in got) == sorted(values)
    assert all(count == 1 for _, count, _ in got)


def test_released_record_goes_to_another_member(kafka, classpath):
    topic, group = new_topic(kafka), f"g-{uuid.uuid4().hex[:8]}"
    group_configs(kafka, group, share_auto_offset_reset="earliest")
    values = ["release-me", "a", "b"]
    produce(kafka, topic, values)
    releasing = ShareMember(classpath, kafka.bootstrap_servers, topic, group, "once")
    first = releasing.finish()
    assert first[0] == (0, 1, "release-me")
    accepting = ShareMember(classpath, kafka.bootstrap_servers, topic, group)
    second = accepting.finish()
    # delivered again (the first member's client may have fetched it once more before it
    # left, and given it back)
    offset, count, value = second[0]
    assert (offset, value) == (0, "release-me") and count >= 2, (first, second)
    # the records the first member accepted are not delivered again
    accepted = [v for _, _, v in first if v != "release-me"]
    assert sorted(accepted + [v for _, _, v in second if v != "release-me"]) == ["a", "b"]


def test_held_records_redelivered_after_lock_duration(kafka, classpath):
    """A member that holds records and never acknowledges them (its JVM stopped, its
    connections open: a member killed -9 has them given back at once, when its connection
    closes) loses them to another once the acquisition lock (2 s for the group) expires."""
    topic, group = new_topic(kafka), f"g-{uuid.uuid4().hex[:8]}"
    group_configs(
        kafka, group, share_auto_offset_reset="earliest", share_record_lock_duration_ms=2000
    )
    values = [f"h{i}" for i in range(5)]
    produce(kafka, topic, values)
    holder = ShareMember(classpath, kafka.bootstrap_servers, topic, group, "hold")
    try:
        holder.wait_for(lambda: len(holder.records()) == len(values))
        held_at = time.monotonic()
        holder.pause()
        other = ShareMember(classpath, kafka.bootstrap_servers, topic, group)
        other.wait_for(lambda: len(other.records()) == len(values))
        waited = time.monotonic() - held_at
        assert holder.process.poll() is None
    finally:
        holder.kill()
    got = other.finish()
    assert sorted(v for _, _, v in got) == values
    assert {count for _, count, _ in got} == {2}
    # not before the lock expired (it started before the holder printed them: loosely)
    assert waited >= 1.0


def test_rejected_and_over_the_limit_records_are_not_delivered_again(kafka, classpath):
    topic, group = new_topic(kafka), f"g-{uuid.uuid4().hex[:8]}"
    group_configs(kafka, group, share_auto_offset_reset="earliest", share_delivery_count_limit=2)
    produce(kafka, topic, ["a", "reject-1", "release-1", "b"])
    member = ShareMember(classpath, kafka.bootstrap_servers, topic, group)
    got = member.finish()
    by_value: dict[str, list[int]] = {}
    for _, count, value in got:
        by_value.setdefault(value, []).append(count)
    # released: delivered again, up to the limit of 2 deliveries, then archived
    assert by_value == {"a": [1], "reject-1": [1], "release-1": [1, 2], "b": [1]}
    again = ShareMember(classpath, kafka.bootstrap_servers, topic, group, first_record_wait_ms=5000)
    assert again.finish() == []
    # kafka-share-groups (DescribeShareGroupOffsets): everything done with, nothing left; the
    # start offset is the one last persisted, as Kafka's: written with the archiving of
    # release-1 (offset 2) before the start moved past it
    listed = kafka_reference.run_tool(
        "kafka-share-groups", ["--list"], bootstrap=kafka.bootstrap_servers
    )
    assert group in listed.stdout.split()
    offsets = kafka_reference.run_tool(
        "kafka-share-groups", ["--describe", "--group", group], bootstrap=kafka.bootstrap_servers
    )
    assert [line.split() for line in offsets.stdout.splitlines() if topic in line] == [
        [group, topic, "0", "2", "0"]
    ], offsets.stdout + offsets.stderr
    # --reset-offsets (AlterShareGroupOffsets) starts the partition over at offset 0 ...
    share_groups(
        kafka, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"
    )
    described = share_groups(kafka, "--describe", "--group", group)
    assert [line.split() for line in described.splitlines() if topic in line] == [
        [group, topic, "0", "0", "4"]
    ], described
    # ... and --delete-offsets (DeleteShareGroupOffsets) forgets it
    assert "Successful" in share_groups(
        kafka, "--delete-offsets", "--group", group, "--topic", topic
    )
    assert "has no offset information" in share_groups(kafka, "--describe", "--group", group)
    # deleting the group deletes its share-partition state: a new member starts over
    deleted = kafka_reference.run_tool(
        "kafka-share-groups", ["--delete", "--group", group], bootstrap=kafka.bootstrap_servers
    )
    assert "was successful" in deleted.stdout, deleted.stdout + deleted.stderr
    anew = ShareMember(classpath, kafka.bootstrap_servers, topic, group).finish()
    assert {v for _, _, v in anew} == {"a", "reject-1", "release-1", "b"}


def alter_offsets(kafka, group: str, topic: str, start_offset: int):
    t = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
    partition = t.AlterShareGroupOffsetsRequestPartition(
        partition_index=0, start_offset=start_offset
    )
    with KafkaWire(kafka.bootstrap_servers) as wire:
        return wire.request(
            AlterShareGroupOffsetsRequest(
                version=0, group_id=group, topics=[t(topic_name=topic, partitions=[partition])]
            )
        )


def test_altering_offsets_of_a_new_group_creates_it(kafka, classpath):
    """As Kafka's alterShareGroupOffsets: the group is made (Empty) with its share-partition
    at the offset given, so that its first member (share.auto.offset.reset latest, the
    default) starts there, not at the end."""
    topic, group = new_topic(kafka), f"g-{uuid.uuid4().hex[:8]}"
    produce(kafka, topic, ["a", "b", "c", "d", "e"])
    altered = alter_offsets(kafka, group, topic, 2)
    assert (altered.error_code, altered.error_message) == (ErrorCode.NONE, None)
    assert [p.error_code for t in altered.responses for p in t.partitions] == [ErrorCode.NONE]
    assert group in share_groups(kafka, "--list").split()
    described = share_groups(kafka, "--describe", "--group", group)
    assert [line.split() for line in described.splitlines() if topic in line] == [
        [group, topic, "0", "2", "3"]
    ], described
    got = ShareMember(classpath, kafka.bootstrap_servers, topic, group).finish()
    assert [(offset, value) for offset, _, value in got] == [(2, "c"), (3, "d"), (4, "e")]
    # an id a group of another type has is not taken over; an empty id is invalid
    producer_group = f"c-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    offsets = [TopicPartition(topic, 0, 1)]
    request = ConsumerGroupTopicPartitions(producer_group, offsets)
    admin.alter_consumer_group_offsets([request])[producer_group].result(30)
    other = alter_offsets(kafka, producer_group, topic, 0)
    assert (other.error_code, other.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Group {producer_group} is not a share group.",
    )
    assert alter_offsets(kafka, "", topic, 0).error_code == ErrorCode.INVALID_GROUP_ID


def test_state_survives_a_broker_restart(classpath):
    """Half accepted, the other half released, then the broker is killed -9 and started again:
    the next member gets the released half (delivered once before) and nothing accepted. The
    high watermarks are not checkpointed meanwhile (as when the kill comes within the 5 s
    interval): the state written since the last checkpoint is read back all the same."""
    overrides = {"replica.high.watermark.checkpoint.interval.ms": 3_600_000}
    with EmbeddedBroker(mode="subprocess", overrides=overrides) as kafka:
        topic, group = new_topic(kafka), f"g-{uuid.uuid4().hex[:8]}"
        group_configs(kafka, group, share_auto_offset_reset="earliest")
        values = [f"r{i}" for i in range(10)]
        produce(kafka, topic, values)
        first = ShareMember(classpath, kafka.bootstrap_servers, topic, group, "accept=5").finish()
        accepted = [v for _, _, v in first][:5]
        kafka.restart(kill=True)
        second = ShareMember(classpath, kafka.bootstrap_servers, topic, group).finish()
        assert sorted(v for _, _, v in second) == sorted(set(values) - set(accepted))
        # the records the first member got and released count that delivery (and one more
        # when its client fetched them again before it closed, which gives them back: the CI
        # run of 0cfe9b1 saw 3)
        released_before = {v for _, _, v in first[5:]}
        assert {v for _, count, v in second if count >= 2} == released_before
