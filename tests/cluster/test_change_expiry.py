"""Change notifications in ZooKeeper are deleted once older than 15 minutes (Kafka's
``ZkNodeChangeNotificationListener``), for config changes and for ACL changes alike."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.cluster.conftest import zk_client
from wireserver.cluster.acls import LITERAL_CHANGES, ZkAclStore, encode_change
from wireserver.cluster.config_changes import CHANGE_EXPIRATION_MS, delete_expired
from wireserver.security.acls import (
    AclBinding,
    Authorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

SIXTEEN_MINUTES_MS = 16 * 60 * 1000


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, f"/expiry-{uuid.uuid4().hex[:8]}")


def test_only_notifications_older_than_the_expiry_are_deleted(zk):
    zk.ensure_path("/config/changes")
    for _ in range(3):
        zk.create("/config/changes/config_change_", b"{}", sequence=True)
    children = sorted(zk.get_children("/config/changes"))
    now_ms = int(time.time() * 1000)
    assert delete_expired(zk, "/config/changes", children, now_ms) == []
    later = now_ms + CHANGE_EXPIRATION_MS + 60_000
    assert delete_expired(zk, "/config/changes", children, later) == children
    assert zk.get_children("/config/changes") == []


def test_a_broker_deletes_expired_acl_notifications_after_applying_them(zk):
    """The broker's ACL store applies a new notification, then deletes the ones that are
    too old: here its wall clock is 16 minutes ahead, so all of them."""
    clock = [int(time.time() * 1000)]
    authorizer = Authorizer(None)
    store = ZkAclStore(zk, authorizer, lambda func: func, wall_clock_ms=lambda: clock[0])
    store.start()
    acl = AclBinding(
        ResourceType.TOPIC,
        "orders",
        PatternType.LITERAL,
        "User:alice",
        "*",
        Operation.READ,
        Permission.ALLOW,
    )
    store.write([], [acl], [])  # the znode and a notification, as another broker would
    key = (ResourceType.TOPIC, PatternType.LITERAL, "orders")
    zk.create(f"{LITERAL_CHANGES}/acl_changes_", encode_change(key), sequence=True)
    on_children = store._changes_of(LITERAL_CHANGES)
    on_children(zk.get_children(LITERAL_CHANGES))
    assert len(zk.get_children(LITERAL_CHANGES)) == 2  # fresh: kept
    clock[0] += SIXTEEN_MINUTES_MS
    on_children(zk.get_children(LITERAL_CHANGES))
    assert zk.get_children(LITERAL_CHANGES) == []
    assert acl in authorizer.acls()
