"""Share groups (KIP-932) on the partition leader's side: the share-partitions (Kafka's
``SharePartition``: in-flight records, acquisition locks, delivery counts) and the share
sessions of the members fetching from them (``SharePartitionManager``). The groups themselves
(membership, assignment) are in ``wireserver.groups.share_coordinator``.

A broker whose ``share.version`` feature is not finalized at 1 or more (``kafka-features
disable --feature share.version``) answers the share APIs UNSUPPORTED_VERSION, as Kafka
(``refused``).
"""

from __future__ import annotations

from typing import Any

from wireserver.protocol.errors import ErrorCode


def refused(ctx: Any) -> ErrorCode | None:
    """UNSUPPORTED_VERSION while the ``share.version`` feature is below 1."""
    if not ctx.services.features.at_least("share.version", 1):
        return ErrorCode.UNSUPPORTED_VERSION
    return None


def member_partitions(metadata: Any) -> list[tuple[str, int]]:
    """Every partition a share group's member could have fetched from (internal topics
    aside): where a group coordinator, which keeps no list of a group's share-partitions,
    looks for their state."""
    return [tp for tp in metadata.all_partitions() if not tp[0].startswith("__")]
