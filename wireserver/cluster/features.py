"""The finalized feature levels in ZooKeeper, so every broker reports the same ones and they
outlive every broker: ``/feature``, as Kafka's ZooKeeper-era controller kept them
(``{"version":2,"status":1,"features":{"transaction.version":{"max_version_level":2}}}``;
the znode's data version is the FinalizedFeaturesEpoch). The first broker to start in a new
cluster creates it with Kafka 4.4's default levels; every broker watches it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from wireserver.cluster import zkdata as zd
from wireserver.features import decode_levels, encode_levels

if TYPE_CHECKING:
    from wireserver.features import Features


def _encode(levels: Mapping[str, int]) -> bytes:
    return json.dumps(encode_levels(levels), separators=(",", ":")).encode()


class ZkFeatures:
    """The ``shared`` store of a broker's ``Features`` in cluster mode."""

    def __init__(self, zk: Any, store: Features):
        self.zk = zk
        self.store = store

    def start(self, on_reactor: Callable[[Callable], Callable]) -> None:
        """Load the levels into ``store`` (creating the znode with the defaults) and follow
        their changes; ``on_reactor`` wraps a watch callback to run on the reactor."""
        self.store.use_shared(self)
        self.zk.DataWatch(zd.FEATURE, on_reactor(self.on_change))

    def load(self, defaults: Mapping[str, int]) -> tuple[int, dict[str, int]]:
        from kazoo.exceptions import NodeExistsError

        try:
            self.zk.create(zd.FEATURE, _encode(defaults))
        except NodeExistsError:
            pass
        data, stat = self.zk.get(zd.FEATURE)
        return stat.version, decode_levels(json.loads(data))

    def write(self, levels: Mapping[str, int]) -> int:
        """Store ``levels``; their new epoch."""
        return self.zk.set(zd.FEATURE, _encode(levels)).version

    def on_change(self, data: bytes | None, stat: Any, *_: Any) -> None:
        if data is not None and stat is not None:
            self.store.replace(stat.version, decode_levels(json.loads(data)))
