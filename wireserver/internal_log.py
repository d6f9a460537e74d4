"""Appends of the coordinators (group and transaction) to their internal topics, on one node and
in a cluster, in one place.

A coordinator appends to the partition of ``__consumer_offsets`` or ``__transaction_state`` it
leads, with that partition's leader epoch (``leader_epoch``), then lets the partition move on
(``after_append``: on one node everything appended is committed; in a cluster the high
watermark follows the ISR), and answers its client once the high watermark has passed the
append (``replicated``), as Kafka appends coordinator records with acks=-1.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional

from twisted.internet import defer

from wireserver.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from wireserver.broker import Broker

log = logging.getLogger(__name__)

#: How long a coordinator's append may wait for the high watermark (Kafka's
#: ``request.timeout.ms`` default, which its transaction coordinator and WriteTxnMarkers use).
REQUEST_TIMEOUT_MS = 30_000


def leader_epoch(broker: "Broker", topic: str, partition: int) -> Optional[int]:
    """The leader epoch to stamp on a coordinator's append (0 on one node), or None when this
    broker does not lead the partition."""
    error, epoch = broker.replicas.check_leader(topic, partition)
    return None if error is not None else epoch


def after_append(broker: "Broker", topic: str, partition: int, partition_log: Any,
                 now_ms: int) -> None:
    """What follows every append by this broker as leader: the high watermark, waking
    fetches, and a flush when one is due (``ReplicaManager.after_append``)."""
    broker.replicas.after_append(topic, partition)


@defer.inlineCallbacks
def wait_for_high_watermark(broker: "Broker", topic: str, partition: int, last_offset: int,
                            timeout_ms: int):
    """Fires with NONE once the high watermark of the partition this broker leads has passed
    ``last_offset``, or with Kafka's error for an acks=-1 append that did not make it:
    NOT_LEADER_OR_FOLLOWER (leadership moved), NOT_ENOUGH_REPLICAS_AFTER_APPEND (the ISR is
    below ``min.insync.replicas``), REQUEST_TIMED_OUT."""
    results = yield broker.replicas.wait_for_replication([(topic, partition, last_offset)],
                                                         timeout_ms)
    return results[(topic, partition)]


@defer.inlineCallbacks
def replicated(broker: "Broker", topic: str, partition: int, timeout_ms: int):
    """For a coordinator: fires with NONE once everything appended so far to ``partition`` is
    below the high watermark, else the error its client gets (Kafka's mapping of a failed
    coordinator append: lost leadership NOT_COORDINATOR, anything else
    COORDINATOR_NOT_AVAILABLE, which clients retry)."""
    partition_log = broker.logs.get_log(topic, partition)
    if partition_log is None:
        return ErrorCode.NOT_COORDINATOR
    status = yield wait_for_high_watermark(broker, topic, partition,
                                           partition_log.log_end_offset - 1, timeout_ms)
    if status == ErrorCode.NONE:
        return ErrorCode.NONE
    if status in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.COORDINATOR_NOT_AVAILABLE


def coordinator_error(broker: "Broker", topic: str, partition: int, owned: set[int],
                      loading: set[int]) -> Optional[ErrorCode]:
    """Whether this broker coordinates the keys of ``partition`` of the internal ``topic``:
    None on one node and for a partition it leads and has loaded, COORDINATOR_LOAD_IN_PROGRESS
    while it loads it, NOT_COORDINATOR otherwise."""
    cluster = broker.cluster
    if not broker.config.get("zookeeper.connect"):
        return None
    if partition in loading:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    if (partition not in owned or cluster is None
            or not broker.replicas.is_leader(topic, partition)):
        return ErrorCode.NOT_COORDINATOR
    return None


def ensure_internal_topic(broker: "Broker", name: str, num_partitions: int, replication: int,
                          replication_key: str, configs: dict[str, str]
                          ) -> Optional[ErrorCode]:
    """Create the internal topic ``name`` on first use (through ZooKeeper in a cluster).
    None once it exists here; COORDINATOR_NOT_AVAILABLE while it cannot be created (as Kafka:
    ``replication`` exceeds the live brokers) or, in a cluster, until its partitions reach
    this broker."""
    from wireserver.topics import TopicError, create_topic

    cluster = broker.cluster
    if cluster is None and broker.config.get("zookeeper.connect"):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE  # the cluster view is not there yet
    if cluster is not None and name in cluster.topics:
        return None if name in broker.logs.topics else ErrorCode.COORDINATOR_NOT_AVAILABLE
    if cluster is None and name in broker.logs.topics:
        return None
    live_brokers = len(cluster.brokers) if cluster is not None else 1
    if replication > live_brokers:
        log.warning("cannot create %s: %s=%d but %d live broker(s)", name, replication_key,
                    replication, live_brokers)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    try:
        create_topic(broker, name, num_partitions, replication, configs)
    except TopicError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.error("cannot create %s: %s", name, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if cluster is not None:
        # Its partitions get leaders (and their coordinators load) shortly.
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return None
