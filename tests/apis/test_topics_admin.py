"""DeleteTopics, CreatePartitions, DeleteRecords, DescribeCluster, DescribeLogDirs,
OffsetForLeaderEpoch and DescribeTopicPartitions against a real broker."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import NewPartitions as CNewPartitions
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import NewPartitions, NewTopic
from kafka.errors import InvalidPartitionsError, UnknownTopicOrPartitionError
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.admin.topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from kafka.protocol.consumer.offsets import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.structs import TopicPartition

from tests.apis.conftest import wait


def produce(broker, topic, count, partition=0):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
    for i in range(count):
        producer.send(topic, b"v%d" % i, partition=partition).get(10)
    producer.close()


def test_delete_topics(kadmin, cadmin, raw, topic_name):
    kadmin.create_topics(
        [
            NewTopic(topic_name, 2, 1),
            NewTopic(topic_name + "-c", 1, 1),
            NewTopic(topic_name + "-i", 1, 1),
        ]
    )
    kadmin.delete_topics([topic_name])
    assert topic_name not in kadmin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        kadmin.delete_topics([topic_name])
    assert wait(cadmin.delete_topics([topic_name + "-c"]))[topic_name + "-c"] is None
    # v6 by id, an unknown id, duplicates, name and id together
    topic_id = kadmin.describe_topics([topic_name + "-i"])[0]["topic_id"]
    state = DeleteTopicsRequest.DeleteTopicState
    unknown = uuid.uuid4()
    response = raw.send(
        DeleteTopicsRequest,
        DeleteTopicsResponse,
        6,
        timeout_ms=1000,
        topics=[
            state(name=None, topic_id=uuid.UUID(str(topic_id))),
            state(name=None, topic_id=unknown),
            state(name="dup", topic_id=uuid.UUID(int=0)),
            state(name="dup", topic_id=uuid.UUID(int=0)),
            state(name="both", topic_id=unknown),
        ],
    )
    codes = [(r.name, r.error_code) for r in response.responses]
    assert codes == [(topic_name + "-i", 0), (None, 100), ("dup", 42), ("dup", 42), ("both", 42)]
    assert topic_name + "-i" not in kadmin.list_topics()
    # a recreated topic starts empty
    kadmin.create_topics([NewTopic(topic_name, 1, 1)])
    consumer = KafkaConsumer(bootstrap_servers=kadmin.config["bootstrap_servers"])
    assert consumer.end_offsets([TopicPartition(topic_name, 0)]) == {
        TopicPartition(topic_name, 0): 0
    }
    consumer.close()


def test_delete_disabled(tmp_path):
    from tests.apis.conftest import RawClient, RunningBroker

    broker = RunningBroker(tmp_path, ["delete.topic.enable=false"])
    try:
        client = RawClient(broker)
        for version, code in ((2, 42), (5, 73)):
            response = client.send(
                DeleteTopicsRequest,
                DeleteTopicsResponse,
                version,
                timeout_ms=1000,
                topic_names=["anything"],
            )
            assert response.responses[0].error_code == code
        client.close()
    finally:
        broker.stop()


def test_create_partitions(kadmin, cadmin, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 1, 1)])
    kadmin.create_partitions({topic_name: NewPartitions(3)})
    assert len(kadmin.describe_topics([topic_name])[0]["partitions"]) == 3
    with pytest.raises(InvalidPartitionsError):
        kadmin.create_partitions({topic_name: NewPartitions(2)})
    with pytest.raises(InvalidPartitionsError):
        kadmin.create_partitions({topic_name: NewPartitions(3)})
    result = wait(cadmin.create_partitions([CNewPartitions(topic_name, 5)], validate_only=True))
    assert result[topic_name] is None
    result = wait(cadmin.create_partitions([CNewPartitions(topic_name, 5, [[1], [9]])]))
    assert result[topic_name].args[0].name() == "INVALID_REPLICA_ASSIGNMENT"
    result = wait(cadmin.create_partitions([CNewPartitions(topic_name, 4, [[1]])]))
    assert result[topic_name] is None
    result = wait(cadmin.create_partitions([CNewPartitions(topic_name + "-none", 4)]))
    assert result[topic_name + "-none"].args[0].name() == "UNKNOWN_TOPIC_OR_PART"
    assert len(kadmin.describe_topics([topic_name])[0]["partitions"]) == 4
    produce(kadmin_broker(kadmin), topic_name, 1, partition=3)


def kadmin_broker(kadmin):
    class Address:
        bootstrap = kadmin.config["bootstrap_servers"]

    return Address


def test_delete_records(broker, kadmin, cadmin, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 1, 1)])
    produce(broker, topic_name, 10)
    tp = TopicPartition(topic_name, 0)
    result = kadmin.delete_records({tp: 4})
    assert result[tp]["low_watermark"] == 4
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    assert consumer.beginning_offsets([tp]) == {tp: 4}
    consumer.assign([tp])
    records = consumer.poll(5000)[tp]
    assert records[0].offset == 4
    consumer.close()
    # below the log start: no change; above the high watermark: OFFSET_OUT_OF_RANGE
    assert kadmin.delete_records({tp: 2})[tp]["low_watermark"] == 4
    out = wait(cadmin.delete_records([CTopicPartition(topic_name, 0, 11)]))
    assert list(out.values())[0].args[0].name() == "OFFSET_OUT_OF_RANGE"
    # -1: up to the high watermark
    out = wait(cadmin.delete_records([CTopicPartition(topic_name, 0, -1)]))
    assert list(out.values())[0].low_watermark == 10


def test_describe_cluster(broker, kadmin, cadmin, raw):
    described = kadmin.describe_cluster()
    assert described["controller_id"] == 1
    assert [(b["broker_id"], b["port"]) for b in described["brokers"]] == [(1, broker.port)]
    result = cadmin.describe_cluster(include_authorized_operations=True).result(10)
    assert result.controller.id == 1 and [n.id for n in result.nodes] == [1]
    assert result.cluster_id == described["cluster_id"]
    assert {"DESCRIBE", "ALTER_CONFIGS"} <= set(described["authorized_operations"])
    response = raw.send(
        DescribeClusterRequest,
        DescribeClusterResponse,
        1,
        include_cluster_authorized_operations=False,
        endpoint_type=2,
    )
    assert response.error_code == 114  # MISMATCHED_ENDPOINT_TYPE
    response = raw.send(
        DescribeClusterRequest,
        DescribeClusterResponse,
        2,
        include_cluster_authorized_operations=False,
        endpoint_type=7,
        include_fenced_brokers=True,
    )
    assert response.error_code == 115  # UNSUPPORTED_ENDPOINT_TYPE


def test_describe_log_dirs(broker, kadmin, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 2, 1)])
    produce(broker, topic_name, 5)
    (entry,) = kadmin.describe_log_dirs()
    dirs = {d["log_dir"]: d for d in entry["log_dirs"]}
    assert set(dirs) == set(broker.log_dirs)
    sizes = {}
    for d in dirs.values():
        assert d["error_code"] == 0 and d["total_bytes"] >= d["usable_bytes"] > 0
        for t in d["topics"]:
            for p in t["partitions"]:
                sizes[(t["name"], p["partition_index"])] = p["partition_size"]
                assert p["offset_lag"] == 0 and not p["is_future_key"]
    assert sizes[(topic_name, 0)] > 0 and sizes[(topic_name, 1)] == 0
    (entry,) = kadmin.describe_log_dirs({topic_name: [1]})
    listed = [
        (t["name"], p["partition_index"])
        for d in entry["log_dirs"]
        for t in d["topics"]
        for p in t["partitions"]
    ]
    assert listed == [(topic_name, 1)]


def epoch_request(raw, topic, partition, leader_epoch, current=-1, version=4):
    t = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    return (
        raw.send(
            OffsetForLeaderEpochRequest,
            OffsetForLeaderEpochResponse,
            version,
            replica_id=-1,
            topics=[
                t(
                    topic=topic,
                    partitions=[
                        t.OffsetForLeaderPartition(
                            partition=partition,
                            current_leader_epoch=current,
                            leader_epoch=leader_epoch,
                        )
                    ],
                )
            ],
        )
        .topics[0]
        .partitions[0]
    )


def test_offset_for_leader_epoch(broker, kadmin, raw, topic_name):
    kadmin.create_topics([NewTopic(topic_name, 2, 1)])
    produce(broker, topic_name, 3)
    found = epoch_request(raw, topic_name, 0, 0)
    assert (found.error_code, found.leader_epoch, found.end_offset) == (0, 0, 3)
    empty = epoch_request(raw, topic_name, 1, 0, version=2)
    assert (empty.error_code, empty.leader_epoch, empty.end_offset) == (0, 0, 0)
    above = epoch_request(raw, topic_name, 0, 5)
    assert (above.leader_epoch, above.end_offset) == (-1, -1)
    assert epoch_request(raw, topic_name, 0, 0, current=1).error_code == 75  # UNKNOWN_LEADER_EPOCH
    assert epoch_request(raw, topic_name, 9, 0).error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
    # the consumer's validation after a seek uses OffsetForLeaderEpoch too
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    tp = TopicPartition(topic_name, 0)
    consumer.assign([tp])
    consumer.seek(tp, 1)
    assert [r.offset for r in consumer.poll(5000).get(tp, [])] == [1, 2]
    consumer.close()


def describe_partitions(raw, names, limit=2000, cursor=None):
    request = DescribeTopicPartitionsRequest
    return raw.send(
        request,
        DescribeTopicPartitionsResponse,
        0,
        topics=[request.TopicRequest(name=n) for n in names],
        response_partition_limit=limit,
        cursor=None
        if cursor is None
        else request.Cursor(topic_name=cursor[0], partition_index=cursor[1]),
    )


def test_describe_topic_partitions(kadmin, raw, topic_name):
    a, b = topic_name + "-a", topic_name + "-b"
    kadmin.create_topics([NewTopic(b, 2, 1), NewTopic(a, 3, 1)])
    response = describe_partitions(raw, [b, a, topic_name + "-none"])
    assert [(t.name, t.error_code) for t in response.topics] == [
        (a, 0),
        (b, 0),
        (topic_name + "-none", 3),
    ]
    first = response.topics[0]
    assert first.topic_id.int != 0 and not first.is_internal
    part = first.partitions[0]
    assert (
        part.leader_id,
        part.leader_epoch,
        part.replica_nodes,
        part.isr_nodes,
        part.eligible_leader_replicas,
        part.last_known_elr,
        part.offline_replicas,
    ) == (1, 0, [1], [1], [], [], [])
    assert response.next_cursor is None
    # pagination: 2 partitions per page
    seen, cursor = [], None
    for _ in range(5):
        page = describe_partitions(raw, [a, b], limit=2, cursor=cursor)
        seen += [(t.name, p.partition_index) for t in page.topics for p in t.partitions]
        if page.next_cursor is None:
            break
        cursor = (page.next_cursor.topic_name, page.next_cursor.partition_index)
    assert seen == [(a, 0), (a, 1), (a, 2), (b, 0), (b, 1)]
    # all topics (empty list) includes ours; a cursor outside the named topics is refused
    everything = describe_partitions(raw, [])
    assert {a, b} <= {t.name for t in everything.topics}
    bad = describe_partitions(raw, [a], cursor=(b, 0))
    assert [t.error_code for t in bad.topics] == [42]


def test_elect_leaders_on_one_node(cadmin, raw, topic_name):
    from confluent_kafka import ElectionType
    from confluent_kafka.admin import NewTopic as CNewTopic
    from kafka.protocol.admin.topics import ElectLeadersRequest, ElectLeadersResponse

    cadmin.create_topics([CNewTopic(topic_name, 2, 1)])[topic_name].result(10)
    result = cadmin.elect_leaders(ElectionType.PREFERRED, [CTopicPartition(topic_name, 0)]).result(
        10
    )
    (error,) = result.values()
    assert "ELECTION_NOT_NEEDED" in str(error)
    topics = [ElectLeadersRequest.TopicPartitions(topic=topic_name, partitions=[1, 7])]
    for version in (0, 1, 2):
        fields = {"election_type": 1} if version >= 1 else {}
        response = raw.send(
            ElectLeadersRequest,
            ElectLeadersResponse,
            version,
            topic_partitions=topics,
            timeout_ms=1000,
            **fields,
        )
        (entry,) = response.replica_election_results
        assert [
            (p.partition_id, p.error_code, p.error_message) for p in entry.partition_result
        ] == [
            (1, 84, "Leader election not needed for topic partition."),
            (7, 3, f"No such partition as {topic_name}-7"),
        ]  # ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION, in Kafka's words
    # All partitions: those needing no election are left out.
    response = raw.send(
        ElectLeadersRequest,
        ElectLeadersResponse,
        2,
        election_type=0,
        topic_partitions=None,
        timeout_ms=1000,
    )
    assert response.error_code == 0 and response.replica_election_results == []


def test_partition_reassignments_on_one_node(cadmin, raw, topic_name):
    """On one node nothing can move: nothing is ever being reassigned, the current replicas
    are accepted, a cancel finds no reassignment in progress, and Kafka's own refusals."""
    from confluent_kafka.admin import NewTopic as CNewTopic
    from kafka.protocol.admin.topics import (
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse,
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
    )

    cadmin.create_topics([CNewTopic(topic_name, 6, 1)])[topic_name].result(10)
    listed = raw.send(
        ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, 0, topics=None
    )
    assert (listed.error_code, listed.topics) == (0, [])
    node = 1  # the broker's node.id
    targets = {0: [node], 1: None, 9: [node], 3: [], 4: [node, 7], 5: [node, node]}
    part = AlterPartitionReassignmentsRequest.ReassignableTopic.ReassignablePartition
    topics = [
        AlterPartitionReassignmentsRequest.ReassignableTopic(
            name=topic_name,
            partitions=[part(partition_index=p, replicas=r) for p, r in targets.items()],
        )
    ]
    for version in (0, 1):
        extra = {"allow_replication_factor_change": True} if version else {}
        answer = raw.send(
            AlterPartitionReassignmentsRequest,
            AlterPartitionReassignmentsResponse,
            version,
            timeout_ms=1000,
            topics=topics,
            **extra,
        )
        (entry,) = answer.responses
        assert answer.error_code == 0 and entry.name == topic_name
        got = {p.partition_index: (p.error_code, p.error_message) for p in entry.partitions}
        assert got == {
            0: (0, None),
            1: (85, "No partition reassignment is in progress."),
            9: (3, f"Unable to find partition {topic_name}:9."),
            3: (39, "The manual partition assignment includes an empty replica list."),
            4: (
                39,
                "The manual partition assignment includes broker 7, but no such broker is "
                "registered.",
            ),
            5: (39, f"The manual partition assignment includes the broker {node} more than once."),
        }
