"""FindCoordinator (key 10), v0-6.

Key type 0 (group): this broker coordinates every group (one node leads every partition of
``__consumer_offsets``), which is created here on first use; while it cannot be created (its
replication factor exceeds the live brokers, as with Kafka's default of 3 on one node) the
answer is COORDINATOR_NOT_AVAILABLE, as Kafka's. v4+ batch ``coordinator_keys``.

Key type 1 (transaction): this broker coordinates every transactional id (it leads every
partition of ``__transaction_state``, created here on first use, COORDINATOR_NOT_AVAILABLE
while ``transaction.state.log.replication.factor`` exceeds the live brokers).

Skipped: other key types (share) answer INVALID_REQUEST.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from wireserver.apis import handles
from wireserver.security import checks
from wireserver.groups.api import message

API_KEY = 10
GROUP, TRANSACTION = 0, 1


def _lookup(ctx, key_type: int) -> ErrorCode:
    if key_type == GROUP:
        return ctx.broker.groups.ensure_ready() or ErrorCode.NONE
    if key_type == TRANSACTION:
        return ctx.broker.txn.ensure_ready() or ErrorCode.NONE
    return ErrorCode.INVALID_REQUEST


@handles(API_KEY)
def handle(ctx):
    body, version = ctx.body, ctx.version
    broker = ctx.broker
    key_type = body.key_type if version >= 1 else GROUP
    listener = next((l for l in broker.advertised if l.name == ctx.listener_name),
                    broker.advertised[0])

    def where(error: ErrorCode) -> tuple[int, str, int]:
        if error == ErrorCode.NONE:
            return broker.node_id, listener.host, listener.port
        return -1, "", -1

    if version >= 4:
        coordinator_class = ctx.request.spec.response_class.Coordinator
        coordinators = []
        for key in body.coordinator_keys:
            error = checks.find_coordinator(ctx, key_type, key) or _lookup(ctx, key_type)
            node, host, port = where(error)
            coordinators.append(coordinator_class(key=key, node_id=node, host=host, port=port,
                                                  error_code=error, error_message=message(error)))
        return ctx.response(throttle_time_ms=0, coordinators=coordinators)
    error = checks.find_coordinator(ctx, key_type, body.key) or _lookup(ctx, key_type)
    node, host, port = where(error)
    return ctx.response(throttle_time_ms=0, error_code=error, error_message=message(error),
                        node_id=node, host=host, port=port)
