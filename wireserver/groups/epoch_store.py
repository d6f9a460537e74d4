"""The persistence consumer-protocol (KIP-848) and Streams (KIP-1071) groups share: each keeps
only its epoch in ``__consumer_offsets`` (a metadata record under the group's key), is restored
Empty at that epoch, and is deleted with its offsets by tombstones. The coordinators differ
only in the record types, the group class and the name of their Dead state.
"""

from __future__ import annotations

import logging
from typing import Any

from wireserver.groups.records import OffsetKey, encode_key
from wireserver.protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class EpochStore:
    """Mixed into a coordinator with ``coordinator.runtime``, ``groups`` and ``now_ms``; the
    subclass names its records and group class below."""

    coordinator: Any
    groups: dict[str, Any]
    #: "consumer" or "streams", for the log
    kind: str
    group_class: Any
    dead_state: Any

    def now_ms(self) -> int:
        raise NotImplementedError

    def metadata_key(self, group_id: str) -> Any:
        raise NotImplementedError

    def metadata_value(self, epoch: int) -> bytes:
        raise NotImplementedError

    def _store(self, group: Any) -> None:
        key = encode_key(self.metadata_key(group.group_id))
        value = self.metadata_value(group.group_epoch)
        error = self.coordinator.runtime.append(group.group_id, [(key, value)])
        if error != ErrorCode.NONE:
            log.warning(
                "%s group %s: epoch %d not persisted: %s",
                self.kind,
                group.group_id,
                group.group_epoch,
                ErrorCode(error).name,
            )

    def restore(self, group_id: str, value: Any, offsets: dict) -> Any:
        """The group as its metadata record left it: Empty, at its epoch."""
        group = self.group_class(group_id, self.now_ms())
        group.group_epoch = group.assignment_epoch = value.epoch
        group.offsets = offsets
        self.groups[group_id] = group
        return group

    def convert_to_classic(self, group: Any) -> dict | None:
        """An empty group a classic JoinGroup takes over (Kafka's conversion of an empty
        group): its metadata record is tombstoned, it leaves this coordinator, and its
        committed offsets are returned for the classic group that replaces it. None when the
        tombstone could not be written (the group stays as it was)."""
        tombstone = [(encode_key(self.metadata_key(group.group_id)), None)]
        if self.coordinator.runtime.append(group.group_id, tombstone) != ErrorCode.NONE:
            return None
        group.transition_to(self.dead_state, self.now_ms())
        self.groups.pop(group.group_id, None)
        return group.offsets

    def delete(self, group: Any) -> ErrorCode:
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        entries = [(encode_key(OffsetKey(group.group_id, t, p)), None) for t, p in group.offsets]
        entries.append((encode_key(self.metadata_key(group.group_id)), None))
        error = self.coordinator.runtime.append(group.group_id, entries)
        if error == ErrorCode.NONE:
            group.transition_to(self.dead_state, self.now_ms())
            group.offsets = {}
            self.groups.pop(group.group_id, None)
        return ErrorCode(error)
