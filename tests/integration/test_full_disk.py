"""A full disk under the broker's only log dir (a real tmpfs the test mounts): the partition that
hit it answers KAFKA_STORAGE_ERROR, the broker logs "Shutdown broker because all log dirs in ...
have failed" and halts with exit code 1 (Kafka's ``Exit.halt(1)``), and once the disk has
room again it starts on the same data dir with every acknowledged record at its offset."""

from __future__ import annotations

import logging
import os
import socket
import time

import pytest
from kafka.protocol.admin.cluster import AlterReplicaLogDirsRequest, DescribeLogDirsRequest

from tests.integration.acknowledged_records import PADDING, check_acknowledged, read_all
from tests.integration.conftest import PARTITIONS
from tests.integration.raw import fetch, produce, produce_errors, v2_batch
from tests.small_fs import fill, resize, small_filesystem
from wireserver.testing import EmbeddedBroker

KAFKA_STORAGE_ERROR = 56
HALTED = "Shutdown broker because all log dirs in {} have failed"


def alter_log_dirs(wire, log_dir: str, partition: int) -> int:
    """AlterReplicaLogDirs of ``t-<partition>`` into ``log_dir``: the partition's error."""
    entry = AlterReplicaLogDirsRequest.AlterReplicaLogDir
    topic = entry.AlterReplicaLogDirTopic(name="t", partitions=[partition])
    request = AlterReplicaLogDirsRequest(version=2, dirs=[entry(path=log_dir, topics=[topic])])
    return wire.request(request).results[0].partitions[0].error_code


@pytest.fixture
def small_disk(tmp_path):
    with small_filesystem(tmp_path / "fs", "8m") as mount:
        yield mount


def test_a_full_disk_halts_the_broker_and_loses_nothing_acknowledged(small_disk):
    from confluent_kafka import KafkaError, Producer

    data_dir = os.path.join(small_disk, "data")
    with EmbeddedBroker("subprocess", data_dir=data_dir) as broker:
        broker.create_topic("fills", PARTITIONS)
        bootstrap = broker.bootstrap_servers
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": False,
                "retries": 0,  # so the partition's own error reaches the delivery report
                "linger.ms": 5,
                "message.timeout.ms": 15000,
            }
        )
        acked: dict = {}
        failed: list = []

        def report(err, msg):
            if err is None:
                acked[(msg.partition(), msg.offset())] = msg.value()
            else:
                failed.append(err)

        sent = 0
        deadline = time.monotonic() + 120
        while broker.process is not None and broker.process.poll() is None:
            assert time.monotonic() < deadline, "the broker never halted"
            try:
                producer.produce(
                    "fills",
                    value=b"record-%08d" % sent + PADDING,
                    partition=sent % PARTITIONS,
                    on_delivery=report,
                )
                sent += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        producer.flush(30)
        assert len(acked) + len(failed) == sent, "a delivery report is missing"
        codes = {err.code() for err in failed}
        assert KafkaError.KAFKA_STORAGE_ERROR in codes, codes
        transport = {KafkaError._TRANSPORT, KafkaError._MSG_TIMED_OUT, KafkaError._ALL_BROKERS_DOWN}
        assert codes <= {KafkaError.KAFKA_STORAGE_ERROR} | transport, codes
        print(f"sent {sent}, acknowledged {len(acked)}, failed with {sorted(codes)}")
        assert broker.wait_exit(30) == 1
        assert HALTED.format(os.path.abspath(data_dir)) in broker.log_text()
        assert len(acked) > 3000, "the disk should have taken several megabytes first"

        resize(small_disk, "64m")
        broker.start()
        assert broker.bootstrap_servers == bootstrap
        stored = read_all(bootstrap, "fills", len(acked))
        check_acknowledged(acked, stored)
        values = [v for records in stored.values() for _, v in records]
        assert len(values) == len(set(values)), "a record was stored twice"
        # It serves again: more records go in after the ones read back.
        more: dict = {}
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})

        def stored_at(err, msg):
            if err is None:
                more[msg.partition()] = msg.offset()

        for p in range(PARTITIONS):
            producer.produce("fills", value=b"after", partition=p, on_delivery=stored_at)
        assert producer.flush(30) == 0
        assert more == {p: len(stored[p]) for p in range(PARTITIONS)}


def test_a_thread_broker_halts_without_ending_the_test_process(small_disk, caplog):
    """In one process with the tests the halt stops the broker without flushing (no clean
    shutdown marker, so the next start recovers) and the test process goes on. Once
    ``wait_exit`` returns, the broker's port is free, as after a process's exit: the start
    that binds it again recovers the logs itself, not after a start that found the port
    busy, recovered them, gave up and closed them cleanly."""
    data_dir = os.path.join(small_disk, "data")
    with EmbeddedBroker("thread", data_dir=data_dir) as broker:
        broker.create_topic("t", 1)
        with broker.wire() as wire:
            answer = wire.request(produce("t", {0: v2_batch([b"kept"])}, acks=-1))
            assert answer.responses[0].partition_responses[0].error_code == 0
            filler = fill(small_disk)
            answer = wire.request(produce("t", {0: v2_batch([b"x" * 64 * 1024])}, acks=-1))
        partition = answer.responses[0].partition_responses[0]
        assert (partition.error_code, partition.base_offset) == (KAFKA_STORAGE_ERROR, -1)
        assert partition.error_message is None  # as Kafka: the code alone
        assert broker.wait_exit(10) == 1
        assert not broker.running
        with socket.socket() as probe:  # Twisted's listening sockets set SO_REUSEADDR too
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((broker.host, broker.port))
        halted = [r for r in caplog.records if r.levelno == logging.CRITICAL]
        assert [r.getMessage() for r in halted] == [HALTED.format(os.path.abspath(data_dir))]
        os.unlink(filler)
        broker.start()
        recovered = broker.broker.logs.get_log("t", 0)
        assert recovered.log_end_offset == 1
        assert recovered.recovered_segments == 1  # no clean-shutdown marker was written


def test_with_another_log_dir_left_the_broker_serves_on(small_disk, tmp_path):
    """Several log dirs, one failed: its partitions answer KAFKA_STORAGE_ERROR (Produce and
    Fetch) until a restart, the others are served, and the broker does not halt."""
    data_dir = os.path.join(small_disk, "data")
    dirs = f"{data_dir},{tmp_path / 'other'}"
    with EmbeddedBroker("thread", data_dir=data_dir, overrides={"log.dirs": dirs}) as broker:
        broker.create_topic("t", 2)
        logs = broker.broker.logs
        failing = next(p for p in range(2) if logs.get_log("t", p).log_dir == data_dir)
        with broker.wire() as wire:
            fill(small_disk)
            big = {failing: v2_batch([b"x" * 64 * 1024])}
            assert produce_errors(wire.request(produce("t", big, acks=-1))) == {
                failing: KAFKA_STORAGE_ERROR
            }
            both = {p: v2_batch([b"small"]) for p in range(2)}
            assert produce_errors(wire.request(produce("t", both, acks=-1))) == {
                failing: KAFKA_STORAGE_ERROR,
                1 - failing: 0,
            }
            (fetched,) = wire.request(fetch("t", failing, 0)).responses[0].partitions
            assert fetched.error_code == KAFKA_STORAGE_ERROR
            # DescribeLogDirs: the failed dir has its error and nothing else, as in Kafka.
            other = str(tmp_path / "other")
            described = wire.request(DescribeLogDirsRequest(version=4, topics=None))
            by_dir = {r.log_dir: r for r in described.results}
            failed_dir = by_dir[data_dir]
            assert (failed_dir.error_code, failed_dir.topics) == (KAFKA_STORAGE_ERROR, [])
            assert failed_dir.total_bytes == failed_dir.usable_bytes == -1
            assert by_dir[other].error_code == 0
            listed = [
                (t.name, p.partition_index) for t in by_dir[other].topics for p in t.partitions
            ]
            assert listed == [("t", 1 - failing)]
            # Neither a move into the failed dir nor one of a partition in it can start.
            assert alter_log_dirs(wire, data_dir, 1 - failing) == KAFKA_STORAGE_ERROR
            assert alter_log_dirs(wire, other, failing) == KAFKA_STORAGE_ERROR
            time.sleep(1.0)  # longer than a halt's grace
            assert broker.running
