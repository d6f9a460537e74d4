"""Chores a scenario needs but does not test: make a topic, read watermarks, write records.

They go through :class:`wireserver.testing.KafkaWire` (one raw connection speaking Kafka's
protocol with kafka-python's message classes) and, to write records that several clients then
read, confluent-kafka's producer (not idempotent by default, so it needs no InitProducerId).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from wireserver.testing import KafkaWire

# CreateTime of the records scenarios write: an hour ago, rounded down to the hour, fixed for
# the run so both targets see the same values. Not a fixed date years back: Kafka's time
# retention (7 days) deletes such records when its 5-minute retention check happens to run
# between a scenario's write and its read (seen in CI as a partition read back empty).
BASE_TS = (int(time.time()) // 3600 - 1) * 3600 * 1000


def topic_name(prefix: str) -> str:
    return f"compat-{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(
    bootstrap: str, prefix: str, partitions: int = 1, configs: Mapping[str, Any] | None = None
) -> str:
    name = topic_name(prefix)
    with KafkaWire(bootstrap, client_id="compat-neutral") as wire:
        wire.create_topic(name, partitions=partitions, configs=configs)
    wait_until_served(bootstrap, name, partitions)
    return name


def wait_until_served(bootstrap: str, topic: str, partitions: int) -> None:
    """Wait until a new topic is listed and every partition's leader serves it: Kafka (KRaft)
    lists a topic before its leaders do (a Produce in between gets NOT_LEADER_OR_FOLLOWER, an
    acks=0 record is dropped silently), so wait until every partition answers ListOffsets."""
    wait_for_topic(bootstrap, topic, partitions)
    deadline = time.monotonic() + 10
    while True:
        try:
            list_offsets(bootstrap, topic, partitions)
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def metadata(bootstrap: str, topic: str) -> tuple[int, int | None]:
    """(error code, partition count or None) for ``topic``, without creating it."""
    from kafka.protocol.metadata.metadata import MetadataRequest

    with KafkaWire(bootstrap, client_id="compat-neutral") as wire:
        version = wire.version(MetadataRequest, 12)
        topic_class = MetadataRequest.MetadataRequestTopic
        topics = [
            topic_class(name=topic, topic_id=None) if version >= 10 else topic_class(name=topic)
        ]
        response = wire.request(
            MetadataRequest(version=version, topics=topics, allow_auto_topic_creation=False)
        )
    for t in response.topics:
        if t.name == topic:
            return t.error_code, (len(t.partitions) if not t.error_code else None)
    return -1, None


def node_id(bootstrap: str) -> int:
    """The id of the (first) broker, for BROKER config resources."""
    from kafka.protocol.metadata.metadata import MetadataRequest

    with KafkaWire(bootstrap, client_id="compat-neutral") as wire:
        response = wire.request(MetadataRequest(version=1, topics=[]))
    return response.brokers[0].node_id


def topic_exists(bootstrap: str, topic: str) -> bool:
    return metadata(bootstrap, topic)[0] == 0


def wait_for_topic(
    bootstrap: str, topic: str, partitions: int | None = None, timeout: float = 10.0
) -> int | None:
    """Wait until Metadata lists ``topic`` with leaders (Kafka creates asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        error, count = metadata(bootstrap, topic)
        if error == 0 and (partitions is None or count == partitions):
            return count
        if time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def list_offsets(bootstrap: str, topic: str, partitions: int, timestamp: int = -1) -> list[int]:
    """ListOffsets for every partition: -1 latest (high watermark), -2 earliest."""
    from kafka.protocol.consumer.offsets import ListOffsetsRequest

    with KafkaWire(bootstrap, client_id="compat-neutral") as wire:
        version = wire.version(ListOffsetsRequest, 7)
        t_class = ListOffsetsRequest.ListOffsetsTopic
        p_class = t_class.ListOffsetsPartition
        request = ListOffsetsRequest(
            version=version,
            replica_id=-1,
            isolation_level=0,
            topics=[
                t_class(
                    name=topic,
                    partitions=[
                        p_class(partition_index=p, current_leader_epoch=-1, timestamp=timestamp)
                        for p in range(partitions)
                    ],
                )
            ],
        )
        response = wire.request(request)
    found = {
        p.partition_index: (p.error_code, p.offset) for t in response.topics for p in t.partitions
    }
    out = []
    for p in range(partitions):
        error, offset = found[p]
        if error:
            raise RuntimeError(f"ListOffsets {topic}-{p}: error {error}")
        out.append(offset)
    return out


def wait_for_end_offsets(
    bootstrap: str, topic: str, partitions: int, total: int, timeout: float = 5.0
) -> list[int]:
    """High watermarks once they add up to ``total`` (or whatever they are at the deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        ends = list_offsets(bootstrap, topic, partitions)
        if sum(ends) >= total or time.monotonic() > deadline:
            return ends
        time.sleep(0.05)


def write(
    bootstrap: str, topic: str, records: list[dict[str, Any]], compression: str = "none"
) -> None:
    """Write ``records`` in order with confluent-kafka (acks=all) and wait for every ack."""
    from compat_tests.clients import CLIENTS

    CLIENTS["confluent-kafka"].produce(
        bootstrap, topic, records, acks="all", compression=compression
    )


def commit_offset(
    bootstrap: str, group: str, topic: str, offset: int = 0, timeout: float = 30.0
) -> None:
    """Make ``group`` an Empty classic group with ``offset`` committed on partition 0
    (confluent-kafka's AlterConsumerGroupOffsets: an OffsetCommit without a generation). A
    Kafka that has just started fails the commit (as a partition error: the call itself
    succeeds) until its group coordinator is ready, so it is tried again until it succeeds."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, offset)])
    deadline = time.monotonic() + timeout
    while True:
        [future] = admin.alter_consumer_group_offsets([request]).values()
        errors = [
            tp.error
            for tp in future.result(timeout=timeout).topic_partitions
            if tp.error is not None
        ]
        if not errors:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"cannot commit an offset of group {group}: {errors}")
        time.sleep(0.2)
