"""AlterConfigs (key 33), v0-2 — the legacy, non-incremental form.

Each resource's listed configs *replace* its whole set, as in Kafka:

- TOPIC: the topic's overrides become exactly the listed keys (unlisted overrides are removed);
  the logs use the new config at once (retention, max.message.bytes, segment sizes, ...); in
  cluster mode on every broker (``/config/topics/<t>`` and a change notification).
  Unknown topic → UNKNOWN_TOPIC_OR_PARTITION; unknown key or bad value → INVALID_CONFIG.
- BROKER named by our node id (per-broker) or "" (cluster default): the dynamic config layer
  becomes exactly the listed keys. Keys that need a restart, TLS store keys without a listener
  prefix, bad values and per-broker keys given as the cluster default → INVALID_REQUEST with
  Kafka's messages (``wireserver.admin.set_broker_dynamic``); every Kafka 4.1 broker key is
  known, those we do not act on included (``wireserver.kafka_keys``); unknown keys →
  INVALID_CONFIG (Kafka keeps unknown keys as custom configs; we refuse them). Per-listener
  keys ``listener.name.<l>.<key>`` are per broker; a change of a listener's TLS stores is
  checked and in force for new connections at once (``wireserver.admin.check_listener_stores``).
  Changed topic defaults reach every topic at once. The layer outlives the broker: on one node in the
  first log dir, in cluster mode in ``/config/brokers/<id>`` or ``/config/brokers/<default>``
  with a change notification that every broker follows (``wireserver.dynamic_configs``).
- GROUP: the group's configs become exactly the listed keys, checked as Kafka's
  ``GroupConfigManager.validate`` (unknown key, bad value, outside the broker's
  ``group.consumer.min/max.*`` bounds → INVALID_CONFIG); an empty name → INVALID_REQUEST.
  Kept across restarts (``wireserver.groups.configs``).
- Anything else (BROKER_LOGGER included) → INVALID_REQUEST "Unknown resource type".

As in ``ConfigAdminManager.preprocess``: a resource named twice → INVALID_REQUEST for both,
a key twice or a null value → INVALID_REQUEST. ``validate_only`` checks and changes nothing.

Authorization after the duplicate checks: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED),
the group (GROUP_AUTHORIZATION_FAILED) or the cluster for BROKER resources
(CLUSTER_AUTHORIZATION_FAILED). Skipped: AlterConfigPolicy.
"""

from __future__ import annotations

from wireserver.admin import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    AdminError,
    check_broker_resource,
    check_group_resource,
    set_broker_dynamic,
    set_group_configs,
    set_topic_overrides,
    unsupported_resource,
)
from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 33


def duplicate_resources(resources) -> set:
    seen: set[tuple[int, str]] = set()
    duplicates: set[tuple[int, str]] = set()
    for resource in resources:
        key = (resource.resource_type, resource.resource_name)
        (duplicates if key in seen else seen).add(key)
    return duplicates


def check_entries(configs, null_allowed=lambda config: False) -> None:
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise AdminError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c.name for c in configs if c.value is None and not null_allowed(c)]
    if nulls:
        raise AdminError(
            ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
        )


def alter(services, resource, validate_only: bool) -> None:
    check_entries(resource.configs)
    props = {c.name: c.value for c in resource.configs}
    if resource.resource_type == RESOURCE_BROKER:
        cluster_default = check_broker_resource(
            services, resource.resource_name, allow_default=True
        )
        set_broker_dynamic(services, cluster_default, props, validate_only)
    elif resource.resource_type == RESOURCE_TOPIC:
        set_topic_overrides(services, resource.resource_name, props, validate_only)
    elif resource.resource_type == RESOURCE_GROUP:
        check_group_resource(resource.resource_name, describing=False)
        set_group_configs(services, resource.resource_name, props, validate_only)
    else:
        kind = resource.resource_type
        raise unsupported_resource(kind, f"Unknown resource type {kind}")


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    response_class = ctx.request.spec.response_class
    result_class = response_class.AlterConfigsResourceResponse
    duplicates = duplicate_resources(body.resources)
    results = []
    for resource in body.resources:
        code, message = ErrorCode.NONE, None
        try:
            if (resource.resource_type, resource.resource_name) in duplicates:
                raise AdminError(
                    ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
                )
            denied = checks.alter_configs(
                ctx, resource.resource_type, resource.resource_name, loggers=False
            )
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
