"""Topics in a test cluster: create one, count a partition's records in a broker's segment
files, list its partition folders on a broker, ask a broker for its Metadata error, and read
its partitions' leaders, replicas and ISR as Kafka's kafka-topics describes them."""

from __future__ import annotations

import glob
import os
import re
import struct

from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.reference import run_tool
from tests.cluster.conftest import Cluster
from wireserver.protocol.served import SERVED
from wireserver.testing import KafkaWire


def create(cluster: Cluster, name: str, partitions: int = 1, rf: int = 3, **configs) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    future = admin.create_topics(
        [
            NewTopic(
                name,
                partitions,
                rf,
                config={k.replace("_", "."): str(v) for k, v in configs.items()},
            )
        ]
    )[name]
    future.result(30)


def records_on_disk(data_dir: str, topic: str, partition: int) -> int:
    """Records in a broker's segment files for one partition, from the batch headers."""
    count = 0
    for path in sorted(glob.glob(os.path.join(data_dir, f"{topic}-{partition}", "*.log"))):
        with open(path, "rb") as handle:
            data = handle.read()
        pos = 0
        while pos + 61 <= len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            if length <= 0 or pos + 12 + length > len(data):
                break
            (last_delta,) = struct.unpack_from(">i", data, pos + 23)
            count += last_delta + 1
            pos += 12 + length
    return count


def kafka_topics_describe(bootstrap: str, topic: str, *extra: str) -> dict:
    """{partition: (leader or None, replicas, isr)} as Kafka's kafka-topics prints them."""
    out = run_tool(
        "kafka-topics", ["--describe", "--topic", topic, *extra], bootstrap=bootstrap, timeout=120
    )
    assert out.returncode == 0, out.stderr
    rows = re.findall(
        r"Partition: (\d+)\s+Leader: (\S+)\s+Replicas: ([\d,]*)\s+"
        r"Isr: ([\d,]*)\s+Elr: ([\d,]*)\s+LastKnownElr: ([\d,]*)",
        out.stdout,
    )
    assert rows, out.stdout
    parsed = {}
    for partition, leader, replicas, isr, elr, last_known_elr in rows:
        assert (elr, last_known_elr) == ("", ""), out.stdout
        parsed[int(partition)] = (
            None if leader == "none" else int(leader),
            [int(r) for r in replicas.split(",") if r],
            [int(r) for r in isr.split(",") if r],
        )
    return parsed


def send(broker, request, timeout: float = 60.0):
    """``request``'s response from ``broker``, on a fresh connection."""
    with KafkaWire(broker.bootstrap_servers, timeout=timeout) as wire:
        return wire.request(request)


def topic_error(broker, topic: str) -> int:
    """The error code ``broker`` answers for ``topic`` in Metadata v12 (no auto-creation)."""
    request_class = SERVED.get(3).request_class
    response = send(
        broker,
        request_class(
            version=12,
            topics=[request_class.MetadataRequestTopic(name=topic, topic_id=None)],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    return response.topics[0].error_code


def log_dirs(broker, topic: str) -> list[str]:
    """The partition folders of ``topic`` in ``broker``'s data dir."""
    return sorted(glob.glob(os.path.join(broker.data_dir, f"{topic}-*")))
