"""Group configs in ZooKeeper, so that a group's ``consumer.session.timeout.ms`` set through one
broker holds on whichever broker coordinates the group, and outlives every broker:

- ``/config/groups/<sanitized group>`` (the id URL-encoded as Kafka's ``Sanitizer`` does, since
  group ids may hold any character): ``{"version":1,"config":{"consumer.session.timeout.ms":
  "50000"}}``, the group's whole set, written as topic configs are;
- after a change, ``/config/changes/config_change_<seq>``
  ``{"version":2,"entity_path":"groups/<sanitized group>"}``.

Kafka 4.x keeps group configs in its KRaft metadata; its ZooKeeper-era brokers had none, so the
path is ours. Every broker loads all group configs when it joins and follows the
notifications through the broker's one ``/config/changes`` watcher (``ConfigChangeListener``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wireserver.cluster import zkdata as zd
from wireserver.cluster.config_changes import write_entity_config

if TYPE_CHECKING:
    from wireserver.cluster.config_changes import ConfigChangeListener
    from wireserver.groups.configs import GroupConfigs


class ZkGroupConfigs:
    """The ``shared`` store of a broker's ``GroupConfigs`` in cluster mode."""

    def __init__(self, zk: Any, store: GroupConfigs):
        self.zk = zk
        self.store = store

    def start(self, config_changes: ConfigChangeListener) -> None:
        """Load every group's configs into ``store`` and follow their changes (before
        ``config_changes`` starts watching)."""
        self.zk.ensure_path(zd.CONFIG_GROUPS)
        self.store.use_shared(self)
        config_changes.add("groups", self.on_change)

    def load(self) -> dict[str, dict[str, str]]:
        found = {}
        for child in self.zk.get_children(zd.CONFIG_GROUPS):
            group = zd.desanitize(child)
            overrides = self.read(group)
            if overrides:
                found[group] = overrides
        return found

    def read(self, group: str) -> dict[str, str]:
        """The group's configs as ZooKeeper has them now (the source of truth for an
        incremental change, which this broker may not have applied yet)."""
        return zd.read_entity_config(self.zk, zd.group_config_path(group))

    def write(self, group: str, overrides: Mapping[str, str]) -> None:
        write_entity_config(
            self.zk, zd.group_config_path(group), overrides, f"groups/{zd.sanitize(group)}"
        )

    def on_change(self, name: str) -> None:
        group = zd.desanitize(name)
        self.store.replace(group, self.read(group))
