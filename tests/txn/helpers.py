"""What the transaction tests share: a broker's settings for them, unique names, a consumer
reading a partition whole with either isolation level, and a transaction's steps sent on a raw
connection (InitProducerId, a transactional Produce, EndTxn, TxnOffsetCommit)."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaException, TopicPartition
from kafka.protocol.producer.transaction import EndTxnRequest

from compat_tests.raw_protocol import init_producer_id, transactional_produce
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.messages_txn import TxnOffsetCommitRequest as Request
from wireserver.protocol.messages_txn import TxnOffsetCommitResponse as Response

TIMEOUT_CHECK_MS = 100


def broker_overrides() -> dict:
    return {
        "transaction.state.log.num.partitions": "5",
        "offsets.topic.num.partitions": "5",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(TIMEOUT_CHECK_MS),
    }


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def consume_all(
    bootstrap: str, topic: str, isolation: str, expect: int | None = None, timeout: float = 10.0
) -> list[bytes]:
    """Values of ``topic`` partition 0 read from the start until ``expect`` arrive (or, when
    None, until the end offset the consumer reports is reached)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("reader"),
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    if expect is None or len(values) >= expect:
                        break
                    continue
                raise KafkaException(msg.error())
            values.append(msg.value())
            if expect is not None and len(values) >= expect:
                # Read a little longer to catch anything that should not be there.
                deadline = min(deadline, time.monotonic() + 0.5)
    finally:
        consumer.close()
    return values


def init(wire, transactional_id: str) -> tuple[int, int]:
    response = init_producer_id(wire, transactional_id)
    assert response.error_code == ErrorCode.NONE
    return response.producer_id, response.producer_epoch


def produce(wire, transactional_id, topic, producer, sequence, value, version=12, partition=0):
    return transactional_produce(
        wire, transactional_id, topic, producer, sequence, value, version, partition
    )


def end(wire, transactional_id, producer, commit, version=5):
    response = wire.request(
        EndTxnRequest(
            version=version,
            transactional_id=transactional_id,
            producer_id=producer[0],
            producer_epoch=producer[1],
            committed=commit,
        )
    )
    if version < 5:
        return response.error_code
    return response.error_code, (response.producer_id, response.producer_epoch)


def txn_offset_commit(
    wire, transactional_id, producer, group, topic, version, topic_id=None, generation=-1
):
    partition = Request.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=5, committed_leader_epoch=-1, committed_metadata=""
    )
    ident = {"topic_id": topic_id} if version >= 6 else {"name": topic}
    request = Request(
        version=version,
        transactional_id=transactional_id,
        group_id=group,
        producer_id=producer[0],
        producer_epoch=producer[1],
        generation_id_or_member_epoch=generation,
        member_id="",
        group_instance_id=None,
        topics=[Request.TxnOffsetCommitRequestTopic(**ident, partitions=[partition])],
    )
    wire.send(request)
    response = Response[version].decode(wire.read_frame(), header=True)
    return response.topics[0].partitions[0].error_code
