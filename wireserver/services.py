"""What handlers and the topic functions may use of a broker: its identity, config, clock, the
partition layer, the cluster metadata and the coordinators — and nothing of its lifecycle.

A Protocol: ``wireserver.broker.Broker`` provides it, and nothing below the broker imports the
broker. A handler reaches it as ``ctx.services``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from wireserver.config import BrokerConfig, Listener
    from wireserver.connection_limits import ConnectionLimits
    from wireserver.controls.rules import BrokerControls
    from wireserver.dynamic_configs import DynamicBrokerConfigs
    from wireserver.features import Features
    from wireserver.fetch_sessions import FetchSessionCache
    from wireserver.groups.configs import GroupConfigs
    from wireserver.groups.coordinator import GroupCoordinator
    from wireserver.metadata import LocalMetadata
    from wireserver.metrics import BrokerMetrics
    from wireserver.producer_ids import ProducerIdManager
    from wireserver.protocol.registry import ApiRegistry
    from wireserver.purgatory import Purgatory
    from wireserver.quotas import Quotas
    from wireserver.quotas.replication import ReplicationQuotas
    from wireserver.replica.alter_log_dirs import AlterLogDirsMover
    from wireserver.replica.manager import ReplicaManager
    from wireserver.security.manager import SecurityManager
    from wireserver.share.manager import SharePartitionManager
    from wireserver.storage.manager import LogManager
    from wireserver.txn.coordinator import TransactionCoordinator


class Services(Protocol):
    node_id: int
    cluster_id: str
    config: BrokerConfig
    #: the Twisted reactor: ``seconds()`` for time, ``callLater`` for timers
    reactor: Any
    #: every API this broker serves, at which versions
    registry: ApiRegistry
    logs: LogManager
    #: the partition layer: appends as leader, follower state, high watermarks
    replicas: ReplicaManager
    purgatory: Purgatory
    #: the incremental fetch sessions (KIP-227) of this broker's consumers and followers
    fetch_sessions: FetchSessionCache
    #: the brokers, topics and partitions of the cluster, and topic changes
    metadata: LocalMetadata
    groups: GroupCoordinator
    group_configs: GroupConfigs
    #: the share-partitions and share sessions of share groups (KIP-932)
    share: SharePartitionManager
    #: the dynamic broker config layers (this broker's and the cluster default), persisted
    dynamic_configs: DynamicBrokerConfigs
    #: the supported and finalized feature levels (``at_least("transaction.version", 2)``)
    features: Features
    txn: TransactionCoordinator
    producer_ids: ProducerIdManager
    security: SecurityManager
    #: the client quotas set and the rates measured against them (``wireserver.quotas``)
    quotas: Quotas
    #: the reassignment throttles (``wireserver.quotas.replication``)
    replication_quotas: ReplicationQuotas
    #: copies replicas moving between this broker's log dirs (AlterReplicaLogDirs)
    log_dir_mover: AlterLogDirsMover
    #: the counters and timings Kafka's MBeans hold (``wireserver.metrics``)
    metrics: BrokerMetrics
    #: the open client connections (``wireserver.server``), which the broker drops on stop
    connections: set[Any]
    #: the open connections counted against max.connections and max.connections.per.ip
    connection_limits: ConnectionLimits
    #: the test controls (``controls.enable``: injected errors, latency, ...), else None
    controls: BrokerControls | None

    def now_ms(self) -> int: ...

    def advertised_listener(self, name: str) -> Listener: ...
