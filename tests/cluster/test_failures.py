"""Failures on a 3-broker cluster, as a user of stock clients sees them:

- kill -9 of a partition leader and then of a second broker under continuous idempotent
  acks=all production (confluent-kafka and Kafka's ``kafka-verifiable-producer``), both back:
  every acknowledged record is read back at its offset, in order, once;
- a rolling restart (controlled shutdown of each broker in turn) while producing and consuming:
  only retriable errors, nothing acknowledged lost, leadership handed over before the broker
  leaves ZooKeeper;
- follower truncation: a leader with records its followers never got dies, a replica with
  fewer records leads, the old leader comes back and drops its divergent records;
- two of three brokers down: min.insync.replicas enforced, a partition whose ISR is all dead
  stays offline without unclean leader election and comes back with it;
- producer ids handed out by different brokers never collide.
"""

from __future__ import annotations

import glob
import json
import os
import re
import threading

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from compat_tests.reference import popen_tool, require_tools
from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.replicated_load import (
    ALL,
    ProducerThread,
    check_acknowledged,
    live,
    partitions,
    read_partition,
    wait_isr,
    wait_progress,
)
from tests.cluster.topics import create, records_on_disk
from tests.integration.raw import produce, produce_errors, v2_batch
from wireserver.cluster import zkdata as zd
from wireserver.testing import KafkaWire
from wireserver.testing.cluster import cluster_metadata as metadata

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 3, "/wireserver-failures").start()
    yield nodes
    nodes.close()


@pytest.fixture(autouse=True)
def all_brokers_back(cluster):
    """Every test starts with three registered brokers: a test that fails with a broker down
    does not make the next one fail for want of it."""
    yield
    for broker in cluster.brokers.values():
        if not broker.running:
            broker.start()
    first = cluster.brokers[1].bootstrap_servers
    wait_for(lambda: metadata(first)[1] == ALL, 60, 0.2, what="all brokers registered again")


# -- helpers ---------------------------------------------------------------------------------


def wait_leader(
    cluster: Cluster, topic: str, partition: int, accept, timeout: float = 30.0
) -> tuple:
    """Wait until the partition's (leader, epoch, replicas, isr) satisfies ``accept``."""

    def check():
        state = partitions(cluster, topic).get(partition)
        return state if state is not None and accept(state) else None

    return wait_for(check, timeout, 0.2, what=f"{topic}-{partition}: leadership change")


def acks_only(bootstrap: str, topic: str, values: list[bytes], acks: str) -> list:
    """Produce ``values`` with retries off; the error (or None) of each delivery."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "retries": 0,
            "enable.idempotence": False,
            "message.timeout.ms": 20000,
        }
    )
    results: list = []
    for value in values:
        producer.produce(
            topic, value, partition=0, on_delivery=lambda err, msg: results.append(err)
        )
    producer.flush(30)
    return results


def raw_produce_error(bootstrap: str, topic: str, acks: int) -> int:
    """The error code a broker answers one Produce of one record with."""
    with KafkaWire(bootstrap) as wire:
        response = wire.request(produce(topic, {0: v2_batch([b"probe"])}, acks=acks))
    return produce_errors(response)[0]


#: What the Java producer's accumulator answers a record appended once ``close()`` has begun.
CLOSED_WHILE_SENDING = "Producer closed while send in progress"


class JavaProducer:
    """``kafka-verifiable-producer`` (the Java producer, idempotent, acks=all) at 100 records
    a second until ``finish()``; its JSON events give each acknowledged record's partition,
    offset and value."""

    def __init__(self, bootstrap: str, topic: str, tmp_path):
        config = tmp_path / "verifiable-producer.properties"
        # The tool sets retries=0 (which turns idempotence off): the file turns both back on.
        config.write_text(
            "enable.idempotence=true\nretries=2147483647\nlinger.ms=5\n"
            "max.in.flight.requests.per.connection=5\nretry.backoff.ms=100\n"
            "reconnect.backoff.ms=100\nreconnect.backoff.max.ms=1000\n"
            "delivery.timeout.ms=300000\nrequest.timeout.ms=15000\n"
        )
        self.process = popen_tool(
            "kafka-verifiable-producer",
            [
                "--topic",
                topic,
                "--max-messages",
                "-1",
                "--throughput",
                "100",
                "--acks",
                "-1",
                "--value-prefix",
                "7",
                "--producer.config",
                str(config),
            ],
            bootstrap=bootstrap,
        )
        self.events: list[dict] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def named(self, name: str) -> list[dict]:
        return [e for e in list(self.events) if e.get("name") == name]

    def send_errors(self) -> list[dict]:
        """The records whose send failed, but the one ``finish()`` interrupts: the tool's main
        thread may be handing a record to the producer as SIGTERM closes it, and the producer's
        accumulator refuses it, unsent (CLOSED_WHILE_SENDING), so it is no record lost."""
        return [
            e for e in self.named("producer_send_error") if e.get("message") != CLOSED_WHILE_SENDING
        ]

    @property
    def acked(self) -> list[tuple[int, int, bytes]]:
        return [
            (e["partition"], e["offset"], e["value"].encode())
            for e in self.named("producer_send_success")
        ]

    def finish(self) -> str:
        """SIGTERM: the tool closes its producer (sending what it holds) and exits."""
        self.process.terminate()
        try:
            self.process.wait(90)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        self.reader.join(10)
        return self.process.stderr.read()[-3000:]


def replicated_topic_and_producer(cluster: Cluster, topic: str, count: int) -> ProducerThread:
    """A topic of ``count`` partitions on all three brokers with min.insync.replicas=2, in
    sync, and a (not yet started) producer for it."""
    create(cluster, topic, partitions=count, rf=3, min_insync_replicas=2)
    wait_isr(cluster, topic, ALL)
    return ProducerThread(cluster.bootstrap, topic, count)


def test_producer_ids_are_unique_across_brokers(cluster):
    """Every broker answers InitProducerId: the ids come from blocks reserved in ZooKeeper, so
    producers initialised on different brokers never share one."""
    from kafka.protocol.producer.transaction import InitProducerIdRequest

    ids = []
    for broker in live(cluster):
        with KafkaWire(broker.bootstrap_servers) as wire:
            response = wire.request(
                InitProducerIdRequest(
                    version=4,
                    transactional_id=None,
                    transaction_timeout_ms=60000,
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
        assert response.error_code == 0
        ids.append(response.producer_id)
    assert len(set(ids)) == 3, ids


# -- kill -9 under load ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka_tools():
    """The jars ``kafka-verifiable-producer`` runs from: a failure (never a skip) under CI."""
    require_tools()


def test_two_brokers_killed_under_load_lose_nothing_acknowledged(cluster, kafka_tools, tmp_path):
    topic, count = "chaos", 3
    python = replicated_topic_and_producer(cluster, topic, count)
    java = JavaProducer(cluster.bootstrap, topic, tmp_path)
    python.start()
    producers = [python, java]
    try:
        wait_progress(producers, 100, what="both producers under way")
        first = partitions(cluster, topic)[0][0]
        cluster.brokers[first].kill()
        wait_leader(cluster, topic, 0, lambda p: p[0] not in (-1, first))
        wait_progress(producers, 100, what="acknowledgements with one broker dead")
        second = partitions(cluster, topic)[0][0]
        cluster.brokers[second].kill()
        (survivor,) = [b.node_id for b in live(cluster)]
        for partition in range(count):
            wait_leader(cluster, topic, partition, lambda p: p[0] == survivor)
        cluster.brokers[first].start()
        cluster.brokers[second].start()
        wait_isr(cluster, topic, ALL, timeout=90)
        wait_progress(producers, 200, what="acknowledgements after both came back")
    finally:
        python.finish()
        stderr = java.finish()
    assert python.unflushed == 0 and python.failed == [], python.failed[:5]
    assert java.process.returncode in (0, 143), stderr
    assert java.send_errors() == [], java.send_errors()[:5]
    assert java.named("shutdown_complete"), stderr
    check_acknowledged(cluster.bootstrap, topic, count, python.acked + java.acked)


# -- rolling restart ---------------------------------------------------------------------------


class ConsumerThread(threading.Thread):
    """A confluent-kafka consumer reading every partition from offset 0 until ``finish()``."""

    def __init__(self, bootstrap: str, topic: str, count: int):
        super().__init__(daemon=True)
        self.errors: list[KafkaError] = []
        self.records: set[tuple[int, int, bytes]] = set()
        self._stop_event = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "rolling-reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "error_cb": self.errors.append,
            }
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(count)])

    def run(self) -> None:
        while not self._stop_event.is_set():
            msg = self.consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                self.errors.append(msg.error())
            else:
                self.records.add((msg.partition(), msg.offset(), msg.value()))
        self.consumer.close()

    def finish(self) -> None:
        self._stop_event.set()
        self.join(30)


def only_retriable(errors: list[KafkaError]) -> list[KafkaError]:
    """The errors a client must not see in a rolling restart: fatal ones and those neither
    retriable nor a dropped connection (librdkafka's _TRANSPORT)."""
    return [
        e for e in errors if e.fatal() or not (e.retriable() or e.code() == KafkaError._TRANSPORT)
    ]


def handed_over(cluster: Cluster, topic: str, count: int, broker_id: int) -> list[str]:
    """What ZooKeeper shows for a broker that has just stopped cleanly: it leads no partition,
    is in no ISR, and every partition state was written before its registration went away
    (the znode's mzxid is below the pzxid of ``/brokers/ids``: it was the controlled shutdown,
    not the controller reacting to the lost session, that moved leadership)."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=cluster.zk_connect)
    zk.start(timeout=15)
    try:
        children, ids = zk.get_children(zd.BROKER_IDS, include_data=True)
        problems = [] if str(broker_id) not in children else [f"{broker_id} still registered"]
        for partition in range(count):
            data, stat = zk.get(zd.state_path(topic, partition))
            state = json.loads(data)
            if state["leader"] == broker_id or broker_id in state["isr"]:
                problems.append(f"{topic}-{partition}: {state}")
            elif stat.mzxid > ids.pzxid:
                problems.append(f"{topic}-{partition}: changed after the broker left")
        return problems
    finally:
        zk.stop()
        zk.close()


def test_rolling_restart_loses_nothing_and_shows_only_retriable_errors(cluster):
    topic, count = "rolling", 3
    producer = replicated_topic_and_producer(cluster, topic, count)
    consumer = ConsumerThread(cluster.bootstrap, topic, count)
    producer.start()
    consumer.start()
    try:
        wait_progress([producer], 100, what="records before the restarts")
        for broker_id, broker in cluster.brokers.items():
            led = [p for p, state in partitions(cluster, topic).items() if state[0] == broker_id]
            assert led, f"broker {broker_id} leads no partition of {topic}"
            broker.stop()
            assert handed_over(cluster, topic, count, broker_id) == []
            wait_progress([producer], 50, what=f"records while broker {broker_id} is down")
            broker.start()
            wait_isr(cluster, topic, ALL)
        wait_progress([producer], 50, what="records after the restarts")
    finally:
        producer.finish()
    acked = set(producer.acked)
    try:
        wait_for(lambda: acked <= consumer.records, 60, 0.2, what="the consumer to read all")
    finally:
        consumer.finish()
    assert producer.unflushed == 0 and producer.failed == [], producer.failed[:5]
    assert only_retriable(producer.errors + consumer.errors) == []
    check_acknowledged(cluster.bootstrap, topic, count, producer.acked)


# -- follower truncation -----------------------------------------------------------------------


def segment_bytes(data_dir: str, topic: str, partition: int) -> bytes:
    return b"".join(
        open(path, "rb").read()
        for path in sorted(glob.glob(os.path.join(data_dir, f"{topic}-{partition}", "*.log")))
    )


def test_old_leader_truncates_records_it_alone_had(cluster):
    """KIP-101: the leader appends records (acks=1) while its follower is down, dies; the
    follower returns and leads (unclean election is on for the topic) with fewer records and
    takes new ones; the old leader comes back, truncates to the new leader's log and, leading
    again, serves the new leader's history."""
    topic = "diverge"
    create(
        cluster,
        topic,
        partitions=1,
        rf=2,
        min_insync_replicas=1,
        unclean_leader_election_enable="true",
    )
    old, _, replicas, _ = wait_isr(cluster, topic, sorted(partitions(cluster, topic)[0][2]))[0]
    (new,) = [r for r in replicas if r != old]
    bootstrap = cluster.brokers[old].bootstrap_servers
    base = [f"base-{i}".encode() for i in range(50)]
    assert acks_only(bootstrap, topic, base, "all") == [None] * 50
    cluster.brokers[new].kill()
    wait_leader(cluster, topic, 0, lambda p: p[3] == [old])
    divergent = [f"divergent-{i}".encode() for i in range(20)]
    assert acks_only(bootstrap, topic, divergent, "1") == [None] * 20
    wait_for(
        lambda: records_on_disk(cluster.brokers[old].data_dir, topic, 0) == 70,
        10,
        what="the divergent records on the old leader's disk",
    )
    cluster.brokers[old].kill()
    cluster.brokers[new].start()
    wait_leader(cluster, topic, 0, lambda p: p[0] == new)
    later = [f"later-{i}".encode() for i in range(10)]
    assert acks_only(cluster.brokers[new].bootstrap_servers, topic, later, "all") == [None] * 10
    history = base + later
    assert [v for _, v in read_partition(cluster.bootstrap, topic, 0)] == history

    cluster.brokers[old].start()
    wait_isr(cluster, topic, sorted(replicas))
    old_dir, new_dir = cluster.brokers[old].data_dir, cluster.brokers[new].data_dir
    wait_for(
        lambda: records_on_disk(old_dir, topic, 0) == records_on_disk(new_dir, topic, 0) == 60,
        20,
        what="the old leader's log to match the new leader's",
    )
    assert b"divergent-" not in segment_bytes(old_dir, topic, 0)
    assert_kafka_worded_history(cluster, topic, old, new)
    # The new leader stops cleanly: leadership goes back to the old one, which serves what
    # the new leader wrote and nothing of what it once had alone.
    cluster.brokers[new].stop()
    wait_leader(cluster, topic, 0, lambda p: p[0] == old)
    assert [v for _, v in read_partition(cluster.bootstrap, topic, 0)] == history
    cluster.brokers[new].start()
    wait_isr(cluster, topic, sorted(replicas))


def assert_kafka_worded_history(cluster: Cluster, topic: str, old: int, new: int) -> None:
    """What ``test_old_leader_truncates_records_it_alone_had`` did, as the brokers logged it in
    the words of Kafka's controller, partition, replica fetcher and log."""
    logs = {broker_id: broker.log_text() for broker_id, broker in cluster.brokers.items()}
    everything = "\n".join(logs.values())
    tp = re.escape(f"{topic}-0")
    controller = r"\[Controller id=\d+ epoch=\d+\] "
    expected = [
        # the controller made the partition, and later elected the out-of-sync replica
        (
            everything,
            rf"INFO .*{controller}Changed partition {tp} from NewPartition to OnlinePartition "
            rf"with state LeaderAndIsr\(leader={old}, leaderEpoch=0, isr=List\([\d, ]+\), "
            r"leaderRecoveryState=RECOVERED, partitionEpoch=0\)",
        ),
        (
            everything,
            rf"WARNING .*{controller}No broker in ISR is alive for {tp}\. Elect leader {new} from "
            rf"live brokers {new}\. There's potential data loss\.",
        ),
        # the new leader took over where its log ended, and took the old one back in the ISR
        (
            logs[new],
            rf"\[Broker id={new}\] Leader {tp} with topic id Some\([\w-]{{22}}\) starts at leader "
            r"epoch \d+ from offset 50 with partition epoch \d+, high watermark \d+, ISR "
            rf"\[{new}\], adding replicas \[\] and removing replicas \[\] \. Previous leader "
            r"(None|Some\(\d+\)) and previous leader epoch was -?\d+\.",
        ),
        (logs[new], rf"\[Partition {tp} broker={new}\] Expanding ISR from {new} to {new},{old}$"),
        (
            logs[new],
            rf"\[Partition {tp} broker={new}\] ISR updated to {new},{old}  and version updated "
            r"to \d+$",
        ),
        # the old leader followed it and cut what it alone had
        (
            logs[old],
            rf"\[Broker id={old}\] Follower {tp} starts at leader epoch \d+ from offset 70 with "
            rf"partition epoch \d+ and high watermark \d+\. Current leader is {new}\. Previous "
            r"leader (None|Some\(\d+\)) and previous leader epoch was -?\d+\.",
        ),
        (
            logs[old],
            rf"\[ReplicaFetcher replicaId={old}, leaderId={new}, fetcherId=0\] Truncating "
            rf"partition {tp} with TruncationState\(offset=50, completed=true\) due to leader "
            r"epoch and offset EpochEndOffset\(errorCode=0, partition=0, leaderEpoch=\d+, "
            r"endOffset=\d+\)",
        ),
        (logs[old], rf"\[UnifiedLog partition={tp}, dir=[^\]]+\] Truncating to offset 50$"),
    ]
    for text, pattern in expected:
        assert re.search(pattern, text, re.M), pattern
    # The ISR shrank when the follower died: by the leader (it stopped fetching) or by the
    # controller (its broker was gone), whichever came first.
    shrunk_by_leader = (
        rf"\[Partition {tp} broker={old}\] Shrinking ISR from [\d,]+ to {old}\. Leader: "
        r"\(highWatermark: \d+, endOffset: \d+\)\. Out of sync replicas: \(brokerId: "
        rf"{new}, endOffset: -?\d+, lastCaughtUpTimeMs: \d+\)\."
    )
    shrunk_by_controller = (
        rf"{controller}Partition {tp} state changed to \(Leader:{old},ISR:{old},"
        r"LeaderRecoveryState:RECOVERED,LeaderEpoch:\d+,ZkVersion:\d+,ControllerEpoch:\d+\) "
        rf"after removing replica {new} from the ISR as part of transition to OfflineReplica"
    )
    assert re.search(shrunk_by_leader, logs[old]) or re.search(shrunk_by_controller, everything)


# -- two of three brokers down -----------------------------------------------------------------


def test_two_brokers_down_min_insync_and_unclean_election(cluster):
    """min.insync.replicas=2 with one replica left: acks=all is refused, acks=1 is taken.
    With unclean.leader.election.enable=false (the default) a partition whose only ISR member
    died stays offline when an out-of-sync replica returns; with it turned on (a broker
    override, as an operator recovering the partition would set) that replica leads with what
    it has, and the records only the dead leader held are lost, as Kafka documents."""
    topic = "strict"
    create(cluster, topic, partitions=1, rf=3, min_insync_replicas=2)
    leader, _, replicas, _ = wait_isr(cluster, topic, ALL)[0]
    first, second = [r for r in replicas if r != leader]
    bootstrap = cluster.brokers[leader].bootstrap_servers
    committed = [f"committed-{i}".encode() for i in range(10)]
    assert acks_only(bootstrap, topic, committed, "all") == [None] * 10

    cluster.brokers[first].kill()
    cluster.brokers[second].kill()
    wait_leader(cluster, topic, 0, lambda p: p[0] == leader and p[3] == [leader])
    refused = acks_only(bootstrap, topic, [b"refused"], "all")
    assert [e.code() for e in refused] == [KafkaError.NOT_ENOUGH_REPLICAS]
    assert acks_only(bootstrap, topic, [b"leader-only"], "1") == [None]

    # The leader dies too; an out-of-sync replica returns: the partition stays offline.
    cluster.brokers[leader].kill()
    returning = cluster.brokers[first]
    returning.start()
    wait_leader(cluster, topic, 0, lambda p: p[0] == -1)
    controller, brokers, _ = metadata(returning.bootstrap_servers, topic)
    assert (controller, brokers) == (first, [first])
    error = raw_produce_error(returning.bootstrap_servers, topic, acks=1)
    assert error == 6, error  # NOT_LEADER_OR_FOLLOWER: retriable, the client waits for a leader
    assert partitions(cluster, topic)[0][0] == -1

    # Unclean leader election turned on (broker default) and the broker restarted with it.
    returning.stop()
    returning.overrides["unclean.leader.election.enable"] = "true"
    try:
        returning.start()
    finally:
        del returning.overrides["unclean.leader.election.enable"]
    state = wait_leader(cluster, topic, 0, lambda p: p[0] == first)
    assert state[3] == [first]
    assert acks_only(returning.bootstrap_servers, topic, [b"after"], "1") == [None]
    values = [v for _, v in read_partition(returning.bootstrap_servers, topic, 0)]
    assert values == committed + [b"after"]
    # The others return and catch up; acks=all works again.
    cluster.brokers[leader].start()
    cluster.brokers[second].start()
    wait_isr(cluster, topic, ALL)
    assert acks_only(cluster.bootstrap, topic, [b"all-again"], "all") == [None]
