"""A broker's membership in a ZooKeeper cluster (``zookeeper.connect`` set).

``ClusterNode`` keeps the broker's view of the cluster, read from ZooKeeper and refreshed by
watches: live brokers (``/brokers/ids``), the controller (``/controller``), topic assignments
(``/brokers/topics/<t>``) and every partition's state (leader, leader epoch, ISR). From that
state it makes this broker leader or follower of each partition it replicates. As leader it
tracks each follower's log end offset (the offset of its fetches), advances the high watermark
to the minimum over the ISR, and shrinks and expands the ISR (a conditional write of the state
znode, as Kafka's ZooKeeper-era ``Partition.maybeShrinkIsr``/``maybeExpandIsr`` did). As
follower it fetches from the leader (``wireserver.cluster.fetcher``). A topic whose
assignment disappears (DeleteTopics) loses its replicas and logs here; one whose assignment
grows (CreatePartitions) gains the new partitions; topic config, dynamic broker config and
SCRAM credential changes arrive through ``wireserver.cluster.config_changes``.

A log dir that fails while others live (Kafka's ``ReplicaManager.handleLogDirFailure``): the
broker stops leading and fetching its replicas there, lists them in its ephemeral
``/wireserver/offline_replicas/<id>`` and creates Kafka's ``/log_dir_event_notification``
event. Every broker reads the lists again on each event (and on each change of the live
brokers, since a list goes with its broker's session): a replica listed is offline, as one on
a dead broker, for Metadata and for the controller, which elects other leaders for the
partitions it led and takes it out of their ISRs (Kafka's ``onBrokerLogDirFailure``). A restart
starts without the list, so the replicas come back, catch up and rejoin the ISRs.

kazoo runs watch callbacks on its own thread; every one is brought back to the reactor with
``callFromThread``. ZooKeeper reads and writes made from the reactor thread are synchronous:
ZooKeeper is on the local network and these are rare (membership and leadership changes, ISR
changes), never per request.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet import defer, task

from wireserver.cluster import zkdata as zd
from wireserver.cluster.config_changes import ConfigChangeListener
from wireserver.cluster.fetcher import FetcherHost, ReplicaFetcher
from wireserver.replica.manager import scala_option
from wireserver.storage.manager import TopicTable

if TYPE_CHECKING:
    from wireserver.config import Listener
    from wireserver.dynamic_configs import DynamicBrokerConfigs
    from wireserver.features import Features
    from wireserver.groups.configs import GroupConfigs
    from wireserver.metadata import LocalMetadata
    from wireserver.producer_ids import ProducerIdManager
    from wireserver.purgatory import Purgatory
    from wireserver.quotas import Quotas
    from wireserver.replica.manager import ReplicaManager
    from wireserver.security.manager import SecurityManager

log = logging.getLogger(__name__)

TP = tuple[str, int]


class InconsistentClusterId(RuntimeError):
    """``zookeeper.connect`` leads to another cluster than the one this broker's data belongs
    to (Kafka's InconsistentClusterIdException): the broker does not start."""


def split_chroot(connect: str) -> tuple[str, str]:
    slash = connect.find("/")
    if slash < 0:
        return connect, ""
    chroot = connect[slash:].rstrip("/")
    return connect[:slash], chroot


class NodeHost(FetcherHost, Protocol):
    """What the cluster code uses of the broker it runs in (``wireserver.broker.Broker``, which
    makes the ``ClusterNode``, has all of it): typed so, this package does not import the
    broker. The node sets ``cluster_id`` (the cluster's, adopted) and ``producer_ids`` (blocks
    allocated in ZooKeeper). A topic gone from ZooKeeper is deleted here through the
    cluster ``metadata`` (``LocalMetadata.delete_local``), as any deletion on this broker."""

    cluster_id: str
    advertised: list[Listener]
    replicas: ReplicaManager
    purgatory: Purgatory
    security: SecurityManager
    producer_ids: ProducerIdManager
    group_configs: GroupConfigs
    dynamic_configs: DynamicBrokerConfigs
    quotas: Quotas
    features: Features
    metadata: LocalMetadata


class ClusterNode:
    def __init__(self, broker: NodeHost):
        self.broker = broker
        self.reactor = broker.reactor
        self.node_id = broker.node_id
        self.zk: Any = None
        self.brokers: dict[int, zd.BrokerInfo] = {}
        self.broker_czxids: dict[int, int] = {}
        self.controller_id = -1
        self.controller: Any = None
        # Kafka's ReplicaManager IsrShrinksPerSec / IsrExpandsPerSec and the controller's
        # UncleanLeaderElectionsPerSec (kept here: controllers come and go with the election)
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.unclean_leader_elections = 0
        #: ZooKeeper's topics by name, and by id (``by_id``)
        self.topics: TopicTable[zd.TopicAssignment] = TopicTable()
        self.states: dict[TP, zd.PartitionState] = {}
        self.following: dict[TP, int] = {}
        # Replicas in failed log dirs, by broker (every broker's, read from ZooKeeper), and
        # this broker's own failed dirs with the replicas they held.
        self.offline_replicas: dict[int, set[TP]] = {}
        self._failed_dirs: dict[str, set[TP]] = {}
        self.fetchers: dict[int, ReplicaFetcher] = {}
        # Names with a watch on their assignment / (topic, partition)s with a watch on their
        # state: kazoo watches outlive a deletion and see a re-creation, so each is set once.
        self._assignment_watched: set[str] = set()
        self._state_watched: set[TP] = set()
        self._strays_checked = False
        self._created_cluster = False  # this broker wrote /cluster/id (a new ZooKeeper tree)
        self.config_changes = ConfigChangeListener(self._from_zk)
        self.config_changes.add("topics", self._apply_topic_config)
        self.lag_max_ms = broker.config["replica.lag.time.max.ms"]
        self._loops: list[task.LoopingCall] = []
        self._session_lost = False
        self.stopped = False
        self.shutting_down = False  # controlled shutdown under way: follow nothing

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        from kazoo.client import KazooClient, KazooState

        config = self.broker.config
        hosts, chroot = split_chroot(config["zookeeper.connect"])
        timeout_ms = config["zookeeper.session.timeout.ms"]
        connect_ms = config.get("zookeeper.connection.timeout.ms") or timeout_ms
        if chroot:
            bootstrap = KazooClient(hosts=hosts, timeout=connect_ms / 1000.0)
            bootstrap.start(timeout=connect_ms / 1000.0)
            bootstrap.ensure_path(chroot)
            bootstrap.stop()
            bootstrap.close()
        self.zk = KazooClient(hosts=hosts + chroot, timeout=timeout_ms / 1000.0)
        self.zk.start(timeout=connect_ms / 1000.0)
        for path in zd.PERSISTENT_PATHS:
            self.zk.ensure_path(path)
        try:
            self._adopt_cluster_id()
        except InconsistentClusterId:
            self.zk.stop()
            self.zk.close()
            raise
        # the dynamic broker configs (/config/brokers) first: everything after may read them
        from wireserver.cluster.broker_configs import ZkBrokerConfigs

        ZkBrokerConfigs(self.zk, self.broker.dynamic_configs, self.node_id).start(
            self.config_changes
        )
        from wireserver.cluster.producer_ids import ZkProducerIdManager

        self.broker.producer_ids = ZkProducerIdManager(self.zk, self.node_id)
        authorizer = getattr(self.broker.security, "authorizer", None)
        if authorizer is not None:  # ACLs live in ZooKeeper, shared by every broker
            from wireserver.cluster.acls import ZkAclStore

            ZkAclStore(self.zk, authorizer, self._from_zk).start()
        # SCRAM credentials too (/config/users), followed through /config/changes
        from wireserver.cluster.scram_credentials import ZkScramCredentials

        ZkScramCredentials(self.zk, self.broker.security.scram).start(self.config_changes)
        # and client quotas (/config/users, /config/clients, /config/ips)
        from wireserver.cluster.client_quotas import ZkClientQuotas

        ZkClientQuotas(self.zk, self.broker.quotas.store).start(self.config_changes)
        # and delegation tokens (/delegation_token), followed through their own notifications
        from wireserver.cluster.delegation_tokens import ZkDelegationTokens

        ZkDelegationTokens(self.zk, self.broker.security.tokens, self._from_zk).start()
        replicas = self.broker.replicas
        replicas.isr_writer = self.write_isr
        replicas.live_brokers = lambda: self.brokers
        replicas.topic_known = lambda name: name in self.topics
        replicas.partition_known = lambda name, index: (
            index in getattr(self.topics.get(name), "replicas", ())
        )
        # and group configs (/config/groups)
        from wireserver.cluster.group_configs import ZkGroupConfigs

        ZkGroupConfigs(self.zk, self.broker.group_configs).start(self.config_changes)
        # and the finalized feature levels (/feature)
        from wireserver.cluster.features import ZkFeatures

        ZkFeatures(self.zk, self.broker.features).start(self._from_zk)
        self._clear_offline_replicas()
        self._register()

        def on_state(state: Any) -> None:
            if state == KazooState.LOST:
                self._session_lost = True
            elif state == KazooState.CONNECTED and self._session_lost:
                self._session_lost = False
                self.reactor.callFromThread(self._after_session_loss)

        self.zk.add_listener(on_state)
        self.zk.ChildrenWatch(zd.LOG_DIR_EVENTS, self._from_zk(self._on_log_dir_events))
        self.zk.ChildrenWatch(zd.BROKER_IDS, self._from_zk(self._on_brokers))
        self.zk.ChildrenWatch(zd.TOPICS, self._from_zk(self._on_topics))
        self.zk.DataWatch(zd.CONTROLLER, self._from_zk(self._on_controller))
        self.config_changes.start(self.zk)
        loop = task.LoopingCall(self._shrink_isrs)
        loop.clock = self.reactor
        loop.start(max(0.1, self.lag_max_ms / 2000.0), now=False)
        self._loops.append(loop)

    def stop(self) -> None:
        self.stopped = True
        for loop in self._loops:
            if loop.running:
                loop.stop()
        for fetcher in self.fetchers.values():
            fetcher.stop()
        self.fetchers.clear()
        if self.zk is not None:
            try:
                self.zk.stop()
                self.zk.close()
            except Exception:  # noqa: BLE001
                log.exception("closing the ZooKeeper session failed")

    def _from_zk(self, func):
        """A kazoo watch callback that runs ``func`` on the reactor thread."""

        def callback(*args: Any) -> None:
            if not self.stopped:
                self.reactor.callFromThread(self._guarded, func, *args)

        return callback

    def _guarded(self, func, *args: Any) -> None:
        if self.stopped:
            return
        try:
            func(*args)
        except Exception:  # noqa: BLE001
            log.exception("handling a ZooKeeper change failed")

    def _adopt_cluster_id(self) -> None:
        """The cluster id lives in ``/cluster/id``: the first broker writes its own there, the
        others adopt it (and record it in their ``meta.properties``).

        A broker whose logs hold data never adopts another cluster's id: that data belongs to
        the cluster in its ``meta.properties``, and a ``zookeeper.connect`` pointing elsewhere
        (another cluster, a mistyped chroot) would otherwise go on to delete every topic that
        cluster does not know. It refuses to start instead, with Kafka's
        InconsistentClusterIdException message. A broker with no logs yet (a new one, whose
        id was only just generated) adopts the cluster's."""
        import json
        import os

        from kazoo.exceptions import NodeExistsError

        doc = json.dumps({"version": "1", "id": self.broker.cluster_id}).encode()
        try:
            self.zk.create(zd.CLUSTER_ID, doc, makepath=True)
            self._created_cluster = True
        except NodeExistsError:
            data, _ = self.zk.get(zd.CLUSTER_ID)
            cluster_id = json.loads(data)["id"]
            if cluster_id != self.broker.cluster_id:
                if self.broker.logs.topics:
                    raise InconsistentClusterId(
                        f"The Cluster ID {cluster_id} doesn't match stored clusterId "
                        f"Some({self.broker.cluster_id}) in meta.properties. The broker is "
                        "trying to join the wrong cluster. Configured zookeeper.connect may "
                        "be wrong."
                    ) from None
                self.broker.cluster_id = cluster_id
                path = os.path.join(self.broker.config.log_dirs[0], "meta.properties")
                with open(path + ".tmp", "w", encoding="utf-8") as handle:
                    handle.write(
                        f"#wireserver\nversion=1\ncluster.id={cluster_id}\nnode.id={self.node_id}\n"
                    )
                os.replace(path + ".tmp", path)

    def _register(self) -> None:
        from kazoo.exceptions import NodeExistsError, NoNodeError

        endpoints = {
            listener.name: (listener.host, listener.port) for listener in self.broker.advertised
        }
        info = zd.BrokerInfo(self.node_id, endpoints, self.broker.config.get("broker.rack"))
        path = zd.broker_path(self.node_id)
        for _ in range(3):
            try:
                self.zk.create(path, info.encode(), ephemeral=True)
                return
            except NodeExistsError:
                pass
            # Left by our previous process (killed before its session expired): replace it.
            # It may expire on its own between these calls (CI saw the delete find nothing).
            try:
                _, stat = self.zk.get(path)
                if stat.ephemeralOwner == self.zk.client_id[0]:
                    return
                log.warning("replacing a stale registration of broker %d", self.node_id)
                self.zk.delete(path)
            except NoNodeError:
                pass
        self.zk.create(path, info.encode(), ephemeral=True)

    def _after_session_loss(self) -> None:
        log.warning("ZooKeeper session expired; registering again")
        self._register()
        if self.controller is not None:
            self.controller.resign()
            self.controller = None
        self._elect()

    # -- controller election ---------------------------------------------------------------
    def _on_controller(self, data: bytes | None, stat: Any, *_: Any) -> None:
        """A change of ``/controller``. The value the watch hands over was read in kazoo's
        thread before this call was queued on the reactor; after a session loss it can predate
        this broker's own election (the fault campaign saw the new controller resign on such a
        stale value while it held the znode, leaving the cluster with no controller and its
        partitions offline for good). So the znode is read again here, as Kafka's controller
        re-reads it on every change, and this broker resigns only if it does not own it."""
        from kazoo.exceptions import NoNodeError

        try:
            data, stat = self.zk.get(zd.CONTROLLER)
        except NoNodeError:
            data, stat = None, None
        self.controller_id = zd.decode_controller(data)
        if self.controller is not None and not self._owns(stat):
            self.controller.resign()
            self.controller = None
        if data is None:
            self._elect()

    def _owns(self, stat: Any) -> bool:
        """Whether the ephemeral znode of ``stat`` belongs to this broker's session."""
        return stat is not None and stat.ephemeralOwner == self.zk.client_id[0]

    def _elect(self) -> None:
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        from wireserver.cluster.controller import Controller

        try:
            self.zk.create(zd.CONTROLLER, zd.encode_controller(self.node_id), ephemeral=True)
        except NodeExistsError:
            data, stat = self.zk.get(zd.CONTROLLER)
            self.controller_id = zd.decode_controller(data)
            if self.controller is not None or not self._owns(stat):
                return
            # Ours, yet no controller runs here (it resigned): take the office up again.
        while True:
            try:
                data, stat = self.zk.get(zd.CONTROLLER_EPOCH)
                epoch = int(data) + 1
                stat = self.zk.set(zd.CONTROLLER_EPOCH, str(epoch).encode(), version=stat.version)
                epoch_zk_version = stat.version
                break
            except NoNodeError:
                try:
                    self.zk.create(zd.CONTROLLER_EPOCH, b"1")
                    epoch, epoch_zk_version = 1, 0
                    break
                except NodeExistsError:
                    continue
            except BadVersionError:
                continue
        self.controller_id = self.node_id
        # A new controller starts from what ZooKeeper holds now, not from the last broker list
        # a watch delivered (after a session loss that list may not even hold this broker).
        self._on_brokers(self.zk.get_children(zd.BROKER_IDS))
        log.info(
            "[Controller id=%d] %d successfully elected as the controller. Epoch incremented to "
            "%d and epoch zk version is now %d",
            self.node_id,
            self.node_id,
            epoch,
            epoch_zk_version,
        )
        self.controller = Controller(self, epoch, self.broker.config, self.broker.logs)
        self.controller.start()
        # events a previous controller left unhandled (Kafka's failover deletes them too)
        self._on_log_dir_events([])

    # -- brokers ---------------------------------------------------------------------------
    def _on_brokers(self, children: list[str]) -> None:
        """A change of ``/brokers/ids``. ``children`` (the watch's value) may be stale by the
        time the reactor runs this, so the list is read again."""
        from kazoo.exceptions import NoNodeError

        children = self.zk.get_children(zd.BROKER_IDS)
        brokers: dict[int, zd.BrokerInfo] = {}
        czxids: dict[int, int] = {}
        for child in children:
            try:
                data, stat = self.zk.get(zd.broker_path(int(child)))
            except (NoNodeError, ValueError):
                continue
            brokers[int(child)] = zd.BrokerInfo.decode(int(child), data)
            czxids[int(child)] = stat.czxid
        bounced = {
            b for b, z in czxids.items() if b in self.broker_czxids and self.broker_czxids[b] != z
        }
        before = set(self.brokers)
        self.brokers, self.broker_czxids = brokers, czxids
        log.info(
            "%sNewly added brokers: %s, deleted brokers: %s, bounced brokers: %s, all live "
            "brokers: %s",
            f"[Controller id={self.node_id}] " if self.controller is not None else "",
            _ids(set(brokers) - before),
            _ids(before - set(brokers)),
            _ids(bounced),
            _ids(brokers),
        )
        self._read_offline_replicas()
        for partition in self.broker.replicas.leading():  # a dead follower no longer holds
            partition.notify("low_watermark")  # DeleteRecords back
        if self.controller is not None:
            self.controller.on_brokers_changed(bounced)

    def unclean_election_allowed(self, topic: str) -> bool:
        """The topic's ``unclean.leader.election.enable`` as this broker has it."""
        info = self.broker.logs.topics.get(topic)
        return bool(info and info.config.unclean_leader_election_enable)

    def live_for(self, tp: TP) -> set[int]:
        """The live brokers whose replica of ``tp`` is not in a failed log dir: those that
        can lead it or be in its ISR."""
        return {b for b in self.brokers if self.is_live_replica(b, tp)}

    def is_live_replica(self, broker_id: int, tp: TP) -> bool:
        """Whether ``broker_id``'s replica of ``tp`` can serve: its broker is registered and
        the replica is not in one of its failed log dirs."""
        return broker_id in self.brokers and tp not in self.offline_replicas.get(broker_id, ())

    # -- failed log dirs -------------------------------------------------------------------
    def _clear_offline_replicas(self) -> None:
        """At start: the list our previous process left (killed before its session ended)
        is not this one's."""
        from kazoo.exceptions import NoNodeError

        try:
            self.zk.delete(zd.offline_replicas_path(self.node_id))
        except NoNodeError:
            pass

    def log_dir_failed(self, log_dir: str, in_dir: list[TP]) -> None:
        """This broker's ``log_dir`` failed (others live), ``in_dir`` the partitions whose
        logs it held: stop leading and following the replicas there, list them in
        ZooKeeper and tell the controller (Kafka's ``zkClient.propagateLogDirEvent``)."""
        from kazoo.exceptions import NodeExistsError

        mine = {
            tp
            for tp in in_dir
            if tp[0] in self.topics and self.node_id in self.topics[tp[0]].replicas.get(tp[1], [])
        }
        self._failed_dirs[log_dir] = mine
        for tp in sorted(mine):
            self._stop_following(tp)
            self.broker.replicas.resign(tp)
        log.warning(
            "Broker %d stopped fetcher for partitions %s because they are in the failed log "
            "directory %s.",
            self.node_id,
            ",".join(f"{t}-{p}" for t, p in sorted(mine)),
            log_dir,
        )
        if self.zk is None or self.stopped:
            return
        offline = set().union(*self._failed_dirs.values())
        doc = zd.encode_offline_replicas(sorted(self._failed_dirs), sorted(offline))
        path = zd.offline_replicas_path(self.node_id)
        try:
            self.zk.create(path, doc, ephemeral=True, makepath=True)
        except NodeExistsError:
            self.zk.set(path, doc)
        self.zk.create(
            f"{zd.LOG_DIR_EVENTS}/{zd.LOG_DIR_EVENT_PREFIX}",
            zd.encode_log_dir_event(self.node_id),
            sequence=True,
            makepath=True,
        )

    def _read_offline_replicas(self) -> set[int]:
        """Read every broker's list of offline replicas; the brokers whose list changed."""
        from kazoo.exceptions import NoNodeError

        offline: dict[int, set[TP]] = {}
        for child in self.zk.get_children(zd.OFFLINE_REPLICAS):
            try:
                data, _ = self.zk.get(f"{zd.OFFLINE_REPLICAS}/{child}")
                offline[int(child)] = zd.decode_offline_replicas(data)
            except (NoNodeError, ValueError):
                continue
        offline = {b: tps for b, tps in offline.items() if tps}
        changed = {
            b
            for b in set(offline) | set(self.offline_replicas)
            if offline.get(b) != self.offline_replicas.get(b)
        }
        self.offline_replicas = offline
        return changed

    def _on_log_dir_events(self, children: list[str]) -> None:
        """A change of ``/log_dir_event_notification``: read the offline replicas again; the
        controller moves the partitions of the brokers named and deletes the events it
        handled (Kafka's ``LogDirEventNotification`` handling)."""
        from kazoo.exceptions import NoNodeError

        changed = self._read_offline_replicas()
        if self.controller is None:
            return
        named: set[int] = set()
        events = sorted(self.zk.get_children(zd.LOG_DIR_EVENTS))
        for child in events:
            try:
                data, _ = self.zk.get(f"{zd.LOG_DIR_EVENTS}/{child}")
            except NoNodeError:
                continue
            broker_id = zd.decode_log_dir_event(data)
            if broker_id is not None:
                named.add(broker_id)
        if named | changed:
            self.controller.on_log_dir_failure(sorted(named | changed))
        for child in events:
            try:
                self.zk.delete(f"{zd.LOG_DIR_EVENTS}/{child}")
            except NoNodeError:
                pass

    def endpoint_for(
        self, info: zd.BrokerInfo, listener_name: str | None = None
    ) -> tuple[str, int]:
        if listener_name is None:
            listener_name = self.broker.config.inter_broker_listener.name
        if listener_name in info.endpoints:
            return info.endpoints[listener_name]
        return next(iter(info.endpoints.values()))

    # -- topics ----------------------------------------------------------------------------
    def _on_topics(self, children: list[str]) -> None:
        from kazoo.exceptions import NoNodeError

        present = set(children)
        for name in [n for n in self.topics if n not in present]:
            self._drop_topic(name)
        if not self._strays_checked:
            self._strays_checked = True
            self._drop_strays(present)
        for name in children:
            if name in self.topics:
                continue
            try:
                data, _ = self.zk.get(zd.topic_path(name))
            except NoNodeError:
                continue
            self._add_topic(zd.TopicAssignment.decode(name, data))

    def _add_topic(self, assignment: zd.TopicAssignment) -> None:
        name = assignment.name
        self._ensure_local(assignment, zd.read_entity_config(self.zk, zd.topic_config_path(name)))
        self.topics[name] = assignment
        self._watch_partitions(assignment)
        if name not in self._assignment_watched:
            self._assignment_watched.add(name)
            self.zk.DataWatch(
                zd.topic_path(name),
                self._from_zk(lambda data, stat, *_: self._on_assignment(name, data)),
            )
        if self.controller is not None:
            self.controller.on_new_topic(name)

    def _watch_partitions(self, assignment: zd.TopicAssignment) -> None:
        """Watch the state of every partition; a partition whose watch survives from an
        earlier topic of the same name has its current state read now."""
        from kazoo.exceptions import NoNodeError

        for partition in assignment.replicas:
            tp = (assignment.name, partition)
            if tp not in self._state_watched:
                self._state_watched.add(tp)
                self.zk.DataWatch(zd.state_path(*tp), self._from_zk(self._state_watch(*tp)))
                continue
            try:
                data, stat = self.zk.get(zd.state_path(*tp))
            except NoNodeError:
                continue  # the controller creates it; the watch reports it
            self._state_watch(*tp)(data, stat)

    def _on_assignment(self, name: str, data: bytes | None) -> None:
        """``/brokers/topics/<t>`` changed: deleted (DeleteTopics), re-created under a new
        topic id, or extended (CreatePartitions)."""
        current = self.topics.get(name)
        if data is None:
            if current is not None:
                self._drop_topic(name)
            return
        new = zd.TopicAssignment.decode(name, data)
        if current is not None and current.topic_id != new.topic_id:
            self._drop_topic(name)
            current = None
        if current is None:
            self._add_topic(new)
            return
        if len(new.replicas) > len(current.replicas):
            log.info(
                "topic %s: %d -> %d partitions", name, len(current.replicas), len(new.replicas)
            )
            self._ensure_local(new, {})
            self.topics[name] = new
            self._watch_partitions(new)
            if self.controller is not None:
                self.controller.on_new_topic(name)
        self.topics[name] = new
        changed = [
            p
            for p, replicas in sorted(current.replicas.items())
            if new.replicas.get(p, replicas) != replicas
        ]
        for partition in changed:
            self._on_replicas_changed((name, partition), current.replicas[partition])
        if self.controller is not None and (changed or new.adding or new.removing):
            self.controller.on_reassignment(name)

    def _on_replicas_changed(self, tp: TP, before: list[int]) -> None:
        """A partition's replicas changed (a reassignment started, was cancelled or
        completed): its state is applied again with them, so that a new replica starts
        following and the leader tracks it. A replica added to this broker gets an empty log
        first; a replica removed from it stops and its log is deleted (Kafka's StopReplica
        with delete)."""
        replicas = self.topics[tp[0]].replicas[tp[1]]
        log.info("partition %s-%d: replicas %s -> %s", tp[0], tp[1], before, replicas)
        state = self.states.get(tp)
        if self.node_id in before and self.node_id not in replicas:
            self._drop_replica(tp)
        elif self.node_id in replicas and self.node_id not in before:
            self.broker.logs.host_partition(*tp)
        if state is not None:
            self.apply_state(tp, replace(state, replicas=list(replicas)))

    def _drop_topic(self, name: str) -> None:
        """The topic is gone from ZooKeeper: stop leading and following its partitions and
        delete its logs (Kafka's StopReplica with delete)."""
        assignment = self.topics[name]
        del self.topics[name]
        log.info("topic %s deleted: dropping its replicas", name)
        for partition in assignment.replicas:
            tp = (name, partition)
            self._stop_following(tp)
            self.broker.replicas.resign(tp)
            self.states.pop(tp, None)
        if name in self.broker.logs.topics:
            self.broker.metadata.delete_local(name)
        for partition in assignment.replicas:
            self.broker.purgatory.notify(("hw", name, partition))

    def _drop_strays(self, present: set[str]) -> None:
        """At start: logs of topics deleted while this broker was away. Not when this broker
        has just made a new ZooKeeper tree (an empty chroot): its topics were never deleted
        there, only never written, so their logs stay on disk (unserved) for an operator."""
        from wireserver.coordinator_runtime import INTERNAL_TOPICS

        for name in list(self.broker.logs.topics):
            if name in present or name in INTERNAL_TOPICS:
                continue
            if self._created_cluster:
                log.warning(
                    "topic %s is not in the new cluster's ZooKeeper: its logs are kept "
                    "in %s but not served",
                    name,
                    self.broker.config.log_dirs,
                )
            else:
                log.info("topic %s no longer exists: deleting its logs", name)
                self.broker.metadata.delete_local(name)

    def _ensure_local(self, assignment: zd.TopicAssignment, overrides: dict[str, str]) -> None:
        """Know the topic, and keep logs for the partitions whose replicas include this broker
        only, as Kafka's brokers do (a broker used to keep a log for every partition). A log
        found for a partition this broker is no replica of (a replica moved away while it was
        down, or such a log from before) is deleted, as Kafka's StopReplica with delete."""
        logs = self.broker.logs
        name = assignment.name
        hosted = {p for p, replicas in assignment.replicas.items() if self.node_id in replicas}
        info = logs.topics.get(name)
        if info is not None and info.topic_id != assignment.topic_id:
            log.info("topic %s was re-created: deleting the logs of the old one", name)
            self.broker.metadata.delete_local(name)
            info = None
        if info is None:
            logs.create_topic(
                name,
                len(assignment.replicas),
                overrides,
                topic_id=assignment.topic_id,
                hosted=hosted,
            )
            return
        if info.num_partitions < len(assignment.replicas):
            logs.add_partitions(name, len(assignment.replicas), hosted=hosted)
        for partition in range(len(assignment.replicas)):
            tp = (name, partition)
            if partition in hosted:
                logs.host_partition(*tp)  # made if missing
            elif logs.get_log(*tp) is not None:
                self._drop_replica(tp)

    def _drop_replica(self, tp: TP) -> None:
        """This broker is no longer a replica of ``tp``: stop following and leading it and
        delete its log (Kafka's StopReplica with delete)."""
        self._stop_following(tp)
        self.broker.replicas.resign(tp)
        log.info(
            "[ReplicaManager broker=%d] Stopping replica %s-%d and deleting its log",
            self.node_id,
            tp[0],
            tp[1],
        )
        self.broker.logs.drop_partition(*tp)

    def create_topic(
        self,
        name: str,
        topic_id: uuid.UUID,
        replicas: dict[int, list[int]],
        overrides: dict[str, str],
    ) -> None:
        """Write a new topic to ZooKeeper (config first, then the assignment, as Kafka's
        ``AdminZkClient`` does); the controller then elects its leaders. Raises kazoo's
        NodeExistsError when the topic exists."""
        from kazoo.exceptions import NodeExistsError

        assignment = zd.TopicAssignment(name, topic_id, replicas)
        try:
            self.zk.create(
                zd.topic_config_path(name), zd.encode_entity_config(overrides), makepath=True
            )
        except NodeExistsError:
            self.zk.set(zd.topic_config_path(name), zd.encode_entity_config(overrides))
        self.zk.create(zd.topic_path(name), assignment.encode(), makepath=True)

    def live_racks(self) -> dict[int, str | None]:
        return {b: info.rack for b, info in self.brokers.items()}

    def _apply_topic_config(self, name: str) -> None:
        """A ``topics/<name>`` config change: re-read the topic's overrides from ZooKeeper and
        apply them to its logs here (a topic not opened here reads them when it is)."""
        logs = self.broker.logs
        if name not in logs.topics:
            return
        from wireserver.cluster.topic_admin import read_topic_config

        overrides = read_topic_config(self, name)
        try:
            logs.alter_topic_config(name, overrides)
        except Exception:  # noqa: BLE001 - a bad value written by another tool
            log.exception("cannot apply the config of topic %s: %s", name, overrides)
            return
        log.info("topic %s: config overrides now %s", name, overrides)

    # -- partition state -------------------------------------------------------------------
    def _state_watch(self, topic: str, partition: int):
        def on_state(data: bytes | None, stat: Any, *_: Any) -> None:
            if data is None or stat is None:
                return
            assignment = self.topics.get(topic)
            replicas = assignment.replicas.get(partition, []) if assignment else []
            self.apply_state(
                (topic, partition), zd.PartitionState.decode(data, stat.version, replicas)
            )

        return on_state

    def partition(self, topic: str, partition: int) -> zd.PartitionState | None:
        return self.states.get((topic, partition))

    def apply_state(self, tp: TP, new: zd.PartitionState) -> None:
        """A partition's state from ZooKeeper: lead it, follow its leader, or (not a replica
        here) only know its leader epoch, through the partition layer."""
        old = self.states.get(tp)
        if old is not None and new.zk_version < old.zk_version:
            return
        self.states[tp] = new
        replicas = self.broker.replicas
        partition = replicas.partition(*tp)
        me = self.node_id
        if partition is not None and partition.offline:
            # In a failed log dir: neither led nor followed until a restart; the controller
            # moves its leadership away (``log_dir_failed``).
            self._stop_following(tp)
            replicas.resign(tp)
            partition.apply_state(new.leader, new.leader_epoch, new.isr, new.replicas)
        elif partition is not None and me in new.replicas and new.leader == me:
            leading = partition.leader
            if leading is None or leading.leader_epoch != new.leader_epoch:
                self._stop_following(tp)
                replicas.make_leader(
                    tp, new.leader_epoch, new.isr, new.replicas, partition_epoch=new.zk_version
                )
            else:
                partition.apply_state(new.leader, new.leader_epoch, new.isr, new.replicas)
        elif partition is not None:
            replicas.resign(tp)
            previous = (partition.leader_id, partition.leader_epoch)
            partition.apply_state(new.leader, new.leader_epoch, new.isr, new.replicas)
            if me in new.replicas and new.leader >= 0 and not self.shutting_down:
                if (
                    self.following.get(tp) != new.leader
                    or old is None
                    or old.leader_epoch != new.leader_epoch
                ):
                    self._become_follower(tp, new, previous)
            elif me in new.replicas:
                self._stop_following(tp)
        self.broker.purgatory.notify(("hw", tp[0], tp[1]))
        if self.controller is not None and tp[0] in self.topics:
            # after this change has been applied everywhere on this broker (not from within
            # a leader's ISR write, which this may be called from)
            self.reactor.callLater(0, self._controller_step, tp)

    def _controller_step(self, tp: TP) -> None:
        if self.controller is not None and not self.stopped:
            self.controller.on_partition_state(tp)

    def _become_follower(
        self, tp: TP, state: zd.PartitionState, previous: tuple[int, int] = (-1, -1)
    ) -> None:
        """Follow ``state.leader``; ``previous`` (leader, leader epoch) is for the log line."""
        self._stop_following(tp)
        fetcher = self.fetchers.get(state.leader)
        if fetcher is None:
            fetcher = self.fetchers[state.leader] = ReplicaFetcher(
                self.broker, lambda: self.brokers, state.leader
            )
            fetcher.start()
        fetcher.add(tp, state.leader_epoch)
        self.following[tp] = state.leader
        partition_log = self.broker.logs.get_log(*tp)
        if partition_log is not None:
            log.info(
                "[Broker id=%d] Follower %s-%d starts at leader epoch %d from offset %d with "
                "partition epoch %d and high watermark %d. Current leader is %d. Previous leader "
                "%s and previous leader epoch was %d.",
                self.node_id,
                tp[0],
                tp[1],
                state.leader_epoch,
                partition_log.log_end_offset,
                state.zk_version,
                partition_log.high_watermark,
                state.leader,
                scala_option(previous[0]),
                previous[1],
            )

    def _stop_following(self, tp: TP) -> None:
        leader = self.following.pop(tp, None)
        if leader is not None and leader in self.fetchers:
            self.fetchers[leader].remove(tp)

    # -- leader side: the ISR ------------------------------------------------------------------
    def _shrink_isrs(self) -> None:
        for partition in self.broker.replicas.leading():
            lagging = partition.out_of_sync_replicas(self.lag_max_ms)
            if lagging:
                partition.shrink_isr(lagging)

    def update_state(self, tp: TP, decide) -> zd.PartitionState | None:
        """Read the partition's state znode, let ``decide(state)`` compute its successor (None:
        nothing to change) and write it conditionally on the version read; on a conflict
        (another broker wrote meanwhile) read and decide again. Returns the state written."""
        from kazoo.exceptions import BadVersionError, NoNodeError

        replicas = self.topics[tp[0]].replicas.get(tp[1], []) if tp[0] in self.topics else []
        path = zd.state_path(*tp)
        for _attempt in range(5):
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                return None
            state = zd.PartitionState.decode(data, stat.version, replicas)
            new = decide(state)
            if new is None:
                return None
            try:
                stat = self.zk.set(path, new.encode(), version=state.zk_version)
            except BadVersionError:
                continue
            new = replace(new, zk_version=stat.version)
            self.apply_state(tp, new)
            return new
        return None

    # -- controlled shutdown ---------------------------------------------------------------
    @defer.inlineCallbacks
    def controlled_shutdown(self):
        """Kafka's ZooKeeper-era controlled shutdown, before a clean stop: stop following,
        hand leadership of every replicated partition this broker leads to another live ISR
        member and leave the ISR of the partitions it follows, so that clients and followers
        move on at once instead of after the session timeout. An attempt that leaves
        partitions led here (no other live ISR member) is retried after
        ``controlled.shutdown.retry.backoff.ms``, ``controlled.shutdown.max.retries`` attempts
        in all; then the broker stops anyway, as Kafka's does.

        Kafka's broker sends ControlledShutdown (key 7) to the controller, which applies
        ``ControlledShutdownPartitionLeaderElectionStrategy``. Kafka 4.1 serves no key 7 (it
        has no ZooKeeper mode), so this broker applies the same strategy itself with
        conditional writes of the state znodes, the way leaders already write ISR changes: a
        concurrent controller decision makes the write fail and the state is read again."""
        from wireserver.cluster.controller import controlled_shutdown_state

        config = self.broker.config
        if (
            not config["controlled.shutdown.enable"]
            or self.zk is None
            or self.stopped
            or not self.zk.connected
        ):
            return  # without ZooKeeper nothing can be handed over: stop as after a crash
        self.shutting_down = True
        for tp in list(self.following):
            self._stop_following(tp)
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        yield defer.DeferredList([fetcher.drain() for fetcher in fetchers])
        attempts = config["controlled.shutdown.max.retries"]
        for attempt in range(1, attempts + 1):
            remaining = []
            for tp, state in sorted(self.states.items()):
                if self.node_id not in state.replicas or len(state.replicas) < 2:
                    continue
                try:
                    self.update_state(
                        tp, lambda s: controlled_shutdown_state(s, self.node_id, set(self.brokers))
                    )
                except Exception:  # noqa: BLE001 - ZooKeeper trouble: count it as remaining
                    log.exception("controlled shutdown of %s-%d failed", *tp)
                if self.states[tp].leader == self.node_id:
                    remaining.append(tp)
            if not remaining:
                log.info("controlled shutdown succeeded")
                return
            log.warning(
                "controlled shutdown attempt %d of %d: still leading %s",
                attempt,
                attempts,
                remaining,
            )
            if attempt < attempts:
                yield task.deferLater(
                    self.reactor,
                    config["controlled.shutdown.retry.backoff.ms"] / 1000.0,
                    lambda: None,
                )
        log.warning("proceeding with an unclean shutdown: still leading %s", remaining)

    def write_isr(self, tp: TP, isr: list[int]) -> bool:
        """Conditionally update the ISR in ZooKeeper; on a version conflict re-read the state
        (someone else — the controller — changed it) and give up this change."""
        from kazoo.exceptions import BadVersionError, NoNodeError

        state = self.states[tp]
        new = replace(state, isr=isr)
        path = zd.state_path(*tp)
        try:
            stat = self.zk.set(path, new.encode(), version=state.zk_version)
        except NoNodeError:
            return False  # the topic is being deleted
        except BadVersionError:
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                return False
            self.apply_state(tp, zd.PartitionState.decode(data, stat.version, state.replicas))
            return False
        self.apply_state(tp, replace(new, zk_version=stat.version))
        if len(isr) < len(state.isr):
            self.isr_shrinks += 1
        elif len(isr) > len(state.isr):
            self.isr_expands += 1
        partition = self.broker.replicas.partition(*tp)
        if partition is not None:
            # Kafka's words once the ISR change is committed (the znode version is what
            # ZooKeeper-era Kafka used as the partition epoch); the double space is Kafka's.
            log.info(
                "%sISR updated to %s %s and version updated to %d",
                partition.log_ident,
                ",".join(str(b) for b in isr),
                "(under-min-isr)" if partition.under_min_isr else "",
                stat.version,
            )
        return True


def _ids(brokers: Any) -> str:
    """Broker ids as Kafka's controller lists them: sorted, comma-separated."""
    return ",".join(str(b) for b in sorted(brokers))
