"""Transactions on a 3-broker cluster, with confluent-kafka's transactional producer and
read_committed consumers: ``__transaction_state`` is replicated, a transactional id's coordinator
is the leader of its partition, markers reach partition leaders on other brokers, and when the
coordinator's broker is killed the new leader of the partition takes over the transactions."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.coordinators import OVERRIDES as COORDINATION_OVERRIDES
from tests.cluster.coordinators import find_coordinator
from tests.cluster.topics import create
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.served import SERVED
from wireserver.testing import KafkaWire
from wireserver.testing.cluster import cluster_metadata as metadata

pytestmark = pytest.mark.integration

TXN_TOPIC = "__transaction_state"
TRANSACTION = 1  # FindCoordinator key type


@pytest.fixture(scope="module")
def cluster(zookeeper):
    overrides = dict(
        COORDINATION_OVERRIDES,
        **{
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.num.partitions": "3",
            "transaction.state.log.min.isr": "2",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        },
    )
    nodes = Cluster(zookeeper, 3, "/wireserver-transactions", overrides).start()
    yield nodes
    nodes.close()


def live_coordinator(cluster: Cluster, transactional_id: str, exclude: int = -1) -> int:
    """Wait until every running broker names the same live coordinator (not ``exclude``)."""

    def agreed():
        answers = {
            find_coordinator(b.bootstrap_servers, transactional_id, TRANSACTION)
            for b in cluster.brokers.values()
            if b.running
        }
        if len(answers) != 1:
            return None
        ((error, node),) = answers
        return node if error == 0 and node != exclude and cluster.brokers[node].running else None

    return wait_for(agreed, 60, 0.2, what=f"a coordinator for {transactional_id}")


def transactional_producer(
    cluster: Cluster, transactional_id: str, timeout_ms: int = 60000
) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": timeout_ms,
            "message.timeout.ms": timeout_ms,
            "socket.timeout.ms": 10000,
        }
    )
    producer.init_transactions(60)
    return producer


def produce_each(
    producer: Producer, topic: str, partitions: int, prefix: str, per_partition: int
) -> set[str]:
    values = set()
    for partition in range(partitions):
        for i in range(per_partition):
            value = f"{prefix}-{partition}-{i}"
            producer.produce(topic, value.encode(), partition=partition)
            values.add(value)
    return values


def read_committed(
    cluster: Cluster,
    topic: str,
    partitions: int,
    timeout: float = 60,
    isolation: str = "read_committed",
) -> list:
    """Every record a consumer with ``isolation`` (read_committed unless told) sees, read
    until its position reaches each partition's high watermark (so nothing is missed and the
    end is known; read_committed gets there once no transaction is open)."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": uuid.uuid4().hex,
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
    consumer.assign(tps)
    values: list[str] = []
    try:

        def caught_up() -> bool:
            batch = consumer.consume(1000, 0.5)
            values.extend(msg.value().decode() for msg in batch if not msg.error())
            if batch:
                return False  # more may be waiting: look at the watermarks once idle
            for tp in tps:
                _, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
                (position,) = consumer.position([TopicPartition(topic, tp.partition)])
                if position.offset < high:
                    return False
            return True

        wait_for(
            caught_up, timeout, 0, what=f"a read_committed consumer to reach the end of {topic}"
        )
    finally:
        consumer.close()
    return values


def data_leaders(cluster: Cluster, topic: str, partitions: int) -> dict[int, int]:
    any_broker = next(b for b in cluster.brokers.values() if b.running).bootstrap_servers
    return wait_for(
        lambda: (
            (found := {p: entry[0] for p, entry in metadata(any_broker, topic)[2].items()})
            and len(found) == partitions
            and -1 not in found.values()
            and found
        ),
        30,
        what=f"leaders for {topic}",
    )


def whole(cluster: Cluster) -> Cluster:
    """Start the brokers an earlier test killed and wait until all are registered and back in
    the ISR of every ``__transaction_state`` partition."""
    for broker in cluster.brokers.values():
        if not broker.running:
            broker.start()
    any_broker = next(iter(cluster.brokers.values())).bootstrap_servers
    wait_for(
        lambda: (
            all(len(isr) == 3 for _, _, _, isr in metadata(any_broker, TXN_TOPIC)[2].values())
            and len(metadata(any_broker, TXN_TOPIC)[1]) == 3
        ),
        60,
        what="every broker back in the ISR of __transaction_state",
    )
    return cluster


def transaction_state(bootstrap_server: str, transactional_id: str) -> str:
    """The state DescribeTransactions reports (its error's name when it fails)."""
    request_class = SERVED.get(65).request_class
    with KafkaWire(bootstrap_server) as wire:
        response = wire.request(request_class(version=0, transactional_ids=[transactional_id]))
    (state,) = response.transaction_states
    if state.error_code != ErrorCode.NONE:
        return ErrorCode(state.error_code).name
    return state.transaction_state


def test_commit_and_abort_across_partitions_led_by_different_brokers(cluster):
    topic, transactional_id = "txn-spread", "spread-producer"
    create(cluster, topic, partitions=3, rf=3)
    leaders = data_leaders(cluster, topic, 3)
    assert len(set(leaders.values())) >= 2, f"partitions should have several leaders: {leaders}"

    producer = transactional_producer(cluster, transactional_id)
    coordinator = live_coordinator(cluster, transactional_id)
    # The coordinator is the leader of the id's partition of __transaction_state, replicated
    # on every broker; the others refuse transaction requests with NOT_COORDINATOR.
    txn_partitions = metadata(cluster.brokers[coordinator].bootstrap_servers, TXN_TOPIC)[2]
    assert len(txn_partitions) == 3
    assert all(len(replicas) == 3 for _, _, replicas, _ in txn_partitions.values())
    assert coordinator in {leader for leader, _, _, _ in txn_partitions.values()}
    other = next(b for b in cluster.brokers if b != coordinator)
    request_class = SERVED.get(22).request_class
    with KafkaWire(cluster.brokers[other].bootstrap_servers) as wire:
        response = wire.request(
            request_class(
                version=4,
                transactional_id=transactional_id,
                transaction_timeout_ms=60000,
                producer_id=-1,
                producer_epoch=-1,
            )
        )
    assert response.error_code == ErrorCode.NOT_COORDINATOR
    assert (
        transaction_state(cluster.brokers[other].bootstrap_servers, transactional_id)
        == "NOT_COORDINATOR"
    )
    assert (
        transaction_state(cluster.brokers[coordinator].bootstrap_servers, transactional_id)
        == "Empty"
    )

    # Offsets sent with a transaction go to the group's coordinator (TxnOffsetCommit) and
    # become committed by the transaction's marker on its __consumer_offsets partition.
    group = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "spread-group",
            "enable.auto.commit": False,
        }
    )
    try:
        group_metadata = group.consumer_group_metadata()
        producer.begin_transaction()
        committed = produce_each(producer, topic, 3, "committed", 5)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 42)], group_metadata, 60)
        producer.commit_transaction(60)
        producer.begin_transaction()
        aborted = produce_each(producer, topic, 3, "aborted", 5)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 99)], group_metadata, 60)
        assert producer.flush(60) == 0
        producer.abort_transaction(60)
        producer.begin_transaction()
        committed |= produce_each(producer, topic, 3, "again", 2)
        producer.commit_transaction(60)
        (offset,) = group.committed([TopicPartition(topic, 0)], timeout=30)
        assert offset.offset == 42
    finally:
        group.close()

    seen = read_committed(cluster, topic, 3)
    assert sorted(seen) == sorted(committed)
    assert not aborted & set(seen)


def test_coordinator_killed_mid_transaction(cluster):
    topic, transactional_id = "txn-failover", "failover-producer"
    whole(cluster)
    create(cluster, topic, partitions=3, rf=3)
    data_leaders(cluster, topic, 3)
    producer = transactional_producer(cluster, transactional_id)
    coordinator = live_coordinator(cluster, transactional_id)

    committed: set[str] = set()
    for round_ in range(2):
        producer.begin_transaction()
        committed |= produce_each(producer, topic, 3, f"before-{round_}", 5)
        producer.commit_transaction(60)
    producer.begin_transaction()
    open_values = produce_each(producer, topic, 3, "open", 5)
    assert producer.flush(60) == 0  # on the partitions' leaders, not yet committed

    cluster.brokers[coordinator].kill()
    moved = live_coordinator(cluster, transactional_id, exclude=coordinator)
    assert moved != coordinator

    # The producer ends its transaction with the new coordinator: it either commits (the new
    # coordinator loaded it as ongoing) or, if the client had to give it up, aborts.
    try:
        producer.commit_transaction(90)
        committed |= open_values
    except KafkaException as exc:
        error = exc.args[0]
        if error.fatal():
            producer = transactional_producer(cluster, transactional_id)
        else:
            assert error.txn_requires_abort(), error
            producer.abort_transaction(90)

    # The producer goes on with the new coordinator.
    producer.begin_transaction()
    committed |= produce_each(producer, topic, 3, "after", 3)
    producer.commit_transaction(90)

    seen = read_committed(cluster, topic, 3, timeout=90)
    assert len(seen) == len(set(seen)), "a record was delivered twice"
    assert set(seen) == committed
    # The open transaction is all there or not at all.
    assert set(seen) & open_values in (set(), open_values)


def test_new_coordinator_aborts_an_abandoned_transaction(cluster):
    """The coordinator dies with a transaction open and its producer never comes back: the
    new coordinator loads it as Ongoing and aborts it once its timeout passes, so the records
    stay hidden and read_committed consumers move past them."""
    topic, transactional_id = "txn-abandoned", "abandoned-producer"
    whole(cluster)
    create(cluster, topic, partitions=3, rf=3)
    data_leaders(cluster, topic, 3)
    producer = transactional_producer(cluster, transactional_id, timeout_ms=10000)
    coordinator = live_coordinator(cluster, transactional_id)
    producer.begin_transaction()
    abandoned = produce_each(producer, topic, 3, "abandoned", 5)
    assert producer.flush(30) == 0

    cluster.brokers[coordinator].kill()
    moved = live_coordinator(cluster, transactional_id, exclude=coordinator)
    where = cluster.brokers[moved].bootstrap_servers
    wait_for(
        lambda: transaction_state(where, transactional_id) == "CompleteAbort",
        60,
        0.2,
        what="the new coordinator to abort the timed-out transaction",
    )
    assert read_committed(cluster, topic, 3) == []
    # The records are in the partitions, aborted.
    assert set(read_committed(cluster, topic, 3, isolation="read_uncommitted")) == abandoned


def test_new_coordinator_finishes_a_prepared_commit(cluster):
    """A commit whose markers cannot all be written (a partition's only replica is down) stays
    in PrepareCommit; when its coordinator is killed the new one loads it, keeps sending the
    markers and completes it once the partition is back."""
    topic, transactional_id = "txn-prepared", "prepared-producer"
    whole(cluster)
    producer = transactional_producer(cluster, transactional_id)
    coordinator = live_coordinator(cluster, transactional_id)
    offline, survivor = [b for b in sorted(cluster.brokers) if b != coordinator]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # Partition 0 lives on ``offline`` alone, partition 1 on ``survivor`` alone.
    new_topic = NewTopic(topic, num_partitions=2, replica_assignment=[[offline], [survivor]])
    admin.create_topics([new_topic])[topic].result(30)
    data_leaders(cluster, topic, 2)
    producer.begin_transaction()
    values = produce_each(producer, topic, 2, "prepared", 5)
    assert producer.flush(60) == 0

    cluster.brokers[offline].kill()
    producer.commit_transaction(60)  # answered once PrepareCommit is replicated
    where = cluster.brokers[coordinator].bootstrap_servers
    assert transaction_state(where, transactional_id) == "PrepareCommit"

    cluster.brokers[coordinator].kill()
    assert live_coordinator(cluster, transactional_id, exclude=coordinator) == survivor
    where = cluster.brokers[survivor].bootstrap_servers
    assert transaction_state(where, transactional_id) == "PrepareCommit"
    cluster.brokers[offline].start()
    wait_for(
        lambda: transaction_state(where, transactional_id) == "CompleteCommit",
        60,
        0.2,
        what="the new coordinator to complete the commit",
    )
    assert sorted(read_committed(cluster, topic, 2)) == sorted(values)
    whole(cluster)


def test_protocol_v2_adds_partitions_led_elsewhere_and_bumps_the_epoch(cluster):
    """Transaction protocol v2 (KIP-890 part 2) across brokers: Produce v12 to the leader of
    each partition, with no AddPartitionsToTxn (a leader that is not the coordinator adds
    its partition with AddPartitionsToTxn v5), then EndTxn v5 at the coordinator: the markers
    (WriteTxnMarkers v2) carry the bumped epoch, so the ended epoch is fenced everywhere."""
    from tests.txn.helpers import end, init, produce

    whole(cluster)
    topic, transactional_id = "txn-v2-spread", "v2-spread-producer"
    create(cluster, topic, partitions=3, rf=3)
    leaders = data_leaders(cluster, topic, 3)
    coordinator = live_coordinator(cluster, transactional_id)
    assert set(leaders.values()) - {coordinator}, (
        f"every partition led by the coordinator: {leaders}"
    )
    with KafkaWire(cluster.brokers[coordinator].bootstrap_servers) as wire:
        producer = init(wire, transactional_id)
    for partition, leader in leaders.items():
        with KafkaWire(cluster.brokers[leader].bootstrap_servers) as wire:
            sent = produce(
                wire,
                transactional_id,
                topic,
                producer,
                0,
                b"v2-%d" % partition,
                partition=partition,
            )
            assert sent == ErrorCode.NONE, (partition, leader, ErrorCode(sent))
    with KafkaWire(cluster.brokers[coordinator].bootstrap_servers) as wire:
        answer = end(wire, transactional_id, producer, commit=True)
    assert answer == (ErrorCode.NONE, (producer[0], producer[1] + 1))
    assert sorted(read_committed(cluster, topic, 3)) == ["v2-0", "v2-1", "v2-2"]
    elsewhere = next(p for p, leader in leaders.items() if leader != coordinator)
    with KafkaWire(cluster.brokers[leaders[elsewhere]].bootstrap_servers) as wire:
        late = produce(wire, transactional_id, topic, producer, 1, b"late", partition=elsewhere)
    assert late == ErrorCode.INVALID_PRODUCER_EPOCH
