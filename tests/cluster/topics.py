"""Topics in a test cluster: create one, and count a partition's records in a broker's
segment files."""

from __future__ import annotations

import glob
import os
import struct

from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import Cluster


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
