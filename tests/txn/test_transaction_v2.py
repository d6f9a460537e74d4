"""Transaction protocol v2 (KIP-890 part 2) over a socket to a real broker, requests built with
kafka-python's message classes as a Kafka 4.4 producer sends them: Produce v12 without
AddPartitionsToTxn (the broker adds the partition), EndTxn v5 bumping the epoch at every end,
its retry, the fencing of the ended transaction's epoch, and what read_committed consumers,
DescribeTransactions and DescribeProducers then show. Producers on protocol v1 (Produce v11,
EndTxn v4) keep their rules."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.protocol.admin.transactions import DescribeProducersRequest, DescribeTransactionsRequest

from compat_tests.raw_protocol import topic_ids
from tests.txn.helpers import consume_all, end, init, produce, txn_offset_commit
from wireserver.protocol.errors import ErrorCode
from wireserver.testing import EmbeddedBroker, KafkaWire


@pytest.fixture(scope="module")
def broker():
    overrides = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}
    with EmbeddedBroker(overrides=overrides) as instance:
        yield instance


@pytest.fixture
def wire(broker):
    with KafkaWire(broker.bootstrap_servers) as connection:
        yield connection


@pytest.fixture
def topic(wire):
    name = f"txn-v2-{uuid.uuid4().hex[:8]}"
    wire.create_topic(name, partitions=2)
    return name


def transaction(wire, transactional_id):
    response = wire.request(
        DescribeTransactionsRequest(version=0, transactional_ids=[transactional_id])
    )
    state = response.transaction_states[0]
    partitions = {(t.topic, p) for t in state.topics for p in t.partitions}
    return state.transaction_state, (state.producer_id, state.producer_epoch), partitions


def producer_epochs(wire, topic):
    request_topic = DescribeProducersRequest.TopicRequest(name=topic, partition_indexes=[0])
    response = wire.request(DescribeProducersRequest(version=0, topics=[request_topic]))
    [partition] = response.topics[0].partitions
    return {p.producer_id: p.producer_epoch for p in partition.active_producers}


def test_each_transaction_ends_with_an_epoch_bump(broker, wire, topic):
    txn_id = f"v2-{uuid.uuid4().hex[:8]}"
    pid, epoch = init(wire, txn_id)

    assert produce(wire, txn_id, topic, (pid, epoch), 0, b"one") == ErrorCode.NONE
    assert transaction(wire, txn_id) == ("Ongoing", (pid, epoch), {(topic, 0)})
    assert end(wire, txn_id, (pid, epoch), commit=True) == (ErrorCode.NONE, (pid, epoch + 1))
    assert transaction(wire, txn_id)[:2] == ("CompleteCommit", (pid, epoch + 1))
    # A retried EndTxn (the epoch before the bump) gets the same answer.
    assert end(wire, txn_id, (pid, epoch), commit=True) == (ErrorCode.NONE, (pid, epoch + 1))
    # The marker carried the new epoch: a late batch of the ended transaction is fenced.
    assert produce(wire, txn_id, topic, (pid, epoch), 1, b"late") in (
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.PRODUCER_FENCED,
    )

    assert produce(wire, txn_id, topic, (pid, epoch + 1), 0, b"two") == ErrorCode.NONE
    assert end(wire, txn_id, (pid, epoch + 1), commit=False) == (ErrorCode.NONE, (pid, epoch + 2))
    assert producer_epochs(wire, topic) == {pid: epoch + 2}
    assert consume_all(broker.bootstrap_servers, topic, "read_committed") == [b"one"]


def test_an_empty_transaction_aborts_with_an_epoch_bump(wire, topic):
    """As Kafka 4.4 answers: committing nothing is INVALID_TXN_STATE, aborting it bumps the
    epoch, which then fences the old one."""
    txn_id = f"v2-{uuid.uuid4().hex[:8]}"
    pid, epoch = init(wire, txn_id)
    assert end(wire, txn_id, (pid, epoch), commit=True) == (ErrorCode.INVALID_TXN_STATE, (-1, -1))
    assert end(wire, txn_id, (pid, epoch), commit=False) == (ErrorCode.NONE, (pid, epoch + 1))
    assert transaction(wire, txn_id) == ("CompleteAbort", (pid, epoch + 1), set())
    assert end(wire, txn_id, (pid, epoch), commit=False) == (ErrorCode.NONE, (pid, epoch + 1))
    assert end(wire, txn_id, (pid, epoch), commit=True) == (ErrorCode.INVALID_TXN_STATE, (-1, -1))
    assert produce(wire, txn_id, topic, (pid, epoch), 0, b"x") == ErrorCode.INVALID_PRODUCER_EPOCH
    assert produce(wire, txn_id, topic, (pid, epoch), 0, b"x", version=11) == (
        ErrorCode.INVALID_PRODUCER_EPOCH
    )


def test_an_old_epoch_is_fenced_after_the_bump(wire, topic):
    txn_id = f"v2-{uuid.uuid4().hex[:8]}"
    pid, epoch = init(wire, txn_id)
    assert produce(wire, txn_id, topic, (pid, epoch), 0, b"x") == ErrorCode.NONE
    assert end(wire, txn_id, (pid, epoch), commit=True)[0] == ErrorCode.NONE
    # Kafka's coordinator: after a v2 end only a retry (the epoch before the bump) is valid;
    # ending again at the new epoch with nothing open is fenced too.
    assert end(wire, txn_id, (pid, epoch + 1), commit=True) == (ErrorCode.PRODUCER_FENCED, (-1, -1))
    assert end(wire, txn_id, (pid, epoch - 1), commit=True) == (ErrorCode.PRODUCER_FENCED, (-1, -1))


def test_protocol_v1_producers_still_add_partitions_themselves(wire, topic):
    txn_id = f"v1-{uuid.uuid4().hex[:8]}"
    pid, epoch = init(wire, txn_id)
    # Kafka 4.4: TRANSACTION_ABORTABLE from Produce v11, INVALID_TXN_STATE before.
    assert produce(wire, txn_id, topic, (pid, epoch), 0, b"x", version=11) == (
        ErrorCode.TRANSACTION_ABORTABLE
    )
    assert produce(wire, txn_id, topic, (pid, epoch), 0, b"x", version=10) == (
        ErrorCode.INVALID_TXN_STATE
    )
    assert transaction(wire, txn_id)[0] == "Empty"


def committed(bootstrap, group, topic) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    [answer] = admin.list_consumer_group_offsets([request]).values()
    return answer.result(10).topic_partitions[0].offset


def test_txn_offset_commit_v5_adds_the_offsets_partition_itself(broker, wire, topic):
    txn_id, group = f"v2-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    producer = init(wire, txn_id)
    assert txn_offset_commit(wire, txn_id, producer, group, topic, 4) == (
        ErrorCode.TRANSACTION_ABORTABLE
    )
    assert txn_offset_commit(wire, txn_id, producer, group, topic, 5) == ErrorCode.NONE
    state, _, partitions = transaction(wire, txn_id)
    assert state == "Ongoing"
    assert [t for t, _ in partitions] == ["__consumer_offsets"]
    assert end(wire, txn_id, producer, commit=True)[0] == ErrorCode.NONE
    assert committed(broker.bootstrap_servers, group, topic) == 5


def test_txn_offset_commit_v6_names_topics_by_id(broker, wire, topic):
    txn_id, group = f"v2-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    producer = init(wire, txn_id)
    topic_id = topic_ids(broker.bootstrap_servers, topic)[1][topic]
    unknown = uuid.uuid4()
    assert txn_offset_commit(wire, txn_id, producer, group, topic, 6, unknown) == (
        ErrorCode.UNKNOWN_TOPIC_ID
    )
    assert txn_offset_commit(wire, txn_id, producer, group, topic, 6, topic_id) == ErrorCode.NONE


def test_txn_offset_commit_v6_says_group_id_not_found(broker, wire, topic):
    """A generation for a group that does not exist: ILLEGAL_GENERATION up to v5, and from v6
    (KIP-1319) GROUP_ID_NOT_FOUND, as OffsetCommit answers; without a generation the commit
    makes a simple group and is taken."""
    txn_id, group = f"v2-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    producer = init(wire, txn_id)
    topic_id = topic_ids(broker.bootstrap_servers, topic)[1][topic]
    assert txn_offset_commit(wire, txn_id, producer, group, topic, 5, generation=3) == (
        ErrorCode.ILLEGAL_GENERATION
    )
    assert txn_offset_commit(wire, txn_id, producer, group, topic, 6, topic_id, 3) == (
        ErrorCode.GROUP_ID_NOT_FOUND
    )
    assert txn_offset_commit(wire, txn_id, producer, group, topic, 6, topic_id) == ErrorCode.NONE
    assert end(wire, txn_id, producer, commit=True)[0] == ErrorCode.NONE
    assert committed(broker.bootstrap_servers, group, topic) == 5
