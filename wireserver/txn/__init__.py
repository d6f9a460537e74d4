"""Transactions: the state machine (``state``), ``__transaction_state`` records (``records``) and
the transaction coordinator (``coordinator``)."""

from wireserver.txn.coordinator import TransactionCoordinator
from wireserver.txn.state import TransactionMetadata, TxnState

__all__ = ["TransactionCoordinator", "TransactionMetadata", "TxnState"]
