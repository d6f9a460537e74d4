"""Helpers shared by the admin APIs (CreateTopics, DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, DescribeCluster, DescribeTopicPartitions): config resource types,
DescribeConfigs-shaped rows for a topic's or a group's configuration, authorized-operation
bitfields, and applying configuration changes to the broker, its logs and its groups.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from wireserver.config import (
    BROKER_CONFIGS,
    DEFAULT_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    GROUP_CONFIG,
    ConfigEntry,
    ConfigSynonym,
)
from wireserver.protocol.errors import ErrorCode
from wireserver.storage.log_config import TOPIC_CONFIGS

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from wireserver.services import Services
    from wireserver.storage.manager import TopicInfo

ZERO_UUID = uuid.UUID(int=0)

# ConfigResource.Type ids.
RESOURCE_UNKNOWN, RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER = 0, 2, 4, 8
RESOURCE_GROUP = 32
RESOURCE_CLIENT_METRICS = 16


def unsupported_resource(kind: int, message: str) -> AdminError:
    """INVALID_REQUEST for a config resource type wireserver does not serve; client metrics
    subscriptions (KIP-714) say so, so kafka-configs and kafka-client-metrics name it."""
    if kind == RESOURCE_CLIENT_METRICS:
        message = "wireserver does not serve client metrics subscriptions (KIP-714)"
    return AdminError(ErrorCode.INVALID_REQUEST, message)


def topic_config_rows(
    services: Services, overrides: Mapping[str, str], config, names: Iterable[str] | None = None
) -> list[ConfigEntry]:
    """Kafka's ``ConfigHelper.createTopicConfigEntry`` for every topic key (or ``names``;
    unknown ones are skipped): the effective value, the topic override first among the
    synonyms, then the broker-side synonyms; the source is the first synonym's. An internal
    key (``internal.segment.bytes``) has a row only where the topic sets it, with the value as
    given, as Kafka 4.1 reports it."""
    wanted = TOPIC_CONFIGS.keys() if names is None else [n for n in names if n in TOPIC_CONFIGS]
    rows = []
    for name in sorted(wanted):
        cdef = TOPIC_CONFIGS[name]
        if cdef.internal and name not in overrides:
            continue
        value = (
            None
            if cdef.sensitive
            else overrides[name]
            if cdef.internal
            else cdef.render(config.get(name))
        )
        synonyms = list(services.config.topic_synonyms(name))
        if name in overrides:
            synonyms.insert(0, ConfigSynonym(name, value, DYNAMIC_TOPIC_CONFIG))
        source = synonyms[0].source if synonyms else DEFAULT_CONFIG
        rows.append(
            ConfigEntry(
                name=name,
                value=value,
                source=source,
                read_only=False,
                sensitive=cdef.sensitive,
                synonyms=tuple(synonyms),
                type=cdef.type,
                doc=cdef.doc,
            )
        )
    return rows


def topic_rows(
    services: Services, info: TopicInfo, names: Iterable[str] | None = None
) -> list[ConfigEntry]:
    return topic_config_rows(services, info.overrides, info.config, names)


class AdminError(Exception):
    """A resource-level failure with Kafka's code and message."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def check_broker_resource(services: Services, name: str | None, *, allow_default: bool) -> bool:
    """Validate a BROKER resource name the way ConfigAdminManager does. Returns True for the
    cluster-wide default resource (empty name), False for this broker."""
    if not name:
        if allow_default:
            return True
        raise AdminError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    try:
        node = int(name)
    except ValueError:
        raise AdminError(
            ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}"
        ) from None
    if node != services.node_id:
        raise AdminError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {services.node_id}, but received {name}",
        )
    return False


def is_list_key(resource_type: int, name: str) -> bool:
    from wireserver.groups.configs import GROUP_CONFIGS

    defs = {RESOURCE_TOPIC: TOPIC_CONFIGS, RESOURCE_GROUP: GROUP_CONFIGS}.get(
        resource_type, BROKER_CONFIGS
    )
    cdef = defs.get(name)
    return cdef is not None and cdef.type == "list"


# -- applying configuration changes ---------------------------------------------------------


def check_topic_overrides(services: Services, overrides: Mapping[str, str]) -> None:
    """Raise AdminError(INVALID_CONFIG) unless every key is a topic key with a valid value."""
    from wireserver.storage.configdef import ConfigValueError
    from wireserver.storage.log_config import LogConfig

    for name in overrides:
        if name not in TOPIC_CONFIGS:
            raise AdminError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
    try:
        LogConfig.from_values(services.logs.broker_defaults, overrides)
    except ConfigValueError as exc:
        raise AdminError(ErrorCode.INVALID_CONFIG, str(exc)) from None


def current_topic_overrides(services: Services, topic: str) -> dict[str, str]:
    """The overrides an incremental change starts from (``LocalMetadata.topic_overrides``)."""
    if topic not in services.logs.topics:
        raise AdminError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist."
        )
    return services.metadata.topic_overrides(topic)


def set_topic_overrides(
    services: Services, topic: str, overrides: Mapping[str, str], validate_only: bool
) -> None:
    """Replace a topic's whole override set (checked first); the logs see it at once
    (``LocalMetadata.set_topic_overrides``)."""
    if topic not in services.logs.topics:
        raise AdminError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist."
        )
    check_topic_overrides(services, overrides)
    if validate_only:
        return
    services.metadata.set_topic_overrides(topic, overrides)


def current_broker_dynamic(services: Services, cluster_default: bool) -> dict[str, str]:
    """The dynamic layer an incremental change starts from: in cluster mode what ZooKeeper
    holds (another broker may have changed the default a moment ago), else this broker's."""
    return services.dynamic_configs.current(cluster_default)


def set_broker_dynamic(
    services: Services, cluster_default: bool, props: Mapping[str, str], validate_only: bool
) -> None:
    """Make ``props`` the broker's (or the cluster default's) whole dynamic layer.

    The keys it changes are checked as Kafka's ``DynamicBrokerConfig.validateConfigs``
    (``wireserver.dynamic_configs.check``): unknown keys fail with INVALID_CONFIG (Kafka keeps
    them as custom configs; we have nowhere to use them); keys that cannot change at runtime,
    the TLS store keys (only per listener), bad values and per-broker keys set as the cluster
    default with INVALID_REQUEST, as ``ConfigAdminManager`` answers (KAFKA-13609). The layer is
    stored (the data dir's file, or ZooKeeper with a change notification) and in force at
    once; changed topic defaults reach every log that does not override them.
    """
    from wireserver.dynamic_configs import InvalidDynamicConfig, check

    current = current_broker_dynamic(services, cluster_default)
    changed = {name: value for name, value in props.items() if current.get(name) != value}
    try:
        check(services.config, cluster_default, changed)
    except InvalidDynamicConfig as exc:
        code = ErrorCode.INVALID_CONFIG if exc.unknown else ErrorCode.INVALID_REQUEST
        raise AdminError(code, str(exc)) from None
    fresh_tls = {} if cluster_default else check_listener_stores(services, changed, props)
    if validate_only:
        return
    services.security.install_tls(fresh_tls)
    if not cluster_default:
        reload_listener_stores(services, props)
    services.dynamic_configs.set(cluster_default, props)


def check_listener_stores(
    services: Services, changed: Mapping[str, str], props: Mapping[str, str]
) -> dict[str, Any]:
    """The new TLS contexts of the listeners whose store keys a per-broker change to
    ``props`` changes, each checked as Kafka's ``SslFactory`` checks an update. A store
    refused fails the whole change with INVALID_REQUEST "Invalid dynamic configuration", all
    a Kafka client is told (KAFKA-13609); the reason goes to the log, as Kafka logs it.

    Password-type keys cannot be set in cluster mode: Kafka's ZooKeeper-era brokers refused
    them without ``password.encoder.secret``, which Kafka 4.x no longer has (it keeps them
    in its metadata log, in clear, as the one-node file does)."""
    from wireserver.dynamic_configs import ProposedSettings, is_password
    from wireserver.security.tls import TlsReconfigError

    if services.dynamic_configs.shared is not None and any(is_password(n) for n in changed):
        raise AdminError(ErrorCode.INVALID_REQUEST, "Password encoder secret not configured")
    try:
        return services.security.prepare_tls(ProposedSettings(services.config, props))
    except TlsReconfigError as exc:
        log.error("Invalid dynamic configuration: %s", exc)
        raise AdminError(ErrorCode.INVALID_REQUEST, "Invalid dynamic configuration") from None


def reload_listener_stores(services: Services, props: Mapping[str, str]) -> None:
    """Read again the store files of the listeners a per-broker change leaves alone, as
    Kafka does on every per-broker change (KAFKA-14136: the same ``ssl.keystore.location``
    set again reloads a file replaced in place). A store that fails its checks is logged
    and the listener keeps the one it has; the change itself goes ahead, as in Kafka."""
    from wireserver.dynamic_configs import ProposedSettings
    from wireserver.security.tls import TlsReconfigError

    settings = ProposedSettings(services.config, props)
    try:
        services.security.install_tls(services.security.prepare_tls(settings, reload=True))
    except TlsReconfigError as exc:
        log.error("Reloading the listeners' TLS stores failed: %s", exc)


# -- GROUP: group configs (wireserver.groups.configs) ----------------------------------------


def check_group_resource(name: str | None, *, describing: bool) -> None:
    """An empty group name is refused, with Kafka's message for each API."""
    if not name:
        raise AdminError(
            ErrorCode.INVALID_REQUEST,
            "Group name must not be empty"
            if describing
            else "Default group resources are not allowed.",
        )


def group_config_rows(
    services: Services, group: str, names: Iterable[str] | None = None
) -> list[ConfigEntry]:
    """Kafka's ``ConfigHelper.createGroupConfigEntry`` for every group key (internal ones only
    where the group sets them) or for ``names`` (unknown ones are skipped): the group's value
    (GROUP_CONFIG) or the default (DEFAULT_CONFIG), never read-only. Synonyms as Kafka 4.4
    lists them: the group's own value where it sets one, then the default under the broker
    key it comes from (``group.consumer.session.timeout.ms`` ...) or under the group key."""
    from wireserver.groups.configs import GROUP_CONFIGS, default_value

    store = services.group_configs
    overrides = store.overrides(group)
    if names is None:
        wanted = [n for n, d in GROUP_CONFIGS.items() if not d.internal or n in overrides]
    else:
        wanted = [n for n in names if n in GROUP_CONFIGS]
    rows = []
    for name in wanted:
        cdef = GROUP_CONFIGS[name]
        value = cdef.render(store.value(group, name))
        default = ConfigSynonym(
            cdef.broker_synonym or name,
            cdef.render(default_value(store.broker_config, name)),
            DEFAULT_CONFIG,
        )
        if name in overrides:
            source = GROUP_CONFIG
            synonyms: tuple[ConfigSynonym, ...] = (ConfigSynonym(name, value, source), default)
        else:
            source = DEFAULT_CONFIG
            synonyms = (default,)
        rows.append(
            ConfigEntry(
                name=name,
                value=value,
                source=source,
                read_only=False,
                sensitive=False,
                synonyms=synonyms,
                type=cdef.type,
                doc=cdef.doc,
            )
        )
    return rows


def current_group_configs(services: Services, group: str) -> dict[str, str]:
    """The configs an incremental change starts from: in cluster mode what ZooKeeper holds
    (this broker may not have applied the latest change yet), else this broker's."""
    store = services.group_configs
    return store.shared.read(group) if store.shared is not None else store.overrides(group)


def set_group_configs(
    services: Services, group: str, overrides: Mapping[str, str], validate_only: bool
) -> None:
    """Replace a group's whole config set, checked as Kafka checks it (INVALID_CONFIG); the
    group's coordinator uses it from its next heartbeat. Kept across restarts, in ZooKeeper
    in cluster mode."""
    from wireserver.groups.configs import GroupConfigError, validate

    try:
        validate(services.config, overrides)
    except GroupConfigError as exc:
        raise AdminError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if not validate_only:
        services.group_configs.set(group, overrides)


# -- BROKER_LOGGER: Python loggers under log4j's names and levels ---------------------------

ROOT_LOGGER = "root"
LOG4J_LEVELS = {
    "OFF": 100,
    "FATAL": 50,
    "ERROR": 40,
    "WARN": 30,
    "INFO": 20,
    "DEBUG": 10,
    "TRACE": 5,
}
_PACKAGES = ("wireserver", "storage", "protocol")


def _python_logger(name: str):
    import logging

    if name == ROOT_LOGGER:
        return logging.getLogger()
    known = logging.Logger.manager.loggerDict.get(name)
    return known if isinstance(known, logging.Logger) else None


def logger_levels() -> dict[str, str]:
    """Our loggers (and root) with their effective levels, named as log4j names them."""
    import logging

    names = [ROOT_LOGGER] + sorted(
        name
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and name.split(".")[0] in _PACKAGES
    )
    by_number = {number: name for name, number in LOG4J_LEVELS.items()}
    levels = {}
    for name in names:
        level = _python_logger(name).getEffectiveLevel()
        levels[name] = by_number.get(level) or logging.getLevelName(level)
    return levels


def alter_logger(name: str, level: str | None, validate_only: bool) -> None:
    """SET (level) or DELETE (None) one logger's level, with Kafka's checks."""
    import logging

    logger = _python_logger(name)
    if logger is None:
        raise AdminError(ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
    if level is None:
        if name == ROOT_LOGGER:
            raise AdminError(
                ErrorCode.INVALID_REQUEST,
                f"Removing the log level of the {ROOT_LOGGER} logger is not allowed",
            )
    elif level not in LOG4J_LEVELS:
        raise AdminError(
            ErrorCode.INVALID_CONFIG,
            f"Cannot set the log level of {name} to {level} as it is not a "
            f"supported log level. Valid log levels are "
            f"{', '.join(LOG4J_LEVELS)}",
        )
    if not validate_only:
        logger.setLevel(logging.NOTSET if level is None else LOG4J_LEVELS[level])
