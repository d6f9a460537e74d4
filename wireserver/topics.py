"""Topic creation and lookup shared by Metadata (auto-creation), Produce (auto-creation) and
CreateTopics, with Kafka's error for each way a request can be wrong.

In cluster mode a topic (other than ``__transaction_state``, which stays local for now) is created in
ZooKeeper with replicas placed on the live brokers by Kafka's round-robin (rack-aware when racks
are set); every broker then opens its logs from the watch, and the controller elects leaders.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from twisted.internet import defer, task

from wireserver.coordinator_runtime import INTERNAL_TOPICS
from wireserver.protocol.errors import ErrorCode
from wireserver.storage.configdef import ConfigValueError
from wireserver.storage.errors import InvalidPartitionsError, InvalidTopicError, TopicExistsError
from wireserver.storage.log_config import TOPIC_CONFIGS, LogConfig
from wireserver.storage.manager import TopicInfo, validate_topic_name

if TYPE_CHECKING:
    from wireserver.broker import Broker

log = logging.getLogger(__name__)

MAX_PARTITIONS = 2**31 - 1


class TopicError(Exception):
    """A topic operation refused with a Kafka error code and Kafka's message."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def check_name(name: str) -> None:
    try:
        validate_topic_name(name)
    except InvalidTopicError as exc:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)) from None


def resolve_creation(
    broker: Broker,
    name: str,
    num_partitions: int,
    replication_factor: int,
    configs: Mapping[str, str | None],
    assignments: Mapping[int, list[int]] | None = None,
) -> tuple[int, dict[str, str]]:
    """Check a creation request the way Kafka does and return (partitions, config overrides).
    Raises TopicError."""
    check_name(name)
    cluster = broker.cluster
    if name in broker.logs.topics or (cluster is not None and name in cluster.topics):
        raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    live_brokers = sorted(cluster.brokers) if cluster is not None else [broker.node_id]
    if assignments:
        if num_partitions != -1 or replication_factor != -1:
            raise TopicError(
                ErrorCode.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments "
                "were set. Both cannot be used at the same time.",
            )
        if sorted(assignments) != list(range(len(assignments))):
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                "Partitions should be a consecutive 0-based integer sequence",
            )
        for partition, replicas in assignments.items():
            if not replicas or len(set(replicas)) != len(replicas):
                raise TopicError(
                    ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                    f"Invalid replica assignment for partition {partition}: {replicas}",
                )
            unknown = [r for r in replicas if r not in live_brokers]
            if unknown:
                raise TopicError(
                    ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                    f"The manual partition assignment includes broker(s) {unknown}, "
                    "but those brokers are not registered.",
                )
        num_partitions = len(assignments)
    else:
        if num_partitions == -1:
            num_partitions = broker.config["num.partitions"]
        if replication_factor == -1:
            replication_factor = broker.config["default.replication.factor"]
        if num_partitions <= 0:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS,
                "Number of partitions was set to an invalid non-positive value.",
            )
        if replication_factor <= 0:
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if replication_factor > len(live_brokers):
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): "
                f"The target replication factor of {replication_factor} cannot be "
                f"reached because only {len(live_brokers)} broker(s) are registered.",
            )
    overrides: dict[str, str] = {}
    for key, value in configs.items():
        if key not in TOPIC_CONFIGS:
            raise TopicError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        if value is None:
            raise TopicError(
                ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {key}"
            )
        overrides[key] = value
    try:
        LogConfig.from_values(broker.logs.broker_defaults, overrides)
    except ConfigValueError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    return num_partitions, overrides


def create_topic(
    broker: Broker,
    name: str,
    num_partitions: int = -1,
    replication_factor: int = -1,
    configs: Mapping[str, str | None] | None = None,
    assignments: Mapping[int, list[int]] | None = None,
) -> TopicInfo:
    partitions, overrides = resolve_creation(
        broker, name, num_partitions, replication_factor, configs or {}, assignments
    )
    if broker.cluster is not None:
        return create_in_cluster(
            broker, name, partitions, replication_factor, overrides, assignments
        )
    try:
        return broker.logs.create_topic(name, partitions, overrides)
    except TopicExistsError as exc:
        raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, str(exc)) from None
    except InvalidTopicError as exc:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)) from None
    except InvalidPartitionsError as exc:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, str(exc)) from None


def create_internal_topic(
    broker: Broker, name: str, num_partitions: int, replication_factor: int, configs: dict[str, str]
) -> ErrorCode | None:
    """A coordinator's internal topic, created as any other (``create_topic``) for the
    coordinator runtime, which answers errors rather than raising them: None once created (or
    when another broker created it first), COORDINATOR_NOT_AVAILABLE (retried by clients) when
    it cannot be."""
    try:
        create_topic(broker, name, num_partitions, replication_factor, configs)
    except TopicError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.error("cannot create %s: %s", name, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return None


def create_in_cluster(
    broker: Broker,
    name: str,
    partitions: int,
    replication_factor: int,
    overrides: dict[str, str],
    assignments: Mapping[int, list[int]] | None,
) -> TopicInfo:
    import uuid

    from kazoo.exceptions import NodeExistsError

    from wireserver.cluster.placement import PlacementError, assign_replicas

    cluster = broker.cluster
    if assignments:
        replicas = {p: list(r) for p, r in assignments.items()}
    else:
        if replication_factor == -1:
            replication_factor = broker.config["default.replication.factor"]
        try:
            replicas = assign_replicas(partitions, replication_factor, cluster.live_racks())
        except PlacementError as exc:
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None
    topic_id = uuid.uuid4()
    try:
        cluster.create_topic(name, topic_id, replicas, overrides)
    except NodeExistsError:
        raise TopicError(
            ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        ) from None
    return TopicInfo(
        name,
        topic_id,
        partitions,
        overrides,
        LogConfig.from_values(broker.logs.broker_defaults, overrides),
    )


def in_cluster(broker: Broker, name: str) -> bool:
    """The topic lives in ZooKeeper: cluster mode, and not one a broker keeps for itself."""
    return broker.cluster is not None and name in broker.cluster.topics


def has_leaders(broker: Broker, name: str, partitions: int = 1) -> bool:
    """In this broker's cluster view: the topic has at least ``partitions`` partitions and
    every one of them has a leader."""
    cluster = broker.cluster
    assignment = cluster.topics.get(name)
    if assignment is None or len(assignment.replicas) < partitions:
        return False
    return all(
        (s := cluster.partition(name, p)) is not None and s.leader >= 0 for p in assignment.replicas
    )


@defer.inlineCallbacks
def wait_for_topics(
    broker: Broker, names: Iterable[str], done: Callable[[str], bool], timeout_ms: int
):
    """Fires with the names for which ``done`` is still false once the timeout passed (an
    empty list as soon as it holds for all): how cluster-mode admin requests wait for the
    watches to bring their change into this broker's metadata, as Kafka's DelayedCreateTopics,
    DelayedDeleteTopics and DelayedCreatePartitions did."""
    deadline = broker.reactor.seconds() + timeout_ms / 1000.0
    pending = list(names)
    while True:
        pending = [name for name in pending if not done(name)]
        if not pending or broker.reactor.seconds() >= deadline:
            return pending
        yield task.deferLater(broker.reactor, 0.02, lambda: None)


def delete_local(broker: Broker, name: str) -> None:
    """Delete a topic's logs on this broker; fetches parked on its partitions wake, re-read and
    answer UNKNOWN_TOPIC_OR_PARTITION. The groups this broker coordinates forget their offsets
    of the topic."""
    info = broker.logs.topics[name]
    broker.replicas.remove_topic(name)
    broker.logs.delete_topic(name)
    for partition in range(info.num_partitions):
        broker.purgatory.notify(("append", name, partition))
    if name not in INTERNAL_TOPICS:
        broker.groups.drop_offsets_of_topic(name)


def auto_create(broker: Broker, name: str) -> TopicInfo | None:
    """Create ``name`` with the broker defaults if ``auto.create.topics.enable`` allows it.
    Returns None when auto-creation is off; raises TopicError for an invalid name."""
    check_name(name)
    if not broker.config["auto.create.topics.enable"] or name in INTERNAL_TOPICS:
        return None
    return create_topic(broker, name)
