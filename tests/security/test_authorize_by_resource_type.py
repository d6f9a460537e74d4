"""``Authorizer.authorize_by_resource_type``: Kafka's rules for "may this principal do the
operation on some resource of the type" (an idempotent producer's InitProducerId)."""

from __future__ import annotations

import pytest

from wireserver.security.acls import (
    AclBinding,
    Authorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

TOPIC = ResourceType.TOPIC
ALLOW, DENY = Permission.ALLOW, Permission.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED


def acl(name, permission=ALLOW, pattern=LITERAL, operation=Operation.WRITE, principal="User:alice"):
    return AclBinding(TOPIC, name, pattern, principal, "*", operation, permission)


@pytest.mark.parametrize(
    "acls,allowed",
    [
        ([], False),
        ([acl("t")], True),
        ([acl("t", principal="User:*")], True),
        ([acl("t", principal="User:bob")], False),
        ([acl("t", operation=Operation.ALL)], True),
        ([acl("t", operation=Operation.READ)], False),  # no implied operations here
        ([acl("t"), acl("t", DENY)], False),  # a LITERAL DENY of the same name
        ([acl("t"), acl("*", DENY)], False),  # a wildcard DENY covers all
        ([acl("*"), acl("t", DENY)], True),  # a wildcard ALLOW wins
        ([acl("team-a"), acl("team", DENY, PREFIXED)], False),  # a PREFIXED DENY covers it
        ([acl("team", pattern=PREFIXED), acl("team-a", DENY)], True),  # a LITERAL one does not
        ([acl("team", pattern=PREFIXED), acl("te", DENY, PREFIXED)], False),
        ([acl("t"), acl("u"), acl("t", DENY)], True),  # another topic is still allowed
    ],
)
def test_rules(acls, allowed):
    authorizer = Authorizer(None)
    authorizer.add(acls)
    assert (
        authorizer.authorize_by_resource_type("User:alice", "127.0.0.1", Operation.WRITE, TOPIC)
        is allowed
    )


def test_super_users_and_allow_if_no_acl_found():
    assert Authorizer(None, super_users=["User:alice"]).authorize_by_resource_type(
        "User:alice", "h", Operation.WRITE, TOPIC
    )
    assert Authorizer(None, allow_if_no_acl=True).authorize_by_resource_type(
        "User:alice", "h", Operation.WRITE, TOPIC
    )
