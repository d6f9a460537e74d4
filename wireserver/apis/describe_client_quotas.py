"""DescribeClientQuotas (key 48), v0-1: the quotas set for user, client-id and ip entities
that match a filter (``wireserver.quotas.store.ClientQuotaStore.describe``: per entity type an
exact name, the default or any name; ``strict`` leaves out entities with other types). Needs
DESCRIBE_CONFIGS on the cluster. A bad filter is answered with the top-level error Kafka gives
(INVALID_REQUEST, or UNSUPPORTED_VERSION for an unknown entity type) and no entries.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.quotas.store import QuotaError
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, Operation, ResourceType

API_KEY = 48


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    if not authorize(ctx, Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        return _error(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    components = [(c.entity_type, c.match_type, c.match) for c in ctx.body.components or []]
    try:
        found = ctx.services.quotas.store.describe(components, ctx.body.strict)
    except QuotaError as exc:
        return _error(ctx, exc.code, str(exc))
    entry_class = ctx.request.spec.response_class.EntryData
    entity_class = entry_class.EntityData
    value_class = entry_class.ValueData
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        entries=[
            entry_class(
                entity=[entity_class(entity_type=kind, entity_name=name) for kind, name in entity],
                values=[value_class(key=key, value=value) for key, value in quotas.items()],
            )
            for entity, quotas in found
        ],
    )


def _error(ctx: RequestContext, code: ErrorCode, message: str | None):
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message, entries=None)
