"""The partitions this broker hosts (Kafka's ``ReplicaManager``): every append and every
leadership question goes through here, on one node and in a cluster alike.

A ``Partition`` is made for each partition log the first time it is asked for (and made again
when its topic was deleted and created anew). On one node it is led here at once, at leader
epoch 0 with this broker as its only replica and ISR: a cluster of one. In a cluster it waits
for the state ZooKeeper holds, which ``wireserver.cluster.node`` applies through
``make_leader`` / ``make_follower`` / ``apply_state``.

Coordinators register for the leadership of their internal topic's partitions
(``add_leadership_listener``) and load or unload the keys of a partition when it moves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet import defer

from wireserver.protocol.errors import ErrorCode
from wireserver.replica.partition import NO_LEADER, Partition
from wireserver.replica.selector import ReplicaView, Selector
from wireserver.storage.checkpoint import topic_id_to_base64
from wireserver.storage.errors import KafkaStorageError
from wireserver.storage.log import AppendResult
from wireserver.storage.validation import BatchError

log = logging.getLogger(__name__)


def scala_option(broker_id: int) -> str:
    """A broker id (-1: none) as Kafka's state-change lines print an ``Option[Int]``."""
    return f"Some({broker_id})" if broker_id >= 0 else "None"


TP = tuple[str, int]


class ReplicaManager:
    """``logs`` is the LogManager; ``purgatory`` wakes waiters; ``flush(logs)`` fsyncs in the
    background. ``local_leadership``: one node, where every partition is led here."""

    def __init__(
        self,
        node_id: int,
        logs: Any,
        purgatory: Any,
        now_ms: Callable[[], int],
        flush: Callable[[list], Any],
        local_leadership: bool,
    ):
        self.node_id = node_id
        self.logs = logs
        #: ``logs.by_partition``, the LogManager's live view, held for ``partition``
        self._logs_by_partition: Mapping[TP, Any] = logs.by_partition
        self.purgatory = purgatory
        self.now_ms = now_ms
        self.flush = flush
        self.local_leadership = local_leadership
        #: ``replica.selector.class`` (KIP-392): which replica consumers should read from;
        #: None = the leader only. Set by the broker from its config.
        self.replica_selector: Selector | None = None
        self.partitions: dict[TP, Partition] = {}
        # Set by the cluster node: ISR writes, the live brokers and the topics it knows.
        self.isr_writer: Callable[[TP, list[int]], bool] = lambda tp, isr: False
        self.live_brokers: Callable[[], Any] = lambda: (node_id,)
        self.topic_known: Callable[[str], bool] = lambda name: True
        #: Whether the cluster has this partition (a cluster broker keeps logs for its own
        #: replicas only; on one node a partition without a log does not exist).
        self.partition_known: Callable[[str, int], bool] = lambda name, index: False
        self._listeners: dict[
            str, list[tuple[Callable[[int, int], None], Callable[[int], None]]]
        ] = {}

    # -- the partitions ----------------------------------------------------------------------

    def partition(self, topic: str, index: int) -> Partition | None:
        """The partition, or None when this broker has no log for it."""
        tp = (topic, index)
        partition_log = self._logs_by_partition.get(tp)
        if partition_log is None:
            self._forget(tp)
            return None
        # The partition made for this very log, found without a second lookup (a wide Fetch
        # comes here for every partition): a log's ``replica`` is set only while it is the
        # one in ``partitions`` (``_forget`` clears it). A log made again (the topic deleted
        # and created, the log moved to another dir) has none yet and gets a new one.
        partition = partition_log.replica
        if partition is None:
            self._forget(tp)
            partition = self.partitions[tp] = partition_log.replica = self._new(
                topic, index, partition_log
            )
        return partition

    def _forget(self, tp: TP) -> Partition | None:
        """Drop the partition kept for ``tp``, and its log's link to it."""
        partition = self.partitions.pop(tp, None)
        if partition is not None and partition.log.replica is partition:
            partition.log.replica = None
        return partition

    def _new(self, topic: str, index: int, partition_log: Any) -> Partition:
        tp = (topic, index)
        partition = Partition(
            topic,
            index,
            partition_log,
            self.node_id,
            self.now_ms,
            lambda kind: self.purgatory.notify((kind, topic, index)),
            lambda isr: self.isr_writer(tp, isr),
            enforce_min_isr=not self.local_leadership,
        )
        if self.local_leadership:
            try:
                partition.make_leader(0, [self.node_id], [self.node_id])
            except KafkaStorageError:
                pass  # its log dir failed (reported): the partition answers KAFKA_STORAGE_ERROR
            else:
                self._log_leader(partition, (NO_LEADER, -1), 0)
        return partition

    def leading(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    def is_leader(self, topic: str, index: int) -> bool:
        partition = self.partitions.get((topic, index))
        return partition is not None and partition.is_leader

    def remove_topic(self, topic: str) -> None:
        """The topic's logs are gone (deleted): forget its partitions, resigning those led."""
        for tp in [tp for tp in self.partitions if tp[0] == topic]:
            self.resign(tp)
            self._forget(tp)

    # -- leadership ---------------------------------------------------------------------------

    def add_leadership_listener(
        self, topic: str, elected: Callable[[int, int], None], resigned: Callable[[int], None]
    ) -> None:
        """``elected(index, leader_epoch)`` when this broker becomes the leader of a partition
        of ``topic``; ``resigned(index)`` when it stops."""
        self._listeners.setdefault(topic, []).append((elected, resigned))

    def make_leader(
        self,
        tp: TP,
        leader_epoch: int,
        isr: list[int],
        replicas: list[int],
        partition_epoch: int = 0,
    ) -> None:
        """Lead ``tp`` from ``leader_epoch`` on. ``partition_epoch``: the state's version (the
        state znode's in a cluster), for the log line only."""
        partition = self.partition(*tp)
        if partition is None:
            return
        previous = (partition.leader_id, partition.leader_epoch)
        partition.make_leader(leader_epoch, isr, replicas)
        self._log_leader(partition, previous, partition_epoch)
        for elected, _ in self._listeners.get(tp[0], ()):
            elected(tp[1], leader_epoch)

    def _log_leader(
        self, partition: Partition, previous: tuple[int, int], partition_epoch: int
    ) -> None:
        """Kafka's state-change line for a partition this broker now leads."""
        leader = partition.leader
        log.info(
            "[Broker id=%d] Leader %s-%d with topic id %s starts at leader epoch %d from offset "
            "%d with partition epoch %d, high watermark %d, ISR [%s], adding replicas [] and "
            "removing replicas [] %s. Previous leader %s and previous leader epoch was %d.",
            self.node_id,
            partition.topic,
            partition.index,
            self._topic_id(partition.topic),
            partition.leader_epoch,
            leader.epoch_start_offset if leader is not None else -1,
            partition_epoch,
            partition.log.high_watermark,
            ",".join(str(b) for b in partition.isr),
            "(under-min-isr)" if partition.under_min_isr else "",
            scala_option(previous[0]),
            previous[1],
        )

    def _topic_id(self, topic: str) -> str:
        """The topic id as Kafka's ``Option[Uuid]`` prints it."""
        info = self.logs.topics.get(topic)
        return f"Some({topic_id_to_base64(info.topic_id)})" if info is not None else "None"

    def resign(self, tp: TP) -> bool:
        """Stop leading ``tp`` (it now follows, or is gone); True if it was led here."""
        partition = self.partitions.get(tp)
        if partition is None or not partition.resign():
            return False
        for _, resigned in self._listeners.get(tp[0], ()):
            resigned(tp[1])
        return True

    def check_leader(
        self, topic: str, index: int, current_leader_epoch: int = -1, leader_only: bool = True
    ) -> tuple[ErrorCode | None, int]:
        """(error or None, leader epoch) for a request that must reach the partition's leader
        (or any replica of it, without ``leader_only``; see ``Partition.check_leader``); a
        partition the cluster has but this broker keeps no log of is NOT_LEADER_OR_FOLLOWER
        (``missing_error``), one without a known state LEADER_NOT_AVAILABLE while its topic is
        known, else UNKNOWN_TOPIC_OR_PARTITION."""
        partition = self.partition(topic, index)
        if partition is None and self.partition_known(topic, index):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
        return self.check_partition_leader(partition, current_leader_epoch, leader_only)

    def missing_error(self, topic: str, index: int) -> ErrorCode:
        """The error for a partition with no log on this broker (Kafka's
        ``getPartitionOrError``): NOT_LEADER_OR_FOLLOWER when the cluster has the partition
        (this broker is no replica of it), so that the client looks for its leader again;
        UNKNOWN_TOPIC_OR_PARTITION otherwise."""
        if self.partition_known(topic, index):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def check_partition_leader(
        self, partition: Partition | None, current_leader_epoch: int = -1, leader_only: bool = True
    ) -> tuple[ErrorCode | None, int]:
        """``check_leader`` of a partition already looked up with ``partition`` (a wide
        Fetch has it in hand, and looking it up again costs a tenth of a caught-up
        partition's read)."""
        if partition is None or partition.leader_epoch < 0:  # (state_known, without a call)
            known = partition is not None and self.topic_known(partition.topic)
            return (
                ErrorCode.LEADER_NOT_AVAILABLE if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            ), -1
        return partition.check_leader(current_leader_epoch, leader_only)

    def preferred_read_replica(
        self,
        topic: str,
        index: int,
        fetch_offset: int,
        client_rack: str | None,
        rack_of: Callable[[int], tuple[bool, str | None]],
    ) -> int:
        """The replica a consumer fetching ``fetch_offset`` should read from instead of this
        leader, or -1 (Kafka's ``findPreferredReadReplica``): -1 without a
        ``replica_selector``, when this broker does not lead, or when the selector picks the
        leader. ``rack_of(broker)`` is (reachable on the request's listener, rack); a broker
        the client cannot reach is never picked."""
        select = self.replica_selector
        partition = self.partitions.get((topic, index))
        if select is None or partition is None or partition.leader is None:
            return -1
        followers = []
        for broker, leo, since_caught_up in partition.read_replicas(fetch_offset):
            reachable, rack = rack_of(broker)
            if reachable:
                followers.append(ReplicaView(broker, rack, leo, since_caught_up))
        leader = ReplicaView(
            self.node_id, rack_of(self.node_id)[1], partition.log.log_end_offset, 0
        )
        chosen = select(client_rack, leader, followers)
        return -1 if chosen is leader else chosen.broker_id

    # -- appends ------------------------------------------------------------------------------

    def append_records(
        self,
        topic: str,
        index: int,
        records: Any,
        acks: int,
        config: Any,
        verify_transaction: Callable[[Any], ErrorCode | None] | None = None,
    ) -> AppendResult:
        """A client's batch, appended as leader (``Partition.append_records_as_leader``);
        raises ``BatchError``."""
        partition = self.partition(topic, index)
        if partition is None:
            code = self.missing_error(topic, index)
            raise BatchError(
                code,
                "This server does not host this topic-partition."
                if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else f"Error while fetching partition state for {topic}-{index}",
            )
        result = partition.append_records_as_leader(records, acks, config, verify_transaction)
        if not result.duplicate:
            self._maybe_flush(partition)
        return result

    def after_append(self, topic: str, index: int) -> None:
        """After a coordinator wrote to a partition it leads through the log itself (its records,
        transaction markers): the high watermark, waking fetches, a flush when one is due."""
        partition = self.partition(topic, index)
        if partition is not None:
            partition.after_append()
            self._maybe_flush(partition)

    def _maybe_flush(self, partition: Partition) -> None:
        # ``may_become_due`` first: under Kafka's defaults (no flush.ms, no flush.messages) it
        # answers without the clock, and ``flush_due`` is never true where it is false.
        partition_log = partition.log
        if partition_log.may_become_due() and partition_log.flush_due(self.now_ms()):
            self.flush([partition_log])

    def replication_status(self, topic: str, index: int, last_offset: int) -> ErrorCode | None:
        """For an acks=all append that ended at ``last_offset``: None while it waits for the
        ISR, else its final code (``Partition.replication_status``)."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        info = self.logs.topics.get(topic)
        min_isr = info.config.min_insync_replicas if info is not None else 1
        return partition.replication_status(last_offset, min_isr)

    def replication_settled(
        self, waiting: list[tuple[str, int, int]]
    ) -> tuple[dict[TP, ErrorCode], list[tuple[str, int, int]]]:
        """The final codes of the (topic, index, last offset) appends that are settled now,
        and the ones still waiting for the ISR. Produce asks this first: with the ISR this
        broker alone every acks=all append is settled at once, and answering it without a
        Deferred chain is about a sixth of a small Produce request's cost."""
        done: dict[TP, ErrorCode] = {}
        still = []
        for topic, index, last_offset in waiting:
            status = self.replication_status(topic, index, last_offset)
            if status is None:
                still.append((topic, index, last_offset))
            else:
                done[(topic, index)] = status
        return done, still

    def wait_for_replication(
        self, waiting: list[tuple[str, int, int]], timeout_ms: int
    ) -> defer.Deferred[dict[TP, ErrorCode]]:
        """Wait until each (topic, index, last offset) is committed or failed, or the timeout
        (Kafka's ``DelayedProduce``); fires with ``{(topic, index): code}``, REQUEST_TIMED_OUT
        for what was still waiting. A chain of callbacks, one per wake-up of the watch on the
        partitions' high watermarks, not ``inlineCallbacks``: that takes only the interpreter's
        generators, and the compiled build (setup.py) compiles this module."""
        deadline = self.now_ms() + max(0, timeout_ms)
        results: dict[TP, ErrorCode] = {}

        def settle(left: list[tuple[str, int, int]]) -> Any:
            done, still = self.replication_settled(left)
            results.update(done)
            remaining = deadline - self.now_ms()
            if not still:
                return results
            if remaining <= 0:
                results.update({(t, i): ErrorCode.REQUEST_TIMED_OUT for t, i, _ in still})
                return results
            woken = self.purgatory.watch([("hw", t, i) for t, i, _ in still], remaining / 1000.0)
            return woken.addCallback(lambda _: settle(still))

        return defer.maybeDeferred(settle, waiting)

    # -- followers (cluster) -----------------------------------------------------------------

    def follower_fetched(
        self, tp: TP, replica_id: int, fetch_offset: int, log_start_offset: int = -1
    ) -> None:
        partition = self.partitions.get(tp)
        if partition is not None:
            partition.follower_fetched(
                replica_id, fetch_offset, log_start_offset, self.live_brokers()
            )

    def low_watermark(self, tp: TP) -> int | None:
        partition = self.partitions.get(tp)
        return partition.low_watermark(self.live_brokers()) if partition is not None else None
