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
from wireserver.share.partition import SharePartition
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
    archived records are dead-lettered (``wireserver.share.dlq``); ``high_watermark(name,
    partition)``: a Deferred of the partition's high watermark at its leader (None when it
    cannot be had), for the lag DescribeShareGroupOffsets answers."""

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
        high_watermark: Callable[[str, int], defer.Deferred] | None = None,
    ):
        self.reactor = reactor
        self.setting = setting
        self.notify = notify
        self.max_sessions = max_sessions
        self.store = store
        self.topic_id = topic_id
        self.leader = leader
        self.dead_letters = dead_letters
        self.high_watermark = high_watermark or (lambda topic, index: defer.succeed(None))
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
        return _follower(pending)

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
        return _follower(writes.tail)

    def _dead_letter(
        self, group_id: str, topic: str, index: int, letters: list[DeadLetter], cause: str
    ) -> None:
        if self.dead_letters is not None:
            self.dead_letters.write(group_id, topic, index, letters, cause)

    @defer.inlineCallbacks
    def start_and_lag(self, group_id: str, topic: str, index: int):
        """(start offset, leader epoch, lag) of a share-partition as its share coordinator has
        it (ReadShareGroupStateSummary), as Kafka's ``GroupCoordinatorService`` describes it:
        the lag is the high watermark less the start offset and the records after it done
        with (acknowledged or archived). No state there, or the coordinator not reached: start
        offset -1, leader epoch 0, lag -1. The start offset is the one of the last write, not
        yet moved past the records that write finished."""
        error, summary = yield self.store.read_summary(self.state_key(group_id, topic, index))
        if error is not None or summary is None:
            return -1, 0, -1
        high_watermark = yield self.high_watermark(topic, index)
        lag = -1
        if high_watermark is not None and summary.delivery_complete_count >= 0:
            lag = high_watermark - summary.start_offset - summary.delivery_complete_count
        return summary.start_offset, summary.leader_epoch, lag

    @defer.inlineCallbacks
    def partitions_of(self, group_id: str, candidates: list[tuple[str, int]]):
        """The (topic, partition)s among ``candidates`` the group has a share-partition of
        here, or state of at their share coordinators (asked together)."""
        found = {(t, p) for g, t, p in self.partitions if g == group_id}
        asked = [tp for tp in candidates if tp not in found]
        answers = yield defer.gatherResults(
            [self.store.read_summary(self.state_key(group_id, *tp)) for tp in asked]
        )
        found.update(tp for tp, (_, summary) in zip(asked, answers) if summary is not None)
        return found

    def member_left(self, group_id: str, member_id: str) -> None:
        """The member's share session ended without its final request (Kafka's share group
        listener, told by the share session cache): the session goes and what the member
        holds goes back."""
        self.sessions.pop((group_id, member_id), None)
        for (group, _, _), partition in list(self.partitions.items()):
            if group == group_id:
                partition.release_member(member_id)
        self.group_may_be_empty(group_id)

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

    def group_may_be_empty(self, group_id: str) -> None:
        """No share session of the group is left here (Kafka's ``onGroupEmpty``, told by the
        share session cache): its share-partitions here are dropped once their state is
        written, so that the next member to fetch reads the state afresh (what the share-group
        offset APIs set or deleted meanwhile, through the share coordinators)."""
        if self._has_sessions(group_id):
            return
        for key, found in list(self.partitions.items()):
            if key[0] == group_id:
                self.persisted(found).addCallback(self._drop_if_idle, key, found)

    def _drop_if_idle(self, _: Any, key: tuple[str, str, int], found: SharePartition) -> None:
        if self.partitions.get(key) is found and not self._has_sessions(key[0]):
            self._drop(key)

    def _has_sessions(self, group_id: str) -> bool:
        return any(g == group_id for g, _ in self.sessions)

    @defer.inlineCallbacks
    def reset(self, group_id: str, topic: str, index: int, start_offset: int):
        """AlterShareGroupOffsets: the share-partition starts over at ``start_offset``, nothing
        in flight, at the next state epoch (a leader holding the old state is fenced); fires
        with the error, NONE once the new state is replicated."""
        self._drop((group_id, topic, index))
        key = self.state_key(group_id, topic, index)
        error, previous = yield self.store.read_summary(key)
        if error is not None:
            return error
        state_epoch = 0 if previous is None else previous.state_epoch + 1
        written = yield self.store.initialize_state(key, state_epoch, start_offset)
        return written

    def delete_topic_state(self, group_id: str, topic: str, partitions: int) -> defer.Deferred:
        """DeleteShareGroupOffsets: the group's share-partitions of ``topic`` (its
        ``partitions``) are forgotten at their share coordinators; a later fetch starts them as
        ``share.auto.offset.reset`` says. Fires with the first error, NONE when all went."""
        for key in [k for k in self.partitions if k[0] == group_id and k[1] == topic]:
            self._drop(key)
        return self._delete_states(group_id, [(topic, index) for index in range(partitions)])

    def delete_group_state(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> defer.Deferred:
        """DeleteGroups of an empty share group, before its records go: its share-partitions
        and sessions here go, and its state at the share coordinators of ``partitions`` (every
        partition there is). Fires with the first error, NONE when all went."""
        for key in [k for k in self.partitions if k[0] == group_id]:
            self._drop(key)
        for key in [k for k in self.sessions if k[0] == group_id]:
            del self.sessions[key]
        return self._delete_states(group_id, partitions)

    def _delete_states(self, group_id: str, partitions: list[tuple[str, int]]) -> defer.Deferred:
        """The group's state of each (topic, partition) deleted at its share coordinator, all
        at once; fires with the first error, NONE when all went."""
        answers = defer.gatherResults(
            [self.store.delete_state(self.state_key(group_id, *tp)) for tp in partitions]
        )
        return answers.addCallback(
            lambda errors: next((e for e in errors if e != ErrorCode.NONE), ErrorCode.NONE)
        )

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


def _follower(deferred: defer.Deferred) -> defer.Deferred:
    """A Deferred that fires with ``deferred``'s result, leaving ``deferred`` as it was (for
    its other waiters and its own chain)."""
    follower: defer.Deferred = defer.Deferred()
    deferred.addBoth(lambda result: (follower.callback(result), result)[1])
    return follower
