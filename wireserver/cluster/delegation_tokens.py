"""Delegation tokens in ZooKeeper, in the layout of Kafka's ZooKeeper-era
``DelegationTokenManagerZk``, so a token made through one broker logs in on every broker and
outlives any one of them:

- ``/delegation_token/tokens/<token id>``: ``{"version":3,"owner":"User%3Aalice",
  "tokenRequester":"User%3Aalice","renewers":["User%3Abob"],"issueTimestamp":...,
  "maxTimestamp":...,"expiryTimestamp":...,"tokenId":"..."}`` (principals sanitized as
  Kafka's ``Sanitizer``); the HMAC is not stored, every broker computes it from the shared
  ``delegation.token.secret.key``;
- after a change, a sequential ``/delegation_token/token_changes/token_change_<seq>`` whose
  data is the token id.

Every broker loads all tokens when it joins and watches the change path: for each new
notification it re-reads the token's znode (gone: the token was expired or removed). The
broker that makes a change writes the znode and updates its own cache at once. Notifications
older than 15 minutes are deleted by whichever broker sees them, as Kafka does. As in Kafka,
none of this happens on a broker without a secret (tokens disabled).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from wireserver.cluster import zkdata as zd
from wireserver.cluster.config_changes import delete_expired, wall_clock_now_ms
from wireserver.security.tokens import DelegationTokens, TokenInformation

log = logging.getLogger(__name__)

TOKENS = "/delegation_token/tokens"
CHANGES = "/delegation_token/token_changes"
CHANGE_PREFIX = "token_change_"


def encode(info: TokenInformation) -> bytes:
    """Kafka's ``DelegationTokenManagerZk.toJsonCompatibleMap`` (version 3)."""
    return json.dumps(
        {
            "version": 3,
            "owner": zd.sanitize(info.owner),
            "tokenRequester": zd.sanitize(info.requester),
            "renewers": [zd.sanitize(renewer) for renewer in info.renewers],
            "issueTimestamp": info.issue_ms,
            "maxTimestamp": info.max_ms,
            "expiryTimestamp": info.expiry_ms,
            "tokenId": info.token_id,
        },
        separators=(",", ":"),
    ).encode()


def decode(data: bytes) -> TokenInformation:
    """Kafka's ``fromBytes`` (versions 1-3; before 3 the requester is the owner)."""
    item = json.loads(data)
    owner = zd.desanitize(item["owner"])
    return TokenInformation(
        item["tokenId"],
        owner,
        zd.desanitize(item["tokenRequester"]) if item["version"] >= 3 else owner,
        tuple(zd.desanitize(renewer) for renewer in item["renewers"]),
        item["issueTimestamp"],
        item["maxTimestamp"],
        item["expiryTimestamp"],
    )


class ZkDelegationTokens:
    """The ``shared`` store of a broker's ``DelegationTokens`` in cluster mode (see the module
    docstring). ``on_reactor(func)`` wraps a kazoo watch callback to run on the reactor."""

    def __init__(
        self,
        zk: Any,
        tokens: DelegationTokens,
        on_reactor: Callable[[Callable[..., None]], Callable[..., None]],
    ):
        self.zk = zk
        self.tokens = tokens
        self.on_reactor = on_reactor
        self.last_processed = -1

    def start(self) -> None:
        if not self.tokens.enabled:
            return
        self.zk.ensure_path(TOKENS)
        self.zk.ensure_path(CHANGES)
        self.tokens.use_shared(self)
        self.zk.ChildrenWatch(CHANGES, self.on_reactor(self.on_changes))

    def load(self) -> list[TokenInformation]:
        return [info for info in map(self._read, self.zk.get_children(TOKENS)) if info]

    def put(self, info: TokenInformation) -> None:
        path = f"{TOKENS}/{info.token_id}"
        if self.zk.exists(path) is None:
            self.zk.create(path, encode(info))
        else:
            self.zk.set(path, encode(info))
        self._notify(info.token_id)

    def remove(self, token_id: str) -> None:
        from kazoo.exceptions import NoNodeError

        try:
            self.zk.delete(f"{TOKENS}/{token_id}")
        except NoNodeError:  # another broker's sweep got there first
            return
        self._notify(token_id)

    def on_changes(self, children: list[str]) -> None:
        from kazoo.exceptions import NoNodeError

        changes = sorted((int(c[len(CHANGE_PREFIX) :]), c) for c in children if c[-1].isdigit())
        for seq, child in changes:
            if seq <= self.last_processed:
                continue
            try:
                token_id = self.zk.get(f"{CHANGES}/{child}")[0].decode()
            except NoNodeError:
                continue
            info = self._read(token_id)
            if info is None:
                self.tokens.forget(token_id)
            else:
                self.tokens.apply(info)
            self.last_processed = seq
        delete_expired(self.zk, CHANGES, [c for _, c in changes], wall_clock_now_ms())

    def _notify(self, token_id: str) -> None:
        self.zk.create(f"{CHANGES}/{CHANGE_PREFIX}", token_id.encode(), sequence=True)

    def _read(self, token_id: str) -> TokenInformation | None:
        from kazoo.exceptions import NoNodeError

        try:
            return decode(self.zk.get(f"{TOKENS}/{token_id}")[0])
        except NoNodeError:
            return None
        except (ValueError, KeyError, TypeError):
            log.warning("unreadable delegation token %r in ZooKeeper", token_id)
            return None
