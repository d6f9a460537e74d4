"""IncrementalAlterConfigs (key 44), v0-1.

Operations per key: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) — the last two for list
keys only, starting from the current value or, when unset, the key's default.

- TOPIC: applied to the topic's overrides as Kafka's controller does (APPEND adds values not
  already present, SUBTRACT removes them; on a non-list key → INVALID_CONFIG "Can't APPEND to
  key ..."); unknown keys or bad values → INVALID_CONFIG; unknown topic →
  UNKNOWN_TOPIC_OR_PARTITION. The logs use the new config at once. In cluster mode the
  overrides start from ``/config/topics/<t>`` and go back there with a change notification
  that every broker applies (``wireserver.admin.set_topic_overrides``).
- BROKER (our node id, or "" for the cluster default): applied to the dynamic layer (in
  cluster mode the one ZooKeeper holds) as Kafka's
  ``ConfigAdminManager.prepareIncrementalConfigs`` does (APPEND/SUBTRACT on a non-list key →
  INVALID_REQUEST); then as AlterConfigs (``wireserver.admin.set_broker_dynamic``): keys that
  need a restart, TLS store keys without a listener prefix, bad values and per-broker keys set
  as the cluster default → INVALID_REQUEST; unknown keys → INVALID_CONFIG. Topic-default keys
  reach every topic at once; DELETE removes the key from where the layer is kept too.
- GROUP: applied to the group's configs (in cluster mode those ZooKeeper holds) and checked as
  Kafka's ``GroupConfigManager.validate``: unknown key, bad value, outside the broker's
  ``group.consumer.min/max.*`` bounds, APPEND/SUBTRACT (no group key is a list) →
  INVALID_CONFIG; an empty name → INVALID_REQUEST. The consumer-protocol coordinator uses
  the group's session timeout and heartbeat interval from its next heartbeat.
- BROKER_LOGGER (our node id): SET a level (OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE) or
  DELETE it on one of our Python loggers; unknown logger → INVALID_CONFIG, root DELETE or
  APPEND/SUBTRACT → INVALID_REQUEST.

A resource named twice → INVALID_REQUEST for both; a key twice, a null value for anything but
DELETE, or an unknown operation → INVALID_REQUEST. ``validate_only`` changes nothing.

Authorization after the duplicate checks: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED),
the group (GROUP_AUTHORIZATION_FAILED) or the cluster for BROKER and BROKER_LOGGER resources
(CLUSTER_AUTHORIZATION_FAILED).
Skipped: AlterConfigPolicy.
"""

from __future__ import annotations

from wireserver.admin import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    AdminError,
    alter_logger,
    check_broker_resource,
    check_group_resource,
    current_broker_dynamic,
    current_group_configs,
    current_topic_overrides,
    is_list_key,
    set_broker_dynamic,
    set_group_configs,
    set_topic_overrides,
    unsupported_resource,
)
from wireserver.apis import HandlerResult, handles
from wireserver.apis.alter_configs import check_entries, duplicate_resources
from wireserver.config import BROKER_CONFIGS
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.storage.log_config import TOPIC_CONFIGS

API_KEY = 44
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _default_list(defs, name: str) -> str:
    cdef = defs[name]
    return cdef.render(cdef.default) or ""


def topic_ops(services, topic: str, configs, validate_only: bool) -> None:
    props = current_topic_overrides(services, topic)
    for config in configs:
        name, op = config.name, config.config_operation
        if op == SET:
            props[name] = config.value
        elif op == DELETE:
            props.pop(name, None)
        else:
            if not is_list_key(RESOURCE_TOPIC, name):
                if name not in TOPIC_CONFIGS:
                    raise AdminError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
                raise AdminError(
                    ErrorCode.INVALID_CONFIG,
                    f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.",
                )
            values = _split(props.get(name, _default_list(TOPIC_CONFIGS, name)))
            for part in _split(config.value):
                if op == APPEND and part not in values:
                    values.append(part)
                elif op == SUBTRACT and part in values:
                    values.remove(part)
            props[name] = ",".join(values)
    set_topic_overrides(services, topic, props, validate_only)


def group_ops(services, group: str, configs, validate_only: bool) -> None:
    check_group_resource(group, describing=False)
    props = current_group_configs(services, group)
    for config in configs:
        name, op = config.name, config.config_operation
        if op == SET:
            props[name] = config.value
        elif op == DELETE:
            props.pop(name, None)
        else:  # no group key is a list (Kafka: the key's type decides, unknown keys too)
            raise AdminError(
                ErrorCode.INVALID_CONFIG,
                f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.",
            )
    set_group_configs(services, group, props, validate_only)


def broker_ops(services, cluster_default: bool, configs, validate_only: bool) -> None:
    props = current_broker_dynamic(services, cluster_default)
    for config in configs:
        name, op = config.name, config.config_operation
        if op == SET:
            props[name] = config.value
        elif op == DELETE:
            props.pop(name, None)
        else:
            if name not in BROKER_CONFIGS:
                raise AdminError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
            if not is_list_key(RESOURCE_BROKER, name):
                raise AdminError(
                    ErrorCode.INVALID_REQUEST,
                    f"Config value {OP_NAMES[op].lower()} is not allowed for config key: {name}",
                )
            values = _split(props.get(name, _default_list(BROKER_CONFIGS, name)))
            change = _split(config.value)
            values = values + change if op == APPEND else [v for v in values if v not in change]
            props[name] = ",".join(values)
    set_broker_dynamic(services, cluster_default, props, validate_only)


def logger_ops(services, name: str, configs, validate_only: bool) -> None:
    check_broker_resource(services, name, allow_default=False)
    for config in configs:
        if config.config_operation in (APPEND, SUBTRACT):
            raise AdminError(
                ErrorCode.INVALID_REQUEST,
                f"{OP_NAMES[config.config_operation]} operation is not allowed "
                "for the BROKER_LOGGER resource",
            )
    for config in configs:  # check everything before changing anything
        alter_logger(
            config.name,
            config.value if config.config_operation == SET else None,
            validate_only=True,
        )
    if not validate_only:
        for config in configs:
            alter_logger(
                config.name, config.value if config.config_operation == SET else None, False
            )


def alter(services, resource, validate_only: bool) -> None:
    check_entries(resource.configs, null_allowed=lambda c: c.config_operation == DELETE)
    for config in resource.configs:
        if config.config_operation not in OP_NAMES:
            raise AdminError(
                ErrorCode.INVALID_REQUEST, f"Unknown operations type {config.config_operation}"
            )
    kind, name = resource.resource_type, resource.resource_name
    if kind == RESOURCE_TOPIC:
        topic_ops(services, name, resource.configs, validate_only)
    elif kind == RESOURCE_BROKER:
        cluster_default = check_broker_resource(services, name, allow_default=True)
        broker_ops(services, cluster_default, resource.configs, validate_only)
    elif kind == RESOURCE_BROKER_LOGGER:
        logger_ops(services, name, resource.configs, validate_only)
    elif kind == RESOURCE_GROUP:
        group_ops(services, name, resource.configs, validate_only)
    else:
        raise unsupported_resource(kind, f"Unknown resource type {kind}")


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    result_class = ctx.request.spec.response_class.AlterConfigsResourceResponse
    duplicates = duplicate_resources(body.resources)
    results = []
    for resource in body.resources:
        code, message = ErrorCode.NONE, None
        try:
            if (resource.resource_type, resource.resource_name) in duplicates:
                raise AdminError(
                    ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
                )
            denied = checks.alter_configs(ctx, resource.resource_type, resource.resource_name)
            if denied:
                raise AdminError(denied, checks.message(denied))
            alter(ctx.services, resource, bool(body.validate_only))
        except AdminError as exc:
            code, message = exc.code, exc.message
        results.append(
            result_class(
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return ctx.response(throttle_time_ms=0, responses=results)
