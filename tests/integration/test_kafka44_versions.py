"""The versions Kafka 4.4 added to APIs wireserver already served, sent as raw requests:
OffsetCommit / OffsetFetch v10 (topics by id, KIP-848), ListOffsets v11 (the earliest pending
upload sentinel, KIP-1023), DeleteGroups v3 (a per-group error message) and DescribeLogDirs v5
(``is_cordoned``). What each answers is what a Kafka 4.4.0 broker answers
(compat_tests/raw_protocol.py sends the same requests to both)."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.admin.cluster import DescribeLogDirsRequest
from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from compat_tests.raw_protocol import join_group, offset_commit
from tests.integration import raw
from wireserver.protocol.messages_extra import DeleteGroupsRequest
from wireserver.testing import KafkaWire, wait_for

NONE, UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION = 0, 3, 35
NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_ID = 68, 69, 100


@pytest.fixture
def wire(broker):
    with KafkaWire(broker.bootstrap_servers) as connection:
        yield connection


@pytest.fixture
def topic_id(wire, topic) -> uuid.UUID:
    """``topic`` made with 2 partitions and 3 records on partition 0; its id."""
    wire.create_topic(topic, partitions=2)
    response = wire.request(raw.produce(topic, {0: raw.v2_batch([b"a", b"b", b"c"])}))
    assert raw.produce_errors(response) == {0: NONE}
    (found,) = wire.request(raw.metadata([topic], auto_create=False)).topics
    return found.topic_id


def commit(wire, version, group, topics):
    """A simple commit (no member) of offset 10 + partition, metadata "m", to each partition
    of each (name, topic id, partitions); {(topic key, partition): error} from the response,
    keyed by the topic id from v10 and the name before."""
    response = wire.request(offset_commit(version, group, topics))
    return {
        (t.topic_id if version >= 10 else t.name, p.partition_index): p.error_code
        for t in response.topics
        for p in t.partitions
    }


def fetch(wire, version, group, topics):
    """OffsetFetch v8+ of (name, topic id, partitions) (None: every offset the group has):
    the group's error and {(topic key, partition): (offset, metadata, error)}."""
    g = OffsetFetchRequest.OffsetFetchRequestGroup
    wanted = None
    if topics is not None:
        wanted = [
            g.OffsetFetchRequestTopics(name=name, topic_id=topic_id, partition_indexes=parts)
            for name, topic_id, parts in topics
        ]
    request = OffsetFetchRequest(
        version=version, groups=[g(group_id=group, topics=wanted)], require_stable=False
    )
    (found,) = wire.request(request).groups
    return found.error_code, {
        (t.topic_id if version >= 10 else t.name, p.partition_index): (
            p.committed_offset,
            p.metadata,
            p.error_code,
        )
        for t in found.topics
        for p in t.partitions
    }


def test_the_new_versions_are_advertised(wire):
    assert {key: wire.versions[key] for key in (2, 8, 9, 35, 42)} == {
        2: (1, 11),
        8: (2, 10),
        9: (1, 10),
        35: (1, 5),
        42: (0, 3),
    }


def test_offsets_committed_by_topic_id_are_fetched_by_id_and_by_name(wire, topic, topic_id):
    group = f"{topic}-g"
    # the first commit waits for the offsets topic (made on first use)
    wait_for(
        lambda: (
            commit(wire, 10, group, [(None, topic_id, [0, 1])])
            == {(topic_id, 0): NONE, (topic_id, 1): NONE}
        ),
        what="a v10 commit by topic id",
    )
    assert fetch(wire, 10, group, [(None, topic_id, [0, 1, 2])]) == (
        NONE,
        {
            (topic_id, 0): (10, "m", NONE),
            (topic_id, 1): (11, "m", NONE),
            (topic_id, 2): (-1, "", NONE),
        },
    )
    # the same offsets by name (v9), and every offset of the group (null topics) by id
    assert fetch(wire, 9, group, [(topic, None, [0, 1])]) == (
        NONE,
        {(topic, 0): (10, "m", NONE), (topic, 1): (11, "m", NONE)},
    )
    assert fetch(wire, 10, group, None) == (
        NONE,
        {(topic_id, 0): (10, "m", NONE), (topic_id, 1): (11, "m", NONE)},
    )
    # a partition the topic does not have, as before v10
    assert commit(wire, 10, group, [(None, topic_id, [7])]) == {
        (topic_id, 7): UNKNOWN_TOPIC_OR_PARTITION
    }


def test_a_topic_id_not_in_the_metadata_is_unknown_on_each_partition(wire, topic, topic_id):
    group, stranger = f"{topic}-g", uuid.uuid4()
    result = wait_for(
        lambda: commit(wire, 10, group, [(None, topic_id, [0]), (None, stranger, [0, 1])]),
        what="a v10 commit",
    )
    assert result == {
        (topic_id, 0): NONE,
        (stranger, 0): UNKNOWN_TOPIC_ID,
        (stranger, 1): UNKNOWN_TOPIC_ID,
    }
    assert fetch(wire, 10, group, [(None, stranger, [0]), (None, topic_id, [0])]) == (
        NONE,
        {(stranger, 0): (-1, "", UNKNOWN_TOPIC_ID), (topic_id, 0): (10, "m", NONE)},
    )


def test_delete_groups_v3_answers_a_null_message_as_kafka_does(wire, topic, topic_id):
    """Kafka 4.4 fills ``error_message`` only where a deletion failed; NON_EMPTY_GROUP and
    GROUP_ID_NOT_FOUND come without one."""
    busy, empty = f"{topic}-busy", f"{topic}-empty"
    joined = wire.request(join_group(busy, session_timeout_ms=30000))
    assert joined.error_code == NONE
    wait_for(lambda: commit(wire, 9, empty, [(topic, None, [0])]) == {(topic, 0): NONE})
    response = wire.request(
        DeleteGroupsRequest(version=3, groups_names=[busy, empty, f"{topic}-never"])
    )
    assert [(r.group_id, r.error_code, r.error_message) for r in response.results] == [
        (busy, NON_EMPTY_GROUP, None),
        (empty, NONE, None),
        (f"{topic}-never", GROUP_ID_NOT_FOUND, None),
    ]
    assert fetch(wire, 9, empty, [(topic, None, [0])]) == (NONE, {(topic, 0): (-1, "", NONE)})


def test_describe_log_dirs_v5_reports_no_dir_cordoned(wire, topic, topic_id):
    t = DescribeLogDirsRequest.DescribableLogDirTopic
    response = wire.request(
        DescribeLogDirsRequest(version=5, topics=[t(topic=topic, partitions=[0, 1])])
    )
    assert response.error_code == NONE and response.results
    assert [r.is_cordoned for r in response.results] == [False] * len(response.results)
    assert {
        (found.name, p.partition_index)
        for r in response.results
        for found in r.topics
        for p in found.partitions
    } == {(topic, 0), (topic, 1)}


def list_offsets(wire, version, topic, timestamps):
    t = ListOffsetsRequest.ListOffsetsTopic
    response = wire.request(
        ListOffsetsRequest(
            version=version,
            replica_id=-1,
            isolation_level=0,
            topics=[
                t(
                    name=topic,
                    partitions=[
                        t.ListOffsetsPartition(
                            partition_index=0, current_leader_epoch=-1, timestamp=ts
                        )
                        for ts in timestamps
                    ],
                )
            ],
        )
    )
    (found,) = response.topics
    return [(p.error_code, p.timestamp, p.offset, p.leader_epoch) for p in found.partitions]


def test_list_offsets_earliest_pending_upload_finds_nothing_without_remote_storage(
    wire, topic, topic_id
):
    """-6 (KIP-1023) is what Kafka answers for a topic without tiered storage: no offset; a
    version before 11 may not ask for it (UNSUPPORTED_VERSION, as for -5 before v9)."""
    assert list_offsets(wire, 11, topic, [-6, -1]) == [
        (NONE, -1, -1, -1),
        (NONE, -1, 3, 0),
    ]
    assert list_offsets(wire, 10, topic, [-6]) == [(UNSUPPORTED_VERSION, -1, -1, -1)]
    assert list_offsets(wire, 8, topic, [-5]) == [(UNSUPPORTED_VERSION, -1, -1, -1)]
