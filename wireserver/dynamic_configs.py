"""Dynamic broker configs that outlive the broker: the two layers AlterConfigs and
IncrementalAlterConfigs change on a BROKER resource, this broker's (DYNAMIC_BROKER_CONFIG)
and the cluster-wide default (DYNAMIC_DEFAULT_BROKER_CONFIG), over ``server.properties``
(STATIC_BROKER_CONFIG) and Kafka's defaults, as Kafka's ``DynamicBrokerConfig`` orders them.

Where they live (``DynamicBrokerConfigs``):

- one node: ``wireserver-dynamic-broker-configs.json`` in the first log dir,
  ``{"version":1,"brokers":{"<default>":{...},"<node id>":{...}}}`` (the entity names of
  Kafka's ZooKeeper layout), rewritten atomically on every change and read before the logs
  open, so a restarted broker serves with them from its first request;
- cluster mode: ZooKeeper, where Kafka's ZooKeeper-era brokers kept them
  (``wireserver.cluster.broker_configs``): ``/config/brokers/<id>`` and
  ``/config/brokers/<default>``, each followed by a change notification.

A layer read back (from the file, from ZooKeeper, or from a notification) is checked key by key
as AlterConfigs checks a change (``check``); a key that fails (written by another tool or by
another release) is left out with a warning, as Kafka's ``DynamicBrokerConfig`` drops invalid
configs it reads, and the broker keeps serving.

Password-type keys (the SSL store passwords, only per listener:
``listener.name.<l>.ssl.key.password``) are kept as Kafka 4.4 keeps them: in clear in its
metadata log, here in the file, which only its owner may read. Kafka's ZooKeeper-era brokers
stored them in ZooKeeper only encrypted with ``password.encoder.secret`` and refused them
without it; Kafka 4.x no longer has that key, so in cluster mode they are refused
("Password encoder secret not configured", ``wireserver.admin``) and ``persistable`` keeps
any out of ZooKeeper. A password is never logged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from wireserver.cluster.zkdata import broker_entity
from wireserver.config import (
    BROKER_CONFIGS,
    CLUSTER_LEVEL_LISTENER_KEYS,
    LISTENER_ONLY_KEYS,
    BrokerConfig,
    ConfigError,
    UnknownConfigError,
    key_def,
    listener_key_def,
)
from wireserver.storage import checkpoint as ckpt
from wireserver.storage.configdef import ConfigValueError

log = logging.getLogger(__name__)

FILE_NAME = "wireserver-dynamic-broker-configs.json"


class InvalidDynamicConfig(ValueError):
    """A dynamic change Kafka refuses: ``unknown`` keys (INVALID_CONFIG) or anything else
    (INVALID_REQUEST, as ``ConfigAdminManager`` answers since KAFKA-13609)."""

    def __init__(self, message: str, *, unknown: bool = False):
        super().__init__(message)
        self.unknown = unknown


def scala_set(names: Iterable[str], mutable: bool = False) -> str:
    """Names as Kafka's messages print a Scala set: ``Set(a, b)`` (a mutable set, or an
    immutable one of more than four, prints as ``HashSet(...)``)."""
    names = sorted(names)
    kind = "HashSet" if mutable or len(names) > 4 else "Set"
    return f"{kind}({', '.join(names)})"


def check(config: BrokerConfig, cluster_default: bool, changed: Mapping[str, str]) -> None:
    """Kafka's ``DynamicBrokerConfig.validateConfigs`` for the keys a change sets, in its
    order: unknown keys (Kafka keeps them as custom configs; we have nowhere to use them),
    keys that cannot change at runtime, the TLS store keys (only per listener), bad values,
    and per-broker keys set as the cluster default. A listener-prefixed key
    (``listener.name.<l>.<key>``) is known when ``<key>`` is, checked as ``<key>`` for its
    value, and is per broker unless ``<key>`` is one of Kafka's cluster-level listener keys."""
    unknown = sorted(name for name in changed if key_def(name) is None)
    if unknown:
        raise InvalidDynamicConfig(f"Unknown broker config(s): {', '.join(unknown)}", unknown=True)
    plain = [name for name in changed if name in BROKER_CONFIGS]
    read_only = [
        name for name in plain if BROKER_CONFIGS[name].read_only and name not in LISTENER_ONLY_KEYS
    ]
    if read_only:
        raise InvalidDynamicConfig(
            f"Cannot update these configs dynamically: {scala_set(read_only)}"
        )
    listener_only = [name for name in plain if name in LISTENER_ONLY_KEYS]
    if listener_only:
        raise InvalidDynamicConfig(
            "These security configs can be dynamically updated only per-listener "
            f"using the listener prefix: {scala_set(listener_only, mutable=True)}"
        )
    try:
        for name, value in changed.items():
            config.validate_dynamic(name, value)
    except (ConfigValueError, ConfigError) as exc:
        raise InvalidDynamicConfig(str(exc), unknown=isinstance(exc, UnknownConfigError)) from None
    per_broker = [name for name in changed if is_per_broker(name)]
    if cluster_default and per_broker:
        raise InvalidDynamicConfig(
            "Cannot update these configs at default cluster level, broker id "
            f"must be specified: {scala_set(per_broker)}"
        )


def is_per_broker(name: str) -> bool:
    """Kafka's ``perBrokerConfigs``: a per-broker key, or a listener-prefixed one other than
    the cluster-level listener keys."""
    if name in BROKER_CONFIGS:
        return BROKER_CONFIGS[name].per_broker
    cdef = listener_key_def(name)
    return cdef is not None and cdef.name not in CLUSTER_LEVEL_LISTENER_KEYS


def is_password(name: str) -> bool:
    cdef = key_def(name)
    return cdef is not None and cdef.type == "password"


def persistable(props: Mapping[str, str]) -> dict[str, str]:
    """``props`` without password-type keys: what may go to ZooKeeper, where Kafka's
    ZooKeeper-era brokers stored them only encrypted (``wireserver.admin`` refuses them in
    cluster mode; this keeps any read back from elsewhere out)."""
    return {name: value for name, value in props.items() if not is_password(name)}


class ProposedSettings:
    """What a listener would see if this broker's dynamic layer became ``props``: the
    ``ListenerSettings`` a change of TLS stores is checked with before it is made."""

    def __init__(self, config: BrokerConfig, props: Mapping[str, str]):
        self.config = config
        self.layer = {
            name: cdef.parse(value)
            for name, value in props.items()
            if (cdef := key_def(name)) is not None
        }

    def listener_value(self, listener: str, name: str, mechanism: str | None = None) -> Any:
        return self.config.listener_value(listener, name, mechanism, broker_layer=self.layer)


class DynamicBrokerConfigs:
    """The broker's two dynamic layers (in ``config``) and where they are kept.

    Single node: ``<directory>/wireserver-dynamic-broker-configs.json`` (``load`` reads it).
    Cluster mode (``use_shared``): ZooKeeper, through the shared store (``read(cluster_default)``
    gives one layer, ``write(cluster_default, props)`` stores it and tells every broker), which
    calls ``replace`` on every broker when one changes. ``on_change`` callbacks run after every
    layer replaced (the broker pushes changed topic defaults into its logs there)."""

    def __init__(self, config: BrokerConfig, node_id: int, directory: str | None):
        self.config = config
        self.node_id = node_id
        self.path = os.path.join(directory, FILE_NAME) if directory else None
        self.shared: Any = None
        self.on_change: list[Callable[[], None]] = []

    def _entity(self, cluster_default: bool) -> str:
        return broker_entity(None if cluster_default else self.node_id)

    def load(self) -> None:
        """Apply the layers of the file, if there is one (single node, at start)."""
        if self.path is None or not os.path.exists(self.path):
            return
        brokers = ckpt.read_json(self.path).get("brokers", {})
        for cluster_default in (True, False):
            layer = brokers.get(self._entity(cluster_default), {})
            self.replace(cluster_default, {k: str(v) for k, v in layer.items()})

    def use_shared(self, shared: Any) -> None:
        """Keep the layers in ``shared`` from now on, and apply what it holds."""
        self.shared = shared
        for cluster_default in (True, False):
            self.replace(cluster_default, shared.read(cluster_default))

    def current(self, cluster_default: bool) -> dict[str, str]:
        """The layer a change starts from: in cluster mode what ZooKeeper holds (the default
        may have changed through another broker a moment ago), else this broker's."""
        if self.shared is not None:
            return self.shared.read(cluster_default)
        return self.config.dynamic_values(cluster_default=cluster_default)

    def set(self, cluster_default: bool, props: Mapping[str, str]) -> None:
        """Make ``props`` the whole layer (checked by the caller), stored, then in force."""
        props = {name: str(value) for name, value in props.items()}
        if self.shared is not None:
            self.shared.write(cluster_default, persistable(props))
        self.replace(cluster_default, props)
        if self.shared is None:
            self._save()

    def replace(self, cluster_default: bool, props: Mapping[str, str]) -> None:
        """Make ``props`` the layer in force, leaving out (with a warning) keys that do not
        pass ``check``."""
        config = self.config
        current = config.dynamic_values(cluster_default=cluster_default)
        for name in current:
            if name not in props:
                config.delete_dynamic(name, cluster_default=cluster_default)
        for name, value in props.items():
            if current.get(name) == value:
                continue
            try:
                check(config, cluster_default, {name: value})
            except InvalidDynamicConfig as exc:
                log.warning(
                    "Dynamic broker config %s=%r of %s is invalid and is ignored: %s",
                    name,
                    "[hidden]" if is_password(name) else value,
                    "the cluster default" if cluster_default else f"broker {self.node_id}",
                    exc,
                )
                if name in current:
                    config.delete_dynamic(name, cluster_default=cluster_default)
                continue
            config.set_dynamic(name, value, cluster_default=cluster_default)
        for callback in self.on_change:
            callback()

    def _save(self) -> None:
        """Write both layers, password-type keys included: Kafka 4.4 keeps them unencrypted
        in its metadata log ("In KRaft mode, Kafka stores sensitive data in records, and the
        data is not encrypted"), so the file, like that log, is readable by its owner only."""
        if self.path is None:
            return
        layers = {
            self._entity(cluster_default): self.config.dynamic_values(
                cluster_default=cluster_default
            )
            for cluster_default in (True, False)
        }
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        ckpt.write_json(
            self.path,
            {"version": 1, "brokers": {name: layer for name, layer in layers.items() if layer}},
        )
        os.chmod(self.path, 0o600)
