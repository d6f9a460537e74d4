"""SCRAM credentials in ZooKeeper, where Kafka's ZooKeeper-era brokers kept them (user configs,
``ConfigType.User``), so a user created through one broker logs in on every broker and
outlives any one of them:

- ``/config/users/<sanitized user>`` (the name URL-encoded as Kafka's ``Sanitizer`` does):
  ``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,
  iterations=4096"}}``, one entry per mechanism in ``ScramCredentialUtils.credentialToString``
  form. Other entries (quotas written by Kafka's tools) are kept; a user whose last credential
  goes keeps its (empty) znode, as in Kafka.
- after a change, ``/config/changes/config_change_<seq>``
  ``{"version":2,"entity_path":"users/<sanitized user>"}``.

Every broker loads all credentials when it joins and follows the notifications through the
broker's one ``/config/changes`` watcher (``ConfigChangeListener``, which calls ``on_change``
for ``users/`` entities). The broker that makes a change writes it with a conditional
read-modify-write (``zkdata.update_znode``) and updates its own cache at once; the others
re-read the user's znode when the notification arrives.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from wireserver.cluster import zkdata as zd
from wireserver.cluster.config_changes import notify
from wireserver.security.scram import MECHANISMS, ScramCredential, ScramStore, Users

if TYPE_CHECKING:
    from wireserver.cluster.config_changes import ConfigChangeListener

log = logging.getLogger(__name__)


def credentials_of(user: str, config: dict[str, str]) -> dict[str, ScramCredential]:
    """The SCRAM entries of a user's config (an unreadable one is skipped and logged)."""
    credentials = {}
    for mechanism in MECHANISMS:
        if mechanism in config:
            try:
                credentials[mechanism] = ScramCredential.from_config_value(config[mechanism])
            except ValueError:
                log.warning("unreadable %s credential of user %r in ZooKeeper", mechanism, user)
    return credentials


class ZkScramCredentials:
    """The ``shared`` store of a broker's ``ScramStore`` in cluster mode (see the module
    docstring). ``zk`` is the broker's started ``KazooClient``."""

    def __init__(self, zk: Any, store: ScramStore):
        self.zk = zk
        self.store = store

    def start(self, config_changes: ConfigChangeListener) -> None:
        """Load every user's credentials into ``store`` and follow their changes (before
        ``config_changes`` starts watching)."""
        self.zk.ensure_path(zd.CONFIG_USERS)
        self.store.use_shared(self)
        config_changes.add("users", self.on_change)

    def load(self) -> Users:
        users: Users = {}
        for child in self.zk.get_children(zd.CONFIG_USERS):
            credentials = self._read(child)
            if credentials:
                users[zd.desanitize(child)] = credentials
        return users

    def alter(
        self, user: str, upserts: dict[str, ScramCredential], deletions: Iterable[str]
    ) -> dict[str, ScramCredential]:
        """Change ``user``'s credentials in ZooKeeper and notify every broker; returns the
        credentials the user now has."""
        deletions = set(deletions)
        written = zd.update_entity_config(
            self.zk,
            zd.user_config_path(user),
            lambda key: key not in deletions,
            {mech: cred.to_config_value() for mech, cred in upserts.items()},
        )
        notify(self.zk, f"users/{zd.sanitize(user)}")
        return credentials_of(user, zd.decode_entity_config(written))

    def on_change(self, sanitized_user: str) -> None:
        if "/" in sanitized_user:  # users/<u>/clients/<c>: a quota (cluster.client_quotas)
            return
        self.store.replace_user(zd.desanitize(sanitized_user), self._read(sanitized_user))

    def _read(self, sanitized_user: str) -> dict[str, ScramCredential]:
        user = zd.desanitize(sanitized_user)
        try:
            config = zd.read_entity_config(self.zk, f"{zd.CONFIG_USERS}/{sanitized_user}")
        except (ValueError, AttributeError):  # not Kafka's JSON: written by something else
            log.warning("unreadable config of user %r in ZooKeeper", user)
            return {}
        return credentials_of(user, config)
