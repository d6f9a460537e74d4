"""Group configs: the GROUP config resource (type 32) of DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs, as Kafka 4.1's ``GroupConfig``.

Keys (``GROUP_CONFIGS``): ``consumer.session.timeout.ms`` and
``consumer.heartbeat.interval.ms`` (used by the consumer-protocol coordinator for that group),
the share-group keys ``share.session.timeout.ms``, ``share.heartbeat.interval.ms``,
``share.record.lock.duration.ms``, ``share.auto.offset.reset``, ``share.isolation.level`` and
the streams-group keys ``streams.session.timeout.ms``, ``streams.heartbeat.interval.ms``,
``streams.num.standby.replicas`` (used by the Streams group coordinator; the share keys are
kept and described, share groups are not served). A key a group does not set takes its default from the broker
(``group.consumer.session.timeout.ms`` for ``consumer.session.timeout.ms``, ...; Kafka's
``extractGroupConfigMap``) or, for the others, Kafka's fixed default.

A new set of overrides is checked as Kafka's ``GroupConfigManager.validate`` does: unknown key,
type and range of each value, then the bounds the broker sets (``group.consumer.min.session.
timeout.ms`` ...) and session timeouts above heartbeat intervals; every failure is
INVALID_CONFIG with Kafka's message.

Where they live (``GroupConfigs``): on one node in ``wireserver-group-configs.json`` in the
first log dir (rewritten on every change); in cluster mode in ZooKeeper, ``/config/groups/
<sanitized group>`` with a change notification, as topic configs are
(``wireserver.cluster.group_configs``). They outlive the group, as in Kafka: DeleteGroups
leaves them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from wireserver.storage import checkpoint as ckpt
from wireserver.storage.configdef import ConfigDef, ConfigValueError, at_least, one_of

FILE_NAME = "wireserver-group-configs.json"

_ISO_DURATION = re.compile(r"P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?", re.IGNORECASE)


def _check_auto_offset_reset(value: str) -> None:
    """Kafka's ``ShareGroupAutoOffsetResetStrategy``: earliest, latest or
    ``by_duration:<ISO-8601 duration>`` (not negative)."""
    lowered = value.lower()
    if lowered in ("earliest", "latest"):
        return
    prefix = "by_duration:"
    if lowered.startswith(prefix):
        duration = value[len(prefix) :].strip()
        if (
            duration not in ("P", "PT")
            and _ISO_DURATION.fullmatch(duration)
            and not duration.upper().endswith("T")
        ):
            return
    raise ValueError(
        f"Invalid value `{value}` for configuration share.auto.offset.reset. The "
        "value must be either 'earliest', 'latest' or of the format "
        "'by_duration:<PnDTnHnMn.nS>'."
    )


def _g(name: str, type_: str, default: Any, doc: str, validator=None) -> ConfigDef:
    return ConfigDef(
        name=name, type=type_, default=default, doc=doc, validator=validator, read_only=False
    )


GROUP_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        _g(
            "consumer.session.timeout.ms",
            "int",
            45000,
            "A consumer-protocol member that sends no heartbeat for this long leaves the group.",
            at_least(1),
        ),
        _g(
            "consumer.heartbeat.interval.ms",
            "int",
            5000,
            "The heartbeat interval given to the group's consumer-protocol members.",
            at_least(1),
        ),
        _g(
            "share.session.timeout.ms",
            "int",
            45000,
            "Session timeout of share-group members (share groups are not served).",
            at_least(1),
        ),
        _g(
            "share.heartbeat.interval.ms",
            "int",
            5000,
            "Heartbeat interval of share-group members (share groups are not served).",
            at_least(1),
        ),
        _g(
            "share.record.lock.duration.ms",
            "int",
            30000,
            "How long a share-group member holds an acquired record (share groups are not served).",
            at_least(1000),
        ),
        _g(
            "share.auto.offset.reset",
            "string",
            "latest",
            "Where a share group starts reading a partition: earliest, latest or "
            "by_duration:PnDTnHnMn.nS (an ISO-8601 duration; share groups are not served).",
            _check_auto_offset_reset,
        ),
        _g(
            "share.isolation.level",
            "string",
            "read_uncommitted",
            "Whether a share group delivers only committed transactional records "
            "(share groups are not served).",
            one_of("read_committed", "read_uncommitted"),
        ),
        _g(
            "streams.session.timeout.ms",
            "int",
            45000,
            "Session timeout of streams-group members.",
            at_least(1),
        ),
        _g(
            "streams.heartbeat.interval.ms",
            "int",
            5000,
            "Heartbeat interval of streams-group members.",
            at_least(1),
        ),
        _g(
            "streams.num.standby.replicas",
            "int",
            0,
            "Standby replicas of each task of a streams group.",
            at_least(0),
        ),
    )
}

#: group key -> the broker key its default comes from (Kafka's ``extractGroupConfigMap``)
BROKER_DEFAULTS = {
    "consumer.session.timeout.ms": "group.consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
    "share.session.timeout.ms": "group.share.session.timeout.ms",
    "share.heartbeat.interval.ms": "group.share.heartbeat.interval.ms",
    "share.record.lock.duration.ms": "group.share.record.lock.duration.ms",
    "streams.session.timeout.ms": "group.streams.session.timeout.ms",
    "streams.heartbeat.interval.ms": "group.streams.heartbeat.interval.ms",
    "streams.num.standby.replicas": "group.streams.num.standby.replicas",
}

#: (group key, broker key of its minimum or None, broker key of its maximum), in the order
#: Kafka's ``GroupConfig.validateValues`` checks them
_BOUNDS = (
    (
        "consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    (
        "consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
    ),
    (
        "share.heartbeat.interval.ms",
        "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
    ),
    (
        "share.session.timeout.ms",
        "group.share.min.session.timeout.ms",
        "group.share.max.session.timeout.ms",
    ),
    (
        "share.record.lock.duration.ms",
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
    (
        "streams.heartbeat.interval.ms",
        "group.streams.min.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
    ),
    (
        "streams.session.timeout.ms",
        "group.streams.min.session.timeout.ms",
        "group.streams.max.session.timeout.ms",
    ),
    ("streams.num.standby.replicas", None, "group.streams.max.standby.replicas"),
)
_SESSION_OVER_HEARTBEAT = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)


class GroupConfigError(ValueError):
    """A group config Kafka would refuse (INVALID_CONFIG); the message is Kafka's."""


def default_value(broker_config: Any, name: str) -> Any:
    """A key's value for a group that does not set it."""
    synonym = BROKER_DEFAULTS.get(name)
    return broker_config[synonym] if synonym else GROUP_CONFIGS[name].default


def validate(broker_config: Any, overrides: Mapping[str, str]) -> None:
    """Raise ``GroupConfigError`` unless ``overrides`` is a valid whole set for a group.

    As Kafka: the consumer keys a group does not set count with the broker's values, the
    others with GroupConfig's own defaults."""
    for name in overrides:
        if name not in GROUP_CONFIGS:
            raise GroupConfigError(f"Unknown group config name: {name}")
    values = {name: cdef.default for name, cdef in GROUP_CONFIGS.items()}
    values.update(
        {
            name: broker_config[BROKER_DEFAULTS[name]]
            for name in ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms")
        }
    )
    try:
        values.update({name: GROUP_CONFIGS[name].parse(raw) for name, raw in overrides.items()})
    except ConfigValueError as exc:
        raise GroupConfigError(str(exc)) from None
    for name, minimum, maximum in _BOUNDS:
        if minimum is not None and values[name] < broker_config[minimum]:
            raise GroupConfigError(f"{name} must be greater than or equal to {minimum}")
        if values[name] > broker_config[maximum]:
            raise GroupConfigError(f"{name} must be less than or equal to {maximum}")
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if values[session] <= values[heartbeat]:
            raise GroupConfigError(f"{session} must be greater than {heartbeat}")


class GroupConfigs:
    """group id -> the keys set for it (strings, as AlterConfigs gave them).

    Single node: those of ``<directory>/wireserver-group-configs.json``. Cluster mode
    (``use_shared``): the cluster's, kept in ZooKeeper by the shared store (``load()`` gives
    them all, ``write(group, overrides)`` stores one group's and tells every broker), which
    calls ``replace`` on every broker when one changes."""

    def __init__(self, broker_config: Any, directory: str | None):
        self.broker_config = broker_config
        self.path = os.path.join(directory, FILE_NAME) if directory else None
        self.shared: Any = None
        self._groups: dict[str, dict[str, str]] = {}
        if self.path and os.path.exists(self.path):
            data = ckpt.read_json(self.path)
            self._groups = {
                group: {k: str(v) for k, v in overrides.items()}
                for group, overrides in data.get("groups", {}).items()
            }

    def use_shared(self, shared: Any) -> None:
        self.shared = shared
        self._groups = shared.load()

    def overrides(self, group: str) -> dict[str, str]:
        return dict(self._groups.get(group, {}))

    def groups(self) -> list[str]:
        """The groups that have (or since the start had) configs."""
        return sorted(self._groups)

    def value(self, group: str, name: str) -> Any:
        """The typed value of ``name`` for ``group``: its own, else the default."""
        raw = self._groups.get(group, {}).get(name)
        if raw is not None:
            try:
                return GROUP_CONFIGS[name].parse(raw)
            except ConfigValueError:
                pass  # written by another tool: fall back to the default
        return default_value(self.broker_config, name)

    def set(self, group: str, overrides: Mapping[str, str]) -> None:
        """Make ``overrides`` the group's whole set (checked by the caller)."""
        overrides = {k: str(v) for k, v in overrides.items()}
        if self.shared is not None:
            self.shared.write(group, overrides)
        self.replace(group, overrides)
        if self.shared is None:
            self._save()

    def replace(self, group: str, overrides: Mapping[str, str]) -> None:
        # A group whose configs all went stays known (ListConfigResources lists it) until the
        # broker restarts, as in Kafka's GroupConfigManager.
        self._groups[group] = dict(overrides)

    def _save(self) -> None:
        if self.path is None:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        ckpt.write_json(
            self.path,
            {
                "version": 1,
                "groups": {
                    group: overrides for group, overrides in self._groups.items() if overrides
                },
            },
        )
