"""Kafka's ACL model and the authorizer (``StandardAuthorizer`` / ``AclAuthorizer`` semantics).

An ACL binds a resource pattern (type, name, LITERAL or PREFIXED) to an entry (principal,
host, operation, ALLOW or DENY). ``Authorizer.authorize`` decides one action:

1. ``super.users`` are allowed everything;
2. the ACLs whose pattern matches the resource are those with a LITERAL name equal to it or
   ``*``, and those with a PREFIXED name that starts it;
3. a matching DENY (principal equal or ``User:*``, host equal or ``*``, operation equal or
   ALL) denies — DENY beats ALLOW;
4. a matching ALLOW allows: operation equal or ALL, and the implications Kafka applies:
   READ, WRITE, DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS;
5. if no ACL at all matches the resource, ``allow.everyone.if.no.acl.found`` decides;
   otherwise deny.

ACLs are kept by a store: ``FileAclStore``, ``<first log dir>/acls.json`` rewritten atomically
on every change, or in cluster mode ``wireserver.cluster.acls.ZkAclStore``, Kafka's ZooKeeper
layout shared by every broker.
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from wireserver.protocol.errors import ErrorCode

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
FILE_NAME = "acls.json"
AUTHORIZER_CLASSES = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: An ALLOW of any of these operations also allows the key.
IMPLIED_BY = {
    Operation.DESCRIBE: {
        Operation.DESCRIBE,
        Operation.READ,
        Operation.WRITE,
        Operation.DELETE,
        Operation.ALTER,
    },
    Operation.DESCRIBE_CONFIGS: {Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS},
}

#: The error each resource type's denial is reported with.
DENIED_ERROR = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


@dataclass(frozen=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def matches_resource(self, resource_type: int, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name == name or self.resource_name == WILDCARD
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return False

    def matches_entry(self, principal: str, host: str) -> bool:
        return self.principal in (principal, WILDCARD_PRINCIPAL) and self.host in (host, WILDCARD)


@dataclass(frozen=True)
class AclFilter:
    """A DescribeAcls / DeleteAcls filter; None strings match anything."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if (
            self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
            and self.pattern_type != acl.pattern_type
        ):
            return False
        if self.resource_name is not None:
            if self.pattern_type in (PatternType.ANY, acl.pattern_type):
                if self.resource_name != acl.resource_name:
                    return False
            elif acl.pattern_type == PatternType.LITERAL:
                if acl.resource_name not in (self.resource_name, WILDCARD):
                    return False
            elif acl.pattern_type == PatternType.PREFIXED:
                if not self.resource_name.startswith(acl.resource_name):
                    return False
            else:
                return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != Operation.ANY and self.operation != acl.operation:
            return False
        if self.permission != Permission.ANY and self.permission != acl.permission:
            return False
        return True

    def invalid(self) -> str | None:
        if self.resource_type == ResourceType.UNKNOWN:
            return "Invalid resource type filter UNKNOWN"
        if self.pattern_type == PatternType.UNKNOWN:
            return "Invalid pattern type filter UNKNOWN"
        if self.operation == Operation.UNKNOWN:
            return "Invalid operation filter UNKNOWN"
        if self.permission == Permission.UNKNOWN:
            return "Invalid permission type filter UNKNOWN"
        return None


def validate_new(acl: AclBinding) -> str | None:
    """Why CreateAcls must refuse ``acl`` (Kafka: INVALID_REQUEST), or None."""
    if acl.resource_type not in {t.value for t in ResourceType} or acl.resource_type in (
        ResourceType.UNKNOWN,
        ResourceType.ANY,
    ):
        return f"Invalid resource type {acl.resource_type}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid pattern type {acl.pattern_type}"
    if acl.operation not in {o.value for o in Operation} or acl.operation in (
        Operation.UNKNOWN,
        Operation.ANY,
    ):
        return f"Invalid operation {acl.operation}"
    if acl.permission not in (Permission.ALLOW, Permission.DENY):
        return f"Invalid permission type {acl.permission}"
    principal_type, sep, name = acl.principal.partition(":")
    if not sep or not principal_type or not name:
        return (
            f"Could not parse principal from `{acl.principal}` (no colon is present "
            f"separating the principal type from the principal name)"
        )
    if not acl.resource_name:
        return "Resource name must not be empty"
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.host:
        return "Host must not be empty"
    return None


class FileAclStore:
    """The ACLs of a single broker, in ``<directory>/acls.json``."""

    def __init__(self, directory: str):
        self.path = os.path.join(directory, FILE_NAME)

    def load(self) -> list[AclBinding]:
        if not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8") as handle:
            return [AclBinding(**item) for item in json.load(handle).get("acls", [])]

    def write(
        self, acls: list[AclBinding], added: list[AclBinding], removed: list[AclBinding]
    ) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump({"version": 1, "acls": [asdict(acl) for acl in acls]}, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)


def resource_key(acl: AclBinding) -> tuple[int, int, str]:
    """(resource type, pattern type, name): what one ZooKeeper znode holds the ACLs of."""
    return acl.resource_type, acl.pattern_type, acl.resource_name


class Authorizer:
    """The ACLs of one broker and the decision procedure (see the module docstring)."""

    def __init__(
        self, directory: str | None, super_users: Iterable[str] = (), allow_if_no_acl: bool = False
    ):
        self.store: Any = FileAclStore(directory) if directory else None
        self.super_users = set(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._acls: list[AclBinding] = self.store.load() if self.store else []

    def use_store(self, store: Any) -> None:
        """Keep the ACLs in ``store`` from now on (cluster mode: ZooKeeper), starting from
        what it holds."""
        self.store = store
        self._acls = store.load()

    def replace_resource(self, key: tuple[int, int, str], acls: Iterable[AclBinding]) -> None:
        """Set the ACLs of one resource pattern to ``acls`` (another broker changed them)."""
        self._acls = [acl for acl in self._acls if resource_key(acl) != key] + list(acls)

    @classmethod
    def from_config(cls, config, directory: str | None) -> Authorizer | None:
        name = (config.get("authorizer.class.name") or "").strip()
        if not name:
            return None
        if name not in AUTHORIZER_CLASSES:
            raise ValueError(
                f"authorizer.class.name {name} is not supported; use one of "
                f"{', '.join(AUTHORIZER_CLASSES)}"
            )
        supers = [
            item.strip() for item in (config.get("super.users") or "").split(";") if item.strip()
        ]
        return cls(directory, supers, bool(config.get("allow.everyone.if.no.acl.found")))

    # -- the decision ------------------------------------------------------------------------

    def authorize(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        found = False
        allowed = False
        implied = IMPLIED_BY.get(operation, {operation})
        for acl in self._acls:
            if not acl.matches_resource(resource_type, name):
                continue
            found = True
            if not acl.matches_entry(principal, host):
                continue
            if acl.permission == Permission.DENY:
                if acl.operation in (operation, Operation.ALL):
                    return False
            elif acl.operation == Operation.ALL or acl.operation in implied:
                allowed = True
        if allowed:
            return True
        return not found and self.allow_if_no_acl

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: Operation, resource_type: ResourceType
    ) -> bool:
        """May the principal do ``operation`` on *some* resource of the type? Kafka's
        ``Authorizer.authorizeByResourceType`` (KIP-679: an idempotent producer needs WRITE
        on any topic or IDEMPOTENT_WRITE on the cluster): yes for a super user (or when no
        ACL at all names a resource, with ``allow.everyone.if.no.acl.found``), otherwise
        when an ALLOW of exactly this operation (or ALL) for the principal or ``User:*`` names
        a resource that no DENY covers: a LITERAL ``*`` DENY covers everything, a LITERAL
        DENY its own name, a PREFIXED DENY every name it starts. Implied operations do not
        count here, as in Kafka."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        for acl in self._acls:
            if (
                acl.resource_type != resource_type
                or not acl.matches_entry(principal, host)
                or acl.operation not in (operation, Operation.ALL)
                or acl.pattern_type not in deny
            ):
                continue
            if acl.permission == Permission.DENY:
                if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                    return False
                deny[acl.pattern_type].add(acl.resource_name)
            elif acl.permission == Permission.ALLOW:
                if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                    return True
                allow[acl.pattern_type].add(acl.resource_name)
        for pattern, names in allow.items():
            for name in names:
                if pattern == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(
                    name[:end] in deny[PatternType.PREFIXED] for end in range(1, len(name) + 1)
                ):
                    return True
        return False

    # -- the ACL APIs ------------------------------------------------------------------------

    def acls(self) -> list[AclBinding]:
        return list(self._acls)

    def add(self, acls: Iterable[AclBinding]) -> None:
        added = []
        for acl in acls:
            if acl not in self._acls and acl not in added:
                added.append(acl)
        if added:
            self._acls.extend(added)
            self._write(added, [])

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Remove every ACL any filter matches; per filter, what it matched."""
        matched = [[acl for acl in self._acls if f.matches(acl)] for f in filters]
        gone = list(dict.fromkeys(acl for group in matched for acl in group))  # once, in order
        if gone:
            self._acls = [acl for acl in self._acls if acl not in gone]
            self._write([], gone)
        return matched

    def _write(self, added: list[AclBinding], removed: list[AclBinding]) -> None:
        if self.store is not None:
            self.store.write(self._acls, added, removed)
