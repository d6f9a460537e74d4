"""An idempotent load on a replicated topic and what checks it: the partitions' leaders and ISRs as
Metadata reports them, waits for an ISR and for the producers' progress, and the check that every
acknowledged record is in the log. The failure tests drive it through broker deaths, full disks
and failed log dirs."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.cluster.conftest import Cluster, wait_for
from wireserver.testing.cluster import cluster_metadata as metadata

ALL = [1, 2, 3]


def live(cluster: Cluster) -> list:
    return [b for b in cluster.brokers.values() if b.running]


def partitions(cluster: Cluster, topic: str) -> dict:
    """{partition: (leader, leader epoch, replicas, isr)} as a live broker answers it."""
    return metadata(live(cluster)[0].bootstrap_servers, topic)[2]


def wait_isr(cluster: Cluster, topic: str, isr: list[int], timeout: float = 60.0) -> dict:
    """Wait until every partition of ``topic`` has a leader and exactly ``isr`` in sync."""

    def settled():
        now = partitions(cluster, topic)
        return now if now and all(p[0] >= 0 and sorted(p[3]) == isr for p in now.values()) else None

    return wait_for(settled, timeout, 0.2, what=f"{topic}: ISR {isr} everywhere")


def read_partition(
    bootstrap: str, topic: str, partition: int, timeout: float = 60.0
) -> list[tuple[int, bytes]]:
    """Every record of one partition below its high watermark, as (offset, value)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "failures-check",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=20)
        consumer.assign([TopicPartition(topic, partition, 0)])
        records: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout
        while (not records or records[-1][0] < high - 1) and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is not None and not msg.error():
                records.append((msg.offset(), msg.value()))
        assert not records or records[-1][0] >= high - 1, (
            f"{topic}-{partition}: read up to {records[-1][0]} of {high}"
        )
        return records
    finally:
        consumer.close()


def sequence(value: bytes) -> tuple[str, int]:
    """("c", 17) for b"c17" (or b"c17|" and padding); ("7", 17) for the Java tool's b"7.17"."""
    text = value.decode().partition("|")[0]
    if text.startswith("c"):
        return "c", int(text[1:])
    prefix, _, number = text.partition(".")
    return prefix, int(number)


def check_acknowledged(
    bootstrap: str, topic: str, count: int, acked: list[tuple[int, int, bytes]]
) -> None:
    """Every acknowledged (partition, offset, value) is in the log at its offset; no value is
    stored twice; each producer's values are in send order within every partition."""
    stored: dict[int, dict[int, bytes]] = {}
    for partition in range(count):
        stored[partition] = dict(read_partition(bootstrap, topic, partition))
    values = [v for records in stored.values() for v in records.values()]
    assert len(values) == len(set(values)), "a record is stored twice"
    wrong = [(p, o, v, stored[p].get(o)) for p, o, v in acked if stored[p].get(o) != v]
    assert not wrong, (
        f"{len(wrong)} of {len(acked)} acknowledged records are not where they "
        f"were acknowledged, e.g. {wrong[:5]}"
    )
    for partition, records in stored.items():
        by_producer: dict[str, list[int]] = {}
        for offset in sorted(records):
            name, number = sequence(records[offset])
            by_producer.setdefault(name, []).append(number)
        for name, numbers in by_producer.items():
            assert numbers == sorted(numbers), f"{topic}-{partition}: {name} out of order"


class ProducerThread(threading.Thread):
    """confluent-kafka, idempotent and acks=all, producing b"c<n>" (followed by b"|" and
    ``padding`` bytes if any) round robin over the partitions until ``finish()``: the
    acknowledged (partition, offset, value) records, the failed deliveries and every error the
    client reported."""

    def __init__(self, bootstrap: str, topic: str, count: int, padding: int = 0):
        super().__init__(daemon=True)
        self.topic, self.count = topic, count
        self.padding = b"|" + b"." * padding if padding else b""
        self.acked: list[tuple[int, int, bytes]] = []
        self.failed: list = []
        self.errors: list[KafkaError] = []
        self.unflushed = -1
        self._stop_event = threading.Event()
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 300000,
                "error_cb": self.errors.append,
            }
        )

    def _delivered(self, err, msg) -> None:
        if err:
            self.failed.append(err)
        else:
            self.acked.append((msg.partition(), msg.offset(), msg.value()))

    def run(self) -> None:
        n = 0
        while not self._stop_event.is_set():
            try:
                self.producer.produce(
                    self.topic,
                    f"c{n}".encode() + self.padding,
                    partition=n % self.count,
                    on_delivery=self._delivered,
                )
                n += 1
            except BufferError:
                pass
            self.producer.poll(0.005)
        self.unflushed = self.producer.flush(120)

    def finish(self) -> None:
        self._stop_event.set()
        self.join(150)


def wait_progress(producers, more: int, timeout: float = 60.0, what: str = "progress") -> None:
    """Wait until each producer has ``more`` acknowledgements beyond its count now."""
    marks = [len(p.acked) for p in producers]
    wait_for(
        lambda: all(len(p.acked) >= m + more for p, m in zip(producers, marks)),
        timeout,
        0.2,
        what=what,
    )
