"""ACLs in ZooKeeper, in the layout of Kafka's ZooKeeper-era ``AclAuthorizer``
(``kafka.zk.ZkAclStore`` / ``ZkAclChangeStore``), so every broker of a cluster enforces the
same ACLs and they outlive any one broker:

- ``/kafka-acl/<ResourceType>/<name>``: the LITERAL ACLs of one resource,
  ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``: the PREFIXED ones; each holds
  ``{"version":1,"acls":[{"principal":"User:x","permissionType":"Allow","operation":"Read",
  "host":"*"}]}`` and is deleted when its last ACL goes;
- a change to a resource adds a sequential ``/kafka-acl-changes/acl_changes_<seq>`` (LITERAL;
  data ``TOPIC:name``) or ``/kafka-acl-extended-changes/acl_changes_<seq>`` (PREFIXED; data
  ``{"version":1,"resourceType":"TOPIC","name":"x","patternType":"PREFIXED"}``).

Every broker loads all ACLs when it joins, and watches both change paths (a kazoo watch,
brought to the reactor with ``callFromThread``): for each new notification it re-reads the
named resource's znode and replaces that resource's ACLs in its authorizer. The broker that
makes a change writes it with a conditional read-modify-write of the resource's znode (so two
brokers changing one resource at once do not lose either change) and updates its own cache at
once. Notifications older than 15 minutes are deleted by whichever broker sees them, as
Kafka does (``config_changes.delete_expired``).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from wireserver.cluster.config_changes import delete_expired, wall_clock_now_ms
from wireserver.cluster.zkdata import update_znode
from wireserver.security.acls import (
    AclBinding,
    Authorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    resource_key,
)

log = logging.getLogger(__name__)

LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
PREFIXED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"

#: Kafka's names (``SecurityUtils.resourceTypeName`` / ``operationName``): PascalCase.
RESOURCE_NAMES = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User",
}
RESOURCE_TYPES = {name: value for value, name in RESOURCE_NAMES.items()}


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


OPERATION_NAMES = {
    op: _pascal(op.name) for op in Operation if op not in (Operation.UNKNOWN, Operation.ANY)
}
OPERATIONS = {name: op for op, name in OPERATION_NAMES.items()}
PERMISSION_NAMES = {Permission.ALLOW: "Allow", Permission.DENY: "Deny"}
PERMISSIONS = {name: value for value, name in PERMISSION_NAMES.items()}

Key = tuple[int, int, str]  # (resource type, pattern type, name), see acls.resource_key


def resource_path(key: Key) -> str:
    resource_type, pattern_type, name = key
    root = LITERAL_ROOT if pattern_type == PatternType.LITERAL else PREFIXED_ROOT
    return f"{root}/{RESOURCE_NAMES[ResourceType(resource_type)]}/{name}"


def encode_acls(acls: list[AclBinding]) -> bytes:
    return json.dumps(
        {
            "version": 1,
            "acls": [
                {
                    "principal": acl.principal,
                    "permissionType": PERMISSION_NAMES[Permission(acl.permission)],
                    "operation": OPERATION_NAMES[Operation(acl.operation)],
                    "host": acl.host,
                }
                for acl in acls
            ],
        },
        separators=(",", ":"),
    ).encode()


def decode_acls(key: Key, data: bytes | None) -> list[AclBinding]:
    if not data:
        return []
    resource_type, pattern_type, name = key
    return [
        AclBinding(
            resource_type,
            name,
            pattern_type,
            entry["principal"],
            entry["host"],
            OPERATIONS[entry["operation"]],
            PERMISSIONS[entry["permissionType"]],
        )
        for entry in json.loads(data).get("acls", [])
    ]


def encode_change(key: Key) -> bytes:
    """A change notification names the resource with the Java enum names (``TOPIC``), unlike
    the ACL paths (``Topic``), as Kafka's ``ZkAclChangeStore`` does."""
    resource_type, pattern_type, name = key
    type_name = ResourceType(resource_type).name
    if pattern_type == PatternType.LITERAL:
        return f"{type_name}:{name}".encode()
    return json.dumps(
        {
            "version": 1,
            "resourceType": type_name,
            "name": name,
            "patternType": PatternType(pattern_type).name,
        },
        separators=(",", ":"),
    ).encode()


def _resource_type(text: str) -> int:
    """``TOPIC`` (Kafka 2+) or ``Topic`` (older brokers' notifications)."""
    return RESOURCE_TYPES.get(text) or ResourceType[text.upper()]


def decode_change(data: bytes, literal: bool) -> Key:
    text = data.decode()
    if literal:
        type_name, _, name = text.partition(":")
        return _resource_type(type_name), PatternType.LITERAL, name
    doc = json.loads(text)
    return (
        _resource_type(doc["resourceType"]),
        PatternType[doc["patternType"].upper()],
        doc["name"],
    )


class ZkAclStore:
    """The authorizer's store in cluster mode (see the module docstring). ``zk`` is the
    broker's started ``KazooClient``; ``on_reactor(func)`` wraps a kazoo callback so that
    ``func`` runs on the reactor thread (``ClusterNode._from_zk``)."""

    def __init__(
        self,
        zk: Any,
        authorizer: Authorizer,
        on_reactor: Callable[[Callable[..., None]], Callable[..., None]],
        wall_clock_ms: Callable[[], int] = wall_clock_now_ms,
    ):
        self.zk = zk
        self.authorizer = authorizer
        self.on_reactor = on_reactor
        self.wall_clock_ms = wall_clock_ms
        self.seen: dict[str, str] = {}  # change path -> last notification applied

    def start(self) -> None:
        """Load every ACL into the authorizer and follow the change notifications."""
        for path in (LITERAL_ROOT, PREFIXED_ROOT, LITERAL_CHANGES, PREFIXED_CHANGES):
            self.zk.ensure_path(path)
        for path in (LITERAL_CHANGES, PREFIXED_CHANGES):
            children = self.zk.get_children(path)
            self.seen[path] = max(children, default="")
        self.authorizer.use_store(self)
        for path in (LITERAL_CHANGES, PREFIXED_CHANGES):
            self.zk.ChildrenWatch(path, self.on_reactor(self._changes_of(path)))

    def load(self) -> list[AclBinding]:
        acls: list[AclBinding] = []
        for root, pattern in (
            (LITERAL_ROOT, PatternType.LITERAL),
            (PREFIXED_ROOT, PatternType.PREFIXED),
        ):
            for type_name in self.zk.get_children(root):
                resource_type = RESOURCE_TYPES.get(type_name)
                if resource_type is None:
                    continue
                for name in self.zk.get_children(f"{root}/{type_name}"):
                    key = (resource_type, pattern, name)
                    acls += decode_acls(key, self.zk.get(resource_path(key))[0])
        return acls

    def write(
        self, acls: list[AclBinding], added: list[AclBinding], removed: list[AclBinding]
    ) -> None:
        """Apply ``added`` and ``removed`` to each resource's znode, notify every broker, and
        set this broker's cache to what ZooKeeper now holds."""
        changes: dict[Key, tuple[list, list]] = defaultdict(lambda: ([], []))
        for acl in added:
            changes[resource_key(acl)][0].append(acl)
        for acl in removed:
            changes[resource_key(acl)][1].append(acl)
        for key, (plus, minus) in changes.items():
            stored = self._update(key, plus, minus)
            self.authorizer.replace_resource(key, stored)
            literal = key[1] == PatternType.LITERAL
            self.zk.create(
                f"{LITERAL_CHANGES if literal else PREFIXED_CHANGES}/{CHANGE_PREFIX}",
                encode_change(key),
                sequence=True,
            )

    def _update(
        self, key: Key, plus: list[AclBinding], minus: list[AclBinding]
    ) -> list[AclBinding]:
        def change(data: bytes | None) -> bytes | None:
            wanted = [acl for acl in decode_acls(key, data) if acl not in minus]
            wanted += [acl for acl in plus if acl not in wanted]
            return encode_acls(wanted) if wanted else None

        return decode_acls(key, update_znode(self.zk, resource_path(key), change))

    def _changes_of(self, path: str) -> Callable[[list[str]], None]:
        def on_children(children: list[str]) -> None:
            from kazoo.exceptions import NoNodeError

            for child in sorted(c for c in children if c > self.seen.get(path, "")):
                self.seen[path] = child
                try:
                    key = decode_change(self.zk.get(f"{path}/{child}")[0], path == LITERAL_CHANGES)
                except (NoNodeError, ValueError, KeyError):
                    log.warning("skipping an unreadable ACL change %s/%s", path, child)
                    continue
                try:
                    data = self.zk.get(resource_path(key))[0]
                except NoNodeError:
                    data = None
                self.authorizer.replace_resource(key, decode_acls(key, data))
            delete_expired(self.zk, path, children, self.wall_clock_ms())

        return on_children
