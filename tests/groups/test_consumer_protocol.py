"""The consumer group protocol (KIP-848) on a fake clock: joins, target assignments, revocation
before reassignment, epochs, fencing, static members, session and rebalance timeouts, the
assignors, offsets with member epochs, persistence, and the explicit state machine."""

from __future__ import annotations

import logging
import re
import uuid

import pytest
from twisted.internet.testing import MemoryReactorClock

from wireserver.broker import Broker
from wireserver.config import BrokerConfig
from wireserver.groups import IllegalStateTransition, assignors
from wireserver.groups.consumer_coordinator import HeartbeatRequest
from wireserver.groups.consumer_group import ConsumerGroup, ConsumerGroupState
from wireserver.groups.coordinator import OffsetCommit
from wireserver.protocol.errors import ErrorCode
from wireserver.topics import create_topic

E = ErrorCode
C = ConsumerGroupState
SESSION_MS = 45_000
REBALANCE_MS = 60_000


def make_broker(path, **overrides) -> Broker:
    values = {
        "log.dirs": str(path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3",
    }
    values.update(overrides)
    broker = Broker(BrokerConfig.load(None, values), MemoryReactorClock())
    broker.start()
    broker.reactor.advance(0)  # the reactor's first turn, where the groups load
    return broker


@pytest.fixture
def broker(tmp_path):
    instance = make_broker(tmp_path)
    create_topic(instance, "t", 6, 1, {})
    yield instance
    instance.groups.stop()
    instance.logs.close()


def topic_id(broker, name="t"):
    return broker.logs.topics[name].topic_id


class Member:
    """A well-behaved consumer: owns what it was given, revokes what it is no longer given."""

    def __init__(
        self, broker, member_id=None, group="g", topics=("t",), instance_id=None, assignor=None
    ):
        self.broker = broker
        self.group = group
        self.member_id = member_id or str(uuid.uuid4())
        self.topics = list(topics)
        self.instance_id = instance_id
        self.assignor = assignor
        self.epoch = 0
        self.owned: dict[uuid.UUID, set[int]] = {}

    def heartbeat(self, epoch=None, owned="mine", **extra):
        joining = self.epoch == 0 if epoch is None else epoch == 0
        request = HeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch if epoch is None else epoch,
            instance_id=self.instance_id,
            rebalance_timeout_ms=REBALANCE_MS if joining else -1,
            subscribed_topic_names=self.topics if joining else None,
            server_assignor=self.assignor if joining else None,
            owned=(None if joining else self.owned) if owned == "mine" else owned,
            client_id="c",
            client_host="/127.0.0.1",
        )
        for key, value in extra.items():
            setattr(request, key, value)
        result = self.broker.groups.consumer.heartbeat(request)
        if result.error == E.NONE and result.member_epoch >= 0:
            self.epoch = result.member_epoch
            if result.assignment is not None:
                self.owned = {t: set(p) for t, p in result.assignment.items() if p}
        return result

    def partitions(self) -> set[int]:
        return {p for ps in self.owned.values() for p in ps}

    def leave(self):
        return self.broker.groups.consumer.heartbeat(
            HeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=-1,
                instance_id=self.instance_id,
            )
        )


def group_of(broker, name="g") -> ConsumerGroup:
    return broker.groups.consumer.groups[name]


def settle(members, rounds=6):
    for _ in range(rounds):
        for m in members:
            assert m.heartbeat().error == E.NONE


def assert_exclusive(members, total=6):
    seen = [p for m in members for p in m.partitions()]
    assert len(seen) == len(set(seen)), f"a partition is owned twice: {sorted(seen)}"
    assert set(seen) == set(range(total))


# -- joining and reconciling -------------------------------------------------------------------


def test_first_member_gets_every_partition(broker):
    a = Member(broker)
    result = a.heartbeat()
    assert result.error == E.NONE and result.member_id == a.member_id
    assert result.member_epoch == 2 and result.heartbeat_interval_ms == 5000
    assert a.partitions() == set(range(6))
    group = group_of(broker)
    assert group.state is C.STABLE and group.group_epoch == group.assignment_epoch == 2
    assert group.assignor_name == "uniform"


def test_v0_join_without_member_id_gets_one(broker):
    request = HeartbeatRequest(
        group_id="g",
        member_id="",
        member_epoch=0,
        rebalance_timeout_ms=REBALANCE_MS,
        subscribed_topic_names=["t"],
        api_version=0,
    )
    result = broker.groups.consumer.heartbeat(request)
    assert result.error == E.NONE and result.member_id
    request.api_version = 1
    assert broker.groups.consumer.heartbeat(request).error == E.INVALID_REQUEST


def test_partitions_move_only_after_revocation_1_3_2(broker):
    a = Member(broker)
    a.heartbeat()
    assert a.partitions() == set(range(6))
    b, c = Member(broker), Member(broker)
    # b joins: the group epoch moves to 3, b's target is three of a's partitions, but a
    # still owns them, so b gets nothing yet.
    rb = b.heartbeat()
    assert rb.member_epoch == 3 and b.partitions() == set()
    assert group_of(broker).state is C.RECONCILING
    # a heartbeats: it is asked to revoke (its assignment shrinks), its epoch stays at 2.
    ra = a.heartbeat(owned={topic_id(broker): set(range(6))})
    assert ra.member_epoch == 2 and len(a.partitions()) == 3
    # Until a confirms, b still gets nothing.
    assert b.heartbeat().error == E.NONE and b.partitions() == set()
    # a confirms (owns only its three now): epoch 3, and b can have the released ones.
    assert a.heartbeat().member_epoch == 3
    b.heartbeat()
    assert_exclusive([a, b])
    assert len(b.partitions()) == 3
    # a third member: 2 each.
    c.heartbeat()
    settle([a, b, c])
    assert_exclusive([a, b, c])
    assert sorted(len(m.partitions()) for m in (a, b, c)) == [2, 2, 2]
    assert group_of(broker).state is C.STABLE
    assert {m.epoch for m in (a, b, c)} == {4}
    # c leaves: its partitions move, nobody else loses any (sticky).
    before = {id(m): m.partitions() for m in (a, b)}
    assert c.leave().member_epoch == -1
    settle([a, b])
    assert_exclusive([a, b])
    for m in (a, b):
        assert before[id(m)] <= m.partitions() and len(m.partitions()) == 3
    assert group_of(broker).group_epoch == 5 and group_of(broker).state is C.STABLE


def test_a_partition_is_never_owned_twice_during_churn(broker):
    members = [Member(broker) for _ in range(4)]
    for i, m in enumerate(members):
        m.heartbeat()
        for other in members[: i + 1]:
            other.heartbeat()
            owners = [p for x in members for p in x.partitions()]
            assert len(owners) == len(set(owners))
    settle(members)
    assert_exclusive(members)


# -- epochs and fencing ------------------------------------------------------------------------


def test_member_epoch_checks(broker):
    a = Member(broker)
    a.heartbeat()
    assert a.heartbeat(epoch=5).error == E.FENCED_MEMBER_EPOCH
    b = Member(broker)
    b.heartbeat()
    a.heartbeat(owned={})  # revoked everything it had to; moves to epoch 3
    assert a.epoch == 3
    # The previous epoch is accepted while the member owns a subset of its assignment (a lost
    # response); anything older is fenced.
    assert a.heartbeat(epoch=2, owned={topic_id(broker): a.partitions()}).error == E.NONE
    assert (
        a.heartbeat(epoch=2, owned={topic_id(broker): set(range(6))}).error == E.FENCED_MEMBER_EPOCH
    )
    assert Member(broker, member_id="nobody").heartbeat(epoch=3).error == E.UNKNOWN_MEMBER_ID
    assert Member(broker, group="none").heartbeat(epoch=3).error == E.GROUP_ID_NOT_FOUND


def test_rejoin_with_epoch_zero_resets_the_member(broker):
    a = Member(broker)
    a.heartbeat()
    a.epoch, a.owned = 0, {}
    result = a.heartbeat()
    assert result.error == E.NONE and result.member_epoch == 2 and a.partitions() == set(range(6))


def test_invalid_requests(broker):
    consumer = broker.groups.consumer
    base = dict(
        group_id="g",
        member_id="m",
        member_epoch=0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=["t"],
    )
    for change in (
        {"group_id": ""},
        {"rebalance_timeout_ms": -1},
        {"subscribed_topic_names": None},
        {"member_epoch": -3},
        {"instance_id": ""},
        {"owned": {uuid.uuid4(): {0}}},
    ):
        assert (
            consumer.heartbeat(HeartbeatRequest(**{**base, **change})).error == E.INVALID_REQUEST
        ), change
    assert (
        consumer.heartbeat(HeartbeatRequest(**base, server_assignor="sticky")).error
        == E.UNSUPPORTED_ASSIGNOR
    )
    assert (
        consumer.heartbeat(
            HeartbeatRequest(**{**base, "subscribed_topic_names": None}, subscribed_topic_regex="(")
        ).error
        == ErrorCode.INVALID_REGULAR_EXPRESSION
    )


def test_regex_subscription(broker):
    create_topic(broker, "orders-1", 2, 1, {})
    create_topic(broker, "orders-2", 2, 1, {})
    a = Member(broker, topics=())
    a.topics = None
    result = broker.groups.consumer.heartbeat(
        HeartbeatRequest(
            group_id="g",
            member_id=a.member_id,
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_regex="orders-.*",
        )
    )
    assert result.error == E.NONE
    ids = {topic_id(broker, "orders-1"), topic_id(broker, "orders-2")}
    assert set(result.assignment) == ids


def test_regex_subscription_includes_internal_topics(broker):
    assert broker.groups.ensure_ready() is None  # creates __consumer_offsets
    a = Member(broker, topics=())
    result = a.heartbeat(subscribed_topic_names=None, subscribed_topic_regex="__consumer.*")
    assert result.error == E.NONE
    assert result.assignment == {topic_id(broker, "__consumer_offsets"): {0, 1, 2}}


def test_regex_resolution_leaves_out_undescribable_topics_until_refreshed(broker):
    """Resolved with the authorization of the heartbeat doing it; kept until a regex comes or
    goes, the topics change, or the refresh interval passes (Kafka's rules)."""
    from wireserver.groups.consumer_coordinator import REGEX_REFRESH_INTERVAL_MS

    create_topic(broker, "orders-1", 2, 1, {})
    create_topic(broker, "orders-2", 2, 1, {})
    assert broker.groups.ensure_ready() is None  # __consumer_offsets, as the API handler does
    hidden = {"orders-2"}
    a = Member(broker, topics=())

    def heartbeat(**extra):
        result = a.heartbeat(describable=lambda topic: topic not in hidden, **extra)
        assert result.error == E.NONE
        return {broker.groups.consumer.topic_names()[t] for t in a.owned}

    assert heartbeat(subscribed_topic_names=None, subscribed_topic_regex="orders-.*") == {
        "orders-1"
    }
    hidden.clear()  # an ACL is added
    for _ in range(REGEX_REFRESH_INTERVAL_MS // 30_000):
        assert heartbeat() == {"orders-1"}  # not looked at again yet
        broker.reactor.advance(30)
    broker.reactor.advance(1)
    assert heartbeat() == {"orders-1", "orders-2"}
    hidden.add("orders-3")
    create_topic(broker, "orders-3", 2, 1, {})  # a new topic: resolved again
    hidden.add("orders-2")
    assert heartbeat() == {"orders-1"}


# -- timeouts ----------------------------------------------------------------------------------


def logged(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("wireserver.groups")]


def test_session_expiry_moves_partitions(broker, caplog):
    caplog.set_level(logging.INFO)
    a, b = Member(broker), Member(broker)
    a.heartbeat()
    b.heartbeat()
    settle([a, b])
    broker.reactor.advance(SESSION_MS / 2000)
    a.heartbeat()
    broker.reactor.advance(SESSION_MS / 2000 + 1)  # b silent for a whole session
    group = group_of(broker)
    assert b.member_id not in group.members and group.group_epoch == 4
    settle([a])
    assert a.partitions() == set(range(6))
    assert b.heartbeat().error == E.UNKNOWN_MEMBER_ID
    # What Kafka's GroupMetadataManager logs of it, in its words.
    lines = logged(caplog)
    for member in (a, b):
        assert (
            f"[GroupId g] Member {member.member_id} joins the consumer group using the "
            "consumer protocol." in lines
        )
    assert [line for line in lines if "Bumped group epoch" in line][:2] == [
        "[GroupId g] Bumped group epoch to 2.",  # the group is made at epoch 1
        "[GroupId g] Bumped group epoch to 3.",
    ]
    assert (
        f"[GroupId g] Member {b.member_id} fenced from the group because the member session "
        "expired." in lines
    )


def test_group_config_sets_the_session_timeout_and_heartbeat_interval(broker):
    """A group's consumer.session.timeout.ms / consumer.heartbeat.interval.ms (group configs)
    win over the broker's group.consumer.* for that group only, from its next heartbeat."""
    broker.group_configs.set(
        "g", {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}
    )
    a, other = Member(broker), Member(broker, group="other")
    assert a.heartbeat().heartbeat_interval_ms == 6000
    assert other.heartbeat().heartbeat_interval_ms == 5000
    broker.reactor.advance(SESSION_MS / 1000 + 1)  # past the broker's 45 s, not the group's 50
    assert a.member_id in group_of(broker).members
    assert other.member_id not in group_of(broker, "other").members
    broker.reactor.advance(50 - SESSION_MS / 1000)
    assert a.member_id not in group_of(broker).members
    # a change applies from the next heartbeat; deleting the configs goes back to the broker's
    b = Member(broker)
    b.heartbeat()
    broker.group_configs.set("g", {})
    assert b.heartbeat().heartbeat_interval_ms == 5000
    broker.reactor.advance(SESSION_MS / 1000 + 1)
    assert b.member_id not in group_of(broker).members


def test_member_that_does_not_revoke_is_removed_after_rebalance_timeout(broker, caplog):
    caplog.set_level(logging.INFO)
    a = Member(broker)
    a.heartbeat()
    b = Member(broker)
    b.heartbeat()
    a.heartbeat(owned={topic_id(broker): set(range(6))})  # asked to revoke three
    for _ in range(int(REBALANCE_MS / 5000)):
        broker.reactor.advance(5)
        # keeps heartbeating but never revokes
        a.heartbeat(owned={topic_id(broker): set(range(6))})
        b.heartbeat()
    broker.reactor.advance(1)
    assert a.member_id not in group_of(broker).members
    fenced = re.compile(
        rf"\[GroupId g\] Member {a.member_id} fenced from the group because it failed to "
        rf"transition from epoch \d+ within {REBALANCE_MS}ms\."
    )
    assert any(fenced.fullmatch(line) for line in logged(caplog))
    settle([b])
    assert b.partitions() == set(range(6))


def test_empty_group_after_last_member_leaves(broker, caplog):
    caplog.set_level(logging.INFO)
    a = Member(broker)
    a.heartbeat()
    a.leave()
    group = group_of(broker)
    assert group.state is C.EMPTY and not group.members and group.group_epoch == 3
    assert f"[GroupId g] Member {a.member_id} left the consumer group." in logged(caplog)


# -- static members ----------------------------------------------------------------------------


def test_static_member_temporary_leave_and_return(broker):
    a = Member(broker, instance_id="i-1")
    a.heartbeat()
    other = Member(broker)
    other.heartbeat()
    settle([a, other])
    kept = a.partitions()
    epoch = group_of(broker).group_epoch
    result = broker.groups.consumer.heartbeat(
        HeartbeatRequest(group_id="g", member_id=a.member_id, member_epoch=-2, instance_id="i-1")
    )
    assert result.error == E.NONE and result.member_epoch == -2
    # Another process with the same instance id is refused while... no: -2 released it.
    back = Member(broker, instance_id="i-1")
    result = back.heartbeat()
    assert result.error == E.NONE and back.partitions() == kept
    assert group_of(broker).group_epoch == epoch  # no rebalance
    assert a.heartbeat(epoch=a.epoch).error == E.FENCED_INSTANCE_ID
    # A second live process with the instance id is refused.
    assert Member(broker, instance_id="i-1").heartbeat().error == E.UNRELEASED_INSTANCE_ID


# -- assignors ---------------------------------------------------------------------------------


def test_uniform_is_balanced_and_sticky():
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    topics = {"a": (t1, 7), "b": (t2, 5)}
    subs = {m: {"a", "b"} for m in ("m1", "m2", "m3")}
    first = assignors.uniform(subs, topics, {})
    counts = sorted(sum(len(p) for p in a.values()) for a in first.values())
    assert counts == [4, 4, 4]
    subs["m4"] = {"a", "b"}
    second = assignors.uniform(subs, topics, first)
    assert sorted(sum(len(p) for p in a.values()) for a in second.values()) == [3, 3, 3, 3]
    for m in ("m1", "m2", "m3"):
        kept = sum(len(second[m].get(t, set()) & first[m].get(t, set())) for t in (t1, t2))
        assert kept == 3  # each gave up exactly one partition


def test_uniform_heterogeneous_subscriptions():
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    topics = {"a": (t1, 4), "b": (t2, 4)}
    result = assignors.uniform({"m1": {"a"}, "m2": {"a", "b"}, "m3": {"b"}}, topics, {})
    assert set(result["m1"]) <= {t1} and set(result["m3"]) <= {t2}
    owned = [(t, p) for a in result.values() for t, ps in a.items() for p in ps]
    assert len(owned) == len(set(owned)) == 8
    assert sorted(sum(len(p) for p in a.values()) for a in result.values()) == [2, 3, 3]


def test_range_is_contiguous_and_copartitioned():
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    topics = {"a": (t1, 5), "b": (t2, 5)}
    result = assignors.range_({m: {"a", "b"} for m in ("m2", "m1")}, topics, {})
    assert result["m1"] == {t1: {0, 1, 2}, t2: {0, 1, 2}}
    assert result["m2"] == {t1: {3, 4}, t2: {3, 4}}


def test_range_assignor_in_a_group(broker):
    a, b = (
        Member(broker, member_id="a", assignor="range"),
        Member(broker, member_id="b", assignor="range"),
    )
    a.heartbeat()
    b.heartbeat()
    settle([a, b])
    assert a.partitions() == {0, 1, 2} and b.partitions() == {3, 4, 5}
    assert group_of(broker).assignor_name == "range"


# -- offsets -----------------------------------------------------------------------------------


def test_offset_commit_and_fetch_check_member_epoch(broker):
    a = Member(broker)
    a.heartbeat()
    coordinator = broker.groups
    commit = [OffsetCommit("t", 0, 42)]
    assert coordinator.offsets.commit_offsets("g", a.epoch, a.member_id, None, 9, commit) == {
        ("t", 0): E.NONE
    }
    assert coordinator.offsets.commit_offsets("g", a.epoch + 1, a.member_id, None, 9, commit) == {
        ("t", 0): E.STALE_MEMBER_EPOCH
    }  # any other epoch is stale (Kafka 4.1)
    assert coordinator.offsets.commit_offsets("g", a.epoch, a.member_id, None, 8, commit) == {
        ("t", 0): E.UNSUPPORTED_VERSION
    }
    Member(broker).heartbeat()
    a.heartbeat(owned={topic_id(broker): set(range(6))})  # still epoch 2... now group at 3
    assert coordinator.offsets.commit_offsets("g", 0, a.member_id, None, 9, commit) == {
        ("t", 0): E.STALE_MEMBER_EPOCH
    }
    assert coordinator.offsets.commit_offsets("g", a.epoch, "x", None, 9, commit) == {
        ("t", 0): E.UNKNOWN_MEMBER_ID
    }
    assert coordinator.offsets.commit_offsets("g", -1, "", None, 9, commit) == {
        ("t", 0): E.UNKNOWN_MEMBER_ID
    }  # not empty: simple commits refused
    group = group_of(broker)
    consumer = coordinator.consumer
    assert consumer.validate_offset_fetch(group, a.member_id, a.epoch) is None
    assert consumer.validate_offset_fetch(group, a.member_id, a.epoch - 1) == E.STALE_MEMBER_EPOCH
    assert consumer.validate_offset_fetch(group, None, -1) is None
    assert coordinator.offsets.fetch_offsets("g", [("t", [0])])[0][1][0][1].offset == 42
    assert "g" not in coordinator.groups  # not a classic group


def test_txn_offset_commit_checks_member_epoch(broker):
    """TxnOffsetCommit v3+ from a consumer-protocol member: its member id and epoch are checked
    against the consumer group (a wrong epoch is ILLEGAL_GENERATION up to v5, as Kafka answers
    transactional commits, STALE_MEMBER_EPOCH from v6); committed offsets land in the consumer
    group."""
    a = Member(broker, instance_id="i-1")
    a.heartbeat()
    coordinator = broker.groups
    commit = [OffsetCommit("t", 0, 42)]

    def txn(generation, member_id, instance_id=None, pid=7, version=5):
        return coordinator.offsets.txn_offset_commit(
            "g", pid, 0, generation, member_id, instance_id, commit, version
        )

    assert txn(a.epoch, a.member_id, "i-1") == {("t", 0): E.NONE}
    assert txn(a.epoch, a.member_id) == {("t", 0): E.NONE}  # the instance id is not checked
    assert txn(a.epoch - 1, a.member_id) == {("t", 0): E.ILLEGAL_GENERATION}
    assert txn(a.epoch + 1, a.member_id) == {("t", 0): E.ILLEGAL_GENERATION}
    # v6 (KIP-1319) says what OffsetCommit says
    assert txn(a.epoch - 1, a.member_id, version=6) == {("t", 0): E.STALE_MEMBER_EPOCH}
    assert txn(a.epoch, "someone", version=6) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert txn(a.epoch, "someone") == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert txn(-1, "", "i-1") == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert txn(-1, "", pid=8) == {("t", 0): E.NONE}  # names no member: taken
    assert coordinator.offsets.fetch_offsets("g", [("t", [0])])[0][1][0][1] is None  # pending
    coordinator.offsets.complete_transaction(7, True, coordinator.partition_for("g"))
    assert group_of(broker).offsets[("t", 0)].offset == 42
    assert "g" not in coordinator.groups  # no classic group beside the consumer group
    assert (
        coordinator.consumer.validate_offset_fetch(group_of(broker), a.member_id, a.epoch) is None
    )


def test_group_and_offsets_survive_restart(tmp_path):
    broker = make_broker(tmp_path)
    create_topic(broker, "t", 6, 1, {})
    a = Member(broker)
    a.heartbeat()
    broker.groups.offsets.commit_offsets(
        "g", a.epoch, a.member_id, None, 9, [OffsetCommit("t", 1, 7)]
    )
    broker.groups.stop()
    broker.logs.close()
    again = make_broker(tmp_path)
    try:
        group = group_of(again)
        assert group.state is C.EMPTY and group.group_epoch == 2 and not group.members
        assert group.offsets[("t", 1)].offset == 7
        a.broker = again
        assert a.heartbeat().error == E.UNKNOWN_MEMBER_ID  # must rejoin
        a.epoch, a.owned = 0, {}
        assert a.heartbeat().member_epoch == 3 and a.partitions() == set(range(6))
    finally:
        again.groups.stop()
        again.logs.close()


def test_classic_and_consumer_groups_coexist(broker):
    coordinator = broker.groups
    coordinator.offsets.commit_offsets("old", -1, "", None, 9, [OffsetCommit("t", 0, 3)])
    assert "old" in coordinator.groups
    Member(broker, group="old").heartbeat()  # an empty classic group is taken over
    assert "old" not in coordinator.groups
    assert group_of(broker, "old").offsets[("t", 0)].offset == 3
    assert coordinator.delete_groups(["old"]) == {"old": E.NON_EMPTY_GROUP}


# -- state machine -----------------------------------------------------------------------------


def test_state_machine_refuses_illegal_moves():
    group = ConsumerGroup("g", 0)
    with pytest.raises(IllegalStateTransition):
        group.transition_to(C.STABLE, 1)
    with pytest.raises(IllegalStateTransition):
        group.transition_to(C.RECONCILING, 1)
    group.transition_to(C.ASSIGNING, 1)
    group.transition_to(C.RECONCILING, 2)
    group.transition_to(C.STABLE, 3)
    group.transition_to(C.DEAD, 4)
    with pytest.raises(IllegalStateTransition):
        group.transition_to(C.EMPTY, 5)
