"""Topic creation and lookup shared by Metadata (auto-creation), Produce (auto-creation) and
CreateTopics, with Kafka's error for each way a request can be wrong.

A topic checked here is made by the cluster metadata (``wireserver.metadata``): in this
broker's logs on one node, in ZooKeeper in a cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from twisted.internet import defer, task

from wireserver.coordinator_runtime import INTERNAL_TOPICS
from wireserver.metadata import TopicError
from wireserver.protocol.errors import ErrorCode
from wireserver.storage.configdef import ConfigValueError
from wireserver.storage.errors import InvalidTopicError
from wireserver.storage.log_config import TOPIC_CONFIGS, LogConfig
from wireserver.storage.manager import TopicInfo, validate_topic_name

if TYPE_CHECKING:
    from wireserver.services import Services

log = logging.getLogger(__name__)

MAX_PARTITIONS = 2**31 - 1
#: Names ``check_name`` found valid (Produce checks its topic's name in every request), up to
#: ``VALID_NAMES_KEPT`` of them: a client naming topics at random cannot grow it further.
_valid_names: set[str] = set()
VALID_NAMES_KEPT = 10_000


def check_name(name: str) -> None:
    if name in _valid_names:
        return
    try:
        validate_topic_name(name)
    except InvalidTopicError as exc:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)) from None
    if len(_valid_names) < VALID_NAMES_KEPT:
        _valid_names.add(name)


def resolve_creation(
    services: Services,
    name: str,
    num_partitions: int,
    replication_factor: int,
    configs: Mapping[str, str | None],
    assignments: Mapping[int, list[int]] | None = None,
) -> tuple[int, dict[str, str]]:
    """Check a creation request the way Kafka does and return (partitions, config overrides).
    Raises TopicError."""
    check_name(name)
    metadata = services.metadata
    if metadata.topic_id(name) is not None:
        raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    live_brokers = metadata.live_broker_ids()
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
            num_partitions = services.config["num.partitions"]
        if replication_factor == -1:
            replication_factor = services.config["default.replication.factor"]
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
        LogConfig.from_values(services.logs.broker_defaults, overrides)
    except ConfigValueError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    return num_partitions, overrides


def create_topic(
    services: Services,
    name: str,
    num_partitions: int = -1,
    replication_factor: int = -1,
    configs: Mapping[str, str | None] | None = None,
    assignments: Mapping[int, list[int]] | None = None,
) -> TopicInfo:
    partitions, overrides = resolve_creation(
        services, name, num_partitions, replication_factor, configs or {}, assignments
    )
    if replication_factor == -1:
        replication_factor = services.config["default.replication.factor"]
    return services.metadata.create_topic(
        name, partitions, replication_factor, overrides, assignments
    )


def create_internal_topic(
    services: Services,
    name: str,
    num_partitions: int,
    replication_factor: int,
    configs: dict[str, str],
) -> ErrorCode | None:
    """A coordinator's internal topic, created as any other (``create_topic``) for the
    coordinator runtime, which answers errors rather than raising them: None once created (or
    when another broker created it first), COORDINATOR_NOT_AVAILABLE (retried by clients) when
    it cannot be."""
    try:
        create_topic(services, name, num_partitions, replication_factor, configs)
    except TopicError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.error("cannot create %s: %s", name, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return None


@defer.inlineCallbacks
def wait_for_topics(
    services: Services, names: Iterable[str], done: Callable[[str], bool], timeout_ms: int
):
    """Fires with the names for which ``done`` is still false once the timeout passed (an
    empty list as soon as it holds for all): how cluster-mode admin requests wait for the
    watches to bring their change into this broker's metadata, as Kafka's DelayedCreateTopics,
    DelayedDeleteTopics and DelayedCreatePartitions did."""
    deadline = services.reactor.seconds() + timeout_ms / 1000.0
    pending = list(names)
    while True:
        pending = [name for name in pending if not done(name)]
        if not pending or services.reactor.seconds() >= deadline:
            return pending
        yield task.deferLater(services.reactor, 0.02, lambda: None)


def auto_create(services: Services, name: str) -> TopicInfo | None:
    """Create ``name`` with the broker defaults if ``auto.create.topics.enable`` allows it.
    Returns None when auto-creation is off; raises TopicError for an invalid name."""
    check_name(name)
    if not services.config["auto.create.topics.enable"] or name in INTERNAL_TOPICS:
        return None
    return create_topic(services, name)
