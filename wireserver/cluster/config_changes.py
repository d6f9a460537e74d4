"""Config changes reaching every broker (Kafka's ZooKeeper-era ``ZkConfigManager`` with its
``ZkNodeChangeNotificationListener``).

Whoever changes an entity's config writes ``/config/<kind>/<name>`` and then a sequential
``/config/changes/config_change_<seq>`` notification ``{"version":2,"entity_path":"<kind>/<name>"}``
(``notify``). Every broker watches ``/config/changes``; for each notification newer than the
last it processed it hands the entity's name to the handler of its kind, which re-reads the
config znode: ``topics/<t>`` gives the topic's logs the new overrides (retention, cleanup
policy, min.insync.replicas, ...); ``users/<sanitized user>`` replaces the user's SCRAM
credentials (``wireserver.cluster.scram_credentials`` registers that handler);
``groups/<sanitized group>`` replaces the group's configs (``wireserver.cluster.group_configs``);
``brokers/<default>`` and ``brokers/<id>`` replace a dynamic broker config layer, the default on
every broker and a broker's own on that broker (``wireserver.cluster.broker_configs``).
``users/<u>``, ``users/<u>/clients/<c>``, ``clients/<c>`` and ``ips/<ip>`` replace client quotas
(``wireserver.cluster.client_quotas``; ``users/<u>`` goes to the SCRAM handler too).
At start every existing notification is processed once (re-reading a config is harmless).
Notifications older than ``CHANGE_EXPIRATION_MS`` (Kafka's 15 minutes) are deleted by whichever
broker sees them.

Other kinds are ignored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from wireserver.cluster import zkdata as zd

log = logging.getLogger(__name__)

CHANGE_EXPIRATION_MS = 15 * 60 * 1000


def wall_clock_now_ms() -> int:
    """ZooKeeper's ``ctime`` is wall-clock time, so notification expiry compares with it."""
    return int(time.time() * 1000)


def delete_expired(zk: Any, path: str, children: list[str], now_ms: int) -> list[str]:
    """Delete the notifications among ``children`` of ``path`` created more than
    ``CHANGE_EXPIRATION_MS`` before ``now_ms`` (Kafka's ``ZkNodeChangeNotificationListener``
    purges them the same way, whichever broker sees them first); returns their names."""
    from kazoo.exceptions import NoNodeError

    deleted = []
    for child in children:
        child_path = f"{path}/{child}"
        try:
            stat = zk.exists(child_path)
            if stat is not None and stat.ctime < now_ms - CHANGE_EXPIRATION_MS:
                zk.delete(child_path)
                deleted.append(child)
        except NoNodeError:
            pass
    return deleted


def sequence_of(child: str) -> int:
    """The sequence number of a ``config_change_<seq>`` child, -1 for anything else."""
    if not child.startswith(zd.CONFIG_CHANGE_PREFIX):
        return -1
    try:
        return int(child[len(zd.CONFIG_CHANGE_PREFIX) :])
    except ValueError:
        return -1


class ConfigChangeListener:
    """The broker's one watch of ``/config/changes``: each new notification names an entity
    (``topics/t``, ``users/u``, ``groups/g``, ``brokers/b``) whose kind's handler re-reads and applies its
    config. Whoever keeps a kind of config registers its handler in ``handlers``.
    ``on_reactor(func)`` wraps a kazoo watch callback so that it runs on the reactor thread."""

    def __init__(
        self,
        on_reactor: Callable[[Callable[..., None]], Callable[..., None]],
        wall_clock_ms: Callable[[], int] | None = None,
    ):
        self.on_reactor = on_reactor
        self.zk: Any = None
        self.last_processed = -1
        self.wall_clock_ms = wall_clock_ms or wall_clock_now_ms
        #: entity kind (``topics``, ``users``, ``groups``, ...) -> what re-reads and applies
        #: one entity's config (``add``), in the order added
        self.handlers: dict[str, list[Callable[[str], None]]] = {}

    def add(self, kind: str, handler: Callable[[str], None]) -> None:
        """Hand each change of ``kind`` (the entity path after ``<kind>/``) to ``handler``."""
        self.handlers.setdefault(kind, []).append(handler)

    def start(self, zk: Any) -> None:
        self.zk = zk
        zk.ensure_path(zd.CONFIG_CHANGES)
        zk.ChildrenWatch(zd.CONFIG_CHANGES, self.on_reactor(self.on_changes))

    def on_changes(self, children: list[str]) -> None:
        from kazoo.exceptions import NoNodeError

        zk = self.zk
        for seq, child in sorted((sequence_of(c), c) for c in children):
            if seq <= self.last_processed:
                continue
            try:
                data, _ = zk.get(f"{zd.CONFIG_CHANGES}/{child}")
            except NoNodeError:
                continue
            self.apply(zd.decode_config_change(data))
            self.last_processed = seq
        delete_expired(
            zk,
            zd.CONFIG_CHANGES,
            [c for c in children if sequence_of(c) >= 0],
            self.wall_clock_ms(),
        )

    def apply(self, entity_path: str | None) -> None:
        kind, _, name = (entity_path or "").partition("/")
        handlers = self.handlers.get(kind)
        if not handlers or not name:
            log.info("ignoring config change notification for %r", entity_path)
            return
        for handler in handlers:
            handler(name)


def write_entity_config(zk: Any, path: str, config: Mapping[str, str], entity_path: str) -> None:
    """Kafka's ``AdminZkClient.changeEntityConfig``: ``config`` as the whole set in ``path``
    (created if need be), then a change notification for ``entity_path`` that every broker
    (this one included) follows."""
    from kazoo.exceptions import NoNodeError

    data = zd.encode_entity_config(dict(config))
    try:
        zk.set(path, data)
    except NoNodeError:
        zk.create(path, data, makepath=True)
    notify(zk, entity_path)


def notify(zk: Any, entity_path: str) -> None:
    """Tell every broker (this one included) that ``entity_path``'s config changed."""
    zk.create(
        f"{zd.CONFIG_CHANGES}/{zd.CONFIG_CHANGE_PREFIX}",
        zd.encode_config_change(entity_path),
        sequence=True,
    )
