"""The quotas set for client entities, checked and described as Kafka 4.4 does.

Checks (Kafka's ``ClientQuotaControlManager``, every failure INVALID_REQUEST with its message):
an entity with no entries, a type twice, a type other than ``user``/``client-id``/``ip``, an
empty name, ``ip`` combined with another type, an ip that is not an address or resolvable
host; a key named twice for one entity, an entity named twice in one request; a key the
entity's kind does not take, a value not above 0, a fractional value or one too large for an
integral key. A failing entity changes nothing; the others of the request are applied.

Describe filters (Kafka's ``ClientQuotasImage.describe``): per entity type an exact name, the
default (``<default>``) or any name; ``strict`` keeps only entities with no other types.

Where they live: on one node ``wireserver-client-quotas.json`` in the first log dir, rewritten
atomically on every change and read at start; in cluster mode ZooKeeper, through the shared
store ``use_shared`` installs (``wireserver.cluster.client_quotas``).
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable, Iterable
from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.storage import checkpoint as ckpt

FILE_NAME = "wireserver-client-quotas.json"

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

#: Kafka's ``QuotaConfig``: the keys of user/client-id entities and of ip entities, with types
CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE",
    CONTROLLER_MUTATION_RATE: "DOUBLE",
}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}
_LIMITS = {"LONG": (2**63 - 1, "a LONG"), "INT": (2**31 - 1, "an INT")}

#: DescribeClientQuotas match types
MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_SPECIFIED = 2

Entity = tuple[tuple[str, Any], ...]  # ((type, name or None), ...) sorted by type
Quotas = dict[str, float]


class QuotaError(Exception):
    """A request Kafka answers with ``code`` and this message."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST):
        super().__init__(message)
        self.code = code


def entity_str(pairs: Iterable[tuple[str, Any]]) -> str:
    """Kafka's ``ClientQuotaEntity.toString`` (its HashMap lists client-id, ip, user)."""
    inner = ", ".join(
        f"{kind}={'null' if name is None else name}" for kind, name in sorted(dict(pairs).items())
    )
    return f"ClientQuotaEntity(entries={{{inner}}})"


def _valid_ip(name: str | None) -> bool:
    if name is None:
        return True
    try:
        socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return False
    return True


def check_entity(pairs: list[tuple[str, Any]]) -> tuple[Entity, dict[str, str]]:
    """The entity and the keys it takes; QuotaError as Kafka's ``validateEntity`` and
    ``configKeysForEntityType``."""
    if not pairs:
        raise QuotaError("Invalid empty client quota entity")
    seen: dict[str, Any] = {}
    for kind, name in pairs:
        if kind in seen:
            raise QuotaError(f"Invalid client quota entity, duplicate entity entry {kind}")
        if kind not in ENTITY_TYPES:
            raise QuotaError(f"Unhandled client quota entity type: {kind}")
        seen[kind] = name
        if name is not None and name == "":
            raise QuotaError(f"Empty {kind} not supported")
    if IP in seen:
        if len(seen) > 1:
            # sic: Kafka's message lacks the space
            raise QuotaError(
                "Invalid quota entity combination, IP entity shouldnot be combined with User "
                "or ClientId"
            )
        if not _valid_ip(seen[IP]):
            raise QuotaError(f"{seen[IP]} is not a valid IP or resolvable host.")
        keys = IP_KEYS
    else:
        keys = CLIENT_KEYS
    return tuple(sorted(seen.items())), keys


def check_value(keys: dict[str, str], key: str, value: float) -> None:
    """Kafka's ``validateQuotaKeyValue``."""
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaError(f"Quota {key} must be greater than 0")
    if kind == "DOUBLE":
        return
    limit, name = _LIMITS[kind]
    if value > limit:
        raise QuotaError(f"Proposed value for {key} is too large for {name}.")
    if math.fabs(math.fmod(value, 1.0)) > 1e-6:
        raise QuotaError(f"{key} cannot be a fractional value.")


class Alteration:
    """One entry of an AlterClientQuotas request: ``pairs`` as sent, ``ops`` (key, value or
    None to remove) in order."""

    __slots__ = ("pairs", "ops", "error")

    def __init__(self, pairs: list[tuple[str, Any]], ops: list[tuple[str, float | None]]):
        self.pairs = pairs
        self.ops = ops
        self.error: QuotaError | None = None


class ClientQuotaStore:
    """entity -> quota key -> value. ``listeners`` are called after every change (the rate
    managers re-resolve their limits)."""

    def __init__(self, directory: str | None):
        self.path = os.path.join(directory, FILE_NAME) if directory else None
        self.shared: Any = None
        self.listeners: list[Callable[[], None]] = []
        self._quotas: dict[Entity, Quotas] = {}
        if self.path and os.path.exists(self.path):
            data = ckpt.read_json(self.path)
            for entry in data.get("entities", []):
                entity = tuple(sorted((kind, name) for kind, name in entry["entity"]))
                self._quotas[entity] = {k: float(v) for k, v in entry["quotas"].items()}

    def use_shared(self, shared: Any) -> None:
        """Keep the quotas in ``shared`` from now on (``load()`` gives them all,
        ``write(entity, quotas)`` stores one entity's and tells every broker)."""
        self.shared = shared
        self._quotas = shared.load()
        self._notify()

    # -- reading ----------------------------------------------------------------------------

    def get(self, entity: Entity) -> Quotas | None:
        return self._quotas.get(entity)

    def entities(self) -> dict[Entity, Quotas]:
        return self._quotas

    def describe(self, components: list[tuple[str, int, str | None]], strict: bool):
        """The entities matching the filter, as Kafka's ``ClientQuotasImage.describe``."""
        exact: dict[str, str | None] = {}
        any_name: set[str] = set()
        for kind, match_type, match in components:
            if not kind:
                raise QuotaError("Invalid empty entity type.")
            if kind in exact or kind in any_name:
                raise QuotaError(f"Entity type {kind} cannot appear more than once in the filter.")
            if kind not in ENTITY_TYPES:
                raise QuotaError(f"Unsupported entity type {kind}", ErrorCode.UNSUPPORTED_VERSION)
            if match_type == MATCH_EXACT:
                if match is None:
                    raise QuotaError(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null."
                    )
                exact[kind] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise QuotaError(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                    )
                exact[kind] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise QuotaError(
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                    )
                any_name.add(kind)
            else:
                raise QuotaError(f"Unknown match type {match_type}")
        kinds = set(exact) | any_name
        if IP in kinds and kinds & {USER, CLIENT_ID}:
            raise QuotaError(
                "Invalid entity filter component combination. IP filter component should not "
                "be used with user or clientId filter component."
            )
        found = []
        for entity, quotas in self._quotas.items():
            names = dict(entity)
            if strict and len(names) != len(kinds):
                continue
            if any(kind not in names or names[kind] != name for kind, name in exact.items()):
                continue
            if any(kind not in names for kind in any_name):
                continue
            found.append((entity, dict(quotas)))
        return found

    # -- changing ---------------------------------------------------------------------------

    def alter(self, alterations: list[Alteration], validate_only: bool) -> None:
        """Check each alteration (its ``error`` set when it fails, as Kafka's
        ``alterClientQuotas`` does: a key twice or an entity twice fails that entry) and apply
        the good ones unless ``validate_only``."""
        seen: set = set()
        changes: list[tuple[Entity, Quotas]] = []
        for alteration in alterations:
            key_of = frozenset(alteration.pairs)
            keys_seen: set[str] = set()
            for key, _ in alteration.ops:
                if key in keys_seen:
                    alteration.error = QuotaError(
                        f"Duplicate quota key {key} not updating quota for this entity "
                        f"{entity_str(alteration.pairs)}"
                    )
                keys_seen.add(key)
            if key_of in seen or alteration.error is not None:
                # Kafka reports an entity whose result is already known, its own duplicate
                # key included, as a duplicate entity.
                alteration.error = QuotaError(
                    f"Ignoring duplicate entity {entity_str(alteration.pairs)}"
                )
                seen.add(key_of)
                continue
            seen.add(key_of)
            try:
                entity, keys = check_entity(alteration.pairs)
                quotas = dict(self._quotas.get(entity, {}))
                for key, value in alteration.ops:
                    if value is None:
                        quotas.pop(key, None)
                    else:
                        check_value(keys, key, value)
                        quotas[key] = float(value)
            except QuotaError as exc:
                alteration.error = exc
                continue
            changes.append((entity, quotas))
        if validate_only or not changes:
            return
        for entity, quotas in changes:
            if self.shared is not None:
                self.shared.write(entity, quotas)
            self.replace(entity, quotas)
        if self.shared is None:
            self._save()

    def replace(self, entity: Entity, quotas: Quotas) -> None:
        """Set all of ``entity``'s quotas (none: forget it) and tell the listeners."""
        if quotas:
            self._quotas[entity] = dict(quotas)
        else:
            self._quotas.pop(entity, None)
        self._notify()

    def _notify(self) -> None:
        for listener in self.listeners:
            listener()

    def _save(self) -> None:
        if self.path is None:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        ckpt.write_json(
            self.path,
            {
                "version": 1,
                "entities": [
                    {"entity": [list(pair) for pair in entity], "quotas": quotas}
                    for entity, quotas in sorted(self._quotas.items(), key=lambda i: repr(i[0]))
                ],
            },
        )
