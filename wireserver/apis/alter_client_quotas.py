"""AlterClientQuotas (key 49), v0-1: set or remove quota keys of user, client-id and ip
entities (``wireserver.quotas.store.ClientQuotaStore.alter``, Kafka's checks and messages,
each failure INVALID_REQUEST on its own entry). A failing entry changes nothing; the other
entries of the request are applied, as in Kafka. ``validate_only`` checks and changes
nothing. Needs ALTER_CONFIGS on the cluster. Changes reach every broker (cluster mode:
ZooKeeper) and the rate managers at once.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.quotas.store import Alteration
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, Operation, ResourceType

API_KEY = 49


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    alterations = [
        Alteration(
            [(e.entity_type, e.entity_name) for e in entry.entity or []],
            [(op.key, None if op.remove else op.value) for op in entry.ops or []],
        )
        for entry in body.entries or []
    ]
    allowed = authorize(ctx, Operation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
    if allowed:
        ctx.services.quotas.store.alter(alterations, body.validate_only)
    entry_class = ctx.request.spec.response_class.EntryData
    entity_class = entry_class.EntityData
    entries = []
    for alteration in alterations:
        if not allowed:
            code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
        elif alteration.error is not None:
            code, message = alteration.error.code, str(alteration.error)
        else:
            code, message = ErrorCode.NONE, None
        entries.append(
            entry_class(
                error_code=code,
                error_message=message,
                entity=[
                    entity_class(entity_type=kind, entity_name=name)
                    for kind, name in alteration.pairs
                ],
            )
        )
    return ctx.response(throttle_time_ms=0, entries=entries)
