"""The ACL checks handlers make, one call each, named after what Kafka's ``KafkaApis`` checks.
Every function returns None when the action is allowed, else the Kafka error to answer with.
All of them allow everything when no authorizer is configured."""

from __future__ import annotations

from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize, authorize_by_resource_type, authorizer_enabled
from wireserver.security.acls import CLUSTER_NAME, DENIED_ERROR, Operation, ResourceType

TOPIC, GROUP, CLUSTER, TXN = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)


def check(
    ctx: Any, operation: Operation, resource_type: ResourceType, name: str | None
) -> ErrorCode | None:
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
    """DESCRIBE on the group (key type 0) or the transactional id (1); CLUSTER_ACTION on the
    cluster for a share-partition (2: brokers ask it)."""
    if key_type == 2:
        return cluster_action(ctx)
    return check(ctx, Operation.DESCRIBE, GROUP if key_type == 0 else TXN, key)


def init_producer_id(ctx: Any) -> ErrorCode | None:
    """WRITE on the transactional id; without one IDEMPOTENT_WRITE on the cluster or WRITE
    on any topic (Kafka's ``authorizeByResourceType``, KIP-679)."""
    txn = getattr(ctx.body, "transactional_id", None)
    if txn:
        return check(ctx, Operation.WRITE, TXN, txn)
    if authorize(ctx, Operation.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME):
        return None
    if authorize_by_resource_type(ctx, Operation.WRITE, TOPIC):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


# -- messages -------------------------------------------------------------------------------

#: Kafka's default message of each denial (``Errors.X.message()``), for the APIs that send one.
MESSAGES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}


def message(error: ErrorCode | None) -> str | None:
    return MESSAGES.get(error) if error is not None else None


def cluster(ctx: Any, operation: Operation) -> ErrorCode | None:
    """``operation`` on the cluster resource, else CLUSTER_AUTHORIZATION_FAILED."""
    return check(ctx, operation, CLUSTER, CLUSTER_NAME)


# -- topics ---------------------------------------------------------------------------------


def describe_topic_configs(ctx: Any, topic: str) -> ErrorCode | None:
    """CreateTopics v5+ returns a new topic's configs only with DESCRIBE_CONFIGS on it."""
    return check(ctx, Operation.DESCRIBE_CONFIGS, TOPIC, topic)


def delete_topic_by_name(ctx: Any, topic: str, exists: bool) -> ErrorCode | None:
    """DeleteTopics as Kafka's ``ControllerApis.deleteTopics``: DELETE on the cluster allows
    everything; else without DESCRIBE on the topic the answer is TOPIC_AUTHORIZATION_FAILED
    whether or not it exists (existence stays hidden), and an existing topic needs DELETE.
    None for an unknown topic the principal may describe: the caller reports it unknown."""
    if authorize(ctx, Operation.DELETE, CLUSTER, CLUSTER_NAME):
        return None
    denied = describe_topic(ctx, topic)
    if denied or not exists:
        return denied
    return check(ctx, Operation.DELETE, TOPIC, topic)


def alter_topic(ctx: Any, topic: str) -> ErrorCode | None:
    """CreatePartitions: ALTER on the topic."""
    return check(ctx, Operation.ALTER, TOPIC, topic)


def delete_records(ctx: Any, topic: str) -> ErrorCode | None:
    """DeleteRecords: DELETE on the topic (no cluster-wide fallback)."""
    return check(ctx, Operation.DELETE, TOPIC, topic)


def offset_for_leader_epoch(ctx: Any, topic: str) -> ErrorCode | None:
    """CLUSTER_ACTION on the cluster (followers) or DESCRIBE on the topic (consumers, KIP-320);
    TOPIC_AUTHORIZATION_FAILED without either."""
    if authorize(ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
        return None
    return describe_topic(ctx, topic)


def describe_producers(ctx: Any, topic: str) -> ErrorCode | None:
    """DescribeProducers: READ on the topic."""
    return check(ctx, Operation.READ, TOPIC, topic)


# -- configs (ConfigResource.Type ids) -----------------------------------------------------

CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_GROUP = 2, 4, 8, 32


def _config_resource(
    ctx: Any, operation: Operation, resource_type: int, name: str
) -> ErrorCode | None:
    if resource_type in (CONFIG_BROKER, CONFIG_BROKER_LOGGER):
        return cluster(ctx, operation)
    if resource_type == CONFIG_TOPIC:
        return check(ctx, operation, TOPIC, name)
    if resource_type == CONFIG_GROUP:
        return check(ctx, operation, GROUP, name)
    return None  # unsupported types keep their own error


def describe_configs(ctx: Any, resource_type: int, name: str) -> ErrorCode | None:
    """DESCRIBE_CONFIGS on the topic (or group), or on the cluster for BROKER and BROKER_LOGGER
    resources (``ConfigHelper.handleDescribeConfigsRequest``)."""
    return _config_resource(ctx, Operation.DESCRIBE_CONFIGS, resource_type, name)


def alter_configs(
    ctx: Any, resource_type: int, name: str, loggers: bool = True
) -> ErrorCode | None:
    """ALTER_CONFIGS on the topic (or group), or on the cluster for BROKER and (unless
    ``loggers`` is false: legacy AlterConfigs refuses them anyway) BROKER_LOGGER resources
    (``ControllerApis.authorizeAlterResource``, ``ConfigAdminManager.preprocess``)."""
    if resource_type == CONFIG_BROKER_LOGGER and not loggers:
        return None
    return _config_resource(ctx, Operation.ALTER_CONFIGS, resource_type, name)


#: The operations Kafka's ``AclEntry.supportedOperations`` lists per resource type: those an
#: authorized-operations answer reports (KIP-430).
SUPPORTED_OPERATIONS = {
    TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    GROUP: (
        Operation.READ,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
}


def authorized_operations(ctx: Any, resource_type: ResourceType, name: str) -> set[int]:
    """Kafka's ``AuthHelper.authorizedOperations``: the AclOperation codes supported on the
    resource that the principal is allowed; every supported one without an authorizer."""
    return {
        int(op)
        for op in SUPPORTED_OPERATIONS[resource_type]
        if authorize(ctx, op, resource_type, name)
    }


def bitfield(operations: set[int]) -> int:
    """Operation codes as the int32 bit set the schemas without kafka-python's ``bitfield``
    patch carry (DescribeTopicPartitions, ConsumerGroupDescribe)."""
    return sum(1 << op for op in operations)


def cluster_operations(ctx: Any) -> set[int]:
    """The cluster's authorized operations (DescribeCluster, Metadata v8-10): none without
    DESCRIBE on the cluster, as Kafka answers 0 then."""
    if not authorize(ctx, Operation.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return set()
    return authorized_operations(ctx, CLUSTER, CLUSTER_NAME)


def topic_operations(ctx: Any, topic: str) -> set[int]:
    return authorized_operations(ctx, TOPIC, topic)


def group_operations(ctx: Any, group: str) -> set[int]:
    return authorized_operations(ctx, GROUP, group)


# -- groups ---------------------------------------------------------------------------------


def delete_group(ctx: Any, group: str | None) -> ErrorCode | None:
    return check(ctx, Operation.DELETE, GROUP, group)


def list_group(ctx: Any, group: str) -> bool:
    """ListGroups shows every group to a principal with DESCRIBE on the cluster, and otherwise
    only the groups it may DESCRIBE."""
    return authorize(ctx, Operation.DESCRIBE, CLUSTER, CLUSTER_NAME) or authorize(
        ctx, Operation.DESCRIBE, GROUP, group
    )


def describe_topics(ctx: Any, topics: Any) -> ErrorCode | None:
    """TOPIC_AUTHORIZATION_FAILED unless every topic may be described (ConsumerGroupHeartbeat's
    subscribed names, ConsumerGroupDescribe's assignments)."""
    for topic in topics or ():
        if describe_topic(ctx, topic):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None


# -- transactions ---------------------------------------------------------------------------


def write_transactional_id(ctx: Any, transactional_id: str | None) -> ErrorCode | None:
    return check(ctx, Operation.WRITE, TXN, transactional_id)


def describe_transactional_id(ctx: Any, transactional_id: str | None) -> ErrorCode | None:
    return check(ctx, Operation.DESCRIBE, TXN, transactional_id)


def cluster_action(ctx: Any) -> ErrorCode | None:
    """Inter-broker requests (AddPartitionsToTxn v4+): CLUSTER_ACTION on the cluster."""
    return cluster(ctx, Operation.CLUSTER_ACTION)


def write_txn_markers(ctx: Any) -> ErrorCode | None:
    """WriteTxnMarkers: ALTER or CLUSTER_ACTION on the cluster."""
    if authorize(ctx, Operation.ALTER, CLUSTER, CLUSTER_NAME):
        return None
    return cluster_action(ctx)


def add_partitions_to_txn(ctx: Any, transactional_id: str, partitions: list) -> dict | None:
    """AddPartitionsToTxn v0-3 (``KafkaApis.handleAddPartitionsToTxnRequest``): without WRITE on
    the transactional id every partition fails with TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    otherwise each topic needs WRITE (internal topics never pass), and when any partition
    fails the authorization or is unknown, the others get OPERATION_NOT_ATTEMPTED. None when
    the request may proceed."""
    denied = write_transactional_id(ctx, transactional_id)
    if denied:
        return {tp: denied for tp in partitions}
    if not authorizer_enabled(ctx):
        return None
    from wireserver.topics import INTERNAL_TOPICS

    topics = ctx.services.logs.topics
    errors = {}
    for topic, partition in partitions:
        if topic in INTERNAL_TOPICS or produce_topic(ctx, topic):
            errors[(topic, partition)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif topic not in topics or not 0 <= partition < topics[topic].num_partitions:
            errors[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not any(e == ErrorCode.TOPIC_AUTHORIZATION_FAILED for e in errors.values()):
        return None  # unknown partitions alone: the coordinator answers as before
    return {tp: errors.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
