"""Replication throttles (Kafka's ``ReplicationQuotaManager``), used by partition reassignment
(``kafka-reassign-partitions --throttle``).

Two per broker: the leader quota (``leader.replication.throttled.rate``) on the bytes this
broker sends to followers, the follower quota (``follower.replication.throttled.rate``) on
the bytes its fetchers receive, each measured over ``replication.quota.window.num`` windows of
``replication.quota.window.size.seconds`` as Kafka's replication sensors are. A partition is
throttled on this broker when its topic's ``leader.replication.throttled.replicas`` (or
``follower.``) is ``*`` or lists ``<partition>:<this broker id>``, as Kafka's
``TopicConfigHandler.parseThrottledPartitions`` reads them. Callers skip a throttled partition
while ``exceeded()`` and ``record`` what they move for throttled partitions; replicas in the
ISR are never throttled (the caller checks that, as Kafka's ``shouldLeaderThrottle`` and
``shouldFollowerThrottle`` do).

A third, ``replica.alter.log.dirs.io.max.bytes.per.second``, measured over
``alter.log.dirs.replication.quota.window.*``, limits the copying of replicas that move between
this broker's log dirs (``wireserver.replica.alter_log_dirs``), all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from wireserver.quotas.rates import Rate
from wireserver.storage.configdef import LONG_MAX

LEADER = "leader"
FOLLOWER = "follower"
#: Moves of replicas between this broker's log dirs (Kafka's ``ReplicaAlterLogDirsManager``
#: quota): every move counts, whatever the topic's throttled-replicas lists say.
ALTER_LOG_DIRS = "alter.log.dirs"


@lru_cache(maxsize=1024)
def throttled_partitions(entries: Sequence[str], broker_id: int) -> frozenset[int] | None:
    """The partitions ``entries`` throttle on ``broker_id``; None: all of them (``*``)."""
    if list(entries) == ["*"]:
        return None
    partitions = set()
    for entry in entries:
        partition, _, broker = entry.strip().partition(":")
        if broker and int(broker) == broker_id:
            partitions.add(int(partition))
    return frozenset(partitions)


class ReplicationQuota:
    """One side's throttle (``side``: ``leader`` or ``follower``)."""

    def __init__(self, config: Any, node_id: int, side: str, now_ms: Callable[[], int]):
        self.config = config
        self.node_id = node_id
        self.key = f"{side}.replication.throttled.rate"
        self.replicas_attribute = f"{side}_replication_throttled_replicas"
        window = "replication"
        if side == ALTER_LOG_DIRS:
            self.key = "replica.alter.log.dirs.io.max.bytes.per.second"
            window = "alter.log.dirs.replication"
        self.now_ms = now_ms
        self.window_ms = config[f"{window}.quota.window.size.seconds"] * 1000
        self.samples = config[f"{window}.quota.window.num"]
        self.rate = Rate(now_ms())

    @property
    def limit(self) -> int:
        """The rate set for this broker. Kafka's ``BrokerConfigHandler`` updates the
        replication quotas from the broker's own entity only: a cluster-default or a
        ``server.properties`` value is accepted and described, and throttles nothing."""
        value = self.config.dynamic_values(cluster_default=False).get(self.key)
        return LONG_MAX if value is None else int(value)

    def is_throttled(self, partition_log: Any, partition: int) -> bool:
        """Whether the partition's topic throttles it on this broker (Kafka's ``isThrottled``)."""
        entries = getattr(partition_log.config, self.replicas_attribute)
        if not entries:
            return False
        throttled = throttled_partitions(tuple(entries), self.node_id)
        return throttled is None or partition in throttled

    def exceeded(self) -> bool:
        """Kafka's ``isQuotaExceeded``: the measured rate is above the quota now."""
        limit = self.limit
        if limit >= LONG_MAX:
            return False
        measured, _ = self.rate.measure(self.now_ms(), self.window_ms, self.samples)
        return measured > limit

    def record(self, size: int) -> None:
        if size:
            self.rate.record(size, self.now_ms(), self.window_ms, self.samples)


class ReplicationQuotas:
    """The leader and the follower throttle of one broker, and that of its moves between
    log dirs."""

    def __init__(self, config: Any, node_id: int, now_ms: Callable[[], int]):
        self.leader = ReplicationQuota(config, node_id, LEADER, now_ms)
        self.follower = ReplicationQuota(config, node_id, FOLLOWER, now_ms)
        self.alter_log_dirs = ReplicationQuota(config, node_id, ALTER_LOG_DIRS, now_ms)
