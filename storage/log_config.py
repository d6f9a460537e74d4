"""Topic-level configuration: Kafka's keys, defaults and broker synonyms, and ``LogConfig``.

Names and defaults follow Apache Kafka 4.1 (``org.apache.kafka.common.config.TopicConfig`` and
``org.apache.kafka.storage.internals.log.LogConfig``). Each key's ``broker_synonym`` is the
broker key that supplies its default (``segment.bytes`` ← ``log.segment.bytes``).

Deliberate differences and notes:

- ``segment.bytes`` is at least 1 MiB (KIP-1030, Kafka 4.1). Smaller segments, for tests, come
  from Kafka's internal key ``internal.segment.bytes``: any int, no broker default, it replaces
  ``segment.bytes`` as the size that rolls a segment, and DescribeConfigs lists it only where a
  topic sets it (with the value as given), as Kafka 4.1 does.
- ``message.timestamp.after.max.ms`` defaults to one hour, Kafka 4.0's default (KIP-1030).
- ``message.downconversion.enable`` and ``message.format.version`` are gone in Kafka 4.x and are
  not accepted.
- Tiered-storage keys (``remote.storage.enable``, ``local.retention.*``) are accepted and
  reported with Kafka's defaults but have no effect.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wireserver.storage.configdef import (
    LONG_MAX,
    ConfigDef,
    ConfigValueError,
    at_least,
    between,
    one_of,
)

CLEANUP_POLICIES = ("delete", "compact")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replicas(name: str):
    """Kafka's ``ThrottledReplicaListValidator``: ``*`` or ``partition:brokerId`` entries
    (kafka-reassign-partitions --throttle writes them; the brokers act on them)."""

    def check(value: list) -> None:
        if value == ["*"] or all(_REPLICA.fullmatch(item) for item in value):
            return
        raise ValueError(
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )

    return check


def _gzip_level(value: int) -> None:
    if value != -1 and not 1 <= value <= 9:
        raise ValueError("Value must be -1 or between 1 and 9")


def _topic(
    name: str,
    type_: str,
    default: Any,
    doc: str,
    validator=None,
    synonym: str | None = None,
    internal: bool = False,
) -> ConfigDef:
    return ConfigDef(
        name=name,
        type=type_,
        default=default,
        doc=doc,
        validator=validator,
        broker_synonym=synonym,
        read_only=False,
        internal=internal,
    )


_DEFS = [
    _topic(
        "cleanup.policy",
        "list",
        ["delete"],
        "Retention policy for old segments: delete, compact, or both.",
        one_of(*CLEANUP_POLICIES),
        "log.cleanup.policy",
    ),
    _topic(
        "compression.type",
        "string",
        "producer",
        "Final compression of the topic's data; 'producer' keeps the producer's codec.",
        one_of(*COMPRESSION_TYPES),
        "compression.type",
    ),
    _topic(
        "compression.gzip.level",
        "int",
        -1,
        "Compression level for gzip.",
        _gzip_level,
        "compression.gzip.level",
    ),
    _topic(
        "compression.lz4.level",
        "int",
        9,
        "Compression level for lz4.",
        between(1, 17),
        "compression.lz4.level",
    ),
    _topic(
        "compression.zstd.level",
        "int",
        3,
        "Compression level for zstd.",
        between(-131072, 22),
        "compression.zstd.level",
    ),
    _topic(
        "delete.retention.ms",
        "long",
        86400000,
        "How long delete tombstones are kept for compacted topics.",
        at_least(0),
        "log.cleaner.delete.retention.ms",
    ),
    _topic(
        "errors.deadletterqueue.group.enable",
        "boolean",
        False,
        "Whether share groups may use this topic as their dead-letter queue (KIP-1191); "
        "false: a share group naming it writes nothing to it.",
        None,
        None,
    ),
    _topic(
        "file.delete.delay.ms",
        "long",
        60000,
        "Time to wait before deleting a file from the filesystem.",
        at_least(0),
        "log.segment.delete.delay.ms",
    ),
    _topic(
        "flush.messages",
        "long",
        LONG_MAX,
        "Number of messages appended between forced fsyncs.",
        at_least(1),
        "log.flush.interval.messages",
    ),
    _topic(
        "flush.ms",
        "long",
        LONG_MAX,
        "Time between forced fsyncs.",
        at_least(0),
        "log.flush.interval.ms",
    ),
    _topic(
        "follower.replication.throttled.replicas",
        "list",
        [],
        "Replicas whose log replication is throttled on the follower side.",
        _throttled_replicas("follower.replication.throttled.replicas"),
        None,
    ),
    _topic(
        "index.interval.bytes",
        "int",
        4096,
        "Bytes appended between entries in the offset index.",
        at_least(0),
        "log.index.interval.bytes",
    ),
    _topic(
        "leader.replication.throttled.replicas",
        "list",
        [],
        "Replicas whose log replication is throttled on the leader side.",
        _throttled_replicas("leader.replication.throttled.replicas"),
        None,
    ),
    _topic(
        "local.retention.bytes",
        "long",
        -2,
        "Tiered storage: local retention in bytes (-2 = retention.bytes). No effect here.",
        at_least(-2),
        "log.local.retention.bytes",
    ),
    _topic(
        "local.retention.ms",
        "long",
        -2,
        "Tiered storage: local retention in ms (-2 = retention.ms). No effect here.",
        at_least(-2),
        "log.local.retention.ms",
    ),
    _topic(
        "max.compaction.lag.ms",
        "long",
        LONG_MAX,
        "Maximum time a message stays ineligible for compaction.",
        at_least(1),
        "log.cleaner.max.compaction.lag.ms",
    ),
    _topic(
        "max.message.bytes",
        "int",
        1048588,
        "Largest record batch size allowed by the topic.",
        at_least(0),
        "message.max.bytes",
    ),
    _topic(
        "message.timestamp.after.max.ms",
        "long",
        3600000,
        "Largest allowed amount a batch timestamp may be ahead of the broker's clock.",
        at_least(0),
        "log.message.timestamp.after.max.ms",
    ),
    _topic(
        "message.timestamp.before.max.ms",
        "long",
        LONG_MAX,
        "Largest allowed amount a batch timestamp may be behind the broker's clock.",
        at_least(0),
        "log.message.timestamp.before.max.ms",
    ),
    _topic(
        "message.timestamp.type",
        "string",
        "CreateTime",
        "Whether record timestamps are the producer's (CreateTime) or the broker's.",
        one_of(*TIMESTAMP_TYPES),
        "log.message.timestamp.type",
    ),
    _topic(
        "min.cleanable.dirty.ratio",
        "double",
        0.5,
        "Minimum dirty ratio before the log cleaner compacts a log.",
        between(0, 1),
        "log.cleaner.min.cleanable.ratio",
    ),
    _topic(
        "min.compaction.lag.ms",
        "long",
        0,
        "Minimum time a message stays uncompacted.",
        at_least(0),
        "log.cleaner.min.compaction.lag.ms",
    ),
    _topic(
        "min.insync.replicas",
        "int",
        1,
        "Minimum in-sync replicas that must acknowledge an acks=all write.",
        at_least(1),
        "min.insync.replicas",
    ),
    _topic(
        "preallocate",
        "boolean",
        False,
        "Preallocate segment files on roll.",
        None,
        "log.preallocate",
    ),
    _topic(
        "remote.log.copy.disable",
        "boolean",
        False,
        "Tiered storage: stop copying segments to remote storage. No effect here.",
        None,
        None,
    ),
    _topic(
        "remote.log.delete.on.disable",
        "boolean",
        False,
        "Tiered storage: delete remote data when it is disabled. No effect here.",
        None,
        None,
    ),
    _topic(
        "remote.storage.enable",
        "boolean",
        False,
        "Tiered storage for this topic. Not supported; accepted for compatibility.",
        None,
        None,
    ),
    _topic(
        "retention.bytes",
        "long",
        -1,
        "Largest size of the partition log before old segments are deleted (-1: no limit).",
        None,
        "log.retention.bytes",
    ),
    _topic(
        "retention.ms",
        "long",
        604800000,
        "Longest time a segment is kept before deletion (-1: no limit).",
        at_least(-1),
        "log.retention.ms",
    ),
    _topic(
        "segment.bytes",
        "int",
        1073741824,
        "Segment file size; a new segment is rolled before exceeding it.",
        at_least(1048576),
        "log.segment.bytes",
    ),
    _topic(
        "internal.segment.bytes",
        "int",
        None,
        "The maximum size of a single log file. This should be used for testing only.",
        internal=True,
    ),
    _topic(
        "segment.index.bytes",
        "int",
        10485760,
        "Size of the offset index of a segment; a full index rolls the segment.",
        at_least(4),
        "log.index.size.max.bytes",
    ),
    _topic(
        "segment.jitter.ms",
        "long",
        0,
        "Maximum random jitter subtracted from segment.ms.",
        at_least(0),
        "log.roll.jitter.ms",
    ),
    _topic(
        "segment.ms",
        "long",
        604800000,
        "Time after which a segment is rolled even if not full.",
        at_least(1),
        "log.roll.ms",
    ),
    _topic(
        "unclean.leader.election.enable",
        "boolean",
        False,
        "Allow a replica outside the ISR to become leader, at the cost of data loss.",
        None,
        "unclean.leader.election.enable",
    ),
]

TOPIC_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _DEFS}
"""Every topic-level configuration key we accept, by name."""


def _attr(key: str) -> str:
    return key.replace(".", "_")


@dataclass(frozen=True)
class LogConfig:
    """Effective configuration of one topic's logs. Attribute = key with '.' → '_'."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    delete_retention_ms: int = 86400000
    errors_deadletterqueue_group_enable: bool = False
    file_delete_delay_ms: int = 60000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    index_interval_bytes: int = 4096
    internal_segment_bytes: int | None = None
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    local_retention_bytes: int = -2
    local_retention_ms: int = -2
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1048588
    message_timestamp_after_max_ms: int = 3600000
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    remote_storage_enable: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604800000
    segment_bytes: int = 1073741824
    segment_index_bytes: int = 10485760
    segment_jitter_ms: int = 0
    segment_ms: int = 604800000
    unclean_leader_election_enable: bool = False
    # Topic-level overrides this config was built with (parsed values), for DescribeConfigs.
    overrides: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_values(
        cls,
        broker_defaults: Mapping[str, Any] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> LogConfig:
        """Effective config: topic override, else broker default, else Kafka's default.

        ``broker_defaults`` hold already-typed values keyed by *topic-level* name; ``overrides``
        hold raw (string) values as CreateTopics/AlterConfigs deliver them. An unknown or invalid
        override raises ``ConfigValueError``.
        """
        broker_defaults = broker_defaults or {}
        overrides = overrides or {}
        values: dict[str, Any] = {}
        parsed: dict[str, Any] = {}
        for key in overrides:
            if key not in TOPIC_CONFIGS:
                raise ConfigValueError(key, overrides[key], "Unknown topic config name")
        for key, cdef in TOPIC_CONFIGS.items():
            if key in overrides and overrides[key] is not None:
                value = cdef.parse(overrides[key])
                parsed[key] = value
            elif key in broker_defaults and broker_defaults[key] is not None:
                value = broker_defaults[key]
            else:
                value = cdef.default
            if isinstance(value, list):
                value = tuple(value)
            values[_attr(key)] = value
        return cls(**values, overrides=parsed)

    def get(self, key: str) -> Any:
        """The effective value of a topic-level key, by Kafka name."""
        if key not in TOPIC_CONFIGS:
            raise KeyError(key)
        value = getattr(self, _attr(key))
        return list(value) if isinstance(value, tuple) else value

    def as_dict(self) -> dict[str, Any]:
        """Every key by Kafka name → effective value."""
        return {key: self.get(key) for key in TOPIC_CONFIGS}

    def with_overrides(
        self, broker_defaults: Mapping[str, Any] | None, overrides: Mapping[str, Any]
    ) -> LogConfig:
        return LogConfig.from_values(broker_defaults, overrides)

    @property
    def segment_size(self) -> int:
        """The size that rolls a segment: ``internal.segment.bytes`` when set, else
        ``segment.bytes`` (Kafka's ``LogConfig.segmentSize``)."""
        if self.internal_segment_bytes is not None:
            return self.internal_segment_bytes
        return self.segment_bytes

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy


def _check_consistency() -> None:
    names = {f.name for f in dataclasses.fields(LogConfig)} - {"overrides"}
    expected = {_attr(k) for k in TOPIC_CONFIGS}
    assert names == expected, names ^ expected


_check_consistency()
