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
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.share.partition import FINAL, SharePartition
from wireserver.share.state import ShareStateStore, StateKey

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


class SessionError(Exception):
    def __init__(self, error: ErrorCode, message: str):
        super().__init__(message)
        self.error = error
        self.message = message


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


class SharePartitionManager:
    """``setting(group, name)``: a group config with its broker default; ``notify(key)``: the
    purgatory's, to wake fetches waiting on ``("share", group, topic, partition)``; ``store``:
    where share-partition state persists (``ShareStateStore``); ``topic_id(name)`` and
    ``leader_epoch(name, partition)``: what it is keyed and written with."""

    def __init__(
        self,
        reactor: Any,
        setting: Callable[[str, str], Any],
        notify: Callable[[Any], Any],
        max_sessions: Callable[[], int],
        store: ShareStateStore,
        topic_id: Callable[[str], uuid.UUID | None],
        leader_epoch: Callable[[str, int], int],
    ):
        self.reactor = reactor
        self.setting = setting
        self.notify = notify
        self.max_sessions = max_sessions
        self.store = store
        self.topic_id = topic_id
        self.leader_epoch = leader_epoch
        self.partitions: dict[tuple[str, str, int], SharePartition] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    # -- share-partitions -------------------------------------------------------------------

    def partition(self, group_id: str, topic: str, index: int) -> SharePartition:
        key = (group_id, topic, index)
        found = self.partitions.get(key)
        if found is None:
            topic_id = self.topic_id(topic)
            state_key = (group_id, topic_id or ZERO_UUID, index)
            found = self.partitions[key] = SharePartition(
                group_id,
                topic,
                index,
                self.reactor,
                lambda name: self.setting(group_id, name),
                lambda: self.notify(("share", group_id, topic, index)),
                lambda: self._persist(state_key, found),
            )
            state = self.store.read(state_key)
            if state is not None:
                found.restore(state.start_offset, state.batches)
        return found

    def _persist(self, key: StateKey, partition: SharePartition) -> None:
        self.store.write(
            key,
            partition.start_offset,
            partition.state_batches(),
            self.leader_epoch(partition.topic, partition.partition),
        )

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
            self.partitions.pop(key).stop()

    def reset(self, group_id: str, topic: str, index: int, start_offset: int) -> ErrorCode:
        """AlterShareGroupOffsets: the share-partition starts over at ``start_offset``, nothing
        in flight."""
        found = self.partitions.pop((group_id, topic, index), None)
        if found is not None:
            found.stop()
        key = (group_id, self.topic_id(topic) or ZERO_UUID, index)
        return self.store.write(key, start_offset, [], self.leader_epoch(topic, index))

    def delete_topic_state(self, group_id: str, topic: str) -> None:
        """DeleteShareGroupOffsets: the group's share-partitions of ``topic`` are forgotten; a
        later fetch starts them as ``share.auto.offset.reset`` says."""
        for key in [k for k in self.partitions if k[0] == group_id and k[1] == topic]:
            self.partitions.pop(key).stop()
        topic_id = self.topic_id(topic)
        for key in [k for k in self.store.states if k[0] == group_id and k[1] == topic_id]:
            self.store.delete(key)

    def delete_group(self, group_id: str) -> None:
        """The group was deleted: its share-partitions, sessions and persisted state go."""
        for key in [k for k in self.partitions if k[0] == group_id]:
            self.partitions.pop(key).stop()
        for key in [k for k in self.sessions if k[0] == group_id]:
            del self.sessions[key]
        for key in [k for k in self.store.states if k[0] == group_id]:
            self.store.delete(key)

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
