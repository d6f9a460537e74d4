"""Requests that name topics by id find them through the broker's id index (Kafka's metadata
image): a topic is found by its id, a deleted topic's id and a made-up one are unknown, and a
topic made again under the same name answers only to its new id."""

from __future__ import annotations

import uuid

from kafka.protocol.metadata.metadata import MetadataRequest

from tests.integration import raw
from wireserver.testing import KafkaWire

UNKNOWN_TOPIC_ID = 100


def by_id(wire: KafkaWire, *topic_ids: uuid.UUID) -> list:
    topics = [MetadataRequest.MetadataRequestTopic(name=None, topic_id=t) for t in topic_ids]
    request = MetadataRequest(version=12, topics=topics, allow_auto_topic_creation=False)
    return wire.request(request).topics


def test_metadata_by_topic_id_follows_create_delete_and_create_again(broker, topic):
    with KafkaWire(broker.bootstrap_servers) as wire:
        wire.create_topic(topic, partitions=3)
        (named,) = wire.request(raw.metadata([topic], auto_create=False)).topics
        first = named.topic_id
        (found,) = by_id(wire, first)
        assert (found.error_code, found.name, len(found.partitions)) == (0, topic, 3)
        (unknown,) = by_id(wire, uuid.uuid4())
        assert unknown.error_code == UNKNOWN_TOPIC_ID
        wire.delete_topics([topic])
        wire.create_topic(topic, partitions=1)
        (named,) = wire.request(raw.metadata([topic], auto_create=False)).topics
        assert named.topic_id != first
        old, new = by_id(wire, first, named.topic_id)
        assert old.error_code == UNKNOWN_TOPIC_ID
        assert (new.error_code, new.name, len(new.partitions)) == (0, topic, 1)
