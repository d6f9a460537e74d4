"""Share groups (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe.

One heartbeat does, in order (Kafka's ``GroupMetadataManager.shareGroupHeartbeat``): validate
the request; find or create the group (only a join, epoch 0, creates it; an id taken by a
group of another type is GROUP_ID_NOT_FOUND, "Group X is not a share group.") and the member
(epoch 0 joins, -1 leaves, any other epoch must be the member's or its previous one, else
FENCED_MEMBER_EPOCH); record the subscription and the subscribed topics' partitions and bump
the group epoch if they changed; compute a new target assignment with the share ``simple``
assignor (``share_assignor.simple_assign``, Kafka's ``SimpleAssignor``: members may share
partitions, and keep what they had where balance allows) when the group epoch is ahead; hand
the member its whole target at once (nothing is revoked: records, not partitions, are what
one member holds at a time); re-arm its session timer; answer with its epoch and, when it
joined or its assignment changed, its partitions.

Timers and persistence as the other modern groups' (``modern_coordinator``), with the
``share.session.timeout.ms`` / ``share.heartbeat.interval.ms`` group configs (else the
``group.share.*`` broker keys) and ``group.share.max.size``; DeleteGroups deletes an empty
group's share-partition state before its records (``wireserver.apis.delete_groups``). Only the
group epoch is written to ``__consumer_offsets`` (Kafka's ShareGroupMetadata record): after a
restart the group comes back Empty at that epoch and its members rejoin. A member that leaves
or is fenced is announced to ``member_removed``; the records it holds stay with its share
session (``wireserver.share``), as in Kafka, where the share group listener hears only from the
share session cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from wireserver.groups.consumer_coordinator import (
    TopicPartitionHeartbeats,
    refresh_subscription_metadata,
)
from wireserver.groups.modern_coordinator import (
    HeartbeatError,
    ModernGroupCoordinator,
    invalid,
)
from wireserver.groups.modern_group import JOIN_EPOCH, LEAVE_EPOCH
from wireserver.groups.records import ShareGroupKey, ShareGroupValue, encode_streams_group_value
from wireserver.groups.share_assignor import kafka_member_order, simple_assign
from wireserver.groups.share_group import (
    ShareGroup,
    ShareGroupMember,
    ShareGroupState,
)
from wireserver.protocol.errors import ErrorCode

#: The one share assignor Kafka 4.4 has (``group.share.assignors``).
ASSIGNOR_NAME = "simple"


@dataclass
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    client_id: str = ""
    client_host: str = ""
    #: a share member has no instance id nor reports what it owns
    instance_id: None = None
    owned: None = None


class ShareGroupCoordinator(TopicPartitionHeartbeats, ModernGroupCoordinator):
    """The share group's own: its validation, subscriptions, the ``simple`` assignor, and the
    announcement of members that leave."""

    kind = "share"
    group_class = ShareGroup
    member_class = ShareGroupMember
    dead_state = ShareGroupState.DEAD
    not_found = "Group {} not found."

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        #: called with (group id, member id) when a member leaves or is fenced
        self.member_removed: list[Callable[[str, str], None]] = []

    # -- ShareGroupHeartbeat ----------------------------------------------------------------

    def _validate(self, req: ShareHeartbeat) -> None:
        """Kafka's ``throwIfShareGroupHeartbeatRequestIsInvalid``."""
        if not req.member_id.strip():
            raise invalid("MemberId can't be empty.")
        if not req.group_id.strip():
            raise invalid("GroupId can't be empty.")
        if req.rack_id is not None and not req.rack_id.strip():
            raise invalid("RackId can't be empty.")
        if req.member_epoch == JOIN_EPOCH:
            if not req.subscribed_topic_names:
                raise invalid("SubscribedTopicNames must be set in first request.")
        elif req.member_epoch < LEAVE_EPOCH:
            raise invalid("MemberEpoch is invalid.")

    def _take_over_classic_group(self, group: ShareGroup) -> None:
        """Any other group of that id, even an empty classic one, keeps it: Kafka converts
        no group to or from a share group."""
        coordinator = self.coordinator
        group_id = group.group_id
        if group_id in coordinator.groups or coordinator.modern_group(group_id) is not None:
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
            )

    def _reported(self, req: ShareHeartbeat) -> None:
        return None

    def _may_be_behind(self, member: ShareGroupMember, req: ShareHeartbeat) -> bool:
        return True

    def _revoking(self, member: ShareGroupMember) -> bool:
        return False

    def _update_member(
        self, group: ShareGroup, member: ShareGroupMember, req: ShareHeartbeat, now: int
    ) -> bool:
        changed = member.member_id not in group.target
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.client_id:
            member.client_id = req.client_id
        if req.client_host:
            member.client_host = req.client_host
        if req.subscribed_topic_names is not None:
            names = sorted(set(req.subscribed_topic_names))
            if names != member.subscribed_topic_names:
                member.subscribed_topic_names = names
                changed = True
        return changed

    def _subscriptions(self, group: ShareGroup) -> dict[str, set[str]]:
        topics = self.logs.topics
        return {
            member_id: {n for n in member.subscribed_topic_names if n in topics}
            for member_id, member in group.members.items()
        }

    def _refresh(self, group: ShareGroup) -> bool:
        return refresh_subscription_metadata(self.logs.topics, group, self._subscriptions(group))

    def _maybe_assign(self, group: ShareGroup) -> None:
        """A new target from Kafka's ``simple`` assignor, sticky to the current one. The
        members go to it in the order Kafka's ``TargetAssignmentBuilder`` hands them over (a
        ``HashMap`` of member ids filled in join order), each subscription in name order;
        homogeneous when every member subscribes to the same topic names, as Kafka's
        ``ModernGroup.subscriptionType`` counts them (existing topics or not)."""
        if group.group_epoch <= group.assignment_epoch:
            return
        metadata = group.subscription_metadata
        subscribed = {
            m: sorted(set(member.subscribed_topic_names)) for m, member in group.members.items()
        }
        group.target = simple_assign(
            kafka_member_order(group.members),
            {
                m: [metadata[n][0] for n in names if n in metadata]
                for m, names in subscribed.items()
            },
            dict(metadata.values()),
            group.target,
            homogeneous=len({tuple(names) for names in subscribed.values()}) <= 1,
        )
        group.assignment_epoch = group.group_epoch
        # Members take their new target on their next heartbeat; until then the group is
        # Stable all the same (a share group has no reconciling state).
        group.update_state(self.now_ms())

    # -- AlterShareGroupOffsets -------------------------------------------------------------

    def ensure_group(self, group_id: str) -> tuple[ErrorCode | None, str | None]:
        """The share group AlterShareGroupOffsets sets offsets of, made Empty with its epoch
        record written when there is none, as Kafka's ``alterShareGroupOffsets`` does
        (``getOrMaybeCreatePersistedShareGroup``): a tool (or MirrorMaker) may prepare where a
        group's consumers will start before any joins. (error, message): GROUP_ID_NOT_FOUND
        when a group of another type has the id."""
        if group_id in self.groups:
            return None, None
        try:
            group = self._group_for_join(group_id)
        except HeartbeatError as exc:
            return ErrorCode(exc.error), exc.message
        self._store(group)
        return None, None

    # -- leaving ----------------------------------------------------------------------------

    def remove_member(self, group: ShareGroup, member: ShareGroupMember, reason: str | None):
        super().remove_member(group, member, reason)
        for listener in self.member_removed:
            listener(group.group_id, member.member_id)

    # -- persistence ------------------------------------------------------------------------

    def metadata_key(self, group_id: str) -> ShareGroupKey:
        return ShareGroupKey(group_id)

    def metadata_value(self, epoch: int) -> bytes:
        return encode_streams_group_value(ShareGroupValue(epoch))

    def assignor_name(self) -> str:
        return ASSIGNOR_NAME
