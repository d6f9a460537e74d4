"""A partition's state when its replica set changes (a reassignment completes, is cancelled,
or is replaced by one that drops replicas the one before added), by the rules of Kafka 4.4's
controller (``PartitionChangeBuilder``), which decide how far the leader epoch goes:

- replicas that left the replica set leave the ISR;
- the leader stays if it is still in the ISR and alive, else the first replica of the new set
  that is in the ISR and alive leads (Kafka's ``electAnyLeader``);
- the leader epoch goes up by one when the leader changes or the new replica set lacks a
  replica the old one had (``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``), and not
  for an ISR that only shrank (Kafka 4.4's metadata versions do not bump for that).

So a move that only adds replicas changes no epoch, a move that removes some bumps it once
when it completes, a cancel of a move that added some bumps it once, and the start of a move
(its replica set ORS + TRS holds every old replica) bumps nothing. Kafka's controller writes
each of these changes as one record; wireserver's writers put the state and the topic's
assignment in one ZooKeeper transaction, so that a controller failing over between two
writes cannot count a bump twice.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from wireserver.cluster import zkdata as zd


def replica_change_state(
    state: zd.PartitionState,
    before: list[int],
    after: list[int],
    live: Collection[int],
    controller_epoch: int | None = None,
) -> zd.PartitionState | None:
    """``state`` once the partition's replicas go from ``before`` to ``after``: ``state``
    itself when nothing changes, None when no replica of ``after`` can lead (none is alive
    and in the ISR: the caller leaves the state as it is). ``controller_epoch``: the writing
    controller's, None to keep the state's (a broker that is not the controller writes)."""
    isr = [r for r in state.isr if r in after]
    if state.leader in isr and state.leader in live:
        leader = state.leader
    else:
        candidates = [r for r in after if r in isr and r in live]
        if not candidates:
            return None
        leader = candidates[0]
    lost = any(r not in after for r in before)
    if leader == state.leader and isr == state.isr and not lost:
        return state
    return replace(
        state,
        leader=leader,
        leader_epoch=state.leader_epoch + (1 if lost or leader != state.leader else 0),
        isr=isr,
        controller_epoch=state.controller_epoch if controller_epoch is None else controller_epoch,
        replicas=list(after),
    )


def transaction_failed(results: list) -> bool:
    """Whether a committed kazoo transaction failed (each operation's result is then an
    exception: the one that failed and the rolled back others)."""
    return any(isinstance(result, Exception) for result in results)
