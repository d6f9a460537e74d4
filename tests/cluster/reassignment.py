"""Partition reassignment as the tests drive it: Kafka's kafka-reassign-partitions run on a plan
file (throttled or not), a topic created on chosen replicas, its bytes on a broker's disk, and an
acks=all idempotent load whose acknowledged records are read back after the move."""

from __future__ import annotations

import json
import os
import subprocess
import threading

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from wireserver.testing.cluster import cluster_metadata

from .conftest import wait_for


def create_topic(bootstrap: str, name: str, replicas: list[int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, num_partitions=1, replica_assignment=[replicas])
    admin.create_topics([topic])[name].result(timeout=30)
    wait_for(
        lambda: cluster_metadata(bootstrap, name)[2].get(0, (-1,))[0] in replicas,
        30,
        what=f"a leader for {name}-0",
    )


def reassign_tool(reference, bootstrap: str, *args: str) -> str:
    """Run kafka-reassign-partitions; its stdout (it must exit 0)."""
    command = reference.tool_command(
        "kafka-reassign-partitions", ["--bootstrap-server", bootstrap, *args]
    )
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def plan_file(tmp_path, topic: str, replicas: list[int]) -> str:
    path = tmp_path / f"{topic}.json"
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}
    path.write_text(json.dumps(plan))
    return str(path)


def log_bytes(broker, topic: str, partition: int = 0) -> int:
    """Bytes in the partition's segment files on ``broker`` (0 when it has none)."""
    directory = os.path.join(broker.data_dir, f"{topic}-{partition}")
    if not os.path.isdir(directory):
        return 0
    return sum(
        os.path.getsize(os.path.join(directory, name))
        for name in os.listdir(directory)
        if name.endswith(".log")
    )


class LoadProducer(threading.Thread):
    """An idempotent acks=all producer writing value ``i`` for i = 0, 1, ... until stopped;
    ``acked`` holds the values the brokers acknowledged."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.acked: list[int] = []
        self.errors: list[str] = []
        self.done = threading.Event()
        self.stopping = threading.Event()

    def run(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
            }
        )

        def delivered(err, msg) -> None:
            if err is None:
                self.acked.append(int(msg.value()))
            else:
                self.errors.append(str(err))

        i = 0
        while not self.stopping.is_set():
            producer.produce(self.topic, str(i).encode(), partition=0, on_delivery=delivered)
            producer.poll(0.005)
            i += 1
        producer.flush(60)
        self.done.set()


def read_all(bootstrap: str, topic: str, count: int) -> list[int]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[int] = []
    try:
        wait_for(
            lambda: (
                values.extend(
                    int(m.value()) for m in consumer.consume(500, 1.0) if m.error() is None
                )
                or len(values) >= count
            ),
            60,
            what=f"{count} records of {topic}",
        )
    finally:
        consumer.close()
    return values


#: bytes/s (--throttle): Kafka's rate counts 10 of its 11 one-second windows from the start,
#: so the first 10 x rate go at once and about that much in every 11 s after: 3 MB take ~22 s
THROTTLE_RATE = 100_000


def execute_throttled(reference, bootstrap: str, plan: str) -> str:
    """``--execute`` of the plan file with ``--throttle THROTTLE_RATE``; the tool's stdout."""
    return reassign_tool(
        reference,
        bootstrap,
        "--execute",
        "--throttle",
        str(THROTTLE_RATE),
        "--reassignment-json-file",
        plan,
    )
