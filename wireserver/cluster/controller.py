"""The controller: the one broker that holds the ephemeral ``/controller`` znode (Kafka's
ZooKeeper-era ``KafkaController``, reduced to what leadership needs).

- A new topic (``/brokers/topics/<t>`` written by whichever broker received CreateTopics or
  auto-created it): each partition's state znode is created with the first live replica of
  its assignment as leader, the live replicas as ISR, leader epoch 0.
- A broker leaves (its ephemeral ``/brokers/ids/<id>`` disappears) or comes back under a new
  session: every partition it led gets a new leader, the first replica of the assignment that
  is alive and in the ISR (Kafka's ``OfflinePartitionLeaderElectionStrategy``), with the leader
  epoch bumped; with ``unclean.leader.election.enable`` a live replica outside the ISR may lead
  when no ISR member is alive. With no candidate the partition is offline (leader -1, the ISR
  left as it was, so that its last member can lead again when it returns). Dead followers are
  removed from the ISR of partitions whose leader lives.
- A broker arrives: offline partitions it can lead get it as leader.
- A topic gains partitions (CreatePartitions extended its assignment): their state znodes are
  created as for a new topic. A topic marked for deletion (``/admin/delete_topics/<t>``) has its
  znodes deleted (``wireserver.cluster.topic_deletion``).

- ElectLeaders (``elect``, Kafka's ``onReplicaElection``): PREFERRED moves leadership to the
  first replica of the assignment when it is alive and in the ISR (ELECTION_NOT_NEEDED when it
  leads already, PREFERRED_LEADER_NOT_AVAILABLE otherwise); UNCLEAN elects, for a partition
  without a live leader, the first live ISR member or else the first live replica.
- ``auto.leader.rebalance.enable`` (Kafka's ``checkAndTriggerAutoLeaderRebalance``): every
  ``leader.imbalance.check.interval.seconds``, for each broker, the share of the partitions it
  is the preferred leader of that another broker leads; above
  ``leader.imbalance.per.broker.percentage`` those partitions get a preferred election.

Every write is conditional on the znode version this controller read; on a conflict (the leader
changed the ISR meanwhile) the state is re-read and the decision made again.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet import task

from wireserver.cluster import zkdata as zd
from wireserver.cluster.topic_deletion import DeletionHost, TopicDeletion
from wireserver.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from wireserver.config import BrokerConfig
    from wireserver.storage.manager import LogManager

log = logging.getLogger(__name__)

PREFERRED, UNCLEAN = 0, 1


class ControllerHost(DeletionHost, Protocol):
    """What the controller uses of the broker's cluster membership (``ClusterNode``, which
    makes it): the live brokers, topic assignments and partition states it decides on, and
    ``apply_state`` for each decision it writes."""

    node_id: int
    reactor: Any
    brokers: dict[int, zd.BrokerInfo]
    topics: dict[str, zd.TopicAssignment]
    states: dict[tuple[str, int], zd.PartitionState]
    #: unclean leader elections decided since this broker started
    unclean_leader_elections: int

    def apply_state(self, tp: tuple[str, int], new: zd.PartitionState) -> None: ...


class Controller:
    def __init__(self, node: ControllerHost, epoch: int, config: BrokerConfig, logs: LogManager):
        """``config`` and ``logs``: the broker's (its leader rebalance settings, and each
        topic's ``unclean.leader.election.enable``)."""
        self.node = node
        self.epoch = epoch
        self.config = config
        self.logs = logs
        self.active = True
        self._rebalance: task.LoopingCall | None = None

    def start(self) -> None:
        self.reconcile_all(set())
        TopicDeletion(self.node, lambda: self.active).start()
        config = self.config
        if config["auto.leader.rebalance.enable"]:
            loop = task.LoopingCall(self._guarded_rebalance)
            loop.clock = self.node.reactor
            loop.start(config["leader.imbalance.check.interval.seconds"], now=False)
            self._rebalance = loop

    def resign(self) -> None:
        log.info("broker %d is no longer the controller", self.node.node_id)
        self.active = False
        if self._rebalance is not None and self._rebalance.running:
            self._rebalance.stop()
        self._rebalance = None

    # -- preferred and unclean elections -----------------------------------------------------
    def _guarded_rebalance(self) -> None:
        try:
            self.check_and_trigger_rebalance()
        except Exception:  # noqa: BLE001 - the next round tries again
            log.exception("leader rebalance failed")

    def check_and_trigger_rebalance(self) -> list[tuple[str, int]]:
        """Kafka's ``checkAndTriggerAutoLeaderRebalance``; returns the partitions moved."""
        node = self.node
        threshold = self.config["leader.imbalance.per.broker.percentage"] / 100.0
        by_preferred: dict[int, list[tuple[str, int]]] = {}
        for name, assignment in list(node.topics.items()):
            for partition, replicas in assignment.replicas.items():
                if replicas:
                    by_preferred.setdefault(replicas[0], []).append((name, partition))
        moved = []
        for broker_id, tps in sorted(by_preferred.items()):
            elsewhere = [
                tp
                for tp in tps
                if (state := node.states.get(tp)) is not None and state.leader != broker_id
            ]
            if not tps or len(elsewhere) / len(tps) <= threshold:
                continue
            log.info(
                "broker %d leads %d of its %d preferred partitions elsewhere: electing",
                broker_id,
                len(elsewhere),
                len(tps),
            )
            for tp in sorted(elsewhere):
                if self.elect(tp, PREFERRED) == ErrorCode.NONE:
                    moved.append(tp)
        return moved

    def elect(self, tp: tuple[str, int], election_type: int) -> ErrorCode:
        """One partition's ElectLeaders election; the error code of its result."""
        from kazoo.exceptions import BadVersionError, NoNodeError

        node = self.node
        assignment = node.topics.get(tp[0])
        if assignment is None or tp[1] not in assignment.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        replicas = assignment.replicas[tp[1]]
        path = zd.state_path(*tp)
        for _attempt in range(5):
            if not self.active:
                return ErrorCode.NOT_CONTROLLER
            live = set(node.brokers)
            try:
                data, stat = node.zk.get(path)
            except NoNodeError:
                return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            state = zd.PartitionState.decode(data, stat.version, replicas)
            if election_type == PREFERRED:
                preferred = replicas[0]
                if state.leader == preferred:
                    return ErrorCode.ELECTION_NOT_NEEDED
                if preferred not in live or preferred not in state.isr:
                    return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
                new = replace(
                    state,
                    leader=preferred,
                    leader_epoch=state.leader_epoch + 1,
                    controller_epoch=self.epoch,
                )
            else:
                if state.leader in live:
                    return ErrorCode.ELECTION_NOT_NEEDED
                in_sync = [r for r in replicas if r in live and r in state.isr]
                alive = [r for r in replicas if r in live]
                if in_sync:
                    leader, isr = in_sync[0], [r for r in state.isr if r in live]
                elif alive:
                    log.warning(
                        "%s-%d: unclean leader election of broker %d (ElectLeaders)",
                        tp[0],
                        tp[1],
                        alive[0],
                    )
                    leader, isr = alive[0], [alive[0]]
                    node.unclean_leader_elections += 1
                else:
                    return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
                new = replace(
                    state,
                    leader=leader,
                    leader_epoch=state.leader_epoch + 1,
                    isr=isr,
                    controller_epoch=self.epoch,
                )
            try:
                stat = node.zk.set(path, new.encode(), version=state.zk_version)
            except BadVersionError:
                continue
            log.info(
                "%s-%d: %s election: leader %d -> %d, epoch %d",
                tp[0],
                tp[1],
                "preferred" if election_type == PREFERRED else "unclean",
                state.leader,
                new.leader,
                new.leader_epoch,
            )
            node.apply_state(tp, replace(new, zk_version=stat.version))
            return ErrorCode.NONE
        return ErrorCode.REQUEST_TIMED_OUT

    def on_brokers_changed(self, bounced: set[int]) -> None:
        if bounced:
            log.info("brokers %s came back under a new session", sorted(bounced))
            self.reconcile_all(bounced)
        self.reconcile_all(set())

    def on_new_topic(self, name: str) -> None:
        assignment = self.node.topics.get(name)
        if assignment is not None:
            for partition in sorted(assignment.replicas):
                self.reconcile((name, partition), set())

    def reconcile_all(self, excluded: set[int]) -> None:
        for name, assignment in list(self.node.topics.items()):
            for partition in sorted(assignment.replicas):
                self.reconcile((name, partition), excluded)

    def _unclean_allowed(self, topic: str) -> bool:
        info = self.logs.topics.get(topic)
        return bool(info and info.config.unclean_leader_election_enable)

    def reconcile(self, tp: tuple[str, int], excluded: set[int]) -> None:
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        node = self.node
        zk = node.zk
        path = zd.state_path(*tp)
        replicas = node.topics[tp[0]].replicas.get(tp[1], [])
        for _attempt in range(5):
            if not self.active:
                return
            live = {b for b in node.brokers if b not in excluded}
            try:
                data, stat = zk.get(path)
            except NoNodeError:
                alive = [r for r in replicas if r in live]
                state = zd.PartitionState(
                    alive[0] if alive else -1,
                    0,
                    alive or list(replicas),
                    self.epoch,
                    0,
                    list(replicas),
                )
                try:
                    zk.create(path, state.encode(), makepath=True)
                except NodeExistsError:
                    continue
                log.info(
                    "%s-%d: created with leader %d, ISR %s", tp[0], tp[1], state.leader, state.isr
                )
                node.apply_state(tp, state)
                return
            state = zd.PartitionState.decode(data, stat.version, replicas)
            new = self._decide(tp, state, live)
            if new is None:
                return
            try:
                stat = zk.set(path, new.encode(), version=state.zk_version)
            except BadVersionError:
                continue
            log.info(
                "%s-%d: leader %d -> %d, epoch %d -> %d, ISR %s -> %s",
                tp[0],
                tp[1],
                state.leader,
                new.leader,
                state.leader_epoch,
                new.leader_epoch,
                state.isr,
                new.isr,
            )
            node.apply_state(tp, replace(new, zk_version=stat.version))
            return

    def _decide(self, tp, state: zd.PartitionState, live: set[int]) -> zd.PartitionState | None:
        isr_live = [r for r in state.isr if r in live]
        if state.leader in live:
            if isr_live != state.isr:
                return replace(state, isr=isr_live or [state.leader], controller_epoch=self.epoch)
            return None
        candidates = [r for r in state.replicas if r in isr_live]
        if candidates:
            leader, isr = candidates[0], isr_live
        else:
            alive = [r for r in state.replicas if r in live]
            if alive and self._unclean_allowed(tp[0]):
                log.warning("%s-%d: unclean leader election of broker %d", tp[0], tp[1], alive[0])
                leader, isr = alive[0], [alive[0]]
                self.node.unclean_leader_elections += 1
            else:
                if state.leader == -1:
                    return None
                leader, isr = -1, state.isr
        return replace(
            state,
            leader=leader,
            leader_epoch=state.leader_epoch + 1,
            isr=isr,
            controller_epoch=self.epoch,
        )


def controlled_shutdown_state(
    state: zd.PartitionState, broker_id: int, live: set[int]
) -> zd.PartitionState | None:
    """Kafka's ``ControlledShutdownPartitionLeaderElectionStrategy`` for one partition of a
    broker shutting down: if it leads, the first replica of the assignment that is alive, in
    the ISR and not the broker becomes leader (leader epoch bumped) and the broker leaves the
    ISR; with no such replica nothing changes (the partition stays led by it). If it follows
    a live leader, it leaves the ISR. None when there is nothing to change."""
    isr = [r for r in state.isr if r != broker_id]
    if state.leader == broker_id:
        candidates = [r for r in state.replicas if r != broker_id and r in live and r in isr]
        if not candidates:
            return None
        return replace(state, leader=candidates[0], leader_epoch=state.leader_epoch + 1, isr=isr)
    if broker_id in state.isr and state.leader in live and isr:
        return replace(state, isr=isr)
    return None
