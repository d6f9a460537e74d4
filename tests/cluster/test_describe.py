"""Every API that reports where partitions live answers from the cluster's view, on every broker
of a 3-broker cluster:

- DescribeTopicPartitions (what Kafka 4's ``kafka-topics --describe`` sends) gives each
  partition's real leader, leader epoch, replicas and ISR on all three brokers, the same as
  Metadata, with pagination; after a broker is killed the ISR shrinks, leaders move and the dead
  broker is an offline replica, in ``kafka-topics --describe`` output and in kafka-python's and
  confluent-kafka's topic descriptions alike; a partition whose only replica died has no leader
  and is listed by ``kafka-topics --unavailable-partitions``;
- DescribeLogDirs (kafka-python's ``describe_log_dirs``, which asks every broker) lists on each
  broker only the partitions it is a replica of;
- DescribeProducers answers on the leader and the followers, NOT_LEADER_OR_FOLLOWER on a broker
  that is no replica;
- DeleteRecords: only the leader deletes, the followers follow its log start offset and the
  answer waits for them, so the deleted records stay deleted after the leader dies; ListOffsets
  then names the leader epoch that wrote each offset it finds;
- Produce and Fetch sent to a broker that does not lead the partition name the leader, its
  leader epoch and its endpoint (KIP-951).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin.topics import DeleteRecordsRequest, DescribeTopicPartitionsRequest
from kafka.protocol.admin.transactions import DescribeProducersRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.producer.produce import ProduceRequest

from compat_tests.reference import require_tools
from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.topics import create, kafka_topics_describe
from tests.integration import raw
from wireserver.testing import KafkaWire
from wireserver.testing.cluster import cluster_metadata as metadata

pytestmark = pytest.mark.integration

ALL = [1, 2, 3]
NOT_LEADER_OR_FOLLOWER = 6
LATEST, EARLIEST = -1, -2  # ListOffsets' special timestamps


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(
        zookeeper, 3, "/wireserver-describe", {"auto.leader.rebalance.enable": "false"}
    ).start()
    yield nodes
    nodes.close()


def live(cluster: Cluster) -> list:
    return [b for b in cluster.brokers.values() if b.running]


def describe_partitions(
    bootstrap: str, topics: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None
):
    """One raw DescribeTopicPartitions v0 request to one broker."""
    request = DescribeTopicPartitionsRequest
    with KafkaWire(bootstrap) as wire:
        return wire.request(
            request(
                version=0,
                topics=[request.TopicRequest(name=name) for name in topics],
                response_partition_limit=limit,
                cursor=None
                if cursor is None
                else request.Cursor(topic_name=cursor[0], partition_index=cursor[1]),
            )
        )


def described(bootstrap: str, topic: str) -> dict:
    """{partition: (leader, leader epoch, replicas, isr)} from DescribeTopicPartitions, the same
    shape as test_replication.metadata's; checks the fields Kafka leaves empty without ELR."""
    (entry,) = describe_partitions(bootstrap, [topic]).topics
    assert entry.error_code == 0 and entry.name == topic
    for p in entry.partitions:
        assert p.error_code == 0
        assert (p.eligible_leader_replicas, p.last_known_elr) == ([], [])
    return {
        p.partition_index: (p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes))
        for p in entry.partitions
    }


def offline_replicas(bootstrap: str, topic: str) -> dict:
    (entry,) = describe_partitions(bootstrap, [topic]).topics
    return {p.partition_index: list(p.offline_replicas) for p in entry.partitions}


def wait_settled(cluster: Cluster, topic: str, isr: list[int], timeout: float = 60.0) -> dict:
    """Wait until every live broker's Metadata gives every partition a leader and exactly
    ``isr`` in sync, and all agree; that view."""

    def settled():
        views = [metadata(b.bootstrap_servers, topic)[2] for b in live(cluster)]
        first = views[0]
        return (
            first
            if first
            and all(v == first for v in views)
            and all(p[0] >= 0 and sorted(p[3]) == isr for p in first.values())
            else None
        )

    return wait_for(settled, timeout, 0.2, what=f"{topic}: ISR {isr} on every broker")


def as_printed(view: dict) -> dict:
    """A (leader, epoch, replicas, isr) view in kafka_topics_describe's shape."""
    return {
        p: (leader if leader >= 0 else None, replicas, isr)
        for p, (leader, _, replicas, isr) in view.items()
    }


def admin_client_views(bootstrap: str, topic: str) -> tuple[dict, dict]:
    """(kafka-python's, confluent-kafka's) {partition: (leader, replicas, isr)}."""
    kadmin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        (entry,) = kadmin.describe_topics([topic])
    finally:
        kadmin.close()
    kafka_python = {
        p["partition_index"]: (
            p["leader_id"] if p["leader_id"] >= 0 else None,
            list(p["replica_nodes"]),
            list(p["isr_nodes"]),
        )
        for p in entry["partitions"]
    }
    cadmin = AdminClient({"bootstrap.servers": bootstrap})
    description = cadmin.describe_topics(TopicCollection([topic]))[topic].result(30)
    confluent = {
        p.id: (
            p.leader.id if p.leader is not None else None,
            [r.id for r in p.replicas],
            [r.id for r in p.isr],
        )
        for p in description.partitions
    }
    return kafka_python, confluent


def test_describe_topic_partitions_on_every_broker(cluster):
    topic = "described-raw"
    create(cluster, topic, partitions=3, rf=3)
    view = wait_settled(cluster, topic, ALL)
    # Placement is Kafka's round robin: three partitions, three different preferred leaders.
    assert sorted(leader for leader, _, _, _ in view.values()) == ALL
    assert all(sorted(replicas) == ALL for _, _, replicas, _ in view.values())
    for broker in cluster.brokers.values():
        assert described(broker.bootstrap_servers, topic) == view
        assert offline_replicas(broker.bootstrap_servers, topic) == {0: [], 1: [], 2: []}
    # Pagination through a follower: two partitions, then the cursor's last one.
    follower = next(b for i, b in cluster.brokers.items() if i != view[0][0])
    first = describe_partitions(follower.bootstrap_servers, [topic], limit=2)
    assert [p.partition_index for p in first.topics[0].partitions] == [0, 1]
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == (topic, 2)
    rest = describe_partitions(follower.bootstrap_servers, [topic], cursor=(topic, 2))
    assert [
        (p.partition_index, p.leader_id, list(p.isr_nodes)) for p in rest.topics[0].partitions
    ] == [(2, view[2][0], view[2][3])]
    assert rest.next_cursor is None


def test_kafka_topics_describe_follows_a_failure(cluster):
    require_tools()
    topic = "described-tool"
    create(cluster, topic, partitions=3, rf=3)
    before = wait_settled(cluster, topic, ALL)
    for broker in cluster.brokers.values():
        printed = kafka_topics_describe(broker.bootstrap_servers, topic)
        assert printed == as_printed(before), f"via broker {broker.bootstrap_servers}"
    victim = before[0][0]  # the leader of partition 0
    survivors = [i for i in ALL if i != victim]
    # A topic whose only replica is the victim: it goes offline with it.
    single = "described-offline"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(single, num_partitions=1, replica_assignment=[[victim]])])[
        single
    ].result(30)
    wait_for(
        lambda: metadata(cluster.bootstrap, single)[2].get(0, (-1,))[0] == victim,
        30,
        0.2,
        what=f"{single}: led by broker {victim}",
    )
    cluster.brokers[victim].kill()
    try:
        after = wait_settled(cluster, topic, survivors)
        for p, (leader, _epoch, replicas, isr) in after.items():
            assert replicas == before[p][2]  # the assignment stays
            assert victim not in isr and leader in survivors
        assert after[0][1] > before[0][1]  # partition 0 moved: a new leader epoch
        for i in survivors:
            bootstrap = cluster.brokers[i].bootstrap_servers
            assert described(bootstrap, topic) == after
            assert offline_replicas(bootstrap, topic) == {p: [victim] for p in after}
            assert kafka_topics_describe(bootstrap, topic) == as_printed(after)
        # Every partition lost a replica: all are under-replicated.
        under = kafka_topics_describe(
            cluster.brokers[survivors[0]].bootstrap_servers, topic, "--under-replicated-partitions"
        )
        assert sorted(under) == [0, 1, 2]
        kafka_python, confluent = admin_client_views(cluster.bootstrap, topic)
        assert kafka_python == confluent == as_printed(after)
        # The offline partition: no leader (error NONE in DescribeTopicPartitions, as Kafka),
        # its replica offline, and kafka-topics lists it as unavailable.
        survivor = cluster.brokers[survivors[0]].bootstrap_servers
        offline = wait_for(
            lambda: (v := metadata(survivor, single)[2])[0][0] == -1 and v,
            30,
            0.2,
            what=f"{single} offline",
        )
        assert described(survivor, single) == offline
        assert offline_replicas(survivor, single) == {0: [victim]}
        assert (
            kafka_topics_describe(survivor, single, "--unavailable-partitions")
            == as_printed(offline)
            == {0: (None, [victim], offline[0][3])}
        )
    finally:
        cluster.brokers[victim].start()
    back = wait_settled(cluster, topic, ALL, timeout=90)
    assert kafka_topics_describe(cluster.bootstrap, topic) == as_printed(back)


def test_describe_log_dirs_lists_only_hosted_replicas(cluster):
    spread, pair = "dirs-rf1", "dirs-rf2"
    create(cluster, spread, partitions=3, rf=1)
    create(cluster, pair, partitions=2, rf=2)
    replicas_of = {}
    for topic, rf in ((spread, 1), (pair, 2)):
        view = wait_for(
            lambda: (
                (v := metadata(cluster.bootstrap, topic)[2])
                and all(len(p[3]) == rf for p in v.values())
                and v
            ),
            60,
            0.2,
            what=f"{topic} in sync",
        )
        replicas_of.update({(topic, p): replicas for p, (_, _, replicas, _) in view.items()})
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        answers = kadmin.describe_log_dirs([spread, pair])  # asks every broker
    finally:
        kadmin.close()
    listed = {
        answer["broker"]: sorted(
            (topic["name"], partition["partition_index"])
            for log_dir in answer["log_dirs"]
            for topic in log_dir["topics"]
            for partition in topic["partitions"]
        )
        for answer in answers
    }
    expected = {
        broker: sorted(tp for tp, replicas in replicas_of.items() if broker in replicas)
        for broker in ALL
    }
    assert listed == expected
    # Each of the three RF 1 partitions is on exactly one broker.
    assert sorted(tp for tps in listed.values() for tp in tps if tp[0] == spread) == [
        (spread, 0),
        (spread, 1),
        (spread, 2),
    ]


def describe_producers(bootstrap: str, topic: str) -> tuple[int, list]:
    """(error code, [(producer id, last sequence)]) of partition 0, from one broker."""
    request = DescribeProducersRequest
    with KafkaWire(bootstrap) as wire:
        response = wire.request(
            request(version=0, topics=[request.TopicRequest(name=topic, partition_indexes=[0])])
        )
    (partition,) = response.topics[0].partitions
    return partition.error_code, sorted(
        (p.producer_id, p.last_sequence) for p in partition.active_producers
    )


def test_describe_producers_on_replicas_only(cluster):
    topic = "producers-rf2"
    create(cluster, topic, partitions=1, rf=2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    delivered: list = []
    for i in range(5):
        producer.produce(
            topic, b"v%d" % i, partition=0, on_delivery=lambda err, msg: delivered.append(err)
        )
    producer.flush(60)
    assert delivered == [None] * 5
    leader, _, replicas, _ = metadata(cluster.bootstrap, topic)[2][0]
    (outsider,) = [i for i in ALL if i not in replicas]
    error, producers = describe_producers(cluster.brokers[leader].bootstrap_servers, topic)
    assert error == 0 and len(producers) == 1 and producers[0][1] == 4
    # The follower answers from its own copy once it has fetched the batch.
    (follower,) = [r for r in replicas if r != leader]
    wait_for(
        lambda: (
            describe_producers(cluster.brokers[follower].bootstrap_servers, topic) == (0, producers)
        ),
        30,
        0.2,
        what="the follower's producer state",
    )
    assert describe_producers(cluster.brokers[outsider].bootstrap_servers, topic) == (
        NOT_LEADER_OR_FOLLOWER,
        [],
    )


def delete_records_error(bootstrap: str, topic: str, offset: int) -> int:
    """The error code of a raw DeleteRecords of partition 0 below ``offset`` on one broker."""
    request = DeleteRecordsRequest
    with KafkaWire(bootstrap) as wire:
        response = wire.request(
            request(
                version=2,
                timeout_ms=30000,
                topics=[
                    request.DeleteRecordsTopic(
                        name=topic,
                        partitions=[
                            request.DeleteRecordsTopic.DeleteRecordsPartition(
                                partition_index=0, offset=offset
                            )
                        ],
                    )
                ],
            )
        )
    return response.topics[0].partitions[0].error_code


def list_offsets(bootstrap: str, topic: str, timestamps: list[int]) -> list[tuple[int, int]]:
    """(offset, leader epoch) of partition 0 for each timestamp, one request each."""
    request = ListOffsetsRequest
    found = []
    with KafkaWire(bootstrap) as wire:
        for timestamp in timestamps:
            response = wire.request(
                request(
                    version=9,
                    replica_id=-1,
                    isolation_level=0,
                    topics=[
                        request.ListOffsetsTopic(
                            name=topic,
                            partitions=[
                                request.ListOffsetsTopic.ListOffsetsPartition(
                                    partition_index=0, current_leader_epoch=-1, timestamp=timestamp
                                )
                            ],
                        )
                    ],
                )
            )
            (answer,) = response.topics[0].partitions
            assert answer.error_code == 0
            found.append((answer.offset, answer.leader_epoch))
    return found


def test_deleted_records_stay_deleted_after_failover(cluster):
    topic = "trimmed"
    create(cluster, topic, partitions=1, rf=3)
    wait_settled(cluster, topic, ALL)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, b"v%d" % i, partition=0)
    producer.flush(60)
    leader, epoch, _, _ = metadata(cluster.bootstrap, topic)[2][0]
    follower = next(i for i in ALL if i != leader)
    assert (
        delete_records_error(cluster.brokers[follower].bootstrap_servers, topic, 4)
        == NOT_LEADER_OR_FOLLOWER
    )
    cadmin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    (future,) = cadmin.delete_records([TopicPartition(topic, 0, 4)]).values()
    # The answer waited until every live follower's log start reached 4 (Kafka's
    # DelayedDeleteRecords): whichever replica leads next has no records below it.
    assert future.result(60).low_watermark == 4
    cluster.brokers[leader].kill()
    try:
        after = wait_settled(cluster, topic, sorted(i for i in ALL if i != leader))
        new_leader, new_epoch, _, _ = after[0]
        assert new_epoch > epoch
        # ListOffsets names the epoch that wrote the offset found (the old leader's for the log
        # start, 4) and the current one for the end, as Kafka's fetchOffsetByTimestamp.
        found = list_offsets(
            cluster.brokers[new_leader].bootstrap_servers, topic, [EARLIEST, LATEST]
        )
        assert found == [(4, epoch), (10, new_epoch)]
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": "trimmed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
            assert (low, high) == (4, 10)
            consumer.assign([TopicPartition(topic, 0, 0)])  # reset to the earliest: 4
            offsets = []
            deadline = time.monotonic() + 60
            while len(offsets) < 6 and time.monotonic() < deadline:
                message = consumer.poll(1)
                if message is not None and not message.error():
                    offsets.append(message.offset())
            assert offsets == list(range(4, 10))
        finally:
            consumer.close()
    finally:
        cluster.brokers[leader].start()
    wait_settled(cluster, topic, ALL, timeout=90)


def test_produce_and_fetch_name_the_leader_kip_951(cluster):
    topic = "hinted"
    create(cluster, topic, partitions=1, rf=1)
    view = wait_for(
        lambda: (v := metadata(cluster.bootstrap, topic)[2]) and v[0][0] > 0 and v,
        30,
        0.2,
        what=f"{topic}: a leader",
    )
    leader, epoch, _, _ = view[0]
    elsewhere = next(b for i, b in cluster.brokers.items() if i != leader)
    host, port = cluster.brokers[leader].bootstrap_servers.rsplit(":", 1)
    leader_endpoint = [(leader, host, int(port))]
    with KafkaWire(elsewhere.bootstrap_servers) as wire:
        topic_id = wire.request(raw.metadata([topic], auto_create=False)).topics[0].topic_id
        data = ProduceRequest.TopicProduceData
        produced = wire.request(
            ProduceRequest(
                version=12,
                transactional_id=None,
                acks=1,
                timeout_ms=10000,
                topic_data=[
                    data(
                        name=topic,
                        partition_data=[
                            data.PartitionProduceData(index=0, records=raw.v2_batch([b"x"]))
                        ],
                    )
                ],
            )
        )
        wanted = FetchRequest.FetchTopic
        fetched = wire.request(
            FetchRequest(
                version=16,
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                forgotten_topics_data=[],
                rack_id="",
                topics=[
                    wanted(
                        topic_id=topic_id,
                        partitions=[
                            wanted.FetchPartition(
                                partition=0,
                                current_leader_epoch=-1,
                                fetch_offset=0,
                                last_fetched_epoch=-1,
                                log_start_offset=-1,
                                partition_max_bytes=1 << 20,
                            )
                        ],
                    )
                ],
            )
        )
    (answer,) = produced.responses[0].partition_responses
    assert answer.error_code == NOT_LEADER_OR_FOLLOWER
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (leader, epoch)
    assert [(n.node_id, n.host, n.port) for n in produced.node_endpoints] == leader_endpoint
    (answer,) = fetched.responses[0].partitions
    assert answer.error_code == NOT_LEADER_OR_FOLLOWER
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (leader, epoch)
    assert [(n.node_id, n.host, n.port) for n in fetched.node_endpoints] == leader_endpoint


def test_follower_behind_the_leaders_log_start_rejoins(cluster):
    topic = "trimmed-away"
    create(cluster, topic, partitions=1, rf=3)
    leader, _, _, _ = wait_settled(cluster, topic, ALL)[0]
    away = next(i for i in ALL if i != leader)
    cluster.brokers[away].kill()
    try:
        wait_settled(cluster, topic, sorted(i for i in ALL if i != away))
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(10):
            producer.produce(topic, b"v%d" % i, partition=0)
        assert producer.flush(60) == 0
        cadmin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        (future,) = cadmin.delete_records([TopicPartition(topic, 0, 8)]).values()
        assert future.result(60).low_watermark == 8
    finally:
        cluster.brokers[away].start()
    # The returning replica's log ends at 0, below the leader's log start: it restarts its log
    # at 8 (Kafka's handleOutOfRangeError), catches up and is back in the ISR.
    wait_settled(cluster, topic, ALL, timeout=60)
