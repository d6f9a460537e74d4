"""Client quotas in ZooKeeper, in Kafka's ZooKeeper-era layout, so that a quota set through one
broker is enforced by every broker and outlives all of them:

- ``/config/users/<sanitized user>``, ``/config/clients/<sanitized client-id>``,
  ``/config/users/<sanitized user>/clients/<sanitized client-id>`` and ``/config/ips/<ip>``,
  ``<default>`` for a default name: ``{"version":1,"config":{"producer_byte_rate":"1048576"}}``.
  A user's znode also holds its SCRAM credentials (``wireserver.cluster.scram_credentials``):
  each writer changes only its own keys, with a conditional read-modify-write.
- after a change, ``/config/changes/config_change_<seq>``
  ``{"version":2,"entity_path":"users/<u>/clients/<c>"}`` (or ``users/<u>``, ``clients/<c>``,
  ``ips/<ip>``), which every broker's ``ConfigChangeListener`` hands to ``on_change``.

Every broker loads all quotas when it joins; the broker that makes a change updates its own
store at once, the others re-read the entity's znode when the notification arrives.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from wireserver.cluster import zkdata as zd
from wireserver.cluster.config_changes import notify
from wireserver.quotas.store import CLIENT_ID, CLIENT_KEYS, IP, IP_KEYS, USER, Entity, Quotas

if TYPE_CHECKING:
    from wireserver.cluster.config_changes import ConfigChangeListener
    from wireserver.quotas.store import ClientQuotaStore

log = logging.getLogger(__name__)

DEFAULT = "<default>"
CONFIG_CLIENTS = "/config/clients"
CONFIG_IPS = "/config/ips"
QUOTA_KEYS = {**CLIENT_KEYS, **IP_KEYS}


def _znode_name(name: str | None) -> str:
    return DEFAULT if name is None else zd.sanitize(name)


def _entity_name(znode_name: str) -> str | None:
    return None if znode_name == DEFAULT else zd.desanitize(znode_name)


def entity_path(entity: Entity) -> str:
    """The entity's path under ``/config`` (what its change notification names)."""
    names = dict(entity)
    if IP in names:
        return f"ips/{DEFAULT if names[IP] is None else names[IP]}"
    if USER in names and CLIENT_ID in names:
        return f"users/{_znode_name(names[USER])}/clients/{_znode_name(names[CLIENT_ID])}"
    if USER in names:
        return f"users/{_znode_name(names[USER])}"
    return f"clients/{_znode_name(names[CLIENT_ID])}"


def entity_of(path: str) -> Entity | None:
    """The entity of a path under ``/config`` (None for one that names no quota entity)."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] == "users":
        return ((USER, _entity_name(parts[1])),)
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
        return ((CLIENT_ID, _entity_name(parts[3])), (USER, _entity_name(parts[1])))
    if len(parts) == 2 and parts[0] == "clients":
        return ((CLIENT_ID, _entity_name(parts[1])),)
    if len(parts) == 2 and parts[0] == "ips":
        return ((IP, None if parts[1] == DEFAULT else parts[1]),)
    return None


def quotas_of(config: dict[str, str]) -> Quotas:
    """The quota keys of an entity's config (others, and unreadable values, are left out)."""
    quotas = {}
    for key, value in config.items():
        if key in QUOTA_KEYS:
            try:
                quotas[key] = float(value)
            except ValueError:
                log.warning("unreadable quota %s=%r in ZooKeeper", key, value)
    return quotas


def _config_value(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


class ZkClientQuotas:
    """The ``shared`` store of a broker's ``ClientQuotaStore`` in cluster mode."""

    def __init__(self, zk: Any, store: ClientQuotaStore):
        self.zk = zk
        self.store = store

    def start(self, config_changes: ConfigChangeListener) -> None:
        """Load every entity's quotas into ``store`` and follow their changes (before
        ``config_changes`` starts watching)."""
        for path in (zd.CONFIG_USERS, CONFIG_CLIENTS, CONFIG_IPS):
            self.zk.ensure_path(path)
        self.store.use_shared(self)
        for kind in ("users", "clients", "ips"):
            config_changes.add(kind, lambda name, kind=kind: self.on_change(f"{kind}/{name}"))

    def load(self) -> dict[Entity, Quotas]:
        found: dict[Entity, Quotas] = {}
        paths = []
        for user in self.zk.get_children(zd.CONFIG_USERS):
            paths.append(f"users/{user}")
            clients = self.zk.exists(f"{zd.CONFIG_USERS}/{user}/clients")
            if clients is not None:
                paths.extend(
                    f"users/{user}/clients/{client}"
                    for client in self.zk.get_children(f"{zd.CONFIG_USERS}/{user}/clients")
                )
        paths.extend(f"clients/{c}" for c in self.zk.get_children(CONFIG_CLIENTS))
        paths.extend(f"ips/{ip}" for ip in self.zk.get_children(CONFIG_IPS))
        for path in paths:
            entity = entity_of(path)
            quotas = self._read(path)
            if entity is not None and quotas:
                found[entity] = quotas
        return found

    def write(self, entity: Entity, quotas: Quotas) -> None:
        """Make ``quotas`` the entity's whole set of quota keys and tell every broker."""
        path = entity_path(entity)
        zd.update_entity_config(
            self.zk,
            f"/config/{path}",
            lambda key: key not in QUOTA_KEYS,
            {key: _config_value(value) for key, value in quotas.items()},
        )
        notify(self.zk, path)

    def on_change(self, path: str) -> None:
        entity = entity_of(path)
        if entity is not None:
            self.store.replace(entity, self._read(path))

    def _read(self, path: str) -> Quotas:
        try:
            return quotas_of(zd.read_entity_config(self.zk, f"/config/{path}"))
        except (ValueError, AttributeError):  # not Kafka's JSON: written by something else
            log.warning("unreadable config of %s in ZooKeeper", path)
            return {}
