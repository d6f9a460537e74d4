"""The ACL checks handlers make, one call each, named after what Kafka's ``KafkaApis`` checks.
Every function returns None when the action is allowed, else the Kafka error to answer with.
All of them allow everything when no authorizer is configured."""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, DENIED_ERROR, Operation, ResourceType

TOPIC, GROUP, CLUSTER, TXN = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                              ResourceType.TRANSACTIONAL_ID)


def check(ctx: Any, operation: Operation, resource_type: ResourceType,
          name: str | None) -> ErrorCode | None:
    """None if allowed, else the resource type's *_AUTHORIZATION_FAILED error."""
    if name is None:
        return None
    if authorize(ctx, operation, resource_type, name):
        return None
    return DENIED_ERROR[resource_type]


def produce_topic(ctx: Any, topic: str | None) -> ErrorCode | None:
    return check(ctx, Operation.WRITE, TOPIC, topic)


def produce_transactional_id(ctx: Any) -> ErrorCode | None:
    return check(ctx, Operation.WRITE, TXN, getattr(ctx.body, "transactional_id", None))


def _replica_id(body: Any) -> int:
    state = getattr(body, "replica_state", None)
    if state is not None and getattr(state, "replica_id", -1) >= 0:
        return state.replica_id
    replica_id = getattr(body, "replica_id", -1)
    return -1 if replica_id is None else replica_id


def fetch_topic(ctx: Any, topic: str | None) -> ErrorCode | None:
    """A consumer needs READ on the topic; a follower (replica id >= 0) CLUSTER_ACTION on the
    cluster (CVE-2018-1288), and is answered TOPIC_AUTHORIZATION_FAILED without it."""
    if _replica_id(ctx.body) >= 0:
        if authorize(ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return None
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return check(ctx, Operation.READ, TOPIC, topic)


def describe_topic(ctx: Any, topic: str | None) -> ErrorCode | None:
    return check(ctx, Operation.DESCRIBE, TOPIC, topic)


def create_topic(ctx: Any, topic: str) -> ErrorCode | None:
    """CREATE on the cluster, or on the topic."""
    if authorize(ctx, Operation.CREATE, CLUSTER, CLUSTER_NAME):
        return None
    return check(ctx, Operation.CREATE, TOPIC, topic)


def delete_topic(ctx: Any, topic: str | None) -> ErrorCode | None:
    return check(ctx, Operation.DELETE, TOPIC, topic)


def read_group(ctx: Any, group: str | None) -> ErrorCode | None:
    return check(ctx, Operation.READ, GROUP, group)


def describe_group(ctx: Any, group: str | None) -> ErrorCode | None:
    return check(ctx, Operation.DESCRIBE, GROUP, group)


def read_topic(ctx: Any, topic: str | None) -> ErrorCode | None:
    return check(ctx, Operation.READ, TOPIC, topic)


def find_coordinator(ctx: Any, key_type: int, key: str) -> ErrorCode | None:
    """DESCRIBE on the group (key type 0) or the transactional id (1)."""
    return check(ctx, Operation.DESCRIBE, GROUP if key_type == 0 else TXN, key)


def init_producer_id(ctx: Any) -> ErrorCode | None:
    """WRITE on the transactional id, or IDEMPOTENT_WRITE on the cluster without one (Kafka 4
    also accepts WRITE on any topic for the latter; we ask for the cluster ACL only)."""
    txn = getattr(ctx.body, "transactional_id", None)
    if txn:
        return check(ctx, Operation.WRITE, TXN, txn)
    if authorize(ctx, Operation.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
