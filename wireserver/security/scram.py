"""SCRAM credentials (RFC 5802 / RFC 7677), stored salted as Kafka stores them.

A credential is (salt, iterations, StoredKey, ServerKey): the password itself is never kept.
``ScramStore`` holds them per user and mechanism and persists them in
``<first log dir>/scram-credentials.json`` (written atomically on every change). They are
managed with AlterUserScramCredentials / DescribeUserScramCredentials, whose upsertions carry
the salted password the client computed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass

#: Kafka's ScramMechanism ids (AlterUserScramCredentials / DescribeUserScramCredentials).
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
MECHANISM_BY_ID = {mech_id: name for name, (mech_id, _) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
FILE_NAME = "scram-credentials.json"


def hash_name(mechanism: str) -> str:
    return MECHANISMS[mechanism][1]


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name(mechanism), password.encode("utf-8"), salt, iterations)


def hmac_of(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name(mechanism)).digest()


def digest(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(hash_name(mechanism), data).digest()


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_salted_password(cls, mechanism: str, salted: bytes, salt: bytes,
                             iterations: int) -> "ScramCredential":
        client_key = hmac_of(mechanism, salted, b"Client Key")
        return cls(salt, iterations, digest(mechanism, client_key),
                   hmac_of(mechanism, salted, b"Server Key"))

    @classmethod
    def from_password(cls, mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                      salt: bytes | None = None) -> "ScramCredential":
        salt = salt if salt is not None else secrets.token_bytes(24)
        return cls.from_salted_password(
            mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations)

    def to_json(self) -> dict:
        b64 = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
        return {"salt": b64(self.salt), "iterations": self.iterations,
                "stored_key": b64(self.stored_key), "server_key": b64(self.server_key)}

    @classmethod
    def from_json(cls, data: dict) -> "ScramCredential":
        raw = lambda text: base64.b64decode(text)  # noqa: E731
        return cls(raw(data["salt"]), int(data["iterations"]), raw(data["stored_key"]),
                   raw(data["server_key"]))


class ScramStore:
    """user → mechanism → ScramCredential, persisted in ``directory``."""

    def __init__(self, directory: str | None):
        self.path = os.path.join(directory, FILE_NAME) if directory else None
        self._users: dict[str, dict[str, ScramCredential]] = {}
        if self.path and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
            for user, mechanisms in data.get("users", {}).items():
                self._users[user] = {mech: ScramCredential.from_json(cred)
                                     for mech, cred in mechanisms.items()}

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {user: dict(mechs) for user, mechs in self._users.items() if mechs}

    def put(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        self._users.setdefault(user, {})[mechanism] = credential

    def delete(self, user: str, mechanism: str) -> bool:
        mechanisms = self._users.get(user)
        if not mechanisms or mechanism not in mechanisms:
            return False
        del mechanisms[mechanism]
        if not mechanisms:
            del self._users[user]
        return True

    def save(self) -> None:
        if self.path is None:
            return
        data = {"version": 1, "users": {
            user: {mech: cred.to_json() for mech, cred in mechs.items()}
            for user, mechs in self._users.items()}}
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
        store.put(user, mechanism, ScramCredential.from_password(mechanism, password))
    store.save()
