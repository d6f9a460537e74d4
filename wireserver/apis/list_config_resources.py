"""ListConfigResources (key 74), v0-1 — what ``kafka-configs --entity-type groups --describe``
asks before describing a group that has no members (KIP-1142).

As Kafka 4.1's ``KafkaApis.handleListConfigResources``: DESCRIBE_CONFIGS on the cluster or
CLUSTER_AUTHORIZATION_FAILED. v0 (ListClientMetricsResources) lists client-metrics resources
only; v1 lists the asked ``ResourceTypes`` (none: all of TOPIC, BROKER, BROKER_LOGGER,
CLIENT_METRICS, GROUP), and a type outside those answers UNSUPPORTED_VERSION. GROUP: the groups
that have configs (existing groups or not); BROKER and BROKER_LOGGER: every broker's id; TOPIC:
every topic; CLIENT_METRICS: none (client metrics subscriptions are not served).
"""

from __future__ import annotations

from wireserver.admin import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
)
from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.security.acls import Operation

API_KEY = 74
SUPPORTED = {
    0: {RESOURCE_CLIENT_METRICS},
    1: {
        RESOURCE_TOPIC,
        RESOURCE_BROKER,
        RESOURCE_BROKER_LOGGER,
        RESOURCE_CLIENT_METRICS,
        RESOURCE_GROUP,
    },
}


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    services, version = ctx.services, ctx.version
    denied = checks.cluster(ctx, Operation.DESCRIBE_CONFIGS)
    if denied:
        return ctx.response(throttle_time_ms=0, error_code=denied, config_resources=[])
    supported = SUPPORTED[min(version, 1)]
    asked = list(ctx.body.resource_types or []) if version >= 1 else []
    if any(kind not in supported for kind in asked):
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[]
        )
    wanted = set(asked) or supported
    entry_class = ctx.request.spec.response_class.ConfigResource
    found: list[tuple[str, int]] = []
    if RESOURCE_GROUP in wanted:
        found += [(group, RESOURCE_GROUP) for group in services.group_configs.groups()]
    for kind in (RESOURCE_BROKER_LOGGER, RESOURCE_BROKER):
        if kind in wanted:
            found += [(str(node), kind) for node in services.metadata.live_broker_ids()]
    if RESOURCE_TOPIC in wanted:
        found += [
            (info.name, RESOURCE_TOPIC)
            for info in services.logs.topics.values()
            if services.metadata.is_reported(info)
        ]
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        config_resources=[
            entry_class(resource_name=name, resource_type=kind) for name, kind in found
        ],
    )
