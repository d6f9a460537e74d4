"""Helpers shared by the admin APIs (CreateTopics, DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, DescribeCluster, DescribeTopicPartitions): config resource types,
DescribeConfigs-shaped rows for a topic's configuration, authorized-operation bitfields, and
applying configuration changes to the broker and its logs.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping

from protocol.errors import ErrorCode
from storage.log_config import TOPIC_CONFIGS
from wireserver.config import (
    BROKER_CONFIGS,
    CONFIG_SOURCE_IDS,
    CONFIG_TYPE_IDS,
    DEFAULT_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    ConfigSynonym,
)

if TYPE_CHECKING:
    from storage.manager import TopicInfo
    from wireserver.broker import Broker

ZERO_UUID = uuid.UUID(int=0)

# ConfigResource.Type ids.
RESOURCE_UNKNOWN, RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER = 0, 2, 4, 8

# AclOperation codes and the operations Kafka's AclEntry.supportedOperations lists per
# resource; with no authorizer every supported operation is allowed (AuthHelper).
_READ, _WRITE, _CREATE, _DELETE, _ALTER, _DESCRIBE = 3, 4, 5, 6, 7, 8
_CLUSTER_ACTION, _DESCRIBE_CONFIGS, _ALTER_CONFIGS, _IDEMPOTENT_WRITE = 9, 10, 11, 12


def _bitfield(operations: Iterable[int]) -> int:
    field = 0
    for operation in operations:
        field |= 1 << operation
    return field


CLUSTER_AUTHORIZED_OPERATIONS = _bitfield((_CREATE, _CLUSTER_ACTION, _DESCRIBE_CONFIGS,
                                           _ALTER_CONFIGS, _IDEMPOTENT_WRITE, _ALTER,
                                           _DESCRIBE))
TOPIC_AUTHORIZED_OPERATIONS = _bitfield((_READ, _WRITE, _CREATE, _DESCRIBE, _DELETE, _ALTER,
                                         _DESCRIBE_CONFIGS, _ALTER_CONFIGS))
AUTHORIZED_OPERATIONS_NOT_REQUESTED = -2**31


@dataclass(frozen=True)
class TopicConfigRow:
    """One topic-level key as DescribeConfigs (and CreateTopics v5+) reports it."""

    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool
    synonyms: tuple[ConfigSynonym, ...]
    type: str
    doc: str

    @property
    def source_id(self) -> int:
        return CONFIG_SOURCE_IDS[self.source]

    @property
    def type_id(self) -> int:
        return CONFIG_TYPE_IDS.get(self.type, 0)


def topic_config_rows(broker: "Broker", overrides: Mapping[str, str], config,
                      names: Iterable[str] | None = None) -> list[TopicConfigRow]:
    """Kafka's ``ConfigHelper.createTopicConfigEntry`` for every topic key (or ``names``;
    unknown ones are skipped): the effective value, the topic override first among the
    synonyms, then the broker-side synonyms; the source is the first synonym's."""
    wanted = TOPIC_CONFIGS.keys() if names is None else [n for n in names if n in TOPIC_CONFIGS]
    rows = []
    for name in sorted(wanted):
        cdef = TOPIC_CONFIGS[name]
        value = None if cdef.sensitive else cdef.render(config.get(name))
        synonyms = list(broker.config.topic_synonyms(name))
        if name in overrides:
            synonyms.insert(0, ConfigSynonym(name, value, DYNAMIC_TOPIC_CONFIG))
        source = synonyms[0].source if synonyms else DEFAULT_CONFIG
        rows.append(TopicConfigRow(name=name, value=value, source=source, read_only=False,
                                   sensitive=cdef.sensitive, synonyms=tuple(synonyms),
                                   type=cdef.type, doc=cdef.doc))
    return rows


def topic_rows(broker: "Broker", info: "TopicInfo",
               names: Iterable[str] | None = None) -> list[TopicConfigRow]:
    return topic_config_rows(broker, info.overrides, info.config, names)


class AdminError(Exception):
    """A resource-level failure with Kafka's code and message."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def check_broker_resource(broker: "Broker", name: str | None, *, allow_default: bool) -> bool:
    """Validate a BROKER resource name the way ConfigAdminManager does. Returns True for the
    cluster-wide default resource (empty name), False for this broker."""
    if not name:
        if allow_default:
            return True
        raise AdminError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    try:
        node = int(name)
    except ValueError:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Node id must be an integer, but it is: {name}") from None
    if node != broker.node_id:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {broker.node_id}, but received {name}")
    return False


def refresh_topic_defaults(broker: "Broker") -> None:
    """Push the broker's (possibly changed) topic defaults into every topic's LogConfig."""
    broker.logs.update_broker_defaults(broker.config.topic_defaults())


def is_list_key(resource_type: int, name: str) -> bool:
    defs = TOPIC_CONFIGS if resource_type == RESOURCE_TOPIC else BROKER_CONFIGS
    cdef = defs.get(name)
    return cdef is not None and cdef.type == "list"
