"""The group coordinator: classic consumer groups and committed offsets, persisted in
``__consumer_offsets``.

- ``state``: the group state machine (Enum + allowed predecessors + one ``transition_to``).
- ``group``: a group and its members (bookkeeping only, no timers or I/O).
- ``records``: the ``__consumer_offsets`` key/value formats and group → partition mapping.
- ``coordinator``: membership (join, sync, heartbeat, leave, static members), timers on the
  injected reactor, group persistence and loading, on ``wireserver.coordinator_runtime``.
- ``offsets``: committed and pending (transactional) offsets, their expiry.
- ``consumer_coordinator``: consumer-protocol (KIP-848) groups; ``streams_coordinator``:
  Streams (KIP-1071) groups; what they share is in ``modern_group`` (the group and its
  members, reconciliation) and ``modern_coordinator`` (the heartbeat's common steps).
"""

from wireserver.groups.coordinator import GroupCoordinator, JoinRequest, JoinResult, SyncResult
from wireserver.groups.state import GroupState, IllegalStateTransition

__all__ = [
    "GroupCoordinator",
    "GroupState",
    "IllegalStateTransition",
    "JoinRequest",
    "JoinResult",
    "SyncResult",
]
