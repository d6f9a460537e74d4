"""FindCoordinator (key 10), v0-6.

Key type 0 (group): this broker coordinates every group (one node leads every partition of
``__consumer_offsets``), which is created here on first use; while it cannot be created (its
replication factor exceeds the live brokers, as with Kafka's default of 3 on one node) the
answer is COORDINATOR_NOT_AVAILABLE, as Kafka's. v4+ batch ``coordinator_keys``.

Key type 1 (transaction): this broker coordinates every transactional id (it leads every
partition of ``__transaction_state``, created here on first use, COORDINATOR_NOT_AVAILABLE
while ``transaction.state.log.replication.factor`` exceeds the live brokers).

In cluster mode a group's coordinator is the leader of its partition of ``__consumer_offsets``
(created through ZooKeeper with ``offsets.topic.replication.factor`` replicas) and a
transactional id's the leader of its partition of ``__transaction_state``
(``transaction.state.log.replication.factor`` replicas): any broker answers with that leader's
endpoint on the listener the request came in on, COORDINATOR_NOT_AVAILABLE while the partition
has no live leader, and COORDINATOR_LOAD_IN_PROGRESS when it is this broker and it is still
loading the partition.

Skipped: other key types (share) answer INVALID_REQUEST.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups.api import message
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 10
GROUP, TRANSACTION = 0, 1


def _lookup(ctx, key_type: int, key: str) -> tuple[ErrorCode, int]:
    """(error, coordinator broker id): the leader of the key's partition of the coordinator's
    internal topic (``wireserver.coordinator_runtime``)."""
    broker = ctx.broker
    if key_type == GROUP:
        runtime = broker.groups.runtime
    elif key_type == TRANSACTION:
        runtime = broker.txn.runtime
    else:
        return ErrorCode.INVALID_REQUEST, -1
    error = runtime.ensure_ready()
    cluster = broker.cluster
    if error is not None or cluster is None:
        return error or ErrorCode.NONE, broker.node_id
    partition = runtime.partition_for(key or "")
    state = cluster.partition(runtime.name, partition)
    if state is None or state.leader not in cluster.brokers:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1
    if state.leader == broker.node_id and partition in runtime.loading:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1
    return ErrorCode.NONE, state.leader


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    broker = ctx.broker
    key_type = body.key_type if version >= 1 else GROUP
    listener = broker.advertised_listener(ctx.listener_name)

    def where(error: ErrorCode, node_id: int) -> tuple[int, str, int]:
        if error != ErrorCode.NONE:
            return -1, "", -1
        if node_id == broker.node_id:
            return broker.node_id, listener.host, listener.port
        cluster = broker.cluster  # another broker coordinates: a cluster
        assert cluster is not None
        host, port = cluster.endpoint_for(cluster.brokers[node_id], listener.name)
        return node_id, host, port

    def lookup(key: str) -> tuple[ErrorCode, int]:
        denied = checks.find_coordinator(ctx, key_type, key)
        return (denied, -1) if denied else _lookup(ctx, key_type, key)

    if version >= 4:
        coordinator_class = ctx.request.spec.response_class.Coordinator
        coordinators = []
        for key in body.coordinator_keys:
            error, coordinator = lookup(key)
            node, host, port = where(error, coordinator)
            coordinators.append(
                coordinator_class(
                    key=key,
                    node_id=node,
                    host=host,
                    port=port,
                    error_code=error,
                    error_message=message(error),
                )
            )
        return ctx.response(throttle_time_ms=0, coordinators=coordinators)
    error, coordinator = lookup(body.key)
    node, host, port = where(error, coordinator)
    return ctx.response(
        throttle_time_ms=0,
        error_code=error,
        error_message=message(error),
        node_id=node,
        host=host,
        port=port,
    )
