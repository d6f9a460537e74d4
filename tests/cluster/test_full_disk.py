"""A full disk on one broker of three (issue #17's fault campaign): broker 3's only log dir is a
small tmpfs the test mounts. Under continuous idempotent acks=all production to a topic with
replication factor 3 and min.insync.replicas 2, broker 3's disk fills: it halts as Kafka does
(exit code 1, "Shutdown broker because all log dirs in ... have failed"), leadership of its
partitions moves away when its ZooKeeper session ends, production goes on and nothing
acknowledged is lost. Once the tmpfs is grown, broker 3 starts again, rejoins every ISR, and its
logs are byte-identical to the leaders'."""

from __future__ import annotations

import glob
import os

import pytest

from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.replicated_load import (
    ALL,
    ProducerThread,
    check_acknowledged,
    partitions,
    wait_isr,
    wait_progress,
)
from tests.cluster.topics import create
from tests.small_fs import resize, small_filesystem

pytestmark = pytest.mark.integration

FULL = 3  # the broker whose disk fills
HALTED = "Shutdown broker because all log dirs in {} have failed"


@pytest.fixture
def disk(tmp_path):
    with small_filesystem(tmp_path / "fs", "4m") as mount:
        yield mount


@pytest.fixture
def cluster(zookeeper, disk):
    nodes = Cluster(
        zookeeper, 3, "/wireserver-full-disk", data_dirs={FULL: os.path.join(disk, "data")}
    )
    try:
        yield nodes.start()
    finally:
        nodes.close()


def log_bytes(data_dir: str, topic: str, partition: int) -> bytes:
    """A replica's log: its segment files, in offset order, end to end."""
    paths = sorted(glob.glob(os.path.join(data_dir, f"{topic}-{partition}", "*.log")))
    out = b""
    for path in paths:
        with open(path, "rb") as handle:
            out += handle.read()
    return out


def test_a_full_disk_on_one_broker_loses_nothing_and_it_rejoins(cluster, disk):
    topic, count = "fills", 3
    create(cluster, topic, partitions=count, rf=3, min_insync_replicas=2)
    wait_isr(cluster, topic, ALL)
    full = cluster.brokers[FULL]
    producer = ProducerThread(cluster.bootstrap, topic, count, padding=1000)
    producer.start()
    try:
        assert full.wait_exit(180) == 1, "broker 3 should halt when its disk is full"
        assert HALTED.format(full.data_dir) in full.log_text()
        print(next(line for line in full.log_text().splitlines() if "Error while" in line))
        isr = wait_isr(cluster, topic, [1, 2], timeout=60)
        assert all(state[0] != FULL for state in isr.values())
        wait_progress([producer], 500, what="acknowledgements with broker 3's disk full")

        resize(disk, "64m")
        full.start()
        wait_isr(cluster, topic, ALL, timeout=120)
        wait_progress([producer], 500, what="acknowledgements after broker 3 came back")
    finally:
        producer.finish()
    assert producer.unflushed == 0 and producer.failed == [], producer.failed[:5]
    check_acknowledged(cluster.bootstrap, topic, count, producer.acked)

    def identical() -> bool:
        states = partitions(cluster, topic)
        for partition, (leader, _, _, _) in states.items():
            other = leader if leader != FULL else 1  # it may lead again (preferred leader)
            other_log = log_bytes(cluster.brokers[other].data_dir, topic, partition)
            if not other_log or log_bytes(full.data_dir, topic, partition) != other_log:
                return False
        return True

    wait_for(identical, 60, 0.5, what="broker 3's logs byte-identical to the leaders'")
