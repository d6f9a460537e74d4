"""Group configs: the GROUP config resource (type 32) of DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs, as Kafka 4.4's ``GroupConfig``.

Keys (``GROUP_CONFIGS``): Kafka 4.4's consumer-, share- and streams-group keys. The consumer
and streams coordinators use a group's session timeout and heartbeat interval (the streams one
its ``streams.num.standby.replicas`` too), share groups their ``share.*`` and
``errors.deadletterqueue.*`` keys; the assignment interval and lock renewal keys are kept and
described only. A
key a group does not set takes its value from its broker synonym
(``group.consumer.session.timeout.ms`` for ``consumer.session.timeout.ms``, ...; Kafka's
``brokerSynonym``) or, for the others, Kafka's fixed default. Internal keys (``*.assignor.offload.enable`` ...) are accepted, not described.

A new set of overrides is checked as Kafka 4.4's ``GroupConfig.validate`` does (``validate``
below); every failure is INVALID_CONFIG with Kafka's message.

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

_ISO_DURATION = re.compile(
    r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE
)


def reset_duration_ms(value: str) -> int | None:
    """The duration of a ``by_duration:<ISO-8601>`` ``share.auto.offset.reset``, in ms; None
    for earliest and latest."""
    prefix = "by_duration:"
    if not value.lower().startswith(prefix):
        return None
    found = _ISO_DURATION.fullmatch(value[len(prefix) :].strip())
    if found is None:
        return None
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in found.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


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


def _g(
    name: str,
    type_: str,
    default: Any,
    doc: str,
    validator=None,
    *,
    broker: str | None = None,
    internal: bool = False,
) -> ConfigDef:
    """A group key; ``broker`` names the broker key its default comes from (Kafka's
    ``GroupConfig.brokerSynonym``), which DescribeConfigs reports as its synonym."""
    return ConfigDef(
        name=name,
        type=type_,
        default=default,
        doc=doc,
        validator=validator,
        broker_synonym=broker,
        read_only=False,
        internal=internal,
    )


NOT_SERVED = " (kept and described; not acted on)"

GROUP_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        _g(
            "consumer.session.timeout.ms",
            "int",
            45000,
            "A consumer-protocol member that sends no heartbeat for this long leaves the group.",
            at_least(1),
            broker="group.consumer.session.timeout.ms",
        ),
        _g(
            "consumer.heartbeat.interval.ms",
            "int",
            5000,
            "The heartbeat interval given to the group's consumer-protocol members.",
            at_least(1),
            broker="group.consumer.heartbeat.interval.ms",
        ),
        _g(
            "consumer.assignment.interval.ms",
            "int",
            1000,
            "The interval between assignment updates for a consumer group (kept and described; "
            "wireserver assigns at once).",
            at_least(0),
            broker="group.consumer.assignment.interval.ms",
        ),
        _g(
            "consumer.assignor.offload.enable",
            "boolean",
            True,
            "Whether Kafka computes the group's assignment on a background thread.",
            broker="group.consumer.assignor.offload.enable",
            internal=True,
        ),
        _g(
            "errors.deadletterqueue.copy.record.enable",
            "boolean",
            False,
            "Whether a share group's dead-letter records carry the original record's key and "
            "value (else its context headers only).",
        ),
        _g(
            "errors.deadletterqueue.topic.name",
            "string",
            "",
            "The dead-letter queue topic of a share group (wireserver.share.dlq); blank: none.",
        ),
        _g(
            "share.session.timeout.ms",
            "int",
            45000,
            "A share-group member that sends no heartbeat for this long leaves the group.",
            at_least(1),
            broker="group.share.session.timeout.ms",
        ),
        _g(
            "share.heartbeat.interval.ms",
            "int",
            5000,
            "The heartbeat interval given to the group's share-group members.",
            at_least(1),
            broker="group.share.heartbeat.interval.ms",
        ),
        _g(
            "share.record.lock.duration.ms",
            "int",
            30000,
            "How long a share-group member holds an acquired record before it is delivered again.",
            at_least(1000),
            broker="group.share.record.lock.duration.ms",
        ),
        _g(
            "share.delivery.count.limit",
            "int",
            5,
            "The most delivery attempts of a record to a share group; then it is archived.",
            at_least(2),
            broker="group.share.delivery.count.limit",
        ),
        _g(
            "share.partition.max.record.locks",
            "int",
            2000,
            "Records of a partition a share group may have in flight (acquired or awaiting "
            "delivery) at once.",
            at_least(100),
            broker="group.share.partition.max.record.locks",
        ),
        _g(
            "share.assignment.interval.ms",
            "int",
            1000,
            "The interval between assignment updates for a share group (kept and described; "
            "wireserver assigns at once).",
            at_least(0),
            broker="group.share.assignment.interval.ms",
        ),
        _g(
            "share.assignor.offload.enable",
            "boolean",
            True,
            "Whether Kafka computes a share group's assignment on a background thread.",
            broker="group.share.assignor.offload.enable",
            internal=True,
        ),
        _g(
            "share.auto.offset.reset",
            "string",
            "latest",
            "Where a share group starts reading a partition: earliest, latest or "
            "by_duration:PnDTnHnMn.nS (an ISO-8601 duration before the moment it starts).",
            _check_auto_offset_reset,
        ),
        _g(
            "share.isolation.level",
            "string",
            "read_uncommitted",
            "Whether a share group delivers only committed transactional records.",
            one_of("read_committed", "read_uncommitted"),
        ),
        _g(
            "share.renew.acknowledge.enable",
            "boolean",
            True,
            "Whether share consumers of the group may renew acquisition locks (a RENEW "
            "acknowledgement, KIP-1222; refused INVALID_RECORD_STATE when false).",
        ),
        _g(
            "streams.session.timeout.ms",
            "int",
            45000,
            "Session timeout of streams-group members.",
            at_least(1),
            broker="group.streams.session.timeout.ms",
        ),
        _g(
            "streams.heartbeat.interval.ms",
            "int",
            5000,
            "Heartbeat interval of streams-group members.",
            at_least(1),
            broker="group.streams.heartbeat.interval.ms",
        ),
        _g(
            "streams.num.standby.replicas",
            "int",
            0,
            "Standby replicas of each task of a streams group.",
            at_least(0),
            broker="group.streams.num.standby.replicas",
        ),
        _g(
            "streams.initial.rebalance.delay.ms",
            "int",
            3000,
            "How long a new streams group waits for more members before its first assignment.",
            at_least(0),
            broker="group.streams.initial.rebalance.delay.ms",
        ),
        _g(
            "streams.assignment.interval.ms",
            "int",
            1000,
            "The interval between assignment updates for a streams group.",
            at_least(0),
            broker="group.streams.assignment.interval.ms",
        ),
        _g(
            "streams.assignor.name",
            "string",
            None,
            "The streams group's task assignor, one of group.streams.assignors (unset: the "
            "first of them).",
            broker="group.streams.assignors",
        ),
        _g(
            "streams.rack.aware.assignment.tags",
            "list",
            [],
            "Client tag keys used to spread standby tasks.",
            broker="group.streams.rack.aware.assignment.tags",
        ),
        _g(
            "streams.assignor.offload.enable",
            "boolean",
            True,
            "Whether Kafka computes a streams group's assignment on a background thread.",
            broker="group.streams.assignor.offload.enable",
            internal=True,
        ),
        _g(
            "streams.acceptable.recovery.lag",
            "long",
            10000,
            "The lag under which a member counts as caught up for an active task.",
            at_least(0),
            broker="group.streams.acceptable.recovery.lag",
            internal=True,
        ),
        _g(
            "streams.num.warmup.replicas",
            "int",
            2,
            "The most warm-up task replicas.",
            at_least(0),
            broker="group.streams.num.warmup.replicas",
            internal=True,
        ),
        _g(
            "streams.task.offset.interval.ms",
            "int",
            60000,
            "How often members report warm-up task changelog offsets.",
            at_least(1),
            broker="group.streams.task.offset.interval.ms",
            internal=True,
        ),
    )
}

#: group key -> the broker key its default comes from (Kafka's ``brokerSynonym``)
BROKER_DEFAULTS = {
    name: cdef.broker_synonym for name, cdef in GROUP_CONFIGS.items() if cdef.broker_synonym
}

#: (group key, broker key of its minimum or None, broker key of its maximum or None), in the
#: order Kafka 4.4's ``GroupConfig.validateValues`` checks the keys a change sets
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
        "consumer.assignment.interval.ms",
        "group.consumer.min.assignment.interval.ms",
        "group.consumer.max.assignment.interval.ms",
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
        "share.delivery.count.limit",
        "group.share.min.delivery.count.limit",
        "group.share.max.delivery.count.limit",
    ),
    (
        "share.partition.max.record.locks",
        "group.share.min.partition.max.record.locks",
        "group.share.max.partition.max.record.locks",
    ),
    (
        "share.assignment.interval.ms",
        "group.share.min.assignment.interval.ms",
        "group.share.max.assignment.interval.ms",
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
    (
        "streams.assignment.interval.ms",
        "group.streams.min.assignment.interval.ms",
        "group.streams.max.assignment.interval.ms",
    ),
    ("streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms", None),
    ("streams.num.warmup.replicas", None, "group.streams.max.warmup.replicas"),
)
_SESSION_OVER_HEARTBEAT = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)


class GroupConfigError(ValueError):
    """A group config Kafka would refuse (INVALID_CONFIG); the message is Kafka's."""


def default_value(broker_config: Any, name: str) -> Any:
    """A key's value for a group that does not set it: its broker synonym's value (the first
    registered assignor for ``streams.assignor.name``), else Kafka's fixed default."""
    synonym = BROKER_DEFAULTS.get(name)
    if synonym is None:
        return GROUP_CONFIGS[name].default
    value = broker_config[synonym]
    if GROUP_CONFIGS[name].type != "list" and isinstance(value, list):
        return value[0] if value else None
    return value


def validate(broker_config: Any, overrides: Mapping[str, str]) -> None:
    """Raise ``GroupConfigError`` unless ``overrides`` is a valid whole set for a group.

    As Kafka 4.4's ``GroupConfig.validate``: names, then each value's type and range, then the
    bounds the broker sets for the keys the group sets, session timeouts above heartbeat
    intervals (a key the group leaves unset counts with the broker's value), the streams
    assignor among the registered ones, and no internal-looking dead-letter topic."""
    for name in overrides:
        if name not in GROUP_CONFIGS:
            raise GroupConfigError(f"Unknown group config name: {name}")
    try:
        values = {name: GROUP_CONFIGS[name].parse(raw) for name, raw in overrides.items()}
    except ConfigValueError as exc:
        raise GroupConfigError(str(exc)) from None
    for name, minimum, maximum in _BOUNDS:
        if name not in values:
            continue
        low = broker_config[minimum] if minimum else None
        high = broker_config[maximum] if maximum else None
        if low is not None and high is not None:
            if not low <= values[name] <= high:
                raise GroupConfigError(f"{name} must be in the range {low} to {high} inclusive.")
        elif high is not None and values[name] > high:
            raise GroupConfigError(f"{name} must be less than or equal to {high}")
        elif low is not None and values[name] < low:
            raise GroupConfigError(f"{name} must be greater than or equal to {low}")
    assignor = values.get("streams.assignor.name")
    registered = broker_config["group.streams.assignors"]
    if assignor is not None and assignor not in registered:
        raise GroupConfigError(
            f"streams.assignor.name '{assignor}' is not a registered task assignor. "
            f"Registered assignors are: [{', '.join(registered)}]."
        )
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if session in values or heartbeat in values:
            session_ms = values.get(session, default_value(broker_config, session))
            heartbeat_ms = values.get(heartbeat, default_value(broker_config, heartbeat))
            if session_ms <= heartbeat_ms:
                raise GroupConfigError(f"{session} must be greater than {heartbeat}")
    if str(values.get("errors.deadletterqueue.topic.name", "")).startswith("__"):
        raise GroupConfigError(
            "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
        )


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
        """The groups that have configs."""
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
        # A group whose configs all went is forgotten: Kafka 4.4's ListConfigResources no
        # longer lists it (kafka-configs then says it "doesn't exist").
        if overrides:
            self._groups[group] = dict(overrides)
        else:
            self._groups.pop(group, None)

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
