"""Topic-level config keys: Kafka's names, defaults, synonyms; LogConfig resolution."""

from __future__ import annotations

import pytest

from wireserver.storage.configdef import LONG_MAX, ConfigValueError
from wireserver.storage.log_config import TOPIC_CONFIGS, LogConfig


def test_kafka_defaults_and_synonyms():
    c = LogConfig.from_values({}, {})
    assert c.segment_bytes == 1073741824
    assert c.retention_ms == 604800000 and c.retention_bytes == -1
    assert c.max_message_bytes == 1048588
    assert c.flush_messages == LONG_MAX and c.flush_ms == LONG_MAX
    assert c.cleanup_policy == ("delete",) and c.compression_type == "producer"
    assert TOPIC_CONFIGS["segment.bytes"].broker_synonym == "log.segment.bytes"
    assert TOPIC_CONFIGS["max.message.bytes"].broker_synonym == "message.max.bytes"
    assert TOPIC_CONFIGS["segment.ms"].broker_synonym == "log.roll.ms"
    assert TOPIC_CONFIGS["file.delete.delay.ms"].broker_synonym == "log.segment.delete.delay.ms"
    assert not any(d.read_only for d in TOPIC_CONFIGS.values())
    assert "message.downconversion.enable" not in TOPIC_CONFIGS


def test_precedence_override_then_broker_default_then_kafka_default():
    c = LogConfig.from_values(
        {"retention.ms": 10, "segment.bytes": 2 << 20},
        {"segment.bytes": "3145728", "cleanup.policy": "compact,delete"},
    )
    assert c.retention_ms == 10 and c.segment_bytes == 3 << 20
    assert c.cleanup_policy == ("compact", "delete") and c.compact and c.delete_enabled
    assert c.overrides == {"segment.bytes": 3 << 20, "cleanup.policy": ["compact", "delete"]}
    assert c.get("cleanup.policy") == ["compact", "delete"]
    assert c.as_dict()["retention.ms"] == 10


@pytest.mark.parametrize(
    "key,value",
    [
        ("segment.bytes", "1048575"),
        ("cleanup.policy", "remove"),
        ("compression.type", "brotli"),
        ("message.timestamp.type", "Now"),
        ("min.insync.replicas", "0"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("retention.ms", "-2"),
        ("nope", "1"),
        ("preallocate", "yes"),
    ],
)
def test_bad_overrides(key, value):
    with pytest.raises(ConfigValueError):
        LogConfig.from_values({}, {key: value})


def test_internal_segment_bytes_is_the_segment_size_when_set():
    """Kafka 4.1's test-only key: any int, no broker default; it rolls segments instead of
    segment.bytes, which keeps its own value."""
    assert LogConfig.from_values({}, {}).segment_size == 1073741824
    c = LogConfig.from_values({"segment.bytes": 2 << 20}, {"internal.segment.bytes": "200"})
    assert c.segment_bytes == 2 << 20 and c.segment_size == 200
    assert LogConfig.from_values({}, {"internal.segment.bytes": "-5"}).segment_size == -5
