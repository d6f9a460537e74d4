"""Kafka 4.4's Java transactional producer against one broker, through Kafka's own
``TransactionalMessageCopier`` (kafka-tools): a read_committed consumer copies a topic in
transactions of five records, committing its input offsets with ``sendOffsetsToTransaction``.
The broker finalizes ``transaction.version`` 2, so the producer uses transaction protocol v2:
Produce v12+ without AddPartitionsToTxn, TxnOffsetCommit v5 without AddOffsetsToTxn and an
EndTxn v5 epoch bump per transaction, which DescribeProducers shows."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Producer
from kafka.protocol.admin.transactions import DescribeProducersRequest

from compat_tests.reference import require_tools, run_tool
from tests.txn.test_clients import consume_all
from tests.txn.test_transaction_v2 import committed
from wireserver.testing import EmbeddedBroker, KafkaWire

COUNT, PER_TRANSACTION = 20, 5
COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"


@pytest.fixture(scope="module", autouse=True)
def kafka_tools():
    require_tools()


@pytest.fixture(scope="module")
def broker():
    overrides = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}
    with EmbeddedBroker(overrides=overrides) as instance:
        yield instance


def copy(bootstrap: str, source: str, target: str, group: str, transactional_id: str) -> list:
    proc = run_tool(
        COPIER,
        [
            "--broker-list",
            bootstrap,
            "--input-topic",
            source,
            "--input-partition",
            "0",
            "--output-topic",
            target,
            "--consumer-group",
            group,
            "--transactional-id",
            transactional_id,
            "--max-messages",
            str(COUNT),
            "--transaction-size",
            str(PER_TRANSACTION),
            "--transaction-timeout",
            "60000",
        ],
        timeout=120,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and events, proc.stdout[-2000:] + proc.stderr[-3000:]
    return events


def test_java_producer_copies_in_v2_transactions(broker):
    run = uuid.uuid4().hex[:8]
    source, target, group = f"copy-in-{run}", f"copy-out-{run}", f"copier-{run}"
    broker.create_topic(source, partitions=1)
    broker.create_topic(target, partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(COUNT):
        producer.produce(source, b"%d" % i, partition=0)
    producer.flush(10)

    events = copy(broker.bootstrap_servers, source, target, group, f"copier-{run}")

    assert events[-1]["stage"] == "ShutdownComplete"
    assert events[-1]["totalProcessed"] == COUNT
    copied = consume_all(broker.bootstrap_servers, target, "read_committed", expect=COUNT)
    assert copied == [b"%d" % i for i in range(COUNT)]
    assert committed(broker.bootstrap_servers, group, source) == COUNT
    with KafkaWire(broker.bootstrap_servers) as wire:
        topic = DescribeProducersRequest.TopicRequest(name=target, partition_indexes=[0])
        response = wire.request(DescribeProducersRequest(version=0, topics=[topic]))
    [writer] = response.topics[0].partitions[0].active_producers
    # One epoch bump per transaction (protocol v1 would have stayed at epoch 0).
    assert writer.producer_epoch >= COUNT // PER_TRANSACTION
