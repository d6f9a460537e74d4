"""A failed log dir on one broker of three, with other dirs left (issue #21): each broker has two
log dirs, broker 2's first is a small tmpfs the test mounts and fills while an idempotent acks=all
producer writes to a topic with replication factor 3 and min.insync.replicas 2. Broker 2 does not
halt; as Kafka's ZooKeeper-era brokers, it tells the controller, which moves the leadership of
the partitions in the failed dir to other brokers within seconds and takes broker 2 out of their
ISRs. Metadata lists broker 2 as their offline replica, ``kafka-topics --describe`` shows the
new leaders and ISRs, ``kafka-log-dirs --describe`` the dir's error; broker 2 keeps leading the
partitions in its other dir. Production goes on, and once the dir has room and broker 2 is
restarted its replicas catch up and rejoin every ISR, with every acknowledged record read back
once."""

from __future__ import annotations

import json
import os
import time

import pytest
from kafka.protocol.metadata.metadata import MetadataRequest

from compat_tests.reference import run_tool
from tests.cluster.conftest import Cluster, wait_for, zk_client
from tests.cluster.replicated_load import (
    ALL,
    ProducerThread,
    check_acknowledged,
    partitions,
    wait_isr,
    wait_progress,
)
from tests.cluster.topics import kafka_topics_describe
from tests.small_fs import fill, small_filesystem
from wireserver.cluster import zkdata as zd
from wireserver.testing import KafkaWire

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-log-dir-failure"
FAILING = 2  # the broker whose first log dir fails
TOPIC = "dir-fails"
#: Broker 2 leads partitions 0 and 1 and follows 2 and 3; its logs alternate between its two
#: dirs as they are made (the dir with fewer partitions), so the failing dir holds one of each.
ASSIGNMENT = [[2, 1, 3], [2, 3, 1], [1, 2, 3], [3, 2, 1]]


@pytest.fixture
def disk(tmp_path):
    with small_filesystem(tmp_path / "fs", "8m") as mount:
        yield mount


@pytest.fixture
def cluster(zookeeper, disk, tmp_path):
    failing_dir = os.path.join(disk, "data")
    nodes = Cluster(zookeeper, 3, CHROOT, data_dirs={FAILING: failing_dir})
    for broker_id, broker in nodes.brokers.items():
        second = tmp_path / f"second-{broker_id}"
        broker.overrides["log.dirs"] = f"{broker.data_dir},{second}"
    try:
        yield nodes.start()
    finally:
        nodes.close()


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def listed_offline(zk) -> list[tuple[str, int]] | None:
    """The partitions broker 2 lists in ``/wireserver/offline_replicas/2``; None without it."""
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = zk.get(zd.offline_replicas_path(FAILING))
    except NoNodeError:
        return None
    return sorted(zd.decode_offline_replicas(data))


def offline_replicas(bootstrap: str, topic: str) -> dict[int, list[int]]:
    """{partition: offline replicas} from a Metadata v12 answer."""
    with KafkaWire(bootstrap) as wire:
        response = wire.request(
            MetadataRequest(
                version=12,
                topics=[MetadataRequest.MetadataRequestTopic(name=topic, topic_id=None)],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
    (entry,) = response.topics
    return {p.partition_index: list(p.offline_replicas) for p in entry.partitions}


def log_dirs_described(bootstrap: str, broker_id: int) -> dict[str, dict]:
    """``kafka-log-dirs --describe`` of one broker: each log dir → its JSON entry."""
    out = run_tool(
        "kafka-log-dirs",
        ["--describe", "--broker-list", str(broker_id), "--topic-list", TOPIC],
        bootstrap=bootstrap,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    (line,) = [line for line in out.stdout.splitlines() if line.startswith("{")]
    (entry,) = json.loads(line)["brokers"]
    return {d["logDir"]: d for d in entry["logDirs"]}


def test_a_failed_log_dir_moves_leadership_away_and_its_replicas_rejoin(
    cluster, disk, reference, zk
):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic(
        TOPIC, len(ASSIGNMENT), replica_assignment=ASSIGNMENT, config={"min.insync.replicas": "2"}
    )
    admin.create_topics([new])[TOPIC].result(30)
    wait_isr(cluster, TOPIC, ALL)
    broker = cluster.brokers[FAILING]
    failing_dir = broker.data_dir
    in_failing = sorted(
        p
        for p in range(len(ASSIGNMENT))
        if os.path.isdir(os.path.join(failing_dir, f"{TOPIC}-{p}"))
    )
    assert in_failing == [0, 2], "broker 2's logs should alternate between its dirs"
    elsewhere = [p for p in range(len(ASSIGNMENT)) if p not in in_failing]
    producer = ProducerThread(cluster.bootstrap, TOPIC, len(ASSIGNMENT), padding=200)
    producer.start()
    try:
        wait_progress([producer], 300, what="acknowledgements before the dir fails")
        filler = fill(disk)
        failed_at = time.monotonic()

        def moved():
            now = partitions(cluster, TOPIC)
            return (
                now
                if all(
                    now[p][0] not in (-1, FAILING) and FAILING not in now[p][3] for p in in_failing
                )
                else None
            )

        after = wait_for(moved, 30, 0.1, what="leadership and ISRs off broker 2's failed dir")
        print(f"moved {time.monotonic() - failed_at:.1f} s after the dir filled")
        assert time.monotonic() - failed_at < 10
        assert "Shutdown broker" not in broker.log_text() and broker.running
        # Broker 2 listed its offline replicas and told the controller, which handled the
        # event (Kafka's log line) and deleted it.
        assert listed_offline(zk) == [(TOPIC, p) for p in in_failing]
        controller = cluster.brokers[zd.decode_controller(zk.get(zd.CONTROLLER)[0])]
        assert "Handling log directory failure for brokers 2" in controller.log_text()
        wait_for(lambda: not zk.get_children(zd.LOG_DIR_EVENTS), 10, 0.1, what="event handled")
        # The partitions in its other dir stay as they were: broker 2 leads partition 1.
        assert after[1][0] == FAILING
        assert all(sorted(after[p][3]) == ALL for p in elsewhere)
        for member in cluster.brokers.values():
            assert offline_replicas(member.bootstrap_servers, TOPIC) == {
                p: [FAILING] if p in in_failing else [] for p in range(len(ASSIGNMENT))
            }
        printed = kafka_topics_describe(cluster.bootstrap, TOPIC)
        assert {p: printed[p] for p in in_failing} == {
            p: (after[p][0], after[p][2], after[p][3]) for p in in_failing
        }
        dirs = log_dirs_described(cluster.bootstrap, FAILING)
        assert dirs[failing_dir]["error"] == "org.apache.kafka.common.errors.KafkaStorageException"
        assert dirs[failing_dir]["partitions"] == []
        (other,) = [d for d in dirs if d != failing_dir]
        assert dirs[other]["error"] is None
        assert sorted(p["partition"] for p in dirs[other]["partitions"]) == [
            f"{TOPIC}-{p}" for p in elsewhere
        ]
        wait_progress([producer], 300, what="acknowledgements with broker 2's dir failed")

        os.remove(filler)  # the operator makes room, then restarts the broker
        broker.kill()
        broker.start()
        wait_isr(cluster, TOPIC, ALL, timeout=60)
        assert listed_offline(zk) is None
        assert all(p == [] for p in offline_replicas(cluster.bootstrap, TOPIC).values())
        wait_progress([producer], 300, what="acknowledgements after broker 2 came back")
    finally:
        producer.finish()
    assert producer.unflushed == 0 and producer.failed == [], producer.failed[:5]
    check_acknowledged(cluster.bootstrap, TOPIC, len(ASSIGNMENT), producer.acked)
