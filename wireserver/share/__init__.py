"""Share groups (KIP-932) on the partition leader's side: the share-partitions (Kafka's
``SharePartition``: in-flight records, acquisition locks, delivery counts) and the share
sessions of the members fetching from them (``SharePartitionManager``). The groups themselves
(membership, assignment) are in ``wireserver.groups.share_coordinator``.

Share groups are served on one node only: a cluster broker answers their APIs
UNSUPPORTED_VERSION, as a Kafka broker does while share groups are not enabled
(``refused``).
"""

from __future__ import annotations

from typing import Any

from wireserver.protocol.errors import ErrorCode


def refused(ctx: Any) -> ErrorCode | None:
    """UNSUPPORTED_VERSION in cluster mode, where share groups are not served."""
    if ctx.services.config.get("zookeeper.connect"):
        return ErrorCode.UNSUPPORTED_VERSION
    return None
