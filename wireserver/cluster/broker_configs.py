"""Dynamic broker configs in ZooKeeper, where Kafka's ZooKeeper-era brokers kept them, so that
the cluster default set through any broker holds on every broker and both layers outlive
every broker:

- ``/config/brokers/<id>`` (one broker's) and ``/config/brokers/<default>`` (the cluster
  default): ``{"version":1,"config":{"log.retention.ms":"60000"}}``, the layer's whole set;
- after a change, ``/config/changes/config_change_<seq>``
  ``{"version":2,"entity_path":"brokers/<id>"}`` (or ``brokers/<default>``).

Every broker reads both of its znodes when it joins, before it serves, and follows the
notifications through the broker's one ``/config/changes`` watcher (``ConfigChangeListener``):
the default on every broker, a broker's own entry on that broker alone. Kafka's admin client
sends a change of broker ``<id>`` to that broker, which alone writes its znode; the default can
be changed through any broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wireserver.cluster import zkdata as zd
from wireserver.cluster.config_changes import write_entity_config

if TYPE_CHECKING:
    from wireserver.cluster.config_changes import ConfigChangeListener
    from wireserver.dynamic_configs import DynamicBrokerConfigs


class ZkBrokerConfigs:
    """The ``shared`` store of a broker's ``DynamicBrokerConfigs`` in cluster mode."""

    def __init__(self, zk: Any, store: DynamicBrokerConfigs, node_id: int):
        self.zk = zk
        self.store = store
        self.node_id = node_id

    def _broker(self, cluster_default: bool) -> int | None:
        return None if cluster_default else self.node_id

    def start(self, config_changes: ConfigChangeListener) -> None:
        """Apply both layers to ``store`` and follow their changes (before ``config_changes``
        starts watching)."""
        self.zk.ensure_path(zd.CONFIG_BROKERS)
        self.store.use_shared(self)
        config_changes.add("brokers", self.on_change)

    def read(self, cluster_default: bool) -> dict[str, str]:
        """The layer as ZooKeeper has it now."""
        return zd.read_entity_config(self.zk, zd.broker_config_path(self._broker(cluster_default)))

    def write(self, cluster_default: bool, props: Mapping[str, str]) -> None:
        broker = self._broker(cluster_default)
        write_entity_config(
            self.zk,
            zd.broker_config_path(broker),
            props,
            f"brokers/{zd.broker_entity(broker)}",
        )

    def on_change(self, name: str) -> None:
        if name == zd.DEFAULT_ENTITY:
            self.store.replace(True, self.read(True))
        elif name == str(self.node_id):
            self.store.replace(False, self.read(False))
