"""Committed offsets of the groups this broker coordinates (Kafka's ``OffsetMetadataManager``):
OffsetCommit and TxnOffsetCommit, OffsetFetch, OffsetDelete, the offsets of deleted topics, and
offset expiry.

Apart from membership (``wireserver.groups.coordinator``: join, sync, heartbeat, leave,
rebalances) because offsets follow their own rules: a "simple" group commits offsets without
members, a consumer-protocol (KIP-848) group validates commits with member epochs, and
transactional offsets stay pending until their producer's marker. A share group (KIP-932)
keeps no committed offsets: OffsetCommit and TxnOffsetCommit naming one answer
GROUP_ID_NOT_FOUND on every partition, OffsetFetch finds nothing (offset -1) and OffsetDelete
does not find the group, as Kafka's ``ShareGroup.validateOffsetCommit`` / ``validateOffsetFetch``
/ ``validateOffsetDelete`` ("Group X is not a consumer group.") have it. What this needs of the
membership side is small (``Membership``): the groups, the consumer-protocol groups, keeping a
committing member alive and dropping an expired group.

Offsets live on the group objects (``Group.offsets``) so that loading a partition restores them
with their group; records go to ``__consumer_offsets`` through the coordinator runtime
(``wireserver.coordinator_runtime``), which the membership side shares.

Transactional offsets (TxnOffsetCommit): written to ``__consumer_offsets`` as a transactional
batch of the producer (its id and epoch, no sequence) and kept *pending* per producer id until
the transaction coordinator writes the producer's marker to that partition
(``complete_transaction``): COMMIT makes them the group's committed offsets, ABORT drops them.
Loading replays the same way (transactional batches are pending until their marker). OffsetFetch
with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for a partition with pending offsets.

Offset expiry runs every ``offsets.retention.check.interval.ms`` on a ``LoopingCall`` bound to
the injected reactor.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from twisted.internet import task

from wireserver.coordinator_runtime import CoordinatorRuntime
from wireserver.groups.group import CONSUMER_PROTOCOL_TYPE, CommittedOffset, Group, Member
from wireserver.groups.records import (
    GroupKey,
    OffsetKey,
    encode_key,
    encode_offset_fields,
    encode_offset_key,
)
from wireserver.groups.state import GroupState
from wireserver.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

S = GroupState
#: TxnOffsetCommit v6 (KIP-1319) answers GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH as such.
TXN_KIP_1319_ERRORS = 6

#: Transactional offsets awaiting their marker: producer id -> group -> partition -> offset.
PendingOffsets = dict[int, dict[str, dict[tuple[str, int], CommittedOffset]]]


@dataclass(frozen=True)
class OffsetCommit:
    """One partition's offset in an OffsetCommit or TxnOffsetCommit request, as decoded by the
    handlers (``metadata`` None is stored as "")."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


class ConsumerGroups(Protocol):
    """What offsets need of the consumer-protocol (KIP-848) groups: the groups, and the check
    of a commit against a member epoch."""

    @property
    def groups(self) -> Mapping[str, Any]: ...

    def validate_offset_commit(
        self,
        group: Any,
        member_id: str,
        member_epoch: int,
        group_instance_id: str | None,
        api_version: int | None,
        /,
    ) -> ErrorCode | None: ...


class Membership(Protocol):
    """What offsets need of the membership side (``GroupCoordinator``); a Protocol, so that
    this module does not import the coordinator (nor join the import circle around it)."""

    groups: dict[str, Group]

    @property
    def consumer(self) -> ConsumerGroups: ...

    def modern_group(self, group_id: str) -> Any:
        """The consumer-protocol (KIP-848), Streams (KIP-1071) or share (KIP-932) group of
        that id, or None."""
        ...

    def is_share_group(self, group_id: str) -> bool: ...

    def keep_alive(self, group: Group, member: Member) -> None: ...

    def drop_group(self, group: Group) -> None: ...


class OffsetManager:
    """The committed and pending offsets of the groups in ``membership``, persisted through
    ``runtime`` (the ``__consumer_offsets`` runtime)."""

    def __init__(self, runtime: CoordinatorRuntime, membership: Membership, reactor: Any):
        self.runtime = runtime
        self.membership = membership
        self.reactor = reactor
        self.config = runtime.host.config
        self.now_ms: Callable[[], int] = runtime.host.now_ms
        self.pending_txn: PendingOffsets = {}
        # Commits waiting for the high watermark are numbered in append order, so that the
        # last one appended wins whatever order their waits finish in.
        self._commit_sequence = itertools.count()
        self._applied_sequence: dict[tuple[str, str, int], int] = {}
        self._expiry_loop: task.LoopingCall | None = None

    def start(self) -> None:
        """Expire offsets every ``offsets.retention.check.interval.ms``."""
        interval = self.config["offsets.retention.check.interval.ms"]
        loop = task.LoopingCall(self.expire_offsets)
        loop.clock = self.reactor
        loop.start(interval / 1000.0, now=False).addErrback(
            lambda failure: log.error("offset expiry failed: %s", failure.getTraceback())
        )
        self._expiry_loop = loop

    def stop(self) -> None:
        """Stop the expiry timer."""
        if self._expiry_loop is not None and self._expiry_loop.running:
            self._expiry_loop.stop()
        self._expiry_loop = None

    # -- loading --------------------------------------------------------------------------

    def restore_pending(self, pending: PendingOffsets) -> None:
        """Pending transactional offsets found by loading a partition (their marker is not in
        the log yet) join those already pending."""
        for pid, by_group in pending.items():
            mine = self.pending_txn.setdefault(pid, {})
            for group_id, found in by_group.items():
                mine.setdefault(group_id, {}).update(found)

    def forget_pending(self, is_mine: Callable[[str], bool]) -> None:
        """Drop the pending offsets of the groups ``is_mine`` (their partition is coordinated
        elsewhere now: the new coordinator replays them)."""
        for pid in list(self.pending_txn):
            by_group = self.pending_txn[pid]
            for group_id in [g for g in by_group if is_mine(g)]:
                del by_group[group_id]
            if not by_group:
                del self.pending_txn[pid]
        for key in [key for key in self._applied_sequence if is_mine(key[0])]:
            del self._applied_sequence[key]

    # -- commits ----------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        api_version: int,
        commits: list[OffsetCommit],
    ) -> dict[tuple[str, int], ErrorCode]:
        """OffsetCommit: check the committer against its group (generation or member epoch,
        member, static instance; a "simple" group without members takes commits from
        anyone), append the offset records and make them the group's committed offsets once
        they are in the log. One error per partition."""

        def everywhere(error: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {(c.topic, c.partition): error for c in commits}

        if self.membership.is_share_group(group_id):
            return everywhere(ErrorCode.GROUP_ID_NOT_FOUND)
        consumer = self.membership.consumer
        group: Any = self.membership.groups.get(group_id)
        consumer_group = self.membership.modern_group(group_id)
        if consumer_group is not None:
            # generation_id is the member epoch for a consumer-protocol group.
            group = consumer_group
            error = consumer.validate_offset_commit(
                group, member_id, generation_id, group_instance_id, api_version
            )
        elif group is None:
            if generation_id >= 0:
                return everywhere(
                    ErrorCode.GROUP_ID_NOT_FOUND
                    if api_version >= 9
                    else ErrorCode.ILLEGAL_GENERATION
                )
            # A "simple" group: offsets stored by a client that does not use group management.
            group = Group(group_id, self.now_ms())
        if consumer_group is None:
            error = self._validate_commit(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return everywhere(error)
        if member_id and group.is_in(S.STABLE, S.PREPARING_REBALANCE) and group.has(member_id):
            self.membership.keep_alive(group, group.members[member_id])
        results, accepted, entries = self._offset_records(group_id, commits)
        error = self.runtime.append(group_id, entries)
        for c, _ in accepted:
            results[(c.topic, c.partition)] = error
        if error == ErrorCode.NONE and accepted:
            self._apply_when_replicated(group_id, group, accepted)
        if (
            error == ErrorCode.NONE
            and accepted
            and group_id not in self.membership.groups
            and consumer_group is None
        ):
            self.membership.groups[group_id] = group
        return results

    def _apply_when_replicated(
        self, group_id: str, group: Any, accepted: list[tuple[OffsetCommit, CommittedOffset]]
    ) -> None:
        """Make appended commits the group's committed offsets once they are below the high
        watermark (at once on one node), as Kafka keeps them pending until its acks=-1 append
        completes: an OffsetFetch must never show an offset that a failover can still take
        back (the fault campaign saw committed offsets go backwards when this was done at
        append time)."""
        sequence = next(self._commit_sequence)

        def apply(status: ErrorCode) -> ErrorCode:
            if status != ErrorCode.NONE:
                return status
            for c, committed in accepted:
                key = (group_id, c.topic, c.partition)
                if self._applied_sequence.get(key, -1) < sequence:
                    self._applied_sequence[key] = sequence
                    group.offsets[(c.topic, c.partition)] = committed
            return status

        if self.runtime.clustered:
            self.runtime.replicated(group_id).addCallback(apply)
        else:  # one node: committed as appended, without a Deferred per commit
            apply(ErrorCode.NONE)

    def _offset_records(
        self, group_id: str, commits: list[OffsetCommit]
    ) -> tuple[
        dict[tuple[str, int], ErrorCode],
        list[tuple[OffsetCommit, CommittedOffset]],
        list[tuple[bytes, bytes | None]],
    ]:
        """Check each commit's partition and metadata size (plain and transactional commits
        alike): the per-partition errors, the accepted commits, and their offset records."""
        results: dict[tuple[str, int], ErrorCode] = {}
        accepted: list[tuple[OffsetCommit, CommittedOffset]] = []
        max_metadata = self.config["offset.metadata.max.bytes"]
        topics = self.runtime.host.logs.topics
        now = self.now_ms()
        for c in commits:
            info = topics.get(c.topic)
            if info is None or not 0 <= c.partition < info.num_partitions:
                results[(c.topic, c.partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif c.metadata is not None and len(c.metadata.encode("utf-8")) > max_metadata:
                results[(c.topic, c.partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted.append(
                    (c, CommittedOffset(c.offset, c.leader_epoch, c.metadata or "", now))
                )
        entries: list[tuple[bytes, bytes | None]] = [
            (
                encode_offset_key(group_id, c.topic, c.partition),
                encode_offset_fields(o.offset, o.leader_epoch, o.metadata, o.commit_timestamp),
            )
            for c, o in accepted
        ]
        return results, accepted, entries

    @staticmethod
    def _validate_commit(
        group: Group, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode | None:
        """Kafka's ``ClassicGroup.validateOffsetCommit``: a commit without generation or member
        is only taken by an empty group; otherwise the member must be in the group at its
        generation, and not while the group waits for its assignment."""
        if group.is_in(S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_in(S.EMPTY):
            return None
        if generation_id >= 0 or member_id or group_instance_id is not None:
            if group.is_static_member_fenced(group_instance_id, member_id):
                return ErrorCode.FENCED_INSTANCE_ID
            if not group.has(member_id):
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not group.is_in(S.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(S.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    # -- transactional offsets --------------------------------------------------------------

    def txn_offset_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        commits: list[OffsetCommit],
        api_version: int = 5,
    ) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit: validate as a commit (generation and member only when given, v3+),
        write the offsets as a transactional batch and keep them pending. Up to v5 a group
        that does not exist and a stale consumer-protocol member epoch are both
        ILLEGAL_GENERATION, the error older clients know; v6 (KIP-1319) answers them as
        OffsetCommit does, GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH."""

        def everywhere(error: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {(c.topic, c.partition): error for c in commits}

        error = self.runtime.ensure_ready()
        if error is not None:
            return everywhere(error)
        if self.membership.is_share_group(group_id):
            return everywhere(ErrorCode.GROUP_ID_NOT_FOUND)
        consumer_group = self.membership.modern_group(group_id)
        group = self.membership.groups.get(group_id)
        if consumer_group is not None:
            # generation_id is the member epoch of a consumer-protocol (KIP-848) member.
            error = self.membership.consumer.validate_offset_commit(
                consumer_group, member_id, generation_id, group_instance_id, None
            )
            if error == ErrorCode.STALE_MEMBER_EPOCH and api_version < TXN_KIP_1319_ERRORS:
                error = ErrorCode.ILLEGAL_GENERATION
            if error is not None:
                return everywhere(error)
        elif group is None:
            # A generation names a group that must exist; without one the commit comes from
            # outside group management and makes a "simple" group.
            if generation_id >= 0:
                if api_version >= TXN_KIP_1319_ERRORS:
                    return everywhere(ErrorCode.GROUP_ID_NOT_FOUND)
                return everywhere(ErrorCode.ILLEGAL_GENERATION)
        elif group.is_in(S.DEAD):
            return everywhere(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        elif generation_id < 0 and group.is_in(S.EMPTY):
            pass  # Kafka's ClassicGroup.validateOffsetCommit: an empty group takes any commit
        elif generation_id >= 0 or member_id or group_instance_id is not None:
            if group.is_static_member_fenced(group_instance_id, member_id):
                return everywhere(ErrorCode.FENCED_INSTANCE_ID)
            if member_id and not group.has(member_id):
                return everywhere(ErrorCode.UNKNOWN_MEMBER_ID)
            if generation_id >= 0 and generation_id != group.generation_id:
                return everywhere(ErrorCode.ILLEGAL_GENERATION)
        results, accepted, entries = self._offset_records(group_id, commits)
        error = self.runtime.append(group_id, entries, (producer_id, producer_epoch))
        pending = self.pending_txn.setdefault(producer_id, {}).setdefault(group_id, {})
        for c, committed in accepted:
            results[(c.topic, c.partition)] = error
            if error == ErrorCode.NONE:
                pending[(c.topic, c.partition)] = committed
        if not pending:
            self.pending_txn[producer_id].pop(group_id, None)
        if error == ErrorCode.NONE and accepted:
            self._offsets_holder(group_id)
        return results

    def _offsets_holder(self, group_id: str) -> Any:
        """The group whose ``offsets`` take a commit: the consumer-protocol group of that id,
        else the classic one, created (without members: a "simple" group) if there is none."""
        membership = self.membership
        group = membership.modern_group(group_id) or membership.groups.get(group_id)
        if group is None:
            group = self.membership.groups[group_id] = Group(group_id, self.now_ms())
        return group

    def complete_transaction(self, producer_id: int, commit: bool, partition: int) -> None:
        """The producer's marker reached partition ``partition`` of ``__consumer_offsets``:
        its pending offsets for the groups stored there become committed (or are dropped)."""
        by_group = self.pending_txn.get(producer_id)
        if not by_group:
            return
        for group_id in [g for g in by_group if self.runtime.partition_for(g) == partition]:
            found = by_group.pop(group_id)
            if commit:
                self._offsets_holder(group_id).offsets.update(found)
        if not by_group:
            self.pending_txn.pop(producer_id, None)

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of the group for the partition
        (OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT then)."""
        return any(
            (topic, partition) in by_group.get(group_id, {})
            for by_group in self.pending_txn.values()
        )

    def fetch_offsets(
        self, group_id: str, topics: list[tuple[str, list[int]]] | None
    ) -> list[tuple[str, list[tuple[int, CommittedOffset | None]]]]:
        """Committed offsets per topic; ``topics`` None means all of the group's. Pending
        transactional offsets are not included (see ``has_pending``)."""
        membership = self.membership
        group = membership.groups.get(group_id) or membership.modern_group(group_id)
        share = membership.is_share_group(group_id)
        offsets = group.offsets if group is not None and not share else {}
        if topics is None:
            by_topic: dict[str, list[tuple[int, CommittedOffset | None]]] = {}
            for (topic, partition), committed in sorted(offsets.items()):
                by_topic.setdefault(topic, []).append((partition, committed))
            return list(by_topic.items())
        return [
            (topic, [(p, offsets.get((topic, p))) for p in partitions])
            for topic, partitions in topics
        ]

    def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """OffsetDelete: tombstones for the group's offsets of ``partitions``; refused while
        the group has members (a consumer group's unsubscribed topics excepted, as Kafka).
        (top-level error, error per partition)."""
        group = self.membership.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        if not group.is_in(S.EMPTY) and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.NON_EMPTY_GROUP, {}
        results: dict[tuple[str, int], ErrorCode] = {}
        doomed = []
        topics = self.runtime.host.logs.topics
        for topic, partition in partitions:
            info = topics.get(topic)
            if info is None or not 0 <= partition < info.num_partitions:
                results[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif group.is_subscribed_to(topic):
                results[(topic, partition)] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[(topic, partition)] = ErrorCode.NONE
                if (topic, partition) in group.offsets:
                    doomed.append((topic, partition))
        error = self.runtime.append(
            group_id, [(encode_key(OffsetKey(group_id, t, p)), None) for t, p in doomed]
        )
        if error != ErrorCode.NONE:
            return error, {}
        for tp in doomed:
            group.offsets.pop(tp, None)
        return ErrorCode.NONE, results

    def drop_offsets_of_topic(self, topic: str) -> int:
        """Forget every committed offset of a deleted topic, with tombstones, in each group this
        broker coordinates (Kafka's coordinator does the same when partitions are deleted), so
        that a topic re-created under the same name is not read from the old one's offsets.
        Returns how many offsets were removed."""
        removed = 0
        for group in list(self.membership.groups.values()):
            doomed = [tp for tp in group.offsets if tp[0] == topic]
            entries = [(encode_key(OffsetKey(group.group_id, t, p)), None) for t, p in doomed]
            if self.runtime.append(group.group_id, entries) != ErrorCode.NONE:
                log.warning(
                    "could not remove group %s's offsets of deleted topic %s", group.group_id, topic
                )
                continue
            for tp in doomed:
                group.offsets.pop(tp, None)
            removed += len(doomed)
        return removed

    # -- expiry -----------------------------------------------------------------------------

    def expire_offsets(self) -> int:
        """Drop offsets past ``offsets.retention.minutes`` (KIP-211 rules) and forget empty
        groups with no offsets left. Returns how many offsets expired."""
        retention = self.config["offsets.retention.minutes"] * 60_000
        now = self.now_ms()
        expired_total = 0
        for group in list(self.membership.groups.values()):
            expired = self._expired_offsets(group, now, retention)
            entries = [(encode_key(OffsetKey(group.group_id, t, p)), None) for t, p in expired]
            drop = (
                group.is_in(S.EMPTY)
                and not group.members
                and not group.pending_members
                and len(expired) == len(group.offsets)
            )
            if drop:
                entries.append((encode_key(GroupKey(group.group_id)), None))
            if self.runtime.append(group.group_id, entries) != ErrorCode.NONE:
                continue
            for tp in expired:
                group.offsets.pop(tp, None)
            expired_total += len(expired)
            if drop:
                log.info(  # Kafka's words for an empty group whose last offsets expired
                    "Group %s transitioned to Dead in generation %d",
                    group.group_id,
                    group.generation_id,
                )
                self.membership.drop_group(group)
        return expired_total

    @staticmethod
    def _expired_offsets(group: Group, now: int, retention: int) -> list[tuple[str, int]]:
        """The partitions whose offsets expired (KIP-211): what a group still uses stays."""
        if group.protocol_type is None:
            # Simple consumer: each offset expires on its own, from its commit time.
            return [tp for tp, o in group.offsets.items() if now - o.commit_timestamp >= retention]
        if group.is_in(S.EMPTY):
            # No members: everything expires once the group has been empty long enough.
            if now - group.current_state_timestamp >= retention:
                return list(group.offsets)
            return []
        if group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.is_in(S.STABLE):
            subscribed = group.subscribed_topics()
            if subscribed is None:
                return []
            return [
                tp
                for tp, o in group.offsets.items()
                if tp[0] not in subscribed and now - o.commit_timestamp >= retention
            ]
        return []
