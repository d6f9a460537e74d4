"""SCRAM credentials (RFC 5802 / RFC 7677), stored salted as Kafka stores them.

A credential is (salt, iterations, StoredKey, ServerKey): the password itself is never kept.
``ScramStore`` holds them per user and mechanism. On a single node it persists them in
``<first log dir>/scram-credentials.json`` (written atomically on every change); in cluster
mode they are the cluster's, kept in ZooKeeper (``wireserver.cluster.scram_credentials``).
They are managed with AlterUserScramCredentials / DescribeUserScramCredentials, whose
upsertions carry the salted password the client computed.

``hashlib`` and ``hmac`` are imported where they are used: they load OpenSSL's
libcrypto (about 3.5 MiB of resident memory), which a broker nobody logs in to with SCRAM
never needs.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: Kafka's ScramMechanism ids (AlterUserScramCredentials / DescribeUserScramCredentials).
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
MECHANISM_BY_ID = {mech_id: name for name, (mech_id, _) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
FILE_NAME = "scram-credentials.json"


def hash_name(mechanism: str) -> str:
    return MECHANISMS[mechanism][1]


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    import hashlib

    return hashlib.pbkdf2_hmac(hash_name(mechanism), password.encode("utf-8"), salt, iterations)


def hmac_of(mechanism: str, key: bytes, data: bytes) -> bytes:
    import hmac

    return hmac.new(key, data, hash_name(mechanism)).digest()


def same_bytes(a: bytes, b: bytes) -> bool:
    """Constant-time comparison (``hmac.compare_digest``) for secrets and proofs."""
    import hmac

    return hmac.compare_digest(a, b)


def nonce() -> str:
    """A fresh random nonce for a SCRAM exchange: 18 random bytes, URL-safe base64."""
    return base64.urlsafe_b64encode(os.urandom(18)).rstrip(b"=").decode("ascii")


def digest(mechanism: str, data: bytes) -> bytes:
    import hashlib

    return hashlib.new(hash_name(mechanism), data).digest()


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_salted_password(
        cls, mechanism: str, salted: bytes, salt: bytes, iterations: int
    ) -> ScramCredential:
        client_key = hmac_of(mechanism, salted, b"Client Key")
        return cls(
            salt,
            iterations,
            digest(mechanism, client_key),
            hmac_of(mechanism, salted, b"Server Key"),
        )

    @classmethod
    def from_password(
        cls,
        mechanism: str,
        password: str,
        iterations: int = MIN_ITERATIONS,
        salt: bytes | None = None,
    ) -> ScramCredential:
        if salt is None:
            salt = os.urandom(24)
        return cls.from_salted_password(
            mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations
        )

    def to_config_value(self) -> str:
        """Kafka's ``ScramCredentialUtils.credentialToString``: the value of a user's
        ``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` config in ZooKeeper."""
        fields = self.to_json()  # the same names, in Kafka's order below
        return ",".join(
            f"{name}={fields[name]}" for name in ("salt", "stored_key", "server_key", "iterations")
        )

    @classmethod
    def from_config_value(cls, text: str) -> ScramCredential:
        """Kafka's ``credentialFromString`` (ValueError for a value missing a field)."""
        fields = dict(item.partition("=")[::2] for item in text.split(","))
        try:
            return cls.from_json(fields)
        except KeyError as exc:
            raise ValueError(f"not a SCRAM credential: {exc}") from None

    def to_json(self) -> dict:
        b64 = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
        return {
            "salt": b64(self.salt),
            "iterations": self.iterations,
            "stored_key": b64(self.stored_key),
            "server_key": b64(self.server_key),
        }

    @classmethod
    def from_json(cls, data: dict) -> ScramCredential:
        raw = lambda text: base64.b64decode(text)  # noqa: E731
        return cls(
            raw(data["salt"]),
            int(data["iterations"]),
            raw(data["stored_key"]),
            raw(data["server_key"]),
        )


Users = dict[str, dict[str, ScramCredential]]  # user -> mechanism -> credential


class ScramStore:
    """user → mechanism → ScramCredential: the credentials the admin APIs list and change.

    Single node: those of ``<directory>/scram-credentials.json``, rewritten on every change.
    Cluster mode (``use_shared``): the cluster's, kept by a ZooKeeper store; the file is then
    read only and its credentials become ``seeded``: still good for logging in to this broker
    when the cluster has none for that user and mechanism (how ``write_users`` and
    ``EmbeddedBroker(sasl="SCRAM-...", users=...)`` provision brokers), but neither listed
    nor changed by the admin APIs."""

    def __init__(self, directory: str | None):
        self.path = os.path.join(directory, FILE_NAME) if directory else None
        self._users: Users = {}
        self.seeded: Users = {}
        self.shared: Any = None  # the ZooKeeper store in cluster mode
        if self.path and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
            for user, mechanisms in data.get("users", {}).items():
                self._users[user] = {
                    mech: ScramCredential.from_json(cred) for mech, cred in mechanisms.items()
                }

    def use_shared(self, shared: Any) -> None:
        """Keep the credentials in ``shared`` from now on (``load()`` gives them all,
        ``alter(user, upserts, deletions)`` changes one user's and returns what it has)."""
        self.seeded, self._users = self._users, shared.load()
        self.shared = shared

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def for_login(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.get(user, mechanism) or self.seeded.get(user, {}).get(mechanism)

    def users(self) -> Users:
        return {user: dict(mechs) for user, mechs in self._users.items() if mechs}

    def replace_user(self, user: str, mechanisms: dict[str, ScramCredential]) -> None:
        """Set all of ``user``'s credentials (none: forget the user)."""
        if mechanisms:
            self._users[user] = dict(mechanisms)
        else:
            self._users.pop(user, None)

    def alter(
        self, user: str, upserts: dict[str, ScramCredential], deletions: Iterable[str] = ()
    ) -> None:
        """Add or replace ``upserts`` (mechanism → credential) and delete ``deletions``."""
        if self.shared is not None:
            self.replace_user(user, self.shared.alter(user, upserts, deletions))
            return
        mechanisms = {
            mech: cred for mech, cred in self._users.get(user, {}).items() if mech not in deletions
        }
        mechanisms.update(upserts)
        self.replace_user(user, mechanisms)
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        data = {
            "version": 1,
            "users": {
                user: {mech: cred.to_json() for mech, cred in mechs.items()}
                for user, mechs in self._users.items()
            },
        }
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)


def write_users(directory: str, mechanism: str, users: dict[str, str]) -> None:
    """Add ``users`` (name → password) to the store in ``directory`` (before a broker starts:
    how ``EmbeddedBroker(sasl="SCRAM-SHA-256", users=...)`` provisions them)."""
    os.makedirs(directory, exist_ok=True)
    store = ScramStore(directory)
    for user, password in users.items():
        store.alter(user, {mechanism: ScramCredential.from_password(mechanism, password)})
