"""Share groups (KIP-932) on the partition leader's side: the share-partitions (Kafka's
``SharePartition``: in-flight records, acquisition locks, delivery counts) and the share
sessions of the members fetching from them (``SharePartitionManager``). The groups themselves
(membership, assignment) are in ``wireserver.groups.share_coordinator``.

Share groups are served on one node only: a cluster broker answers their APIs
UNSUPPORTED_VERSION, as a Kafka broker does while share groups are not enabled, and so does a
broker whose ``share.version`` feature is not finalized at 1 or more (``kafka-features
disable --feature share.version``), as Kafka (``refused``).
"""

from __future__ import annotations

from typing import Any

from wireserver.protocol.errors import ErrorCode


def refused(ctx: Any) -> ErrorCode | None:
    """UNSUPPORTED_VERSION in cluster mode, where share groups are not served, and while the
    ``share.version`` feature is below 1."""
    services = ctx.services
    if services.config.get("zookeeper.connect") or not services.features.at_least(
        "share.version", 1
    ):
        return ErrorCode.UNSUPPORTED_VERSION
    return None
