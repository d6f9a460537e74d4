"""The transaction state machine and a transactional id's metadata (Kafka's
``TransactionState`` and ``TransactionMetadata``).

States carry Kafka's ids (the ``TransactionStatus`` byte of ``__transaction_state`` values) and
names (what DescribeTransactions and ListTransactions report). ``ALLOWED`` is the table of legal
moves, read as "state: the states it may be entered from"; ``TransactionMetadata.transition_to``
is the only way a state changes and raises ``IllegalTransition`` on anything else.

    Empty            <- Empty, CompleteCommit, CompleteAbort          (InitProducerId)
    Ongoing          <- Ongoing, Empty, CompleteCommit, CompleteAbort (AddPartitions/Offsets)
    PrepareCommit    <- Ongoing                                       (EndTxn COMMIT)
    PrepareAbort     <- Ongoing, PrepareEpochFence                    (EndTxn ABORT, fencing)
                        Empty, CompleteCommit, CompleteAbort          (EndTxn v5 ABORT)
    CompleteCommit   <- PrepareCommit                                 (markers written)
    CompleteAbort    <- PrepareAbort                                  (markers written)
    Dead             <- Empty, CompleteCommit, CompleteAbort          (id expired)
    PrepareEpochFence <- Ongoing                                      (InitProducerId / timeout
                                                                       fences an open txn)

PrepareEpochFence is never written to the log: it is the in-memory step between bumping the
epoch of an open transaction and writing its PrepareAbort (as in Kafka, where it is a pending
state).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class IllegalTransition(RuntimeError):
    """A state change the table does not allow (a coordinator bug, never a client error)."""


class TxnState(enum.Enum):
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    def __init__(self, id_: int, display: str):
        self.id = id_
        self.display = display

    @classmethod
    def from_id(cls, id_: int) -> TxnState:
        for state in cls:
            if state.id == id_:
                return state
        raise ValueError(f"unknown transaction state id {id_}")

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        for state in cls:
            if state.display == name:
                return state
        return None

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


S = TxnState

ALLOWED: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # Transaction protocol v2 also aborts with no transaction open (an epoch bump).
    S.PREPARE_ABORT: frozenset(
        {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    ),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

#: Kafka's ``Short.MaxValue - 1``: past this epoch a transactional id gets a new producer id.
MAX_EPOCH = 2**15 - 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def can_transition(current: TxnState, target: TxnState) -> bool:
    return current in ALLOWED[target]


@dataclass
class TransactionMetadata:
    """What the coordinator knows of one transactional id."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TxnState = S.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    # The producer id / epoch of the previous InitProducerId answer, so that a retried
    # InitProducerId (KIP-360) is recognised.
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    #: The transaction protocol of the producer's last EndTxn or implicit add (2: KIP-890
    #: part 2, an epoch bump at every end), and the producer id its epoch overflows to.
    client_transaction_version: int = 0
    next_producer_id: int = NO_PRODUCER_ID

    def transition_to(self, target: TxnState, now_ms: int) -> None:
        if not can_transition(self.state, target):
            raise IllegalTransition(
                f"transactional id {self.transactional_id}: {self.state.display} -> "
                f"{target.display} is not a legal transition"
            )
        self.state = target
        self.txn_last_update_timestamp = now_ms

    def copy(self) -> TransactionMetadata:
        return TransactionMetadata(
            self.transactional_id,
            self.producer_id,
            self.producer_epoch,
            self.txn_timeout_ms,
            self.state,
            set(self.partitions),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
            self.last_producer_id,
            self.last_producer_epoch,
            self.client_transaction_version,
            self.next_producer_id,
        )

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH
