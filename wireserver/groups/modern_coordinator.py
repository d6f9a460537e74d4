"""What the coordinators of consumer-protocol (KIP-848) and Streams (KIP-1071) groups do alike
around a heartbeat, so that it is written once (Kafka's ``GroupMetadataManager`` does both
with the same steps):

- validate the request; a leave (epoch -1, or -2: a static member's temporary leave) goes to
  ``MemberTimers._member_leaves``;
- find or create the group (a new one takes over an empty classic group of the same id) and
  the member: epoch 0 joins (a static member back from a temporary leave under a new id takes
  over its old self), any other epoch must be the member's, or its previous one while it
  reports only what it still holds (else FENCED_MEMBER_EPOCH);
- apply what the request carries and bump the group epoch when the assignment depends on a
  change (persisted with ``EpochStore``); compute a new target assignment when the group epoch
  is ahead; move the member one reconciliation step (``ModernGroup.reconcile``); re-arm its
  timers (``MemberTimers``).

The subclass names its group and member classes and does what is its own: validation, the
request's fields, what the target assignment depends on, the assignor, the answer.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from wireserver.coordinator_runtime import CoordinatorRuntime
from wireserver.groups.configs import GroupConfigs
from wireserver.groups.epoch_store import EpochStore
from wireserver.groups.group import Group
from wireserver.groups.member_timers import MemberTimers
from wireserver.groups.modern_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    MemberState,
)
from wireserver.groups.records import GroupKey, encode_key
from wireserver.protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class HeartbeatError(Exception):
    def __init__(self, error: int, message: str | None = None):
        super().__init__(message)
        self.error = error
        self.message = message


def invalid(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.INVALID_REQUEST, message)


def check_ids(req: Any) -> None:
    """What both kinds refuse alike (INVALID_REQUEST): an empty group, instance or rack id."""
    if not req.group_id:
        raise invalid("GroupId can't be empty.")
    if req.instance_id == "":
        raise invalid("InstanceId can't be empty.")
    if req.rack_id == "":
        raise invalid("RackId can't be empty.")


class ClassicCoordinator(Protocol):
    """What this module uses of the classic group coordinator (``GroupCoordinator``, which
    creates it): its reactor, config and clock, its groups (an empty classic group becomes a
    consumer or Streams group) and the runtime of ``__consumer_offsets`` all write to. A
    Protocol, so that this module does not import the coordinator that imports it."""

    reactor: Any
    config: Any
    groups: dict[str, Group]
    runtime: CoordinatorRuntime

    def now_ms(self) -> int: ...

    def drop_group(self, group: Group) -> None: ...

    def modern_group(self, group_id: str) -> Any: ...


class ModernGroupCoordinator(MemberTimers, EpochStore):
    """``logs``: the broker's ``LogManager`` (its ``topics``); ``group_configs``: the groups'
    ``consumer.*`` / ``streams.*`` settings (``GroupConfigs``). ``kind`` names the group
    type in config keys and messages."""

    member_class: Any
    #: GROUP_ID_NOT_FOUND's message for a heartbeat to a group that does not exist.
    not_found: str

    def __init__(self, coordinator: ClassicCoordinator, logs: Any, group_configs: GroupConfigs):
        self.coordinator = coordinator
        self.logs = logs
        self.group_configs = group_configs
        self.reactor = coordinator.reactor
        self.config = coordinator.config
        self.groups: dict[str, Any] = {}

    def now_ms(self) -> int:
        return self.coordinator.now_ms()

    def setting(self, group_id: str, name: str) -> Any:
        """A ``consumer.*`` / ``streams.*`` group config, else its broker default."""
        return self.group_configs.value(group_id, name)

    def _session_timeout_ms(self, group_id: str) -> int:
        """``<kind>.session.timeout.ms``: Kafka's ``consumerGroupSessionTimeoutMs`` and
        ``streamsGroupSessionTimeoutMs``."""
        return self.setting(group_id, f"{self.kind}.session.timeout.ms")

    def _heartbeat_interval_ms(self, group_id: str) -> int:
        return self.setting(group_id, f"{self.kind}.heartbeat.interval.ms")

    # -- what the subclass does -------------------------------------------------------------

    def _validate(self, req: Any) -> None:
        raise NotImplementedError

    def _failed(self, req: Any, exc: HeartbeatError) -> Any:
        """The answer to a heartbeat refused with ``exc``."""
        raise NotImplementedError

    def _heartbeat(self, req: Any) -> Any:
        """A heartbeat that does not leave: ``_beat``, then the answer."""
        raise NotImplementedError

    def _left(self, req: Any) -> Any:
        """The answer to a leave heartbeat."""
        raise NotImplementedError

    def _check_join(self, group: Any, req: Any) -> None:
        """Refuse a join the group cannot take, before anything changes."""

    def _may_be_behind(self, member: Any, req: Any) -> bool:
        """Whether a heartbeat at the member's previous epoch is taken: it reports only what
        the member still holds."""
        raise NotImplementedError

    def _update_member(self, group: Any, member: Any, req: Any, now: int) -> bool:
        """Apply the fields the request carries; True if the assignment depends on a change."""
        raise NotImplementedError

    def _refresh(self, group: Any) -> bool:
        """Update what the assignment depends on beyond the members (topics, partitions,
        assignor); True if it changed."""
        raise NotImplementedError

    def _maybe_assign(self, group: Any) -> None:
        """Compute a new target assignment if the group epoch is ahead of it."""
        raise NotImplementedError

    def _held(self, member: Any) -> Any:
        """What the member holds, as the answer sends it, to tell whether it changed."""
        raise NotImplementedError

    def _reported(self, req: Any) -> Any:
        """What the heartbeat reports holding, as ``_held`` shows it (None: not sent)."""
        raise NotImplementedError

    # -- heartbeat --------------------------------------------------------------------------

    def heartbeat(self, req: Any) -> Any:
        try:
            self._validate(req)
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(req)
            return self._heartbeat(req)
        except HeartbeatError as exc:
            return self._failed(req, exc)

    def _beat(self, req: Any, now: int) -> tuple[Any, Any, bool]:
        """The steps of a heartbeat both kinds take (see the module docstring): the group, the
        member, and whether the answer carries the member's assignment (it joined, it changed,
        or the member reported holding something else)."""
        if req.member_epoch == JOIN_EPOCH:
            group = self._group_for_join(req.group_id)
            self._check_join(group, req)
            member = self._join(group, req)
        else:
            group = self._existing_group(req.group_id)
            member = self._known_member(group, req)
        before = (member.member_epoch, self._held(member))
        bump = self._update_member(group, member, req, now)
        if self._refresh(group):
            bump = True
        if bump:
            group.group_epoch += 1
            log.info("[GroupId %s] Bumped group epoch to %d.", group.group_id, group.group_epoch)
            group.update_state(now)
            self._store(group)
        self._maybe_assign(group)
        group.reconcile(member, req.owned)
        self._arm_revocation_timer(group, member)
        group.update_state(now)
        self._arm_session_timer(group, member)
        held = self._held(member)
        reported = self._reported(req)
        send = (
            req.member_epoch == JOIN_EPOCH
            or before != (member.member_epoch, held)
            or (reported is not None and reported != held)
        )
        return group, member, send

    def _existing_group(self, group_id: str) -> Any:
        group = self.groups.get(group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, self.not_found.format(group_id))
        return group

    def _group_for_join(self, group_id: str) -> Any:
        group = self.groups.get(group_id)
        if group is None:
            group = self.group_class(group_id, self.now_ms())
            self._take_over_classic_group(group)
            self.groups[group_id] = group
        return group

    def _take_over_classic_group(self, group: Any) -> None:
        """A new group is about to be made: refuse it when the id is taken by a group of
        another type (GROUP_ID_NOT_FOUND, as Kafka: "Group X is not a consumer group."); an
        empty classic group of that id (committed offsets only) becomes the new group and
        keeps its offsets. Kafka's online upgrade of a classic group with members is not
        done."""
        group_id = group.group_id
        coordinator = self.coordinator
        classic = coordinator.groups.get(group_id)
        if coordinator.modern_group(group_id) is not None or (
            classic is not None and (classic.members or classic.pending_members)
        ):
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a {self.kind} group."
            )
        if classic is not None:
            group.offsets = classic.offsets
            tombstone = [(encode_key(GroupKey(group_id)), None)]
            if coordinator.runtime.append(group_id, tombstone) != ErrorCode.NONE:
                raise HeartbeatError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            coordinator.drop_group(classic)

    def _join(self, group: Any, req: Any) -> Any:
        member_id = req.member_id or str(uuid.uuid4())
        if req.instance_id is not None:
            current_id = group.static_members.get(req.instance_id)
            if current_id is not None and current_id != member_id:
                old = group.members[current_id]
                if old.member_epoch != STATIC_LEAVE_EPOCH:
                    raise HeartbeatError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {current_id} with instance id "
                        f"{req.instance_id} is not released yet.",
                    )
                return self._replace_static_member(group, old, member_id)
        member = group.members.get(member_id)
        if member is not None:
            # A known member rejoins: it gave up whatever it held.
            group.reset_member_assignment(member)
            return member
        limit = self.config[f"group.{self.kind}.max.size"]
        if len(group.members) >= limit:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The {self.kind} group has reached its maximum capacity of {limit} members.",
            )
        member = self.member_class(member_id, req.client_id, req.client_host)
        member.instance_id = req.instance_id
        group.add(member)
        # Kafka's GroupMetadataManager words (its streams groups say "joins the streams group").
        protocol = f" using the {self.kind} protocol" if self.kind in ("consumer", "share") else ""
        if req.instance_id is None:
            log.info(
                "[GroupId %s] Member %s joins the %s group%s.",
                group.group_id,
                member_id,
                self.kind,
                protocol,
            )
        else:
            log.info(
                "[GroupId %s] Static member %s with instance id %s joins the %s group%s.",
                group.group_id,
                member_id,
                req.instance_id,
                self.kind,
                protocol,
            )
        return member

    def _replace_static_member(self, group: Any, old: Any, new_id: str) -> Any:
        """A static member back from a temporary leave under a new member id: it takes over
        the old member's assignment and target, and the group epoch does not move."""
        self._cancel_timers(old)
        group.release(old)
        del group.members[old.member_id]
        new = old.renamed(new_id)
        new.member_epoch = old.previous_member_epoch
        group.add(new)
        if old.member_id in group.target:
            group.target[new_id] = group.target.pop(old.member_id)
        group.claim(new)
        return new

    def _member(self, group: Any, req: Any) -> Any:
        member = group.members.get(req.member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        return member

    def _known_member(self, group: Any, req: Any) -> Any:
        member = self._member(group, req)
        if req.member_epoch > member.member_epoch or (
            req.member_epoch < member.member_epoch
            and (
                req.member_epoch != member.previous_member_epoch
                or not self._may_be_behind(member, req)
            )
        ):
            relation = "greater" if req.member_epoch > member.member_epoch else "smaller"
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The {self.kind} group member has a {relation} member epoch "
                f"({req.member_epoch}) than the one known by the group coordinator "
                f"({member.member_epoch}). The member must abandon all its partitions "
                f"and rejoin.",
            )
        return member

    # -- leaving ----------------------------------------------------------------------------

    def _leave(self, req: Any) -> Any:
        group = self._existing_group(req.group_id)
        member = self._leaving_member(group, req)
        self._member_leaves(group, member, req.member_epoch)
        return self._left(req)

    def _leaving_member(self, group: Any, req: Any) -> Any:
        return self._member(group, req)

    def remove_member(self, group: Any, member: Any, reason: str | None) -> None:
        """Remove ``member`` and bump the group epoch: it left (``reason`` None) or was fenced
        because of ``reason`` (Kafka's wording, e.g. "the member session expired")."""
        if reason is None:
            log.info(
                "[GroupId %s] Member %s left the %s group.",
                group.group_id,
                member.member_id,
                self.kind,
            )
        else:
            log.info(
                "[GroupId %s] Member %s fenced from the group because %s.",
                group.group_id,
                member.member_id,
                reason,
            )
        self._cancel_timers(member)
        group.remove(member.member_id)
        group.group_epoch += 1
        self._refresh(group)
        group.update_state(self.now_ms())
        self._store(group)
        self._maybe_assign(group)
        group.update_state(self.now_ms())

    def _revoking(self, member: Any) -> bool:
        return member.state is MemberState.UNREVOKED

    def forget(self, mine: Callable[[str], bool]) -> int:
        """Drop the groups ``mine`` selects (this broker no longer coordinates them), with
        their members' timers; how many."""
        dropped = [group_id for group_id in self.groups if mine(group_id)]
        for group_id in dropped:
            for member in self.groups.pop(group_id).members.values():
                self._cancel_timers(member)
        return len(dropped)
