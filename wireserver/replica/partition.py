"""One partition this broker hosts, as its leader or as a follower: Kafka's ``Partition``.

The same class serves one node and a cluster. On one node every partition is led here at
leader epoch 0 and its ISR is this broker alone, so the high watermark follows the log end as
soon as a batch is written. In a cluster the ZooKeeper state (leader, leader epoch, ISR) is
applied by ``wireserver.cluster.node``; followers report their log end offsets through their
fetches (``follower_fetched``), and the high watermark is the smallest log end offset in the
ISR. Handlers ask the partition (through ``ReplicaManager``), never which mode the broker is in.

What the partition decides on its own, as Kafka's leader does: whether it may append (it leads
the partition; acks=all needs ``min.insync.replicas`` in the ISR), the high watermark, which
follower has caught up (ISR expansion) and which has fallen behind (ISR shrink), when an
acks=all append is committed, and the low watermark that DeleteRecords waits on. Changing the
ISR is written through ``write_isr`` (ZooKeeper in a cluster); the partition then receives the
new state like any other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.storage.errors import InvalidProducerEpoch, KafkaStorageError, OutOfOrderSequence
from wireserver.storage.log import AppendResult, Log
from wireserver.storage.validation import BatchError, validate_batches, validate_keys, writable

log = logging.getLogger(__name__)

NO_LEADER = -1


@dataclass
class FollowerState:
    """What the leader knows of one follower, from its fetches (Kafka's ``Replica``)."""

    leo: int = -1  # unknown until it fetches from this leader
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = -1
    log_start: int = -1  # unknown until it fetches from this leader


@dataclass
class LeaderState:
    """Held while this broker leads the partition, for one leader epoch."""

    leader_epoch: int
    epoch_start_offset: int
    followers: dict[int, FollowerState] = field(default_factory=dict)


class Partition:
    """``topic``-``index`` here, over its ``log``. ``notify(kind)`` wakes whatever waits on the
    partition in the purgatory (``"append"``: fetches; ``"hw"``: acks=all and coordinator
    appends; ``"low_watermark"``: DeleteRecords). ``write_isr(isr)`` asks for an ISR change
    (True once written)."""

    def __init__(
        self,
        topic: str,
        index: int,
        log: Log,
        local_id: int,
        now_ms: Callable[[], int],
        notify: Callable[[str], None],
        write_isr: Callable[[list[int]], bool],
        enforce_min_isr: bool = True,
    ):
        self.topic = topic
        self.index = index
        self.log = log
        self.local_id = local_id
        self.now_ms = now_ms
        self.notify = notify
        self.write_isr = write_isr
        # False on one node, where acks=all is the local write whatever min.insync.replicas
        # says (a listed difference from Kafka, see docs/compatibility.md).
        self.enforce_min_isr = enforce_min_isr
        # The state last applied: leader id and epoch (-1 while unknown), ISR and replicas.
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.isr: list[int] = []
        self.replicas: list[int] = []
        self.leader: LeaderState | None = None  # set while this broker leads
        # Fetch answers kept for the topic no longer hold: they came from another partition
        # object, or none (``storage.changes``); so does every state change below.
        log.fetch_state_changed()

    def __repr__(self) -> str:
        role = "leader" if self.leader is not None else f"leader {self.leader_id}"
        return f"<Partition {self.topic}-{self.index} {role} epoch {self.leader_epoch}>"

    @property
    def log_ident(self) -> str:
        """Kafka's ``Partition`` log prefix, for the lines it logs in its own name."""
        return f"[Partition {self.topic}-{self.index} broker={self.local_id}] "

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr) < self.log.config.min_insync_replicas

    @property
    def state_known(self) -> bool:
        return self.leader_epoch >= 0

    @property
    def is_leader(self) -> bool:
        return self.leader is not None

    @property
    def offline(self) -> bool:
        """The log's dir failed (``storage.log_dir_failure``): not served until restart."""
        log = self.log
        return log.log_dir in log.failures.offline_dirs

    # -- state changes -------------------------------------------------------------------------

    def apply_state(
        self, leader_id: int, leader_epoch: int, isr: list[int], replicas: list[int]
    ) -> None:
        """Record the partition's state without changing roles (see ``make_leader`` /
        ``resign``): the epoch requests are fenced against, and the ISR the high watermark is
        computed over."""
        self.leader_id, self.leader_epoch = leader_id, leader_epoch
        self.isr, self.replicas = list(isr), list(replicas)
        self.log.fetch_state_changed()
        if self.leader is not None:
            # Replicas added or removed by a reassignment: a new one is tracked from its
            # first fetch (it joins the ISR once caught up), a removed one no longer counts.
            followers = self.leader.followers
            for replica in replicas:
                if replica != self.local_id and replica not in followers:
                    followers[replica] = FollowerState()
            for replica in [r for r in followers if r not in replicas]:
                del followers[replica]
            self.maybe_advance_high_watermark()

    def make_leader(self, leader_epoch: int, isr: list[int], replicas: list[int]) -> None:
        """Lead the partition from ``leader_epoch`` on: the epoch starts at the log end, and a
        follower in the ISR counts as caught up now (Kafka's ``makeLeader``). Raises
        ``KafkaStorageError`` when the epoch cannot be written (the log dir failed): the
        partition does not lead then, and answers KAFKA_STORAGE_ERROR."""
        self.leader = None
        self.apply_state(self.local_id, leader_epoch, isr, replicas)
        leo = self.log.log_end_offset
        self.log.assign_leader_epoch(leader_epoch, leo)
        now = self.now_ms()
        followers = {
            r: FollowerState(last_caught_up_ms=now if r in isr else 0)
            for r in replicas
            if r != self.local_id
        }
        self.leader = LeaderState(leader_epoch, leo, followers)
        self.log.fetch_state_changed()
        self.maybe_advance_high_watermark()

    def resign(self) -> bool:
        """Stop leading; True if this broker led the partition."""
        was_leading, self.leader = self.leader is not None, None
        self.log.fetch_state_changed()
        return was_leading

    # -- requests that must reach the leader ----------------------------------------------------

    def check_leader(
        self, current_leader_epoch: int = -1, leader_only: bool = True
    ) -> tuple[ErrorCode | None, int]:
        """(error or None, leader epoch): the fencing of ``current_leader_epoch`` (older:
        FENCED_LEADER_EPOCH, newer: UNKNOWN_LEADER_EPOCH), then NOT_LEADER_OR_FOLLOWER unless
        this broker leads the partition (or, without ``leader_only``, hosts a replica of it:
        a consumer's Fetch v11+ may read from a follower, KIP-392). LEADER_NOT_AVAILABLE while
        no state is known; KAFKA_STORAGE_ERROR before anything else once the log's dir is
        offline (Kafka's ``HostedPartition.Offline``)."""
        epoch = self.leader_epoch
        log = self.log
        if (
            self.leader is not None
            and epoch >= 0
            and (current_leader_epoch < 0 or current_leader_epoch == epoch)
            and log.log_dir not in log.failures.offline_dirs
        ):
            # The common case first, without a call: a wide Fetch checks every partition.
            return None, epoch
        if self.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR, epoch
        if epoch < 0:
            return ErrorCode.LEADER_NOT_AVAILABLE, -1
        if 0 <= current_leader_epoch < epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, epoch
        if current_leader_epoch > epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH, epoch
        if self.leader is None and (leader_only or self.local_id not in self.replicas):
            # (A replica just removed from the list keeps its log until the change is applied.)
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, epoch
        return None, epoch

    def append_records_as_leader(
        self,
        records: Any,
        acks: int,
        config: Any,
        verify_transaction: Callable[[Any], ErrorCode | None] | None = None,
    ) -> AppendResult:
        """A client's batch (Produce): leadership, ``min.insync.replicas`` for acks=all, the
        batch's validation (``wireserver.storage.validation``), the transaction check, then the
        append and what follows it. Raises ``BatchError`` with Kafka's code for the
        partition."""
        error, leader_epoch = self.check_leader()
        if error is not None:
            raise BatchError(error)
        if acks == -1 and self.enforce_min_isr and len(self.isr) < config.min_insync_replicas:
            raise BatchError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {set(self.isr)} is insufficient to "
                f"satisfy the min.isr requirement of {config.min_insync_replicas} "
                f"for partition {self.topic}-{self.index}",
            )
        buf = writable(records)
        now = self.now_ms()
        headers = validate_batches(buf, config, now)
        if verify_transaction is not None:
            error = verify_transaction(buf)
            if error is not None:
                raise BatchError(error)
        if config.compact:
            validate_keys(buf, self.topic, self.index, self.log.log_start_offset)
        try:
            result = self.log.append(buf, leader_epoch=leader_epoch, now_ms=now, headers=headers)
        except (OutOfOrderSequence, InvalidProducerEpoch) as exc:
            raise BatchError(exc.error_code, str(exc)) from None
        except KafkaStorageError:
            # The dir is offline now (reported); Kafka answers the code without a message.
            raise BatchError(ErrorCode.KAFKA_STORAGE_ERROR) from None
        if not result.duplicate:
            self.after_append()
        return result

    def after_append(self) -> None:
        """What follows every append as leader: the high watermark (at once when the ISR is
        this broker alone) and waking the fetches that wait on the partition, once (a high
        watermark that moved has woken them already)."""
        if not self.maybe_advance_high_watermark():
            self.notify("append")

    # -- the leader's view of its followers ----------------------------------------------------

    def maybe_advance_high_watermark(self) -> bool:
        """The high watermark moves up to the smallest log end offset in the ISR (not until
        every ISR member has fetched from this leader)."""
        leader = self.leader
        if leader is None:
            return False
        hw = self.log.log_end_offset
        for replica in self.isr:
            if replica == self.local_id:
                continue
            follower = leader.followers.get(replica)
            if follower is None or follower.leo < 0:
                return False
            hw = min(hw, follower.leo)
        if hw <= self.log.high_watermark:
            return False
        self.log.high_watermark = hw
        self.notify("hw")
        self.notify("append")
        return True

    def follower_fetched(
        self, replica_id: int, fetch_offset: int, log_start_offset: int, live_brokers: Any
    ) -> None:
        """A follower's fetch at ``fetch_offset`` (its log end offset): when it last caught
        up, its log start (DeleteRecords), ISR expansion and the high watermark (Kafka's
        ``updateFollowerFetchState``)."""
        leader = self.leader
        if leader is None or replica_id not in leader.followers:
            return
        follower = leader.followers[replica_id]
        now = self.now_ms()
        leo = self.log.log_end_offset
        if fetch_offset >= leo:
            follower.last_caught_up_ms = now
        elif fetch_offset >= follower.last_fetch_leader_leo >= 0:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.last_fetch_leader_leo = leo
        follower.last_fetch_ms = now
        follower.leo = fetch_offset
        if log_start_offset != follower.log_start:
            follower.log_start = log_start_offset
            self.notify("low_watermark")
        if (
            replica_id not in self.isr
            and replica_id in live_brokers
            and follower.leo >= self.log.high_watermark
            and follower.leo >= leader.epoch_start_offset
        ):
            new_isr = self.isr + [replica_id]
            # ZooKeeper-era Kafka's ``expandIsrWithZk`` wording (4.x logs "ISR updated to").
            log.info(
                "%sExpanding ISR from %s to %s",
                self.log_ident,
                _ids(self.isr),
                _ids(new_isr),
            )
            self.write_isr(new_isr)
        self.maybe_advance_high_watermark()

    def shrink_isr(self, lagging: list[int]) -> bool:
        """Ask to drop ``lagging`` (``out_of_sync_replicas``) from the ISR, saying so in the
        words of Kafka's ``maybeShrinkIsr``. True once written."""
        leader = self.leader
        if leader is None or not lagging:
            return False
        new_isr = [r for r in self.isr if r not in lagging]
        out_of_sync = " ".join(  # lagging replicas are followers (``out_of_sync_replicas``)
            f"(brokerId: {r}, endOffset: {leader.followers[r].leo}, "
            f"lastCaughtUpTimeMs: {leader.followers[r].last_caught_up_ms})"
            for r in lagging
        )
        log.info(
            "%sShrinking ISR from %s to %s. Leader: (highWatermark: %d, endOffset: %d). "
            "Out of sync replicas: %s.",
            self.log_ident,
            _ids(self.isr),
            _ids(new_isr),
            self.log.high_watermark,
            self.log.log_end_offset,
            out_of_sync,
        )
        return self.write_isr(new_isr)

    def out_of_sync_replicas(self, lag_max_ms: int) -> list[int]:
        """ISR members that have not caught up for ``lag_max_ms`` (Kafka's
        ``getOutOfSyncReplicas``)."""
        leader = self.leader
        if leader is None:
            return []
        now = self.now_ms()
        return [
            r
            for r in self.isr
            if r != self.local_id
            and r in leader.followers
            and now - leader.followers[r].last_caught_up_ms > lag_max_ms
        ]

    def read_replicas(self, fetch_offset: int) -> list[tuple[int, int, int]]:
        """(broker id, log end offset, ms since it last caught up) of the followers that may
        serve a consumer at ``fetch_offset`` (Kafka's ``findPreferredReadReplica``): in the
        ISR, with the offset between their log start and log end. A follower not in the ISR
        is left out even when it holds the offset: it may keep lagging."""
        leader = self.leader
        if leader is None:
            return []
        now = self.now_ms()
        return [
            (replica, state.leo, now - state.last_caught_up_ms)
            for replica, state in leader.followers.items()
            if replica in self.isr and state.log_start <= fetch_offset <= state.leo
        ]

    def low_watermark(self, live_brokers: Any) -> int | None:
        """Kafka's ``lowWatermarkIfLeader``: the smallest log start offset over this leader and
        its followers on live brokers (-1 while one has not fetched yet); None unless this
        broker leads the partition."""
        leader = self.leader
        if leader is None:
            return None
        low = self.log.log_start_offset
        for replica, follower in leader.followers.items():
            if replica in live_brokers:
                low = min(low, follower.log_start)
        return low

    def replication_status(self, last_offset: int, min_isr: int) -> ErrorCode | None:
        """For an acks=all append that ended at ``last_offset``: None while it waits, else its
        final code (Kafka's ``DelayedProduce`` check): NONE once the high watermark has passed
        it with at least ``min_isr`` replicas in the ISR, NOT_ENOUGH_REPLICAS_AFTER_APPEND with
        fewer, NOT_LEADER_OR_FOLLOWER when leadership moved."""
        if self.leader is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark > last_offset:
            if self.enforce_min_isr and len(self.isr) < min_isr:
                return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return ErrorCode.NONE
        return None


def _ids(brokers: list[int]) -> str:
    """A broker list as Kafka's ``mkString(",")`` writes it."""
    return ",".join(str(b) for b in brokers)
