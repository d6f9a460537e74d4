"""A broker: configuration, partition logs, listeners and housekeeping, wired together.

``Broker`` provides what handlers reach through ``RequestContext.services``
(``wireserver.services``); ``serve_forever`` is the
``wireserver serve`` command's main loop. Time comes from the injected reactor, never from
``time.time()``.

A log dir failure (an I/O error in any write, ``storage.log_dir_failure``) is handled as
Kafka's ``ReplicaManager.handleLogDirFailure``: the dir's partitions answer
KAFKA_STORAGE_ERROR, and once every log dir has failed the broker logs "Shutdown broker because
all log dirs in ... have failed" and halts (``halt``: ``os._exit(1)``, no controlled shutdown,
no flush), so that other brokers take its partitions over when its ZooKeeper session ends.
With other dirs left, a cluster broker tells the controller, which moves the leadership of the
failed dir's partitions away (``ClusterNode.log_dir_failed``).
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import uuid
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from twisted.internet import defer, task, threads

from wireserver import apis
from wireserver.config import BrokerConfig, Listener
from wireserver.connection_limits import ConnectionLimits
from wireserver.dynamic_configs import DynamicBrokerConfigs
from wireserver.features import Features
from wireserver.fetch_sessions import FetchSessionCache
from wireserver.groups import GroupCoordinator
from wireserver.groups.configs import GroupConfigs
from wireserver.heap import release_free_heap
from wireserver.log_cleaner import LogCleaner
from wireserver.metadata import NO_LEADER, LocalMetadata
from wireserver.metrics import BrokerMetrics
from wireserver.ops.listener import OpsListener
from wireserver.producer_ids import ProducerIdManager
from wireserver.protocol.served import SERVED
from wireserver.purgatory import Purgatory
from wireserver.quotas import Quotas
from wireserver.quotas.replication import ReplicationQuotas
from wireserver.quotas.store import ClientQuotaStore
from wireserver.replica.alter_log_dirs import AlterLogDirsMover
from wireserver.replica.manager import ReplicaManager
from wireserver.replica.selector import SELECTORS
from wireserver.security.manager import SecurityManager
from wireserver.server import (
    IDLE_CONNECTIONS_CHECK_MS,
    KafkaServerFactory,
    close_idle_connections,
    configure_listening_socket,
)
from wireserver.share.dlq import DeadLetterQueue
from wireserver.share.manager import SharePartitionManager
from wireserver.share.state import ShareStateStore
from wireserver.storage.manager import LogManager
from wireserver.topics import create_internal_topic
from wireserver.topics import create_topic as create_named_topic
from wireserver.txn import TransactionCoordinator

if TYPE_CHECKING:
    from wireserver.controls.rules import BrokerControls

log = logging.getLogger(__name__)

#: How long the DLQ partition's leader may hold a dead-letter Produce for its ISR (Kafka's
#: ``request.timeout.ms`` default)
DEAD_LETTER_TIMEOUT_MS = 30_000

#: Kafka's producer.id.expiration.check.interval.ms default (not a wireserver config key yet).
PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000
#: How long the reactor keeps running between the decision to halt and the halt: the responses
#: already made (the KAFKA_STORAGE_ERROR of the request that hit the failure) are written out
#: to their clients meanwhile, as Kafka's handler threads answer while its log dir failure
#: handler thread halts the JVM.
HALT_GRACE_S = 0.5


def exit_process() -> None:
    """Kafka's ``Exit.halt(1)``: end the process now, without flushing or closing anything
    (no atexit hooks, no reactor shutdown triggers), so nothing more reaches the disk."""
    os._exit(1)


class Broker:
    """One wireserver node."""

    # Made by ``start()``, before the first request can arrive: typed as always there. Code
    # that may run on a broker whose start failed half-way asks ``getattr(broker, name, None)``.
    logs: LogManager
    replicas: ReplicaManager
    groups: GroupCoordinator
    group_configs: GroupConfigs
    dynamic_configs: DynamicBrokerConfigs
    features: Features
    txn: TransactionCoordinator
    producer_ids: ProducerIdManager
    security: SecurityManager
    quotas: Quotas
    metadata: LocalMetadata
    fetch_sessions: FetchSessionCache
    cleaner: LogCleaner
    log_dir_mover: AlterLogDirsMover

    def __init__(
        self, config: BrokerConfig, reactor: Any = None, halt: Callable[[], None] = exit_process
    ):
        """``halt`` ends the broker when all its log dirs have failed: the process by default;
        a broker that shares its process with tests is given ``stop_without_flush``-like
        actions instead."""
        if reactor is None:
            from twisted.internet import reactor as global_reactor

            reactor = global_reactor
        self.config = config
        #: the reactor's clock as the operations listener reads it: never moved by controls
        self.wall_reactor = reactor
        #: the test controls (``controls.enable``; ``wireserver.controls.rules``), else None
        self.controls: BrokerControls | None = None
        if config["controls.enable"]:
            from wireserver.controls.clock import BrokerClock

            reactor = BrokerClock(reactor)
        self.reactor = reactor
        self.registry = SERVED
        apis.check_handlers(self.registry)
        self.node_id = config.node_id
        self.cluster_id: str = ""
        self.connections: set = set()
        #: open connections by address and listener, against max.connections and the rest
        self.connection_limits = ConnectionLimits(
            config, config.inter_broker_listener.name, reactor
        )
        self.ports: list = []
        self.advertised: list[Listener] = []
        self.purgatory = Purgatory(reactor)
        #: what is counted and timed as the broker serves (``wireserver.ops`` exports it)
        self.metrics = BrokerMetrics(enabled=config["metrics.enable"])
        # Cluster mode (``zookeeper.connect`` set): a wireserver.cluster.node.ClusterNode, this
        # broker's part in the ZooKeeper cluster (everything else asks ``metadata``).
        self.cluster: Any = None
        #: the operations HTTP listener (``metrics.listeners``; binds nothing when empty)
        self.ops = OpsListener(self)
        if config["controls.enable"]:
            from wireserver.controls.rules import BrokerControls

            self.controls = BrokerControls(self, reactor)
        self._flushing: set = set()
        self._loops: list[task.LoopingCall] = []
        self.started = False
        self.halt = halt
        self.halting = False

    def advertised_listener(self, name: str) -> Listener:
        """The advertised listener named ``name`` (the one a client connected through), or the
        first one: where this broker tells that client to find it."""
        return next(
            (listener for listener in self.advertised if listener.name == name), self.advertised[0]
        )

    # -- time -------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return int(self.reactor.seconds() * 1000)

    def _high_watermark(self, topic: str, partition: int) -> defer.Deferred:
        """The partition's high watermark: this broker's when it leads it, else its leader's
        (asked over the share-state channel), None when it cannot be had."""
        leader = self.metadata.leader(topic, partition)
        if leader == self.node_id:
            partition_log = self.logs.get_log(topic, partition)
            return defer.succeed(None if partition_log is None else partition_log.high_watermark)
        if leader == NO_LEADER or self.share_state.remote is None:
            return defer.succeed(None)
        return self.share_state.remote.high_watermark(leader, topic, partition)

    def _dead_letter_append(self, topic: str, index: int, batch: bytes, config: Any) -> Any:
        """A share group's dead-letter batch: appended here when this broker leads the DLQ
        partition (or is alone), else sent to its leader (a Deferred)."""
        remote = self.share_state.remote
        if remote is None or self.metadata.leader(topic, index) == self.node_id:
            return self.replicas.append_records(topic, index, batch, -1, config)
        return remote.produce(self.metadata.leader, topic, index, batch, DEAD_LETTER_TIMEOUT_MS)

    def _topic_id(self, topic: str) -> uuid.UUID | None:
        info = self.logs.topics.get(topic)
        return None if info is None else info.topic_id

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Open the logs (recovering after an unclean stop), then listen. Synchronous: when it
        returns, the listeners accept connections and ``advertised`` holds the real ports. A
        start that fails closes the logs it opened, without writing, so that their dirs are
        not left locked (``storage.dir_lock``) for the next start in this process."""
        try:
            self._start()
        except BaseException:
            if getattr(self, "logs", None) is not None:
                self.logs.close_files()
            raise

    def _start(self) -> None:
        for directory in self.config.log_dirs:
            os.makedirs(directory, exist_ok=True)
        self.cluster_id = self._load_or_create_cluster_id()
        clustered = bool(self.config.get("zookeeper.connect"))
        self.dynamic_configs = DynamicBrokerConfigs(
            self.config, self.node_id, self.config.log_dirs[0]
        )
        if not clustered:  # before the logs open, so that they start with its topic defaults
            self.dynamic_configs.load()  # (in cluster mode ZooKeeper's, once it is reached)
        # After the dynamic layers: a listener's key store set at runtime is its store.
        self.security = SecurityManager(self.config, self.now_ms)
        self.dynamic_configs.on_change.append(self.security.follow_tls)
        self.logs = LogManager(
            self.config.log_dirs,
            self.config.topic_defaults(),
            self.now_ms,
            self.config["producer.id.expiration.ms"],
        )
        # A cluster broker keeps logs for its replicas only (``ClusterNode._ensure_local``).
        self.logs.hosts_every_partition = not clustered
        self.producer_ids = ProducerIdManager(self.config.log_dirs[0], failures=self.logs.failures)
        self.logs.failures.listeners.append(
            lambda log_dir: self.reactor.callFromThread(self._log_dir_failed, log_dir)
        )
        self.logs.load()
        self.dynamic_configs.on_change.append(
            lambda: self.logs.update_broker_defaults(self.config.topic_defaults())
        )
        partition_logs = [partition_log for _, partition_log in self.logs.logs()]
        log.info(
            "loaded %d partition logs; %d segments recovered (re-scanned)",
            len(partition_logs),
            sum(pl.recovered_segments for pl in partition_logs),
        )
        self.replicas = ReplicaManager(
            self.node_id,
            self.logs,
            self.purgatory,
            self.now_ms,
            self.flush_in_background,
            local_leadership=not clustered,
        )
        self.replicas.replica_selector = SELECTORS.get(
            self.config.get("replica.selector.class") or ""
        )
        rack = self.config.get("broker.rack")
        metadata_parts = (
            self.node_id,
            self.logs,
            self.replicas,
            self.purgatory,
            self.advertised_listener,
            rack,
        )
        if clustered:
            from wireserver.cluster.metadata import ZkMetadata
            from wireserver.cluster.node import ClusterNode

            # Made now, started once the listeners are bound (it registers their ports).
            self.cluster = ClusterNode(self)
            self.metadata = ZkMetadata(self.cluster, *metadata_parts)
        else:
            self.metadata = LocalMetadata(*metadata_parts)
            # One node leads every partition: everything in the logs is committed.
            for (topic, index), _ in self.logs.logs():
                self.replicas.partition(topic, index)
        self.fetch_sessions = FetchSessionCache(
            self.config["max.incremental.fetch.session.cache.slots"]
        )
        self.group_configs = GroupConfigs(self.config, self.config.log_dirs[0])
        self.features = Features(self.registry, self.config.log_dirs[0])
        self.quotas = Quotas(
            ClientQuotaStore(self.config.log_dirs[0]),
            self.config["quota.window.size.seconds"] * 1000,
            self.config["quota.window.num"],
            self.config["controller.quota.window.size.seconds"] * 1000,
            self.config["controller.quota.window.num"],
        )
        self.replication_quotas = ReplicationQuotas(self.config, self.node_id, self.now_ms)
        create_topic = partial(create_internal_topic, self)
        self.groups = GroupCoordinator(
            self,
            reactor=self.reactor,
            create_topic=create_topic,
            group_configs=self.group_configs,
        )
        self.groups.start()
        self.metadata.topic_deleted.append(self.groups.drop_offsets_of_topic)
        # The share-partitions this broker leads (KIP-932). A member gives back the records
        # it holds when its share session ends (final epoch, or its connection closing), not
        # when it leaves or is fenced from the group: as Kafka, whose share group listener
        # hears only from the share session cache (a client that leaves the group and then
        # sends its final acknowledgements still has them applied).
        self.share_state = ShareStateStore(self, create_topic, self.reactor)
        if clustered:
            from wireserver.cluster.share_state import ShareStateChannel

            # The share coordinators of other brokers, reached with the state RPCs.
            self.share_state.remote = ShareStateChannel(
                self.reactor, self.node_id, self.config.inter_broker_security, self.metadata
            )
        self.share_state.start()
        self.share = SharePartitionManager(
            self.reactor,
            self.group_configs.value,
            self.purgatory.notify,
            lambda: self.config["group.share.max.share.sessions"],
            self.share_state,
            self._topic_id,
            self.replicas.check_leader,
            DeadLetterQueue(
                self.group_configs.value,
                self.config,
                self.logs,
                self._dead_letter_append,
                lambda name, configs: create_named_topic(self, name, configs=configs),
                self.now_ms,
            ),
            self._high_watermark,
        )
        self.metadata.topic_deleted.append(self.share.forget_topic)
        self.metadata.topic_deleted.append(self.metrics.forget_topic)
        self.txn = TransactionCoordinator(
            self,
            reactor=self.reactor,
            create_topic=create_topic,
            # Asked at each use: a cluster replaces ``producer_ids`` once it has started.
            new_producer_id=lambda: self.producer_ids.generate(),
            groups=self.groups.offsets,
        )
        self.txn.start()
        bound = self._listen(self.config.listeners)
        by_name = {listener.name: listener for listener in bound}
        self.advertised = []
        for listener in self.config.advertised_listeners:
            if listener.port == 0 and listener.name in by_name:
                listener = listener.with_port(by_name[listener.name].port)
            self.advertised.append(listener)
        self.bound = bound
        if self.cluster is not None:
            self.cluster.start()
        self.cleaner = LogCleaner(self.logs, self.config, self.reactor, self.now_ms)
        self.cleaner.start()
        self.log_dir_mover = AlterLogDirsMover(
            self.logs,
            self.replication_quotas.alter_log_dirs,
            self.reactor,
            cleaning=lambda tp: tp in self.cleaner.in_progress,
        )
        self.log_dir_mover.wake()  # moves a restart interrupted
        self.metadata.topic_deleted.append(self.cleaner.forget_topic)
        self._every(self.config["log.retention.check.interval.ms"], self._apply_retention)
        self._every(PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, self._remove_expired_producers)
        self._every(IDLE_CONNECTIONS_CHECK_MS, self._check_connections)
        if self.security.tokens.enabled:
            self._every(
                self.config["delegation.token.expiry.check.interval.ms"],
                self.security.tokens.remove_expired,
            )
        scheduler_ms = self.config["log.flush.scheduler.interval.ms"]
        # Kafka's default scheduler interval is Long.MAX, which leaves flush.ms inert; we check
        # once a second instead, so a topic's flush.ms is honoured without extra settings.
        self._every(scheduler_ms if scheduler_ms < 2**62 else 1000, self._flush_due_logs)
        self.ops.start()
        self.started = True

    def _listen(self, listeners: list[Listener]) -> list[Listener]:
        """Listen on each Kafka listener (into ``ports``); the listeners with their real
        ports."""
        bound = []
        for listener in listeners:
            factory = KafkaServerFactory(self, listener.name)
            interface = "" if listener.all_interfaces else listener.host
            port = self.security.listen(self.reactor, listener, factory, interface)
            configure_listening_socket(port, self.config["socket.receive.buffer.bytes"])
            self.ports.append(port)
            self.connection_limits.listen(listener.name, port)
            bound.append(listener.with_port(port.getHost().port))
        return bound

    def listeners_down(self) -> defer.Deferred:
        """The ``down`` control: stop listening on every Kafka listener and close every client
        connection, as a broker that went away does; logs, groups and transactions stay as
        they are and the operations listener stays up. Fires once the ports are closed."""
        ports, self.ports = self.ports, []
        self.connection_limits.forget_ports()
        closed = defer.gatherResults([defer.maybeDeferred(port.stopListening) for port in ports])
        for connection in list(self.connections):
            connection.drop("the broker's listeners are down (controls)")
        return closed

    def listeners_up(self) -> None:
        """Undo of ``listeners_down``: listen again on the ports bound at start."""
        if not self.ports:
            self._listen(self.bound)

    def _check_connections(self) -> None:
        """Close idle connections (``connections.max.idle.ms``, unless -1) and those past
        ``max.connections`` (``ConnectionLimits.close_excess``)."""
        max_idle_ms = self.config["connections.max.idle.ms"]
        if max_idle_ms >= 0:
            close_idle_connections(self.connections, max_idle_ms / 1000.0)
        self.connection_limits.close_excess(self.connections)

    def _every(self, interval_ms: int, func: Callable[[], Any]) -> None:
        if interval_ms <= 0 or interval_ms >= 2**62:
            return
        loop = task.LoopingCall(func)
        loop.clock = self.reactor
        loop.start(interval_ms / 1000.0, now=False).addErrback(
            lambda failure: log.error("housekeeping failed: %s", failure.getTraceback())
        )
        self._loops.append(loop)

    def _log_dir_failed(self, log_dir: str) -> None:
        """On the reactor thread, once per failed dir (Kafka's ``handleLogDirFailure``). Its
        partitions already answer KAFKA_STORAGE_ERROR (``Partition.offline``) and its logs
        refuse every write; with no live dir left the broker halts after ``HALT_GRACE_S``."""
        offline = sorted(
            f"{topic}-{index}"
            for (topic, index), partition_log in self.logs.logs()
            if partition_log.log_dir == log_dir
        )
        log.warning(
            "Stopping serving replicas in dir %s because the log directory has failed: %s",
            log_dir,
            ", ".join(offline),
        )
        if self.logs.live_log_dirs and self.cluster is not None:
            # others live: the controller moves the partitions' leadership away
            in_dir = [
                tp for tp, partition_log in self.logs.logs() if partition_log.log_dir == log_dir
            ]
            self.cluster.log_dir_failed(log_dir, in_dir)
        if self.logs.live_log_dirs or self.halting:
            return
        self.halting = True
        log.critical(
            "Shutdown broker because all log dirs in %s have failed", ", ".join(self.logs.log_dirs)
        )
        self.reactor.callLater(HALT_GRACE_S, self.halt)

    def stop_without_flush(self) -> defer.Deferred:
        """A halt that leaves the process running (tests in one process): listeners,
        connections, timers, ZooKeeper and the coordinators stop at once, and the log files
        are closed without a flush, checkpoint or clean-shutdown marker, so the next start
        recovers the logs as after ``os._exit``. A Deferred that fires once the listening
        sockets are closed (Twisted closes them on a later turn of the reactor): only then is
        the port free for a start that binds it again, as it is once a process has exited."""
        self.started = False
        self._stop_loops()
        if self.cluster is not None:
            self.cluster.stop()
        self.connection_limits.forget_ports()
        closing = [defer.maybeDeferred(port.stopListening) for port in self.ports]
        self.ports.clear()
        closing.append(self.ops.stop())
        for connection in list(self.connections):
            connection.transport.abortConnection()
        self._stop_services()
        self.logs.close_files()
        return defer.gatherResults(closing, consumeErrors=True)

    def _stop_loops(self) -> None:
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops.clear()

    def _stop_services(self) -> None:
        for service in ("log_dir_mover", "cleaner", "groups", "share", "share_state", "txn"):
            if getattr(self, service, None) is not None:
                getattr(self, service).stop()

    @defer.inlineCallbacks
    def stop(self):
        """Stop listening, drop connections, flush and checkpoint every log (so that the next
        start does not re-scan anything). In cluster mode the controlled shutdown comes first:
        leadership goes to other replicas while clients can still be told so."""
        if not self.started:
            return
        self.started = False
        if self.cluster is not None:
            try:
                yield self.cluster.controlled_shutdown()
            except Exception:  # noqa: BLE001 - stop anyway, as after a failed attempt
                log.exception("controlled shutdown failed")
        self._stop_loops()
        if self.cluster is not None:
            self.cluster.stop()
        self.connection_limits.forget_ports()
        yield defer.gatherResults(
            [defer.maybeDeferred(port.stopListening) for port in self.ports] + [self.ops.stop()]
        )
        self.ports.clear()
        for connection in list(self.connections):
            connection.lose_connection()
        self._stop_services()
        if getattr(self, "logs", None) is not None:
            self.logs.close()

    def _load_or_create_cluster_id(self) -> str:
        """``cluster.id`` from the config, else from ``meta.properties`` in the first log dir
        (as Kafka keeps it), else a new random one that is written there."""
        path = os.path.join(self.config.log_dirs[0], "meta.properties")
        stored: dict[str, str] = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    key, sep, value = line.strip().partition("=")
                    if sep and not key.startswith("#"):
                        stored[key] = value
        cluster_id = self.config.cluster_id or stored.get("cluster.id")
        if not cluster_id:
            import base64

            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if stored.get("cluster.id") != cluster_id or stored.get("node.id") != str(self.node_id):
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(
                    f"#wireserver\nversion=1\ncluster.id={cluster_id}\nnode.id={self.node_id}\n"
                )
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        return cluster_id

    # -- housekeeping -----------------------------------------------------------------------

    def _apply_retention(self) -> None:
        self.logs.apply_retention(self.now_ms())

    def _remove_expired_producers(self) -> None:
        self.logs.remove_expired_producers(self.now_ms(), self.config["producer.id.expiration.ms"])

    def _flush_due_logs(self) -> None:
        """fsync logs whose flush.messages / flush.ms is due."""
        self.flush_in_background(self.logs.logs_due_for_flush(self.now_ms()))

    def flush_in_background(self, due: list) -> defer.Deferred | None:
        """fsync ``due`` logs on the reactor's thread pool, never on the reactor thread, and
        at most one flush per log at a time."""
        due = [partition_log for partition_log in due if partition_log not in self._flushing]
        if not due:
            return None
        self._flushing.update(due)

        def flush_all() -> None:
            for partition_log in due:
                partition_log.flush()

        def done(result: Any) -> Any:
            self._flushing.difference_update(due)
            return result

        flushed = threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(), flush_all)
        flushed.addBoth(done)
        flushed.addErrback(lambda failure: log.error("flush failed: %s", failure.getTraceback()))
        return flushed


#: Net new container objects (allocations less deallocations) that set off a collection of
#: the young generation in ``wireserver serve``; CPython's default is 700. One request can
#: hold far more than 700 objects alive at once (a Fetch of 10,000 partitions some 60,000
#: until its answer is built), and with the default such a request set off dozens of young
#: collections while its objects lived, each moving them up a generation, so that full
#: collections of every object of every partition followed every request or two: half the
#: broker's CPU in a Fetch of 10,000 partitions, a quarter at 1,000 (benchmarks/results.md).
#: With this threshold collections come with real growth (new topics, cyclic garbage), not
#: with one request's temporaries. Cyclic garbage may wait for up to this many objects before
#: it is freed; 80,000 error answers in a row left the process's RSS where it was (38 MiB).
YOUNG_COLLECTION_THRESHOLD = 100_000


def serve_forever(config: BrokerConfig) -> int:
    """Run one broker until SIGTERM/SIGINT, then shut down cleanly. Prints one ready line."""
    from twisted.internet import reactor as installed

    # The installed reactor: Twisted's stubs type the module attribute by its interfaces,
    # whose methods mypy reads without their implementation's signatures.
    reactor: Any = installed

    broker = Broker(config, reactor)
    try:
        broker.start()
    except Exception as exc:  # noqa: BLE001 - report any start failure as a message
        log.error("wireserver failed to start: %s", exc, exc_info=True)
        print(f"wireserver: failed to start: {exc}", file=sys.stderr)
        return 1
    reactor.addSystemEventTrigger("before", "shutdown", broker.stop)
    endpoints = " ".join(str(listener) for listener in broker.advertised)
    for url in broker.ops.urls:  # before the ready line, so whoever waits for it knows both
        print(f"wireserver ops: {url}", flush=True)
    print(
        f"wireserver ready: node {broker.node_id} cluster {broker.cluster_id} "
        f"listening on {endpoints}",
        flush=True,
    )
    log.info("ready: listening on %s", endpoints)
    # Everything allocated so far (modules, message classes, loaded logs) lives as long as the
    # process: move it out of the collector's sight so full collections stay short and do not
    # show up as latency spikes. Collect first, and hand the garbage of start-up back to the
    # operating system.
    gc.collect()
    release_free_heap()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD)
    reactor.run(installSignalHandlers=True)
    return 0
