"""The share-partitions this broker leads and the share sessions of the members that fetch
from them (Kafka's ``SharePartitionManager`` and ``ShareSessionCache``).

A share session is keyed by (group id, member id) and holds the partitions the member fetches
from here, so that a ShareFetch names only what changed (Kafka's rules, in
``ShareFetchRequest``'s ShareSessionEpoch): epoch 0 opens a session (replacing one the member
had) with the request's partitions; -1 applies the request's acknowledgements and closes it,
releasing what the member still holds; any other epoch must be the session's next one
(INVALID_SHARE_SESSION_EPOCH otherwise, SHARE_SESSION_NOT_FOUND when there is none), adds the
request's partitions and drops the forgotten ones. ``group.share.max.share.sessions`` bounds
the sessions (SHARE_SESSION_LIMIT_REACHED).

A share-partition is made on first use at the partition's leader, from the state its share
coordinator has (``ShareStateStore.read_state``: here, or in a cluster possibly on another
broker), at the leader epoch it was made at: when leadership moves away and back, or the
state is reset under it (FENCED_STATE_EPOCH), it is made again from the coordinator's state,
so the acquisitions it had are gone and their records available again, with the delivery
counts last persisted. Its state is written on every change but acquisitions
(``_persist``), one write at a time per share-partition (the next carries the latest state);
``persisted(share_partition)`` fires once what it held when asked is replicated, so that
ShareFetch and ShareAcknowledge answer an acknowledgement only once it is safe.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer

from wireserver.protocol.errors import ErrorCode
from wireserver.share.dlq import DeadLetter, DeadLetterQueue
from wireserver.share.partition import FINAL, SharePartition
from wireserver.share.state import ShareState, ShareStateStore, StateKey

log = logging.getLogger(__name__)

ZERO_UUID = uuid.UUID(int=0)

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

#: (topic id, partition)
SessionPartition = tuple[uuid.UUID, int]


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1
    partitions: dict[SessionPartition, None] = field(default_factory=dict)
    #: the connection (its peer address) the session was opened on: when it closes, the
    #: session ends and what the member holds goes back (``connection_closed``)
    connection: str | None = None


def _write_failed(failure: Any) -> ErrorCode:
    log.error("share-partition state write failed: %s", failure.getTraceback())
    return ErrorCode.UNKNOWN_SERVER_ERROR


class SessionError(Exception):
    def __init__(self, error: ErrorCode, message: str):
        super().__init__(message)
        self.error = error
        self.message = message


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


class _Writes:
    """A share-partition's state writes: the one in flight, and the one queued behind it (which
    writes the latest state when it starts)."""

    def __init__(self) -> None:
        self.tail: defer.Deferred = defer.succeed(ErrorCode.NONE)
        self.queued: defer.Deferred | None = None


class SharePartitionManager:
    """``setting(group, name)``: a group config with its broker default; ``notify(key)``: the
    purgatory's, to wake fetches waiting on ``("share", group, topic, partition)``; ``store``:
    where share-partition state persists (``ShareStateStore``); ``topic_id(name)``: what it
    is keyed with; ``leader(name, partition)``: (error or None, leader epoch) of this broker
    as the partition's leader (``ReplicaManager.check_leader``); ``dead_letters``: where
    archived records are dead-lettered (``wireserver.share.dlq``)."""

    def __init__(
        self,
        reactor: Any,
        setting: Callable[[str, str], Any],
        notify: Callable[[Any], Any],
        max_sessions: Callable[[], int],
        store: ShareStateStore,
        topic_id: Callable[[str], uuid.UUID | None],
        leader: Callable[[str, int], tuple[ErrorCode | None, int]],
        dead_letters: DeadLetterQueue | None = None,
    ):
        self.reactor = reactor
        self.setting = setting
        self.notify = notify
        self.max_sessions = max_sessions
        self.store = store
        self.topic_id = topic_id
        self.leader = leader
        self.dead_letters = dead_letters
        self.partitions: dict[tuple[str, str, int], SharePartition] = {}
        self.loading: dict[tuple[str, str, int], defer.Deferred] = {}
        # the state writes of each share-partition, kept while it is (a dropped one's last
        # write still answers the acknowledgements waiting on it)
        self.writes: weakref.WeakKeyDictionary[SharePartition, _Writes] = (
            weakref.WeakKeyDictionary()
        )
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    # -- share-partitions -------------------------------------------------------------------

    def state_key(self, group_id: str, topic: str, index: int) -> StateKey:
        return (group_id, self.topic_id(topic) or ZERO_UUID, index)

    def load(self, group_id: str, topic: str, index: int) -> defer.Deferred:
        """Fires with None once the share-partition is here at this broker's current leader
        epoch (``partition`` then has it), else with the error its partition answers:
        NOT_LEADER_OR_FOLLOWER (or the like) when this broker does not lead it, the share
        coordinator's error when its state could not be read. At once when it is here
        already (always on one node, once made)."""
        key = (group_id, topic, index)
        error, leader_epoch = self.leader(topic, index)
        if error is not None:
            self._drop(key)
            return defer.succeed(error)
        found = self.partitions.get(key)
        if found is not None and found.leader_epoch == leader_epoch:
            return defer.succeed(None)
        self._drop(key)
        pending = self.loading.get(key)
        if pending is None:
            pending = self.loading[key] = self._read(key, leader_epoch)
        waiter: defer.Deferred = defer.Deferred()
        pending.addBoth(lambda result: (waiter.callback(result), result)[1])
        return waiter

    @defer.inlineCallbacks
    def _read(self, key: tuple[str, str, int], leader_epoch: int):
        group_id, topic, index = key
        state_key = self.state_key(group_id, topic, index)
        try:
            error, state = yield self.store.read_state(state_key, leader_epoch)
        finally:
            self.loading.pop(key, None)
        if error is not None:
            return error
        error, current_epoch = self.leader(topic, index)
        if error is not None or current_epoch != leader_epoch:
            return error or ErrorCode.NOT_LEADER_OR_FOLLOWER  # moved while reading: retried
        self._make(key, state_key, leader_epoch, state)
        return None

    def _make(
        self,
        key: tuple[str, str, int],
        state_key: StateKey,
        leader_epoch: int,
        state: ShareState | None,
    ) -> SharePartition:
        group_id, topic, index = key
        made = SharePartition(
            group_id,
            topic,
            index,
            self.reactor,
            lambda name: self.setting(group_id, name),
            lambda: self.notify(("share", group_id, topic, index)),
            lambda: self._persist(key, state_key, made),
            lambda letters, cause: self._dead_letter(group_id, topic, index, letters, cause),
        )
        made.leader_epoch = leader_epoch
        if state is not None:
            made.state_epoch = state.state_epoch
            made.restore(state.start_offset, state.batches)
        self.partitions[key] = made
        return made

    def _drop(self, key: tuple[str, str, int]) -> None:
        found = self.partitions.pop(key, None)
        if found is not None:
            found.stop()

    def partition(self, group_id: str, topic: str, index: int) -> SharePartition:
        """The share-partition ``load`` made (made at once, from the state here, if it was
        not: one node, and tests)."""
        key = (group_id, topic, index)
        found = self.partitions.get(key)
        if found is None:
            state_key = self.state_key(group_id, topic, index)
            _, leader_epoch = self.leader(topic, index)
            found = self._make(key, state_key, leader_epoch, self.store.read(state_key))
        return found

    def _persist(self, key: tuple[str, str, int], state_key: StateKey, found: SharePartition):
        """Write the share-partition's state after the write in flight (a write queued
        already will carry this change too)."""
        writes = self.writes.get(found)
        if writes is None:
            writes = self.writes[found] = _Writes()
        if writes.queued is not None:
            return
        queued = writes.queued = defer.Deferred()

        def start(_: Any) -> defer.Deferred:
            writes.queued = None
            error, epoch = self.leader(found.topic, found.partition)
            if error is not None or epoch != found.leader_epoch:
                # Led elsewhere now (a lock expired after leadership moved): the new leader
                # has the state; this one is stale.
                if self.partitions.get(key) is found:
                    self._drop(key)
                return defer.succeed(error or ErrorCode.NOT_LEADER_OR_FOLLOWER)
            written = self.store.write_state(
                state_key,
                found.state_epoch,
                found.leader_epoch,
                found.start_offset,
                found.state_batches(),
            )
            return written.addCallbacks(
                lambda error: self._written(key, found, error), _write_failed
            )

        previous, writes.tail = writes.tail, queued
        previous.addBoth(start).chainDeferred(queued)

    def _written(self, key: tuple[str, str, int], found: SharePartition, error: Any) -> Any:
        if error in (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_LEADER_EPOCH):
            # Reset (or led elsewhere) since it was read: made again on next use.
            if self.partitions.get(key) is found:
                self._drop(key)
        return error

    def persisted(self, found: SharePartition) -> defer.Deferred:
        """Fires with NONE once the share-partition's state as it is now is written (and
        replicated), else with the write's error."""
        writes = self.writes.get(found)
        if writes is None:
            return defer.succeed(ErrorCode.NONE)
        waiter: defer.Deferred = defer.Deferred()
        writes.tail.addBoth(lambda result: (waiter.callback(result), result)[1])
        return waiter

    def _dead_letter(
        self, group_id: str, topic: str, index: int, letters: list[DeadLetter], cause: str
    ) -> None:
        if self.dead_letters is not None:
            self.dead_letters.write(group_id, topic, index, letters, cause)

    def start_and_lag(self, group_id: str, topic: str, index: int, log: Any) -> tuple[int, int]:
        """A share-partition's start offset and lag (the records from the start offset to the
        high watermark not yet acknowledged or archived; Kafka's ``Lag``) as last persisted,
        (-1, -1) when the group never fetched from it. Kafka answers from its share
        coordinator's state (ReadShareGroupStateSummary), so the start offset is the one of
        the last write, not yet moved past the records that write finished."""
        state = self.store.read((group_id, self.topic_id(topic) or ZERO_UUID, index))
        if state is None:
            return -1, -1
        start = state.start_offset
        done = sum(
            last - max(first, start) + 1
            for first, last, delivery_state, _ in state.batches
            if delivery_state in FINAL and last >= start
        )
        lag = -1 if log is None else max(0, log.high_watermark - start - done)
        return start, lag

    def partitions_of(
        self, group_id: str, topic_names: dict[uuid.UUID, str]
    ) -> set[tuple[str, int]]:
        """The (topic, partition)s the group has share-partition state of, here or persisted."""
        found = {(t, p) for g, t, p in self.partitions if g == group_id}
        for g, topic_id, p in self.store.states:
            if g == group_id and topic_id in topic_names:
                found.add((topic_names[topic_id], p))
        return found

    def member_left(self, group_id: str, member_id: str) -> None:
        """The member's share session ended without its final request (Kafka's share group
        listener, told by the share session cache): the session goes and what the member
        holds goes back."""
        self.sessions.pop((group_id, member_id), None)
        for (group, _, _), partition in list(self.partitions.items()):
            if group == group_id:
                partition.release_member(member_id)

    def connection_closed(self, connection: str) -> None:
        """A client connection closed (Kafka's ``ShareSessionCache`` disconnect listener):
        the share sessions opened on it end, and their members' acquired records are
        available again at once rather than when their locks expire (a consumer killed -9
        has its records delivered to another straight away). The member stays in the group
        until its session times out; a session opened again on another connection is not
        this one's."""
        for (group_id, member_id), session in list(self.sessions.items()):
            if session.connection == connection:
                self.member_left(group_id, member_id)

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self.partitions if k[1] == topic]:
            self._drop(key)

    def reset(self, group_id: str, topic: str, index: int, start_offset: int) -> ErrorCode:
        """AlterShareGroupOffsets: the share-partition starts over at ``start_offset``, nothing
        in flight."""
        self._drop((group_id, topic, index))
        key = self.state_key(group_id, topic, index)
        previous = self.store.read(key)
        state_epoch = 0 if previous is None else previous.state_epoch + 1
        answer: list[ErrorCode] = []
        self.store.write_state(key, state_epoch, -1, start_offset, []).addBoth(answer.append)
        # On one node (the only place it is served) the write is answered at once.
        return answer[0] if answer else ErrorCode.COORDINATOR_NOT_AVAILABLE

    def delete_topic_state(self, group_id: str, topic: str) -> None:
        """DeleteShareGroupOffsets: the group's share-partitions of ``topic`` are forgotten; a
        later fetch starts them as ``share.auto.offset.reset`` says."""
        for key in [k for k in self.partitions if k[0] == group_id and k[1] == topic]:
            self._drop(key)
        topic_id = self.topic_id(topic)
        for key in [k for k in self.store.states if k[0] == group_id and k[1] == topic_id]:
            self.store.delete_state(key)

    def delete_group(self, group_id: str) -> None:
        """The group was deleted: its share-partitions, sessions and persisted state go."""
        for key in [k for k in self.partitions if k[0] == group_id]:
            self._drop(key)
        for key in [k for k in self.sessions if k[0] == group_id]:
            del self.sessions[key]
        for key in [k for k in self.store.states if k[0] == group_id]:
            self.store.delete_state(key)

    def stop(self) -> None:
        for partition in self.partitions.values():
            partition.stop()

    # -- share sessions ---------------------------------------------------------------------

    def session_for(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        added: list[SessionPartition],
        forgotten: list[SessionPartition],
        connection: str | None = None,
    ) -> ShareSession:
        """The session a ShareFetch (or, with nothing added, a ShareAcknowledge) uses, after
        Kafka's checks; a final one (epoch -1) is removed from the cache here, the caller
        releases what the member holds once its acknowledgements are applied."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if key not in self.sessions and len(self.sessions) >= self.max_sessions():
                raise SessionError(
                    ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                    "The limit of share sessions has been reached.",
                )
            session = self.sessions[key] = ShareSession(group_id, member_id, connection=connection)
            session.partitions = dict.fromkeys(added)
            return session
        session = self.sessions.get(key)
        if session is None:
            raise SessionError(
                ErrorCode.SHARE_SESSION_NOT_FOUND,
                f"Share session not found for group {group_id} and member {member_id}.",
            )
        if epoch == FINAL_EPOCH:
            del self.sessions[key]
            return session
        if epoch != session.epoch:
            raise SessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                f"The share session epoch {epoch} is not the expected {session.epoch}.",
            )
        session.epoch = _next_epoch(session.epoch)
        for tp in added:
            session.partitions.setdefault(tp, None)
        for tp in forgotten:
            session.partitions.pop(tp, None)
        return session
