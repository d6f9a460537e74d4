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
- A broker's log dir fails (``/log_dir_event_notification``, Kafka's ``onBrokerLogDirFailure``):
  its replicas there (``ClusterNode.offline_replicas``) count as on a dead broker for every
  decision here: the partitions it led get other leaders, and it leaves their ISRs.
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
- A partition reassignment (KIP-455, as ``KafkaController.onPartitionReassignment``): the
  broker that received AlterPartitionReassignments wrote RS = ORS + TRS with the adding and
  removing replicas to the topic's znode; every broker applies the new replicas (the added ones
  start following), at the same leader epoch, as Kafka 4.4's controller keeps it when a move
  starts. Once every target replica is in the ISR the controller writes, in one ZooKeeper
  transaction, the state (a leader from TRS, the current one if it is in the ISR; the ISR cut
  to TRS) and the assignment with RS = TRS and no adding or removing replicas; the leader
  epoch goes up only when the leader changes or replicas are removed
  (``wireserver.cluster.partition_change``, Kafka 4.4's rules), and a new controller that
  finds a move in progress goes on with it without a bump of its own. The removed replicas
  see the assignment and delete their data. A partition whose ISR or leader is outside its
  replicas (left so by a cancel that found no replica to lead) has them removed.

Every write is conditional on the znode version this controller read; on a conflict (the leader
changed the ISR meanwhile) the state is re-read and the decision made again.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet import task

from wireserver.cluster import zkdata as zd
from wireserver.cluster.partition_change import replica_change_state, transaction_failed
from wireserver.cluster.topic_deletion import DeletionHost, TopicDeletion
from wireserver.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from wireserver.config import BrokerConfig
    from wireserver.storage.manager import LogManager

log = logging.getLogger(__name__)

PREFERRED, UNCLEAN = 0, 1
ELECTION_TYPES = {PREFERRED: "PREFERRED", UNCLEAN: "UNCLEAN"}  # Kafka's ``ElectionType`` names


def leader_and_isr(state: zd.PartitionState) -> str:
    """A partition state as Kafka's ``LeaderAndIsr.toString`` writes it in state-change lines
    (its partition epoch is the state znode's version, as in ZooKeeper-era Kafka)."""
    return (
        f"LeaderAndIsr(leader={state.leader}, leaderEpoch={state.leader_epoch}, "
        f"isr=List({', '.join(str(b) for b in state.isr)}), leaderRecoveryState=RECOVERED, "
        f"partitionEpoch={state.zk_version})"
    )


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

    def live_for(self, tp: tuple[str, int]) -> set[int]: ...

    def update_state(self, tp: tuple[str, int], decide: Any) -> zd.PartitionState | None: ...


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
        self._reassigning_now: set[tuple[str, int]] = set()  # guards the state we write

    def start(self) -> None:
        self.reconcile_all(set())
        for name in list(self.node.topics):  # reassignments a previous controller left
            self.on_reassignment(name)
        TopicDeletion(self.node, lambda: self.active).start()
        config = self.config
        if config["auto.leader.rebalance.enable"]:
            loop = task.LoopingCall(self._guarded_rebalance)
            loop.clock = self.node.reactor
            loop.start(config["leader.imbalance.check.interval.seconds"], now=False)
            self._rebalance = loop

    @property
    def log_ident(self) -> str:
        """Kafka's controller state-change log prefix."""
        return f"[Controller id={self.node.node_id} epoch={self.epoch}] "

    def _changed(self, tp: tuple[str, int], from_state: str, new: zd.PartitionState) -> None:
        """Kafka's ``PartitionStateMachine`` line for a partition that got a leader."""
        log.info(
            "%sChanged partition %s-%d from %s to OnlinePartition with state %s",
            self.log_ident,
            tp[0],
            tp[1],
            from_state,
            leader_and_isr(new),
        )

    def _unclean(self, tp: tuple[str, int], leader: int, alive: list[int]) -> None:
        """ZooKeeper-era Kafka's warning for an unclean election (its
        ``OfflinePartitionLeaderSelector``)."""
        log.warning(
            "%sNo broker in ISR is alive for %s-%d. Elect leader %d from live brokers %s. "
            "There's potential data loss.",
            self.log_ident,
            tp[0],
            tp[1],
            leader,
            ",".join(str(b) for b in alive),
        )

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
                if self.elect(tp, PREFERRED, trigger="AutoTriggered") == ErrorCode.NONE:
                    moved.append(tp)
        return moved

    def elect(
        self, tp: tuple[str, int], election_type: int, trigger: str = "AdminClientTriggered"
    ) -> ErrorCode:
        """One partition's ElectLeaders election; the error code of its result. ``trigger``
        is Kafka's ``ElectionTrigger`` name, for the log line."""
        from kazoo.exceptions import BadVersionError, NoNodeError

        node = self.node
        assignment = node.topics.get(tp[0])
        if assignment is None or tp[1] not in assignment.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        log.info(
            "Starting replica leader election (%s) for partitions %s-%d triggered by %s",
            ELECTION_TYPES.get(election_type, election_type),
            tp[0],
            tp[1],
            trigger,
        )
        replicas = assignment.replicas[tp[1]]
        path = zd.state_path(*tp)
        for _attempt in range(5):
            if not self.active:
                return ErrorCode.NOT_CONTROLLER
            live = node.live_for(tp)
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
                    self._unclean(tp, alive[0], alive)
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
            new = replace(new, zk_version=stat.version)
            self._changed(
                tp, "OnlinePartition" if election_type == PREFERRED else "OfflinePartition", new
            )
            node.apply_state(tp, new)
            return ErrorCode.NONE
        return ErrorCode.REQUEST_TIMED_OUT

    def on_brokers_changed(self, bounced: set[int]) -> None:
        if bounced:
            log.info("brokers %s came back under a new session", sorted(bounced))
            self.reconcile_all(bounced)
        self.reconcile_all(set())

    def on_log_dir_failure(self, broker_ids: list[int]) -> None:
        """Brokers whose log dirs failed (or whose failed replicas are gone, with a restart):
        every partition with a replica on them is decided again."""
        log.info(
            "%sHandling log directory failure for brokers %s",
            self.log_ident,
            ",".join(str(b) for b in broker_ids),
        )
        for name, assignment in list(self.node.topics.items()):
            for partition, replicas in sorted(assignment.replicas.items()):
                if any(b in replicas for b in broker_ids):
                    self.reconcile((name, partition), set())

    def on_new_topic(self, name: str) -> None:
        assignment = self.node.topics.get(name)
        if assignment is not None:
            for partition in sorted(assignment.replicas):
                self.reconcile((name, partition), set())

    def reconcile_all(self, excluded: set[int]) -> None:
        for name, assignment in list(self.node.topics.items()):
            for partition in sorted(assignment.replicas):
                self.reconcile((name, partition), excluded)

    def reconcile(self, tp: tuple[str, int], excluded: set[int]) -> None:
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        node = self.node
        zk = node.zk
        path = zd.state_path(*tp)
        replicas = node.topics[tp[0]].replicas.get(tp[1], [])
        for _attempt in range(5):
            if not self.active:
                return
            live = node.live_for(tp) - excluded
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
                    if not zd.create_partition_state(zk, *tp, state.encode()):
                        return  # the topic was deleted meanwhile
                except NodeExistsError:
                    continue
                if state.leader >= 0:
                    self._changed(tp, "NewPartition", state)
                else:
                    self._failed(tp, "NewPartition", "InitialLeaderElectionStrategy")
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
            new = replace(new, zk_version=stat.version)
            self._log_decision(tp, state, new)
            node.apply_state(tp, new)
            return

    def _failed(self, tp: tuple[str, int], from_state: str, strategy: str) -> None:
        """Kafka's ``logFailedStateChange``: no replica can lead the partition."""
        log.error(
            "%sController %d epoch %d failed to change state for partition %s-%d from %s to "
            "OnlinePartition: Failed to elect leader for partition %s-%d under strategy %s",
            self.log_ident,
            self.node.node_id,
            self.epoch,
            tp[0],
            tp[1],
            from_state,
            tp[0],
            tp[1],
            strategy,
        )

    def _log_decision(
        self, tp: tuple[str, int], old: zd.PartitionState, new: zd.PartitionState
    ) -> None:
        """What ``reconcile`` wrote, in the words of Kafka's partition and replica state
        machines: a new leader, no leader, or dead replicas out of the ISR."""
        if new.leader != old.leader or new.leader_epoch != old.leader_epoch:
            if new.leader >= 0:
                self._changed(tp, "OfflinePartition", new)
            else:
                unclean = "true" if self.node.unclean_election_allowed(tp[0]) else "false"
                strategy = f"OfflinePartitionLeaderElectionStrategy({unclean})"
                self._failed(tp, "OfflinePartition", strategy)
            return
        for replica in old.isr:
            if replica not in new.isr:
                log.info(
                    "%sPartition %s-%d state changed to (Leader:%d,ISR:%s,LeaderRecoveryState:"
                    "RECOVERED,LeaderEpoch:%d,ZkVersion:%d,ControllerEpoch:%d) after removing "
                    "replica %d from the ISR as part of transition to OfflineReplica",
                    self.log_ident,
                    tp[0],
                    tp[1],
                    new.leader,
                    ",".join(str(b) for b in new.isr),
                    new.leader_epoch,
                    new.zk_version,
                    new.controller_epoch,
                    replica,
                )

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
            if alive and self.node.unclean_election_allowed(tp[0]):
                self._unclean(tp, alive[0], alive)
                leader, isr = alive[0], [alive[0]]
                self.node.unclean_leader_elections += 1
            else:
                if state.leader == -1:
                    return None
                leader, isr = -1, state.isr
        return self._led_by(state, leader, isr)

    def _led_by(self, state: zd.PartitionState, leader: int, isr: list[int]) -> zd.PartitionState:
        """``state`` with a new leader (or none, -1) and ISR, the leader epoch bumped."""
        return replace(
            state,
            leader=leader,
            leader_epoch=state.leader_epoch + 1,
            isr=isr,
            controller_epoch=self.epoch,
        )

    # -- partition reassignment -------------------------------------------------------------
    def on_reassignment(self, name: str) -> None:
        """The topic's assignment changed: move on every partition that can."""
        assignment = self.node.topics.get(name)
        if assignment is not None:
            for partition in sorted(assignment.replicas):
                self.on_partition_state((name, partition))

    def on_partition_state(self, tp: tuple[str, int]) -> None:
        """A partition's state or replicas changed (an ISR expansion is what completes a
        reassignment): complete its reassignment if every target replica is in the ISR, or
        take replicas no longer assigned out of its ISR."""
        if not self.active or tp in self._reassigning_now:
            return
        self._reassigning_now.add(tp)
        try:
            self._reassignment_step(tp)
        except Exception:  # noqa: BLE001 - the next state change tries again
            log.exception("%sreassignment of %s-%d failed", self.log_ident, *tp)
        finally:
            self._reassigning_now.discard(tp)

    def _reassignment_step(self, tp: tuple[str, int]) -> None:
        node = self.node
        assignment = node.topics.get(tp[0])
        state = node.states.get(tp)
        if assignment is None or state is None or tp[1] not in assignment.replicas:
            return
        replicas = assignment.replicas[tp[1]]
        if assignment.reassigning(tp[1]):
            target = assignment.target(tp[1])
            if state.leader >= 0 and all(r in state.isr for r in target):
                self._complete(tp, target)
            return
        if set(state.isr) <= set(replicas) and (state.leader < 0 or state.leader in replicas):
            return

        def cut(current: zd.PartitionState) -> zd.PartitionState | None:
            new = replica_change_state(current, replicas, replicas, node.live_for(tp), self.epoch)
            return None if new is current else new

        node.update_state(tp, cut)

    def _complete(self, tp: tuple[str, int], target: list[int]) -> None:
        """Kafka 4.4's completion of a reassignment whose target replicas are all in the ISR
        (``PartitionReassignmentReplicas.maybeCompleteReassignment``): in one ZooKeeper
        transaction, the state as ``replica_change_state`` makes it (the leader epoch bumped
        only when the leader changes or replicas are removed) and RS = TRS, AR = RR = [] in
        the topic's znode. Nothing is written if the reassignment was replaced or completed
        meanwhile, or the ISR shrank below TRS; a conflicting write is read and decided
        again."""
        from kazoo.exceptions import NoNodeError

        node = self.node
        topic_path, state_path = zd.topic_path(tp[0]), zd.state_path(*tp)
        for _attempt in range(5):
            if not self.active:
                return
            try:
                data, topic_stat = node.zk.get(topic_path)
                state_data, state_stat = node.zk.get(state_path)
            except NoNodeError:
                return
            current = zd.TopicAssignment.decode(tp[0], data)
            if not current.reassigning(tp[1]) or current.target(tp[1]) != target:
                return
            state = zd.PartitionState.decode(state_data, state_stat.version, target)
            if not all(r in state.isr for r in target):
                return  # the ISR shrank meanwhile: the next change tries again
            before = current.replicas[tp[1]]
            new = replica_change_state(state, before, target, node.live_for(tp), self.epoch)
            if new is None:
                return  # no target replica alive to lead: the next change tries again
            log.info(
                "%sTarget replicas %s have all caught up with the leader for reassigning "
                "partition %s-%d",
                self.log_ident,
                target,
                tp[0],
                tp[1],
            )
            done = current.with_partition(tp[1], target, [], [])
            transaction = node.zk.transaction()
            transaction.set_data(topic_path, done.encode(), version=topic_stat.version)
            if new is not state:
                transaction.set_data(state_path, new.encode(), version=state_stat.version)
            results = transaction.commit()
            if transaction_failed(results):
                continue
            break
        else:
            return
        log.info(
            "%sCompleted reassignment of partition %s-%d to replicas %s",
            self.log_ident,
            tp[0],
            tp[1],
            target,
        )
        if new is not state:
            new = replace(new, zk_version=results[1].version)
            if new.leader != state.leader:
                self._changed(tp, "OnlinePartition", new)
            node.apply_state(tp, new)


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
