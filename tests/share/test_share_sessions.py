"""Share sessions and acknowledgements over real sockets with raw ShareFetch /
ShareAcknowledge requests: the errors Kafka answers (SHARE_SESSION_NOT_FOUND,
INVALID_SHARE_SESSION_EPOCH, INVALID_REQUEST for acknowledgements in an opening fetch,
INVALID_RECORD_STATE for a record the member does not hold), forgotten partitions, and the
acquired ranges a fetch reports; and how ListGroups, DescribeGroups, ConsumerGroupDescribe and
ShareGroupDescribe answer for a share group; that the share-partition leader serves a member
id the group does not know (as Kafka's, which does not ask the group coordinator); and that the
offset APIs of consumer groups refuse a share group as Kafka does; and that the state written
as ShareSnapshot and ShareUpdate records is the same after a restart."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka.protocol.admin.groups import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer.group import (
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)

from compat_tests.share_members import produce_one_batch_each
from tests.txn.helpers import init, txn_offset_commit
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.messages_extra import ConsumerGroupDescribeRequest, DeleteGroupsRequest
from wireserver.protocol.messages_share import (
    DescribeShareGroupOffsetsRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from wireserver.testing import EmbeddedBroker, KafkaWire

pytestmark = pytest.mark.integration

GROUP, TOPIC = "sessions", "s"
FETCH = ShareFetchRequest.FetchTopic
ACK_TOPIC = ShareAcknowledgeRequest.AcknowledgeTopic


@pytest.fixture(scope="module")
def kafka():
    with EmbeddedBroker() as broker:
        start_group(broker, records=4)
        yield broker


def start_group(broker, records: int) -> None:
    """m1 joins the share group of a new one-partition topic, opens its share session, and
    ``records`` records are produced, one batch each (``broker.topic_id``: the topic's id)."""
    broker.create_topic(TOPIC, partitions=1)
    with KafkaWire(broker.bootstrap_servers) as wire:
        joined = wire.request(
            ShareGroupHeartbeatRequest(
                version=1,
                group_id=GROUP,
                member_id="m1",
                member_epoch=0,
                rack_id=None,
                subscribed_topic_names=[TOPIC],
            )
        )
        assert joined.error_code == ErrorCode.NONE
        (assigned,) = joined.assignment.topic_partitions
        broker.topic_id = assigned.topic_id
        # the share-partition starts at the log end (share.auto.offset.reset latest): open
        # it before producing
        assert wire.request(fetch(broker, "m1", 0, [0])).error_code == ErrorCode.NONE
    produce_one_batch_each(broker.bootstrap_servers, TOPIC, [f"v{i}" for i in range(records)])


def fetch(kafka, member, epoch, partitions, acks=(), forgotten=(), max_records=100):
    part = FETCH.FetchPartition
    batches = [
        part.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=t)
        for f, last, t in acks
    ]
    return ShareFetchRequest(
        version=1,
        group_id=GROUP,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=max_records,
        batch_size=max_records,
        topics=[
            FETCH(
                topic_id=kafka.topic_id,
                partitions=[
                    part(partition_index=p, partition_max_bytes=0, acknowledgement_batches=batches)
                    for p in partitions
                ],
            )
        ]
        if partitions
        else [],
        forgotten_topics_data=[
            ShareFetchRequest.ForgottenTopic(topic_id=kafka.topic_id, partitions=list(forgotten))
        ]
        if forgotten
        else [],
    )


def acknowledge(kafka, member, epoch, first, last, kind):
    part = ACK_TOPIC.AcknowledgePartition
    return ShareAcknowledgeRequest(
        version=1,
        group_id=GROUP,
        member_id=member,
        share_session_epoch=epoch,
        topics=[
            ACK_TOPIC(
                topic_id=kafka.topic_id,
                partitions=[
                    part(
                        partition_index=0,
                        acknowledgement_batches=[
                            part.AcknowledgementBatch(
                                first_offset=first, last_offset=last, acknowledge_types=[kind]
                            )
                        ],
                    )
                ],
            )
        ],
    )


def acquired(response):
    return [
        (r.first_offset, r.last_offset, r.delivery_count)
        for t in response.responses
        for p in t.partitions
        for r in p.acquired_records
    ]


def test_session_epochs_and_acknowledgements(kafka):
    # m2 and m3 never join the group (only m1 does, see test_other_group_apis...): as Kafka's
    # SharePartitionManager / ShareSessionCache, the share-partition leader opens sessions and
    # hands records to any member id, without asking the group coordinator.
    with KafkaWire(kafka.bootstrap_servers) as wire:
        # no session for this member yet
        assert wire.request(fetch(kafka, "m2", 1, [0])).error_code == (
            ErrorCode.SHARE_SESSION_NOT_FOUND
        )
        # an opening fetch carries no acknowledgements
        assert wire.request(fetch(kafka, "m2", 0, [0], acks=[(0, 0, [1])])).error_code == (
            ErrorCode.INVALID_REQUEST
        )
        # ShareAcknowledge cannot open a session
        assert wire.request(acknowledge(kafka, "m2", 0, 0, 0, 1)).error_code == (
            ErrorCode.INVALID_SHARE_SESSION_EPOCH
        )
        opened = wire.request(fetch(kafka, "m2", 0, [0], max_records=2))
        assert opened.error_code == ErrorCode.NONE
        assert opened.acquisition_lock_timeout_ms == 30000
        assert acquired(opened) == [(0, 1, 1)]
        # the next request must carry epoch 1
        assert wire.request(fetch(kafka, "m2", 2, [])).error_code == (
            ErrorCode.INVALID_SHARE_SESSION_EPOCH
        )
        # another member's records cannot be acknowledged; its own can, piggy-backed
        other = wire.request(fetch(kafka, "m3", 0, [0], max_records=1))
        assert acquired(other) == [(2, 2, 1)]
        refused = wire.request(acknowledge(kafka, "m2", 1, 2, 2, 1))
        assert refused.error_code == ErrorCode.NONE
        assert refused.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
        # accept 0-1 and get the rest in the same request (epoch 2: the acknowledge was 1)
        again = wire.request(fetch(kafka, "m2", 2, [0], acks=[(0, 1, [1])]))
        (partition,) = again.responses[0].partitions
        assert partition.acknowledge_error_code == ErrorCode.NONE
        assert acquired(again) == [(3, 3, 1)]
        # forgotten: the session no longer fetches the partition
        forgot = wire.request(fetch(kafka, "m2", 3, [], forgotten=[0]))
        assert acquired(forgot) == [] and forgot.responses == []
        # closing the session releases what m2 held: m3 gets offset 3 again
        closed = wire.request(acknowledge(kafka, "m2", -1, 3, 3, 2))
        assert closed.error_code == ErrorCode.NONE
        assert wire.request(fetch(kafka, "m2", 4, [])).error_code == (
            ErrorCode.SHARE_SESSION_NOT_FOUND
        )
        redelivered = wire.request(fetch(kafka, "m3", 1, [0], acks=[(2, 2, [1])]))
        assert acquired(redelivered) == [(3, 3, 2)]


def test_other_group_apis_see_a_share_group_as_kafka_does(kafka):
    with KafkaWire(kafka.bootstrap_servers) as wire:
        listed = wire.request(
            ListGroupsRequest(version=5, states_filter=[], types_filter=["share"])
        )
        described = wire.request(
            DescribeGroupsRequest(version=6, groups=[GROUP], include_authorized_operations=False)
        )
        as_consumer = wire.request(
            ConsumerGroupDescribeRequest(
                version=1, group_ids=[GROUP], include_authorized_operations=False
            )
        )
        as_share = wire.request(
            ShareGroupDescribeRequest(
                version=1, group_ids=[GROUP, "nope"], include_authorized_operations=False
            )
        )
    assert [(g.group_id, g.group_type, g.protocol_type) for g in listed.groups] == [
        (GROUP, "share", "share")
    ]
    (group,) = described.groups
    assert (group.error_code, group.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Group {GROUP} is not a classic group.",
    )
    (group,) = as_consumer.groups
    assert (group.error_code, group.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Group {GROUP} is not a consumer group.",
    )
    mine, nope = as_share.groups
    assert (mine.error_code, mine.group_state, mine.assignor_name) == (0, "Stable", "simple")
    assert [(m.member_id, m.member_epoch) for m in mine.members] == [("m1", 1)]
    assert [(t.topic_name, t.partitions) for t in mine.members[0].assignment.topic_partitions] == [
        (TOPIC, [0])
    ]
    assert (nope.error_code, nope.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
    )


def offset_commit(kafka, generation, member):
    t = OffsetCommitRequest.OffsetCommitRequestTopic
    partition = t.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata=""
    )
    return OffsetCommitRequest(
        version=9,
        group_id=GROUP,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=None,
        topics=[t(name=TOPIC, partitions=[partition])],
    )


def test_offset_apis_refuse_a_share_group_as_kafka_does(kafka):
    """Kafka's ShareGroup.validateOffsetCommit / validateOffsetFetch / validateOffsetDelete:
    GROUP_ID_NOT_FOUND ("Group X is not a consumer group."), which OffsetFetch turns into
    "nothing committed"; no classic group of the share group's id appears."""
    with KafkaWire(kafka.bootstrap_servers) as wire:
        for generation, member in [(-1, ""), (1, "m1"), (5, "nobody")]:
            committed = wire.request(offset_commit(kafka, generation, member))
            assert [p.error_code for t in committed.topics for p in t.partitions] == [
                ErrorCode.GROUP_ID_NOT_FOUND
            ], (generation, member)
        txn_id = "share-txn"
        producer = init(wire, txn_id)
        assert txn_offset_commit(wire, txn_id, producer, GROUP, TOPIC, 5) == (
            ErrorCode.GROUP_ID_NOT_FOUND
        )
        group = OffsetFetchRequest.OffsetFetchRequestGroup
        topics = [group.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])]
        for member, epoch in [(None, -1), ("m1", 1)]:
            fetched = wire.request(
                OffsetFetchRequest(
                    version=9,
                    groups=[
                        group(group_id=GROUP, member_id=member, member_epoch=epoch, topics=topics),
                        group(group_id=GROUP, member_id=member, member_epoch=epoch, topics=None),
                    ],
                    require_stable=False,
                )
            )
            named, every = fetched.groups
            assert (named.error_code, every.error_code, every.topics) == (0, 0, [])
            assert [(p.committed_offset, p.error_code) for p in named.topics[0].partitions] == [
                (-1, 0)
            ]
        d = OffsetDeleteRequest.OffsetDeleteRequestTopic
        deleted = wire.request(
            OffsetDeleteRequest(
                version=0,
                group_id=GROUP,
                topics=[
                    d(name=TOPIC, partitions=[d.OffsetDeleteRequestPartition(partition_index=0)])
                ],
            )
        )
        assert deleted.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        listed = wire.request(ListGroupsRequest(version=5, states_filter=[], types_filter=[]))
        described = wire.request(
            ShareGroupDescribeRequest(
                version=1, group_ids=[GROUP], include_authorized_operations=False
            )
        )
    assert [(g.group_id, g.group_type) for g in listed.groups if g.group_id == GROUP] == [
        (GROUP, "share")
    ]
    assert [m.member_id for m in described.groups[0].members] == ["m1"]


def share_state_record_types(broker) -> list[int]:
    """The record types (0 ShareSnapshot, 1 ShareUpdate) in ``__share_group_state``, in order."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "state-reader",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition("__share_group_state", 0, 0)])
    kinds = []
    try:
        while (message := consumer.poll(5)) is not None:
            if message.error() is None:
                kinds.append(int.from_bytes(message.key()[:2], "big"))
    finally:
        consumer.close()
    return kinds


def offsets_of(wire):
    group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
    topic = group.DescribeShareGroupOffsetsRequestTopic(topic_name=TOPIC, partitions=[0])
    response = wire.request(
        DescribeShareGroupOffsetsRequest(version=1, groups=[group(group_id=GROUP, topics=[topic])])
    )
    (partition,) = response.groups[0].topics[0].partitions
    return partition.start_offset, partition.lag


def test_state_written_as_snapshots_and_updates_is_the_same_after_a_restart():
    """Kafka's share coordinator writes ShareUpdate records (what changed) between ShareSnapshot
    records, a snapshot after ``share.coordinator.snapshot.update.records.per.snapshot``
    updates; reading them back restores the state the acknowledgements left."""
    overrides = {
        "share.coordinator.snapshot.update.records.per.snapshot": 2,
        "share.coordinator.state.topic.num.partitions": 1,
    }
    with EmbeddedBroker(overrides=overrides) as broker:
        start_group(broker, records=8)
        with KafkaWire(broker.bootstrap_servers) as wire:
            # a new connection: the session start_group opened ended with its connection
            got = wire.request(fetch(broker, "m1", 0, [0], max_records=8))
            assert acquired(got) == [(0, 7, 1)]
            # one state write each: accept 0, accept 1, release 2, reject 3, accept 4,
            # release 5; 6-7 stay acquired
            for epoch, (offset, kind) in enumerate(
                [(0, 1), (1, 1), (2, 2), (3, 3), (4, 1), (5, 2)]
            ):
                done = wire.request(acknowledge(broker, "m1", epoch + 1, offset, offset, kind))
                assert done.responses[0].partitions[0].error_code == ErrorCode.NONE
            before = offsets_of(wire)
        assert before == (2, 4)  # 0-1 accepted; 2, 5, 6, 7 still to be done with
        kinds = share_state_record_types(broker)
        # the share-partition's start (a snapshot), then three updates (the first counts 0,
        # as Kafka counts them), a snapshot, two updates (counted 1 and 2 now), and the
        # release of 6-7 when the connection closed (a snapshot: the count reached 2)
        assert kinds == [0, 1, 1, 1, 0, 1, 1, 0], kinds
        broker.restart()
        with KafkaWire(broker.bootstrap_servers) as wire:
            assert offsets_of(wire) == before
            again = wire.request(fetch(broker, "m9", 0, [0], max_records=8))
        # all were delivered once before (6-7, still acquired, were persisted as available
        # with their delivery count); 3 (rejected) and 4 (accepted) are done with
        assert acquired(again) == [(2, 2, 2), (5, 7, 2)]


def test_a_closed_connection_ends_its_share_sessions(kafka):
    """As Kafka 4.4's share session cache: when the connection a session was opened on
    closes, the session ends and what its member held is available again at once (a
    consumer killed -9 does not keep its records until their locks expire)."""
    produce_one_batch_each(kafka.bootstrap_servers, TOPIC, ["late"])
    with KafkaWire(kafka.bootstrap_servers) as wire:
        held = acquired(wire.request(fetch(kafka, "m1", 0, [0])))
    assert held
    # the broker sees the close on its reactor thread: wait for it there
    deadline = time.monotonic() + 10
    while (GROUP, "m1") in kafka.broker.share.sessions:
        assert time.monotonic() < deadline, "the session outlived its connection"
        time.sleep(0.01)
    with KafkaWire(kafka.bootstrap_servers) as wire:
        assert wire.request(fetch(kafka, "m1", 1, [0])).error_code == (
            ErrorCode.SHARE_SESSION_NOT_FOUND
        )
        again = acquired(wire.request(fetch(kafka, "m1", 0, [0])))
    assert again == [(first, last, count + 1) for first, last, count in held]


def test_leaving_the_group_keeps_the_share_session(kafka):
    """As Kafka (and as confluent-kafka's ShareConsumer.close() needs: it leaves the group,
    then sends its final ShareAcknowledge): a member that left still has its acknowledgements
    applied, and its session ends with that final request."""
    produce_one_batch_each(kafka.bootstrap_servers, TOPIC, ["leaving"])
    with KafkaWire(kafka.bootstrap_servers) as wire:
        held = acquired(wire.request(fetch(kafka, "m1", 0, [0])))
        assert held
        left = wire.request(
            ShareGroupHeartbeatRequest(
                version=1,
                group_id=GROUP,
                member_id="m1",
                member_epoch=-1,
                rack_id=None,
                subscribed_topic_names=None,
            )
        )
        assert left.error_code == ErrorCode.NONE
        first, last, _ = held[0]
        final = wire.request(acknowledge(kafka, "m1", -1, first, last, 1))
        assert final.error_code == ErrorCode.NONE
        assert final.responses[0].partitions[0].error_code == ErrorCode.NONE
        assert wire.request(fetch(kafka, "m1", 1, [])).error_code == (
            ErrorCode.SHARE_SESSION_NOT_FOUND
        )


def test_a_share_group_is_deleted_at_once_where_no_state_could_ever_be_written():
    """DeleteGroups deletes an empty share group's state before the group; where the state
    topic could never be made (its replication factor, Kafka's default 3, on one broker) there
    is no state, and the group goes at once, as Kafka's, whose group coordinator asks its
    persister nothing for a group without initialized share-partitions."""
    group = "stateless"
    with EmbeddedBroker(overrides={"share.coordinator.state.topic.replication.factor": "3"}) as b:
        b.create_topic("u", partitions=1)
        with KafkaWire(b.bootstrap_servers, timeout=10.0) as wire:
            for epoch in (0, -1):  # m1 joins and leaves: the group is Empty
                beat = ShareGroupHeartbeatRequest(
                    version=1,
                    group_id=group,
                    member_id="m1",
                    member_epoch=epoch,
                    rack_id=None,
                    subscribed_topic_names=["u"] if epoch == 0 else None,
                )
                assert wire.request(beat).error_code == ErrorCode.NONE
            deleted = wire.request(DeleteGroupsRequest(version=2, groups_names=[group]))
            assert [(r.group_id, r.error_code) for r in deleted.results] == [
                (group, ErrorCode.NONE)
            ]
            listed = wire.request(
                ListGroupsRequest(version=5, states_filter=[], types_filter=["share"])
            )
            assert listed.groups == []
