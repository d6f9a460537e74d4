"""The transaction coordinator (Kafka's ``TransactionCoordinator``, ``TransactionStateManager``
and, for one node, ``TransactionMarkerChannelManager``), transaction protocol v1.

One node leads every partition of ``__transaction_state``, so this broker coordinates every
transactional id; an id's records go to partition ``abs(hashCode(id)) % N``. The topic is
created (compacted) on first use and replayed into memory when the broker starts.

Each state change is written to ``__transaction_state`` before it is acted on. Ending a
transaction goes Ongoing → PrepareCommit/PrepareAbort (written) → markers → CompleteCommit/
CompleteAbort (written). On one node markers are written straight into the local partition
logs; a marker to a ``__consumer_offsets`` partition also tells the group coordinator to commit
or drop the producer's pending offsets. Everything is synchronous on the reactor thread, so a
client never sees a Prepare state (it would answer CONCURRENT_TRANSACTIONS); a broker that stops
between the Prepare record and the Complete record finishes the transaction when it loads the
log again, as Kafka does.

The topic's machinery (key -> partition, creating the topic, who coordinates an id, appending
as leader, loading, following leadership) is the shared ``wireserver.coordinator_runtime``;
this module keeps the transaction records and state machine.

In cluster mode (``zookeeper.connect``) ``__transaction_state`` is created through ZooKeeper
with ``transaction.state.log.replication.factor`` replicas and ``transaction.state.log.min.isr``,
and this broker coordinates the ids of the partitions it leads: the runtime calls
``load_partition(p, to_log_end=True)`` when this broker becomes leader of partition ``p`` (its
ids are replayed up to the log end and transactions found in PrepareCommit/PrepareAbort are
finished; the leader epoch is the coordinator epoch written in markers) and
``unload_partition(p)`` when it stops (its ids are dropped). Requests for other ids get
NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while loading). Records are appended with the
partition's leader epoch and the APIs answer once the high watermark passed them
(``replicated``, used by the handlers). EndTxn answers once the
Prepare record is committed; the markers then go out in the background
(``_complete_in_cluster``: WriteTxnMarkers to each partition's leader through
``wireserver.cluster.txn_markers``) and the Complete record follows the last marker, so the next
transaction's first request may get CONCURRENT_TRANSACTIONS meanwhile, as in Kafka.

Fencing: InitProducerId for an id with an open transaction bumps the epoch (PrepareEpochFence),
aborts the transaction with the new epoch and answers CONCURRENT_TRANSACTIONS; the retry gets
the next epoch. Requests with an older epoch get PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for the
request versions that predate KIP-588, mapped by the handlers). A transaction open for longer
than its timeout is fenced and aborted the same way by a timer on the injected reactor
(``transaction.abort.timed.out.transaction.cleanup.interval.ms``); idle ids are forgotten after
``transactional.id.expiration.ms`` (a tombstone is written).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from twisted.internet import defer, task

from wireserver.cluster.txn_markers import TxnMarkerSender
from wireserver.coordinator_runtime import (
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    CoordinatorHost,
    CoordinatorRuntime,
    InternalTopic,
    Load,
    TopicCreator,
)
from wireserver.protocol.errors import ErrorCode
from wireserver.storage.errors import InvalidProducerEpoch, TransactionCoordinatorFenced
from wireserver.txn.records import (
    TxnLogValue,
    TxnRecordError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from wireserver.txn.state import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TxnState,
)

log = logging.getLogger(__name__)

S = TxnState
E = ErrorCode


def _topic_configs(config: Any) -> dict[str, str]:
    """``__transaction_state``'s topic configs, as Kafka creates it: compacted, uncompressed,
    ``transaction.state.log.min.isr`` and no unclean leader election (a lost Prepare record
    would leave a transaction half complete)."""
    return {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
        "unclean.leader.election.enable": "false",
        "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
    }


TRANSACTION_STATE = InternalTopic(
    TRANSACTION_STATE_TOPIC,
    "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor",
    _topic_configs,
    keys="transactional id(s)",
)


#: Coordinator answers a producer retries: Kafka hands them to Produce as NOT_ENOUGH_REPLICAS.
_RETRIABLE = frozenset(
    {
        E.CONCURRENT_TRANSACTIONS,
        E.COORDINATOR_LOAD_IN_PROGRESS,
        E.COORDINATOR_NOT_AVAILABLE,
        E.NOT_COORDINATOR,
        E.NETWORK_EXCEPTION,
    }
)


def _for_produce(error: ErrorCode) -> ErrorCode:
    """A coordinator's answer to an implicit add, as the Produce error Kafka gives."""
    if error in _RETRIABLE:
        return E.NOT_ENOUGH_REPLICAS
    if error == E.PRODUCER_FENCED:
        return E.INVALID_PRODUCER_EPOCH
    return error


class GroupOffsets(Protocol):
    """What the transaction coordinator uses of the group coordinator's offsets
    (``wireserver.groups.offsets.OffsetManager``): a transaction's offsets go to its group's
    partition of ``__consumer_offsets`` (the ``runtime`` of that topic), and the marker written
    there completes them."""

    runtime: CoordinatorRuntime

    def complete_transaction(self, producer_id: int, commit: bool, partition: int) -> None: ...


class TransactionCoordinator:
    """Given what it uses rather than the whole broker, so that it imports nothing of it:
    ``host`` (config, logs, replicas, cluster metadata and clock), the reactor its timers run on,
    ``create_topic`` (creates ``__transaction_state``), ``new_producer_id`` (the broker's
    producer id generator, asked at each use: a cluster replaces it after start-up) and
    ``groups`` (the group coordinator, for transactional offsets)."""

    def __init__(
        self,
        host: CoordinatorHost,
        *,
        reactor: Any,
        create_topic: TopicCreator,
        new_producer_id: Callable[[], int],
        groups: GroupOffsets,
    ):
        self.host = host
        self.reactor = reactor
        self.config = host.config
        self.new_producer_id = new_producer_id
        self.groups = groups
        self.txns: dict[str, TransactionMetadata] = {}
        self._by_pid: dict[int, str] = {}  # producer id -> transactional id
        self.coordinator_epoch = 0
        self._loops: list[task.LoopingCall] = []
        # A new election reloads a partition (Kafka's transaction coordinator does): its
        # coordinator epoch, written in the markers, changed.
        self.runtime = CoordinatorRuntime(
            host, TRANSACTION_STATE, self, create_topic, reload_on_reelection=True
        )
        self.clustered = self.runtime.clustered
        self.markers = (
            TxnMarkerSender(
                reactor,
                self.config.node_id,
                self.config.inter_broker_security,
                host.metadata,
            )
            if self.clustered
            else None
        )

    def now_ms(self) -> int:
        return self.host.now_ms()

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Load ``__transaction_state`` (one node; in a cluster partitions are loaded as this
        broker becomes their leader, through the runtime) and start the housekeeping timers."""
        self.runtime.start()
        self._every(
            self.config["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
            self.abort_timed_out,
        )
        self._every(
            self.config["transaction.remove.expired.transaction.cleanup.interval.ms"],
            self.expire_transactional_ids,
        )

    def _every(self, interval_ms: int, func: Callable[[], object]) -> None:
        """Run ``func`` every ``interval_ms`` on the injected reactor (tests drive it with a
        ``Clock``); a failure is logged, not raised into the reactor."""
        loop = task.LoopingCall(func)
        loop.clock = self.reactor
        loop.start(interval_ms / 1000.0, now=False).addErrback(
            lambda failure: log.error("transaction housekeeping failed: %s", failure.getTraceback())
        )
        self._loops.append(loop)

    def stop(self) -> None:
        """Stop the housekeeping timers and the marker sender (the broker is stopping)."""
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops.clear()
        if self.markers is not None:
            self.markers.stop()

    # -- the transaction log ----------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        """The partition of ``__transaction_state`` that holds the id."""
        return self.runtime.partition_for(transactional_id)

    def ensure_ready(self, transactional_id: str | None = None) -> ErrorCode | None:
        """Create ``__transaction_state`` on first use; COORDINATOR_NOT_AVAILABLE while its
        replication factor exceeds the live brokers (Kafka's default of 3 on one node). With a
        transactional id, in cluster mode: NOT_COORDINATOR unless this broker leads the id's
        partition, COORDINATOR_LOAD_IN_PROGRESS while it loads it."""
        return self.runtime.ensure_ready(transactional_id)

    def _write(self, txn: TransactionMetadata, tombstone: bool = False) -> ErrorCode:
        """Persist ``txn`` (its current state) to its partition of ``__transaction_state``."""
        value = None
        if not tombstone:
            by_topic: dict[str, list[int]] = {}
            for topic, p in sorted(txn.partitions):
                by_topic.setdefault(topic, []).append(p)
            value = encode_value(
                TxnLogValue(
                    txn.producer_id,
                    txn.producer_epoch,
                    txn.txn_timeout_ms,
                    txn.state.id,
                    None if txn.state == S.EMPTY else sorted(by_topic.items()),
                    txn.txn_last_update_timestamp,
                    txn.txn_start_timestamp,
                    txn.last_producer_id,
                    txn.next_producer_id,
                    txn.client_transaction_version,
                )
            )
        return self.runtime.append(
            txn.transactional_id, [(encode_key(txn.transactional_id), value)]
        )

    def replicated(self, transactional_id: str) -> defer.Deferred:
        """Fires with NONE once the id's state records are below the high watermark of its
        partition (at once on one node), else NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE:
        the transaction APIs answer after this, as Kafka's coordinator appends with acks=-1."""
        return self.runtime.replicated(transactional_id)

    def _set(self, txn: TransactionMetadata) -> None:
        """Make ``txn`` the id's state (and index it by producer id, for Produce checks)."""
        old = self.txns.get(txn.transactional_id)
        if old is not None and old.producer_id != txn.producer_id:
            self._by_pid.pop(old.producer_id, None)
        self.txns[txn.transactional_id] = txn
        self._by_pid[txn.producer_id] = txn.transactional_id

    def _forget(self, transactional_id: str) -> None:
        """Drop the id from memory (expired, or its partition is coordinated elsewhere now)."""
        old = self.txns.pop(transactional_id, None)
        if old is not None:
            self._by_pid.pop(old.producer_id, None)

    def _commit_state(self, txn: TransactionMetadata, new: TransactionMetadata) -> ErrorCode:
        """Write ``new`` and, once it is in the log, make it the id's state."""
        error = self._write(new)
        if error == E.NONE:
            self._set(new)
        return error

    # -- loading ----------------------------------------------------------------------------

    def load_partition(self, partition: int, to_log_end: bool = False) -> Load:
        """Replay one partition (up to the high watermark, or the log end for a new leader,
        whose whole log is to be committed) and finish the transactions caught between their
        Prepare record and their Complete record (Kafka re-sends their markers when it loads a
        partition). Ongoing transactions stay open: their producer may still end them, and
        the timeout aborts them otherwise, as in Kafka. Returns the ids loaded. A record a step
        (the runtime loads this topic at once: no reactor)."""
        found: dict[str, TxnLogValue | None] = {}
        for key_bytes, value_bytes in self.runtime.records(partition, to_log_end):
            yield
            try:
                key = decode_key(key_bytes)
                found[key] = None if value_bytes is None else decode_value(value_bytes)
            except TxnRecordError as exc:
                log.warning("skipping unreadable %s record: %s", TRANSACTION_STATE_TOPIC, exc)
        loaded = []
        for transactional_id, value in found.items():
            if value is None:
                continue
            try:
                state = S.from_id(value.status)
            except ValueError:
                log.warning("skipping %s with unknown state %d", transactional_id, value.status)
                continue
            if state == S.DEAD:
                continue
            partitions = {(topic, p) for topic, ids in value.partitions or [] for p in ids}
            txn = TransactionMetadata(
                transactional_id,
                value.producer_id,
                value.producer_epoch,
                value.timeout_ms,
                state,
                partitions,
                value.start_timestamp,
                value.last_update_timestamp,
                last_producer_id=value.previous_producer_id,
                client_transaction_version=value.client_transaction_version,
                next_producer_id=value.next_producer_id,
            )
            if txn.client_transaction_version >= 2 and (state.is_prepare or state.is_complete):
                # The epoch before the end's bump: what a retried EndTxn v5 carries.
                txn.last_producer_epoch = txn.producer_epoch - 1
            self._set(txn)
            loaded.append(txn)
        for txn in loaded:
            if txn.state.is_prepare:
                self._complete(txn, txn.state == S.PREPARE_COMMIT)
        return len(loaded)

    def unload_partition(self, partition: int) -> int:
        """This broker no longer coordinates ``partition``: forget its transactional ids
        (Kafka's ``onResignation``); marker sending for them stops. Returns how many."""
        dropped = [t for t in self.txns if self.partition_for(t) == partition]
        for transactional_id in dropped:
            self._forget(transactional_id)
        return len(dropped)

    # -- InitProducerId ---------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_pid: int = NO_PRODUCER_ID,
        expected_epoch: int = NO_PRODUCER_EPOCH,
    ) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch) for a transactional producer's InitProducerId."""
        error = self.ensure_ready(transactional_id)
        if error is not None:
            return error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        now = self.now_ms()
        txn = self.txns.get(transactional_id)
        if txn is None:
            txn = TransactionMetadata(
                transactional_id,
                self.new_producer_id(),
                NO_PRODUCER_EPOCH,
                timeout_ms,
                S.EMPTY,
                set(),
                -1,
                now,
            )
            self._set(txn)

        def fail(code: ErrorCode) -> tuple[ErrorCode, int, int]:
            return code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH

        if txn.state.is_prepare or txn.state == S.PREPARE_EPOCH_FENCE:
            return fail(E.CONCURRENT_TRANSACTIONS)
        if expected_pid != NO_PRODUCER_ID:
            # KIP-360: the producer says which id and epoch it had.
            if expected_pid not in (txn.producer_id, txn.last_producer_id):
                return fail(E.INVALID_PRODUCER_ID_MAPPING)
            retry = (
                expected_pid == txn.last_producer_id
                and expected_epoch == txn.last_producer_epoch
                and txn.state == S.EMPTY
            )
            if retry:
                return E.NONE, txn.producer_id, txn.producer_epoch
            if expected_pid != txn.producer_id or expected_epoch != txn.producer_epoch:
                return fail(E.PRODUCER_FENCED)
        if txn.state == S.ONGOING:
            # Fence the current producer and abort its transaction; the client retries.
            self._fence_and_abort(txn)
            return fail(E.CONCURRENT_TRANSACTIONS)
        new = txn.copy()
        new.last_producer_id, new.last_producer_epoch = txn.producer_id, txn.producer_epoch
        if txn.epoch_exhausted:
            new.producer_id = self.new_producer_id()
            new.producer_epoch = 0
        else:
            new.producer_epoch = txn.producer_epoch + 1
        new.txn_timeout_ms = timeout_ms
        new.partitions = set()
        new.txn_start_timestamp = -1
        new.transition_to(S.EMPTY, now)
        error = self._commit_state(txn, new)
        if error != E.NONE:
            if txn.producer_epoch == NO_PRODUCER_EPOCH:
                self._forget(transactional_id)
            return fail(error)
        return E.NONE, new.producer_id, new.producer_epoch

    def _fence_and_abort(self, txn: TransactionMetadata) -> ErrorCode:
        """Bump the epoch of an open transaction (so its producer is fenced) and abort it."""
        fenced = txn.copy()
        now = self.now_ms()
        fenced.transition_to(S.PREPARE_EPOCH_FENCE, now)
        if not txn.epoch_exhausted:
            fenced.producer_epoch = txn.producer_epoch + 1
        self._set(fenced)
        error = self._end(fenced, commit=False)
        if error != E.NONE:
            self._set(txn)
        return error

    # -- checks shared by the txn APIs ------------------------------------------------------

    def _check(
        self, txn: TransactionMetadata | None, producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        if txn is None or txn.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != producer_epoch:
            return E.PRODUCER_FENCED
        return None

    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[tuple[str, int]],
        transaction_version: int = 0,
    ) -> dict[tuple[str, int], ErrorCode]:
        """AddPartitionsToTxn; ``transaction_version`` 2 for a partition leader's implicit add
        (transaction protocol v2: the producer sends no AddPartitionsToTxn)."""
        partitions = list(partitions)
        if not transactional_id:
            return {tp: E.INVALID_REQUEST for tp in partitions}
        error = self.ensure_ready(transactional_id)
        topics = self.host.logs.topics
        unknown = {
            tp
            for tp in partitions
            if tp[0] not in topics or not 0 <= tp[1] < topics[tp[0]].num_partitions
        }
        if error is None and unknown:
            return {
                tp: E.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else E.OPERATION_NOT_ATTEMPTED
                for tp in partitions
            }
        if error is None:
            error = self._add(
                transactional_id, producer_id, producer_epoch, partitions, transaction_version
            )
        return {tp: error for tp in partitions}

    def _add(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[tuple[str, int]],
        transaction_version: int = 0,
    ) -> ErrorCode:
        txn = self.txns.get(transactional_id)
        error = self._check(txn, producer_id, producer_epoch)
        if error is not None:
            return error
        assert txn is not None
        if txn.state.is_prepare or txn.state == S.PREPARE_EPOCH_FENCE:
            return E.CONCURRENT_TRANSACTIONS
        if txn.state == S.ONGOING and set(partitions) <= txn.partitions:
            return E.NONE
        now = self.now_ms()
        new = txn.copy()
        if txn.state != S.ONGOING:
            new.txn_start_timestamp = now
        new.partitions |= set(partitions)
        new.client_transaction_version = transaction_version
        new.transition_to(S.ONGOING, now)
        return self._commit_state(txn, new)

    @defer.inlineCallbacks
    def add_implicitly(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[tuple[str, int]],
    ):
        """Transaction protocol v2: a partition leader adds the partitions of a Produce v12+
        transactional request to the producer's transaction before appending (Kafka's
        AddPartitionsToTxnManager, ``verifyOnly`` false); TxnOffsetCommit v5+ adds the
        group's offsets partition so. Fires with {partition: the coordinator's error} for the
        partitions it refused."""
        coordinator = self.host.metadata.leader(
            TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id)
        )
        if not self.clustered or coordinator == self.config.node_id:
            results = self.add_partitions(
                transactional_id, producer_id, producer_epoch, partitions, transaction_version=2
            )
            error = next(iter(results.values()), E.NONE)
            if error == E.NONE:
                error = yield self.replicated(transactional_id)
                results = dict.fromkeys(partitions, error)
        else:
            results = yield self.markers.add_partitions(
                coordinator, transactional_id, producer_id, producer_epoch, partitions
            )
        return {tp: error for tp, error in results.items() if error != E.NONE}

    def add_before_produce(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[tuple[str, int]],
    ) -> defer.Deferred:
        """``add_implicitly`` for Produce v12+, with the errors Kafka gives Produce: those a
        producer retries on (NOT_ENOUGH_REPLICAS) where the coordinator is busy or elsewhere."""
        added = self.add_implicitly(transactional_id, producer_id, producer_epoch, partitions)
        return added.addCallback(
            lambda refused: {tp: _for_produce(error) for tp, error in refused.items()}
        )

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[tuple[str, int]],
    ) -> dict[tuple[str, int], ErrorCode]:
        """AddPartitionsToTxn v4+ ``verify_only``: whether each partition is in the open
        transaction (INVALID_TXN_STATE when not)."""
        txn = self.txns.get(transactional_id)
        error = self.runtime.coordinator_error(self.partition_for(transactional_id)) or self._check(
            txn, producer_id, producer_epoch
        )
        out = {}
        for tp in partitions:
            if error is not None:
                out[tp] = error
            elif txn is None or txn.state != S.ONGOING or tp not in txn.partitions:
                out[tp] = E.INVALID_TXN_STATE
            else:
                out[tp] = E.NONE
        return out

    def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> ErrorCode:
        if not transactional_id:
            return E.INVALID_REQUEST
        error = self.ensure_ready(transactional_id) or self.groups.runtime.ensure_ready()
        if error is not None:
            return error
        partition = self.groups.runtime.partition_for(group_id)
        return self._add(
            transactional_id, producer_id, producer_epoch, [(OFFSETS_TOPIC, partition)]
        )

    # -- EndTxn -----------------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        transaction_version: int = 0,
    ) -> ErrorCode:
        """EndTxn; ``transaction_version`` 2 (EndTxn v5) bumps the epoch (``producer_of``
        tells the new one)."""
        if not transactional_id:
            return E.INVALID_REQUEST
        error = self.ensure_ready(transactional_id)
        if error is not None:
            return error
        txn = self.txns.get(transactional_id)
        if (
            transaction_version >= 2
            and not commit
            and txn is not None
            and (txn.producer_id, txn.producer_epoch) == (producer_id, producer_epoch)
            and txn.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
        ):
            # v2 aborts with nothing open too (Kafka 4.4: the epoch is bumped all the same).
            return self._end(txn, commit, transaction_version)
        error = self._check_end(txn, producer_id, producer_epoch)
        if error is not None:
            return error
        assert txn is not None
        state = txn.state
        if state == S.ONGOING:
            return self._end(txn, commit, transaction_version)
        if state == S.COMPLETE_COMMIT:
            return E.NONE if commit else E.INVALID_TXN_STATE
        if state == S.COMPLETE_ABORT:
            return E.NONE if not commit else E.INVALID_TXN_STATE
        if state == S.PREPARE_COMMIT:
            return E.CONCURRENT_TRANSACTIONS if commit else E.INVALID_TXN_STATE
        if state == S.PREPARE_ABORT:
            return E.CONCURRENT_TRANSACTIONS if not commit else E.INVALID_TXN_STATE
        if state == S.PREPARE_EPOCH_FENCE:
            return E.CONCURRENT_TRANSACTIONS
        return E.INVALID_TXN_STATE  # Empty, Dead

    def _check_end(
        self, txn: TransactionMetadata | None, producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        """Kafka's EndTxn checks. After a v2 end the id's epoch is one above the client's
        until the client learns it, so a retried v2 EndTxn carries the epoch before the bump
        (``last_producer_epoch``), or, past an epoch overflow, the previous producer id."""
        if txn is None:
            return E.INVALID_PRODUCER_ID_MAPPING
        if txn.client_transaction_version < 2:
            return self._check(txn, producer_id, producer_epoch)
        retry_on_overflow = (
            txn.last_producer_id == producer_id
            and producer_epoch == MAX_EPOCH
            and txn.producer_epoch == 0
        )
        retry_on_bump = txn.last_producer_epoch == producer_epoch
        if txn.state.is_prepare:
            valid = retry_on_bump
        elif txn.state.is_complete:
            valid = retry_on_bump or retry_on_overflow
        else:
            valid = producer_epoch == txn.producer_epoch
        if txn.producer_id != producer_id and not retry_on_overflow:
            return E.INVALID_PRODUCER_ID_MAPPING
        return None if valid else E.PRODUCER_FENCED

    def producer_of(self, transactional_id: str) -> tuple[int, int]:
        """The producer id and epoch an EndTxn v5 answers: the bumped epoch, or a new producer
        id at epoch 0 once the epoch overflowed."""
        txn = self.txns.get(transactional_id)
        if txn is None:  # forgotten meanwhile (this broker stopped coordinating it)
            return NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if txn.next_producer_id != NO_PRODUCER_ID:
            return txn.next_producer_id, 0
        return txn.producer_id, txn.producer_epoch

    def _end(
        self, txn: TransactionMetadata, commit: bool, transaction_version: int = 0
    ) -> ErrorCode:
        prepared = txn.copy()
        prepared.transition_to(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, self.now_ms())
        if txn.state == S.PREPARE_EPOCH_FENCE:  # the fence bumped the epoch already
            prepared.last_producer_epoch = NO_PRODUCER_EPOCH
        else:
            prepared.client_transaction_version = transaction_version
            if transaction_version >= 2:
                # KIP-890 part 2: every end bumps the epoch; the markers carry the new one.
                prepared.last_producer_epoch = txn.producer_epoch
                prepared.producer_epoch = txn.producer_epoch + 1
                if txn.epoch_exhausted:
                    prepared.next_producer_id = self.new_producer_id()
        error = self._commit_state(txn, prepared)
        if error != E.NONE:
            return error
        return self._complete(prepared, commit)

    def _complete(self, prepared: TransactionMetadata, commit: bool) -> ErrorCode:
        """Write the markers of a prepared transaction, then its Complete state (in a cluster:
        once the Prepare record is committed, in the background, ``_complete_in_cluster``)."""
        if self.clustered:
            self._complete_in_cluster(prepared, commit).addErrback(
                lambda failure: log.error(
                    "completing %s's transaction failed: %s",
                    prepared.transactional_id,
                    failure.getTraceback(),
                )
            )
            return E.NONE
        self.write_markers(
            prepared.producer_id,
            prepared.producer_epoch,
            commit,
            prepared.partitions,
            transaction_version=prepared.client_transaction_version,
        )
        self._record_completion(prepared, commit)
        return E.NONE

    def _record_completion(self, prepared: TransactionMetadata, commit: bool) -> None:
        """Every marker is written: write CompleteCommit/CompleteAbort and make it the state.
        The transaction is over even if the record cannot be written (a reload finds the
        Prepare record and writes the markers again)."""
        done = prepared.copy()
        done.transition_to(S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT, self.now_ms())
        done.partitions = set()
        if done.next_producer_id != NO_PRODUCER_ID:  # the epoch overflowed: a new producer id
            done.last_producer_id = done.producer_id
            done.producer_id, done.producer_epoch = done.next_producer_id, 0
            done.next_producer_id = NO_PRODUCER_ID
        if self._write(done) != E.NONE:
            log.warning("could not record the end of %s's transaction", done.transactional_id)
        self._set(done)

    @defer.inlineCallbacks
    def _complete_in_cluster(self, prepared: TransactionMetadata, commit: bool):
        """Kafka's way: once the Prepare record is below the high watermark, send
        WriteTxnMarkers to the leader of every partition in the transaction (wherever it is,
        retrying as leadership moves), then write the Complete record. Stops as soon as this
        broker is no longer the id's coordinator at this coordinator epoch: the next
        coordinator finds the Prepare record when it loads the partition and finishes."""
        transactional_id = prepared.transactional_id
        partition = self.partition_for(transactional_id)
        runtime = self.runtime
        coordinator_epoch = runtime.coordinator_epochs.get(partition, -1)

        def still_coordinator() -> bool:
            return (
                self.txns.get(transactional_id) is prepared
                and partition in runtime.owned
                and runtime.coordinator_epochs.get(partition) == coordinator_epoch
            )

        partition_log = runtime.partition_log(partition)
        if partition_log is None:
            return
        prepare_offset = partition_log.log_end_offset - 1
        while still_coordinator():
            status = yield runtime.wait_committed(partition, prepare_offset)
            if status in (E.NONE, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
                break  # committed (the high watermark passed it)
            if status != E.REQUEST_TIMED_OUT:
                return
        if not still_coordinator():
            return
        yield self.markers.send(
            prepared.producer_id,
            prepared.producer_epoch,
            commit,
            coordinator_epoch,
            prepared.partitions,
            still_coordinator,
            prepared.client_transaction_version,
        )
        if still_coordinator():
            self._record_completion(prepared, commit)

    def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        partitions: Iterable[tuple[str, int]],
        coordinator_epoch: int | None = None,
        transaction_version: int = 0,
    ) -> dict[tuple[str, int], ErrorCode]:
        """Append a COMMIT/ABORT marker to each partition this broker leads (WriteTxnMarkers,
        and the single-node coordinator's direct path). Partitions that do not exist answer
        UNKNOWN_TOPIC_OR_PARTITION, partitions led elsewhere NOT_LEADER_OR_FOLLOWER."""
        if coordinator_epoch is None:
            coordinator_epoch = self.coordinator_epoch
        results: dict[tuple[str, int], ErrorCode] = {}
        now = self.now_ms()
        for topic, partition in sorted(partitions):
            partition_log = self.host.logs.get_log(topic, partition)
            if partition_log is None:
                results[(topic, partition)] = self.host.replicas.missing_error(topic, partition)
                continue
            not_leader, leader_epoch = self.host.replicas.check_leader(topic, partition)
            if not_leader is not None:
                results[(topic, partition)] = E.NOT_LEADER_OR_FOLLOWER
                continue
            try:
                partition_log.append_marker(
                    producer_id,
                    producer_epoch,
                    commit,
                    coordinator_epoch,
                    leader_epoch=leader_epoch,
                    now_ms=now,
                    transaction_version=transaction_version,
                )
            except (InvalidProducerEpoch, TransactionCoordinatorFenced) as exc:
                log.warning(
                    "marker for producer %d on %s-%d refused: %s",
                    producer_id,
                    topic,
                    partition,
                    exc,
                )
                results[(topic, partition)] = exc.error_code
                continue
            except Exception:  # noqa: BLE001 - one bad partition must not stop the others
                log.exception(
                    "marker for producer %d on %s-%d failed", producer_id, topic, partition
                )
                results[(topic, partition)] = E.KAFKA_STORAGE_ERROR
                continue
            self.host.replicas.after_append(topic, partition)
            if topic == OFFSETS_TOPIC:
                self.groups.complete_transaction(producer_id, commit, partition)
            results[(topic, partition)] = E.NONE
        return results

    # -- Produce verification ---------------------------------------------------------------

    def transaction_of(self, producer_id: int) -> TransactionMetadata | None:
        transactional_id = self._by_pid.get(producer_id)
        return None if transactional_id is None else self.txns.get(transactional_id)

    def verify_produce(
        self,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
        abortable: bool = False,
    ) -> ErrorCode | None:
        """``check_produce`` for a transactional batch where this broker can tell: on one node,
        where every transaction is coordinated here. In a cluster the producer's coordinator
        is usually another broker, so nothing is checked here (None)."""
        if self.clustered:
            return None
        return self.check_produce(producer_id, producer_epoch, topic, partition, abortable)

    def check_produce(
        self,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
        abortable: bool = False,
    ) -> ErrorCode | None:
        """A transactional batch may only go to a partition added to its producer's open
        transaction (Kafka's KIP-890 part 1 verification, done locally). A partition not in
        it is TRANSACTION_ABORTABLE for the request versions that know that error
        (``abortable``: Produce v11+, TxnOffsetCommit v4+), else INVALID_TXN_STATE, as
        Kafka's AddPartitionsToTxnManager answers."""
        txn = self.transaction_of(producer_id)
        if txn is None:
            return E.INVALID_TXN_STATE
        if producer_epoch < txn.producer_epoch:
            return E.INVALID_PRODUCER_EPOCH
        if producer_epoch != txn.producer_epoch:
            return E.INVALID_TXN_STATE
        if txn.state != S.ONGOING or (topic, partition) not in txn.partitions:
            return E.TRANSACTION_ABORTABLE if abortable else E.INVALID_TXN_STATE
        return None

    # -- timeouts and expiry ----------------------------------------------------------------

    def abort_timed_out(self) -> int:
        """Fence and abort every transaction open for longer than its timeout."""
        now = self.now_ms()
        count = 0
        for txn in list(self.txns.values()):
            if txn.state == S.ONGOING and txn.txn_start_timestamp + txn.txn_timeout_ms < now:
                log.info(
                    "aborting transaction of %s: open for %d ms, timeout %d ms",
                    txn.transactional_id,
                    now - txn.txn_start_timestamp,
                    txn.txn_timeout_ms,
                )
                if self._fence_and_abort(txn) == E.NONE:
                    count += 1
        return count

    def expire_transactional_ids(self) -> int:
        now = self.now_ms()
        limit = self.config["transactional.id.expiration.ms"]
        count = 0
        for txn in list(self.txns.values()):
            if (
                txn.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
                and now - txn.txn_last_update_timestamp >= limit
            ):
                dead = txn.copy()
                dead.transition_to(S.DEAD, now)
                if self._write(dead, tombstone=True) == E.NONE:
                    self._forget(txn.transactional_id)
                    count += 1
        return count

    # -- admin ------------------------------------------------------------------------------

    def list_transactions(
        self,
        states: list[str],
        producer_ids: list[int],
        duration_ms: int = -1,
        pattern: str | None = None,
    ) -> tuple[list[str], list[TransactionMetadata]]:
        """(unknown state filters, matching transactions)."""
        wanted = set()
        unknown = []
        for name in states:
            state = S.from_name(name)
            if state is None:
                unknown.append(name)
            else:
                wanted.add(state)
        regex = re.compile(pattern) if pattern else None
        now = self.now_ms()
        out = []
        for txn in self.txns.values():
            if states and txn.state not in wanted:
                continue
            if producer_ids and txn.producer_id not in producer_ids:
                continue
            if duration_ms >= 0 and (
                txn.txn_start_timestamp < 0 or now - txn.txn_start_timestamp < duration_ms
            ):
                continue
            if regex is not None and not regex.fullmatch(txn.transactional_id):
                continue
            out.append(txn)
        return unknown, out
