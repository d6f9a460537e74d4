"""Which replica a consumer should read from (KIP-392): Kafka's ``ReplicaSelector`` plug-in.

``replica.selector.class`` names the selector; Kafka ships one,
``org.apache.kafka.common.replica.RackAwareReplicaSelector``, and it is the one wireserver has
(a broker cannot load a Java class). Unset, consumers are always served by the leader.

The leader asks the selector on each consumer Fetch v11+ (which carries the client's rack,
``client.rack``). Kafka's ``ReplicaManager.findPreferredReadReplica`` offers it the leader and
the followers that may serve the fetch offset: in the ISR, their log end offset at or past it
and their log start at or before it. The rack-aware selector picks the leader when the client
names no rack, when no offered replica shares its rack, or when the leader does; otherwise the
most caught-up replica of the client's rack (largest log end offset, then the shortest time
since it last caught up). Picking the leader means "no preferred read replica" (-1 on the
wire): the leader reads the records itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


@dataclass(frozen=True)
class ReplicaView:
    """A replica as the selector sees it (Kafka's ``ReplicaView``)."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int


def rack_aware_select(
    client_rack: str | None, leader: ReplicaView, followers: Iterable[ReplicaView]
) -> ReplicaView:
    """Kafka's ``RackAwareReplicaSelector.select``."""
    if not client_rack:
        return leader
    if leader.rack == client_rack:
        return leader
    same_rack = [r for r in followers if r.rack == client_rack]
    if not same_rack:
        return leader
    return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_last_caught_up_ms))


Selector = Callable[[str | None, ReplicaView, list[ReplicaView]], ReplicaView]

#: ``replica.selector.class`` values -> the selector.
SELECTORS: dict[str, Selector] = {RACK_AWARE_REPLICA_SELECTOR: rack_aware_select}
