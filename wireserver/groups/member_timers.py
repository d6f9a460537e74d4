"""The timers of the members of consumer-protocol (KIP-848) and Streams (KIP-1071) groups,
shared by their coordinators: a member that sends no heartbeat within its group's session
timeout is removed, and so is one that does not give up what it must revoke within its
rebalance timeout (Kafka fences both the same way). Timers run on the coordinator's reactor.
"""

from __future__ import annotations

from typing import Any

from wireserver.groups.modern_group import STATIC_LEAVE_EPOCH


def cancel(timer: Any) -> None:
    if timer is not None and timer.active():
        timer.cancel()


class MemberTimers:
    """Mixed into a coordinator that has ``reactor`` and ``groups`` (group id -> a group with
    ``members``, each member with ``session_timer``, ``revocation_timer``, ``member_epoch``
    and ``rebalance_timeout_ms``) and defines the three methods below."""

    reactor: Any
    groups: dict[str, Any]

    def _session_timeout_ms(self, group_id: str) -> int:
        raise NotImplementedError

    def _revoking(self, member: Any) -> bool:
        """Whether the member has yet to give up something it was asked to revoke."""
        raise NotImplementedError

    def remove_member(self, group: Any, member: Any, reason: str | None) -> None:
        raise NotImplementedError

    def now_ms(self) -> int:
        raise NotImplementedError

    def _member_leaves(self, group: Any, member: Any, epoch: int) -> None:
        """A leave heartbeat. A static member's temporary leave (epoch -2) keeps what it owns
        (nobody else gets it) until it is back or its session expires; any other leave removes
        it, as Kafka's coordinators do for both group types."""
        if epoch == STATIC_LEAVE_EPOCH:
            if member.member_epoch != STATIC_LEAVE_EPOCH:
                member.previous_member_epoch = member.member_epoch
                member.member_epoch = STATIC_LEAVE_EPOCH
            self._cancel_revocation_timer(member)
            group.update_state(self.now_ms())
            self._arm_session_timer(group, member)
        else:
            self.remove_member(group, member, None)

    def stop(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self._cancel_timers(member)

    def _arm_session_timer(self, group: Any, member: Any) -> None:
        cancel(member.session_timer)
        member.session_timer = self.reactor.callLater(
            self._session_timeout_ms(group.group_id) / 1000.0, self._session_expired, group, member
        )

    def _session_expired(self, group: Any, member: Any) -> None:
        member.session_timer = None
        if group.members.get(member.member_id) is member:
            self.remove_member(group, member, "the member session expired")

    def _arm_revocation_timer(self, group: Any, member: Any) -> None:
        if not self._revoking(member):
            self._cancel_revocation_timer(member)
        elif member.revocation_timer is None:
            member.revocation_timer = self.reactor.callLater(
                member.rebalance_timeout_ms / 1000.0,
                self._revocation_expired,
                group,
                member,
                member.member_epoch,
            )

    def _revocation_expired(self, group: Any, member: Any, epoch: int) -> None:
        member.revocation_timer = None
        if (
            group.members.get(member.member_id) is member
            and self._revoking(member)
            and member.member_epoch == epoch
        ):
            self.remove_member(
                group,
                member,
                f"it failed to transition from epoch {epoch} within "
                f"{member.rebalance_timeout_ms}ms",
            )

    @staticmethod
    def _cancel_revocation_timer(member: Any) -> None:
        cancel(member.revocation_timer)
        member.revocation_timer = None

    def _cancel_timers(self, member: Any) -> None:
        cancel(member.session_timer)
        member.session_timer = None
        self._cancel_revocation_timer(member)
