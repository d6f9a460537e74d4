"""Kafka 4.4's Java transactional producer against one broker, through Kafka's own
``TransactionalMessageCopier`` (kafka-tools, driven as the ``txn-v2-java`` compat scenario
drives it): a read_committed consumer copies a topic in transactions of five records,
committing its input offsets with ``sendOffsetsToTransaction``. The broker finalizes
``transaction.version`` 2, so the producer uses transaction protocol v2: Produce v12+ without
AddPartitionsToTxn, TxnOffsetCommit v5 without AddOffsetsToTxn and an EndTxn v5 epoch bump per
transaction, which DescribeProducers shows."""

from __future__ import annotations

import pytest

from compat_tests.reference import require_tools
from compat_tests.scenarios_txn import java_copier
from wireserver.testing import EmbeddedBroker


@pytest.fixture(scope="module", autouse=True)
def kafka_tools():
    require_tools()


@pytest.fixture(scope="module")
def broker():
    overrides = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}
    with EmbeddedBroker(overrides=overrides) as instance:
        yield instance


def test_java_producer_copies_in_v2_transactions(broker):
    copied = java_copier(broker.bootstrap_servers, count=20, per_transaction=5)
    assert (copied["exit"], copied["stage"], copied["processed"]) == (0, "ShutdownComplete", 20)
    assert copied["read_committed"] == [str(i) for i in range(20)]
    assert copied["committed_offset"] == 20
    # One epoch bump per transaction (protocol v1 would have stayed at epoch 0).
    assert copied["epoch_bumped_per_transaction"] == [True]
