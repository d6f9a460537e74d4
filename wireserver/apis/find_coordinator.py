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
has no live leader. As Kafka's, the answer does not wait for the coordinator to load the
partition: the requests sent to it then get COORDINATOR_LOAD_IN_PROGRESS.

Key type 2 (share, v6+): the share coordinator of a share-partition, keyed
``"<group>:<topic id>:<partition>"`` (Kafka's ``SharePartitionKey``, INVALID_REQUEST when it
is not of that form): the leader of its partition of ``__share_group_state``
(``share.coordinator.state.topic.replication.factor`` replicas). Brokers ask it; it needs
CLUSTER_ACTION on the cluster.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups.api import message
from wireserver.metadata import NO_LEADER
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 10
GROUP, TRANSACTION, SHARE = 0, 1, 2
#: The FindCoordinator version that brought key type 2 (KIP-932).
SHARE_MIN_VERSION = 6


def _lookup(ctx, key_type: int, key: str) -> tuple[ErrorCode, int]:
    """(error, coordinator broker id): the leader of the key's partition of the coordinator's
    internal topic (``wireserver.coordinator_runtime``)."""
    services = ctx.services
    if key_type == GROUP:
        runtime = services.groups.runtime
    elif key_type == TRANSACTION:
        runtime = services.txn.runtime
    elif key_type == SHARE and ctx.version >= SHARE_MIN_VERSION and _share_key(key):
        runtime = services.share.store.runtime
    else:
        return ErrorCode.INVALID_REQUEST, -1
    error = runtime.ensure_ready()
    if error is not None:
        return error, services.node_id
    partition = runtime.partition_for(key or "")
    leader = services.metadata.leader(runtime.name, partition)
    if leader == NO_LEADER:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1
    return ErrorCode.NONE, leader


def _share_key(key: str | None) -> bool:
    """Kafka's ``SharePartitionKey.validate``: group, topic id and partition, colon-separated."""
    parts = (key or "").rsplit(":", 2)
    return len(parts) == 3 and all(parts) and parts[2].lstrip("-").isdigit()


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    services = ctx.services
    key_type = body.key_type if version >= 1 else GROUP
    listener = services.advertised_listener(ctx.listener_name)

    def where(error: ErrorCode, node_id: int) -> tuple[int, str, int]:
        if error != ErrorCode.NONE:
            return -1, "", -1
        if node_id == services.node_id:
            return services.node_id, listener.host, listener.port
        endpoint = services.metadata.broker_endpoint(node_id, listener.name)
        assert endpoint is not None  # the leader is a live broker
        return node_id, endpoint.host, endpoint.port

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
