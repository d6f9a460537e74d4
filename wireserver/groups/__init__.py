"""The group coordinator: classic consumer groups and committed offsets, persisted in
``__consumer_offsets``.

- ``state``: the group state machine (Enum + allowed predecessors + one ``transition_to``).
- ``group``: a group and its members (bookkeeping only, no timers or I/O).
- ``records``: the ``__consumer_offsets`` key/value formats and group → partition mapping.
- ``coordinator``: the protocol logic, timers on the injected reactor, persistence and loading.
"""

from wireserver.groups.coordinator import GroupCoordinator, JoinRequest, JoinResult, SyncResult
from wireserver.groups.state import GroupState, IllegalStateTransition

__all__ = ["GroupCoordinator", "GroupState", "IllegalStateTransition", "JoinRequest",
           "JoinResult", "SyncResult"]
