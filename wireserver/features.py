"""Feature levels (KIP-584): what this broker supports and what the cluster finalized.

ApiVersions reports both (v3+), UpdateFeatures changes the finalized levels, and code that
behaves differently by level asks ``at_least("transaction.version", 2)``. The table holds only
the features wireserver implements, each up to the highest level it implements, with Kafka
4.4's default level for a new cluster; docs/compatibility.md says why each Kafka feature is
or is not here. A feature that needs an API (``api``) counts as implemented only while the
broker serves that API, so a feature whose work lands later is finalizable from that moment.

Finalized levels persist: on one node in ``<log dir>/wireserver-features.json``, in a cluster
in ZooKeeper's ``/feature`` (Kafka's ZooKeeper-era layout, ``wireserver.cluster.features``),
which calls ``replace`` on every broker when it changes. A level of 0 is not finalized (Kafka
leaves such features out of FinalizedFeatures).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wireserver.protocol.registry import ApiRegistry
from wireserver.storage import checkpoint as ckpt

FILE_NAME = "wireserver-features.json"


@dataclass(frozen=True)
class Feature:
    name: str
    #: the highest level wireserver implements
    max_level: int
    #: what Kafka 4.4 finalizes in a new cluster (capped at ``max_level``)
    default_level: int
    #: the API key the feature needs served, if any
    api: int | None = None


FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (
        # KIP-848 consumer groups (ConsumerGroupHeartbeat).
        Feature("group.version", 1, 1, api=68),
        # KIP-1071 Streams groups (StreamsGroupHeartbeat).
        Feature("streams.version", 1, 1, api=88),
        # KIP-932 share groups (ShareGroupHeartbeat); 2 (KIP-1222's lock renewal) is not
        # claimed.
        Feature("share.version", 1, 1, api=76),
        # 1: the coordinator's records; 2: transaction protocol v2 (KIP-890 part 2).
        Feature("transaction.version", 2, 2),
    )
}


class Features:
    """The supported ranges of this broker and the cluster's finalized levels (with their
    epoch, which grows with every change)."""

    def __init__(self, registry: ApiRegistry, directory: str | None):
        self.supported: dict[str, int] = {
            f.name: f.max_level if (f.api is None or f.api in registry) else 0
            for f in FEATURES.values()
        }
        self.path = os.path.join(directory, FILE_NAME) if directory else None
        self.shared: Any = None
        self.epoch = 0
        self.levels = self.defaults()
        if self.path and os.path.exists(self.path):
            data = ckpt.read_json(self.path)
            self._set(data["epoch"], decode_levels(data))

    def defaults(self) -> dict[str, int]:
        levels = {f.name: min(f.default_level, self.supported[f.name]) for f in FEATURES.values()}
        return {name: level for name, level in levels.items() if level > 0}

    def use_shared(self, shared: Any) -> None:
        self.shared = shared
        self._set(*shared.load(self.defaults()))

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def at_least(self, name: str, level: int) -> bool:
        """Is ``name`` finalized at ``level`` or above?"""
        return self.level(name) >= level

    def update(self, levels: Mapping[str, int]) -> None:
        """Make ``levels`` (checked by the caller; 0 removes a feature) the finalized ones."""
        merged = {**self.levels, **levels}
        merged = {name: level for name, level in merged.items() if level > 0}
        if self.shared is not None:
            self._set(self.shared.write(merged), merged)
            return
        self._set(self.epoch + 1, merged)
        if self.path is not None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            ckpt.write_json(self.path, {**encode_levels(merged), "epoch": self.epoch})

    def replace(self, epoch: int, levels: Mapping[str, int]) -> None:
        """The cluster's levels changed (ZooKeeper told us)."""
        self._set(epoch, levels)

    def _set(self, epoch: int, levels: Mapping[str, int]) -> None:
        self.epoch, self.levels = epoch, dict(levels)


def encode_levels(levels: Mapping[str, int]) -> dict:
    """Kafka's ``/feature`` znode, version 2: ``{"version":2,"status":1,"features":
    {"transaction.version":{"max_version_level":2}}}`` (status 1: enabled)."""
    return {
        "version": 2,
        "status": 1,
        "features": {name: {"max_version_level": level} for name, level in levels.items()},
    }


def decode_levels(data: Mapping[str, Any]) -> dict[str, int]:
    return {
        name: int(info["max_version_level"])
        for name, info in data.get("features", {}).items()
        if int(info["max_version_level"]) > 0
    }
