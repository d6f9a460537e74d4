"""A restart with a long history of offset commits, over real sockets against ``wireserver
serve``: as Kafka, the broker serves at once (Metadata, Produce) while ``__consumer_offsets``
loads in the background; meanwhile the group's OffsetFetch and ListGroups answer
COORDINATOR_LOAD_IN_PROGRESS, then the last committed offsets, from which a kafka-python
consumer of the group resumes."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.protocol.admin.groups import ListGroupsRequest
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetFetchRequest

from tests.groups.conftest import ServedBroker
from tests.integration import raw
from wireserver.protocol.errors import ErrorCode
from wireserver.testing import KafkaWire

pytestmark = pytest.mark.integration

GROUP, TOPIC = "resumes", "history"
#: Commits of every partition of the topic, each request one batch of PARTITIONS records:
#: 200,000 records in the one partition of ``__consumer_offsets``, a load of a second or more.
PARTITIONS, COMMITS = 200, 1_000


def offset_commit(offsets: dict[int, int]) -> OffsetCommitRequest:
    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    partition = topic.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        version=8,
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            topic(
                name=TOPIC,
                partitions=[
                    partition(
                        partition_index=p,
                        committed_offset=o,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                    for p, o in offsets.items()
                ],
            )
        ],
    )


def offset_fetch(wire: KafkaWire) -> tuple[int, dict[int, int]]:
    """The group's error and its committed offsets of the first three partitions."""
    group = OffsetFetchRequest.OffsetFetchRequestGroup
    topics = [group.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0, 1, 2])]
    response = wire.request(
        OffsetFetchRequest(
            version=8,
            groups=[group(group_id=GROUP, topics=topics)],
            require_stable=False,
        )
    )
    [answer] = response.groups
    offsets = {p.partition_index: p.committed_offset for t in answer.topics for p in t.partitions}
    return answer.error_code, offsets


def list_groups_error(wire: KafkaWire) -> int:
    return wire.request(ListGroupsRequest(version=4, states_filter=[])).error_code


def test_a_restart_serves_at_once_and_loads_the_groups_in_the_background(tmp_path):
    broker = ServedBroker(str(tmp_path), **{"offsets.topic.num.partitions": "1"})
    broker.start()
    try:
        with KafkaWire(broker.bootstrap) as wire:
            wire.create_topic(TOPIC, PARTITIONS)
            values = [b"record-%d" % i for i in range(10)]
            produced = wire.request(raw.produce(TOPIC, {0: raw.v2_batch(values)}))
            assert raw.produce_errors(produced) == {0: 0}
            for n in range(COMMITS):
                answer = wire.request(offset_commit({p: n for p in range(PARTITIONS)}))
                assert {p.error_code for t in answer.topics for p in t.partitions} == {0}
            wire.request(offset_commit({0: 7, 1: 70, 2: 700}))
            assert offset_fetch(wire) == (0, {0: 7, 1: 70, 2: 700})

        broker.restart()
        with KafkaWire(broker.bootstrap) as wire:
            # Served before the load ends: Metadata, a Produce, and the group's coordinator
            # saying it is loading.
            [topic] = wire.request(raw.metadata([TOPIC])).topics
            assert (topic.error_code, len(topic.partitions)) == (0, PARTITIONS)
            error, _ = offset_fetch(wire)
            assert error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            assert list_groups_error(wire) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            produced = wire.request(raw.produce(TOPIC, {0: raw.v2_batch([b"while loading"])}))
            assert raw.produce_errors(produced) == {0: 0}
            deadline = time.monotonic() + 120
            while (found := offset_fetch(wire))[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                assert time.monotonic() < deadline, "the groups never loaded"
                time.sleep(0.05)
            assert found == (0, {0: 7, 1: 70, 2: 700})
            assert list_groups_error(wire) == 0
        assert any("__consumer_offsets-0: loaded 1 group(s) in" in line for line in broker.output)

        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            group_id=GROUP,
            enable_auto_commit=False,
            consumer_timeout_ms=10_000,
        )
        try:
            consumer.assign([TopicPartition(TOPIC, 0)])
            first = next(iter(consumer))
            assert (first.offset, first.value) == (7, b"record-7")
        finally:
            consumer.close()
    finally:
        broker.stop()
