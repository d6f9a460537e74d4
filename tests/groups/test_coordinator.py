"""The coordinator on a fake clock: join/sync/heartbeat/leave, session and rebalance timeouts,
static membership, offsets, persistence and reload, expiry."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from twisted.internet.testing import MemoryReactorClock

from wireserver.broker import Broker
from wireserver.config import BrokerConfig
from wireserver.groups import GroupState, JoinRequest
from wireserver.groups.coordinator import OffsetCommit
from wireserver.protocol.errors import ErrorCode
from wireserver.topics import create_topic

E = ErrorCode
S = GroupState
SESSION_MS = 10_000
REBALANCE_MS = 30_000


def subscription(*topics: str) -> bytes:
    return bytes(
        ConsumerProtocolSubscription(version=0, topics=list(topics), user_data=b"").encode(
            version=0
        )
    )


def make_broker(path, **overrides) -> Broker:
    values = {
        "log.dirs": str(path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000",
    }
    values.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
    broker = Broker(BrokerConfig.load(None, values), MemoryReactorClock())
    broker.start()
    return broker


def close(broker: Broker) -> None:
    broker.groups.stop()
    broker.logs.close()


@pytest.fixture
def broker(tmp_path):
    instance = make_broker(tmp_path)
    create_topic(instance, "t", 4, 1, {})
    yield instance
    close(instance)


def result_of(d):
    box = []

    def keep(result):
        box.append(result)
        return result

    d.addCallback(keep)
    return box[0] if box else None


def join_request(
    broker,
    group="g",
    member_id="",
    instance_id=None,
    version=5,
    protocols=None,
    session_ms=SESSION_MS,
    rebalance_ms=REBALANCE_MS,
    client_id="c",
):
    """Hand one JoinGroup to the coordinator; returns the Deferred of its response."""
    protocols = protocols or [("range", subscription("t"))]
    return broker.groups.join_group(
        JoinRequest(
            group,
            member_id,
            instance_id,
            version >= 4,
            client_id,
            "/127.0.0.1",
            rebalance_ms,
            session_ms,
            "consumer",
            protocols,
            api_version=version,
        )
    )


def join(broker, group="g", **kw):
    """A JoinGroup in a reactor turn of its own: the request, then the timers already due
    (a 0 ms initial rebalance delay), as the reactor runs them before reading more requests."""
    d = join_request(broker, group, **kw)
    broker.reactor.advance(0)
    return d


def join_new(broker, group="g", **kw):
    """Join as a new dynamic member (v4+: fetch the member id first); returns the Deferred."""
    first = result_of(join(broker, group, **kw))
    assert first.error == E.MEMBER_ID_REQUIRED
    return join(broker, group, member_id=first.member_id, **kw)


def sync(broker, result, assignments=None, group="g", instance_id=None):
    return broker.groups.sync_group(
        group,
        result.generation_id,
        result.member_id,
        instance_id,
        "consumer",
        result.protocol_name,
        assignments or {},
    )


def advance(broker, ms):
    """Move the fake clock in 125 ms steps (exact in binary), so timers set by timers fire on time."""
    while ms > 0:
        step = min(ms, 125)
        broker.reactor.advance(step / 1000.0)
        ms -= step


def stable_pair(broker):
    """Two members, generation 1, Stable; returns their join results."""
    a = join_new(broker)
    ra = result_of(a)
    assert ra.error == E.NONE and ra.generation_id == 1  # alone, completes at once
    sync_a = result_of(sync(broker, ra, {ra.member_id: b"A"}))
    assert sync_a.assignment == b"A"
    b = join_new(broker)
    assert result_of(b) is None  # waits for the leader to rejoin
    assert broker.groups.heartbeat("g", 1, ra.member_id, None) == E.REBALANCE_IN_PROGRESS
    ra2 = result_of(join(broker, member_id=ra.member_id))
    rb = result_of(b)
    assert ra2.generation_id == rb.generation_id == 2
    assert ra2.leader_id == ra.member_id and len(ra2.members) == 2 and rb.members == []
    db = sync(broker, rb)
    assert result_of(db) is None  # waits for the leader's assignment
    da = sync(broker, ra2, {ra.member_id: b"A2", rb.member_id: b"B2"})
    assert result_of(da).assignment == b"A2" and result_of(db).assignment == b"B2"
    assert broker.groups.groups["g"].state is S.STABLE
    return ra2, rb


def test_member_id_required_then_join_sync_heartbeat(broker):
    ra, rb = stable_pair(broker)
    assert broker.groups.heartbeat("g", 2, ra.member_id, None) == E.NONE
    assert broker.groups.heartbeat("g", 1, ra.member_id, None) == E.ILLEGAL_GENERATION
    assert broker.groups.heartbeat("g", 2, "nobody", None) == E.UNKNOWN_MEMBER_ID
    assert broker.groups.heartbeat("other", 2, ra.member_id, None) == E.UNKNOWN_MEMBER_ID


def test_old_versions_join_without_member_id_round_trip(broker):
    r = result_of(join(broker, version=0))
    assert r.error == E.NONE and r.member_id.startswith("c-") and r.generation_id == 1


def test_session_expiry_removes_the_silent_member(broker):
    ra, rb = stable_pair(broker)
    advance(broker, SESSION_MS // 2)
    assert broker.groups.heartbeat("g", 2, ra.member_id, None) == E.NONE
    advance(broker, SESSION_MS // 2 + 1)
    # b never heartbeated: gone, and a is told to rejoin
    group = broker.groups.groups["g"]
    assert rb.member_id not in group.members and group.state is S.PREPARING_REBALANCE
    assert broker.groups.heartbeat("g", 2, ra.member_id, None) == E.REBALANCE_IN_PROGRESS
    r = result_of(join(broker, member_id=ra.member_id))
    assert r.generation_id == 3 and [m[0] for m in r.members] == [ra.member_id]


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout(broker):
    ra, rb = stable_pair(broker)
    pending = join(broker, member_id=ra.member_id, protocols=[("range", subscription("t", "u"))])
    assert result_of(pending) is None
    # b keeps heartbeating but never rejoins
    for _ in range(REBALANCE_MS // 5000):
        advance(broker, 5000)
        assert broker.groups.heartbeat("g", 2, rb.member_id, None) in (
            E.REBALANCE_IN_PROGRESS,
            E.UNKNOWN_MEMBER_ID,
        )
    r = result_of(pending)
    assert r.error == E.NONE and r.generation_id == 3 and len(r.members) == 1
    assert broker.groups.heartbeat("g", 3, rb.member_id, None) == E.UNKNOWN_MEMBER_ID


def test_leave_group_triggers_a_rebalance(broker):
    ra, rb = stable_pair(broker)
    top, errors = broker.groups.leave_group("g", [(rb.member_id, None), ("ghost", None)])
    assert top == E.NONE and errors == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert broker.groups.groups["g"].state is S.PREPARING_REBALANCE
    r = result_of(join(broker, member_id=ra.member_id))
    assert r.generation_id == 3 and len(r.members) == 1
    assert result_of(sync(broker, r, {ra.member_id: b"all"})).assignment == b"all"
    top, errors = broker.groups.leave_group("g", [(ra.member_id, None)])
    assert errors == [E.NONE] and broker.groups.groups["g"].state is S.EMPTY


def test_pending_sync_timeout_removes_members_that_never_sync(broker):
    a = join_new(broker, rebalance_ms=5000)
    ra = result_of(a)
    b = join_new(broker, rebalance_ms=5000)
    ra2 = result_of(join(broker, member_id=ra.member_id, rebalance_ms=5000))
    rb = result_of(b)
    assert ra2.generation_id == 2
    da = sync(broker, ra2, {})  # leader syncs, b never does
    assert result_of(da).error == E.NONE
    advance(broker, 5000)
    group = broker.groups.groups["g"]
    assert rb.member_id not in group.members and group.state is S.PREPARING_REBALANCE
    assert list(group.members) == [ra.member_id]


def test_sync_errors(broker):
    ra, rb = stable_pair(broker)
    bad = broker.groups.sync_group("g", 2, ra.member_id, None, "consumer", "roundrobin", {})
    assert result_of(bad).error == E.INCONSISTENT_GROUP_PROTOCOL
    bad = broker.groups.sync_group("g", 7, ra.member_id, None, None, None, {})
    assert result_of(bad).error == E.ILLEGAL_GENERATION
    bad = broker.groups.sync_group("g", 2, "ghost", None, None, None, {})
    assert result_of(bad).error == E.UNKNOWN_MEMBER_ID


def test_join_errors(broker, tmp_path):
    assert result_of(join(broker, session_ms=10)).error == E.INVALID_SESSION_TIMEOUT
    assert result_of(join(broker, group="")).error == E.INVALID_GROUP_ID
    assert result_of(join(broker, member_id="ghost")).error == E.UNKNOWN_MEMBER_ID
    ra = result_of(join(broker, version=3))
    other = result_of(join(broker, version=3, protocols=[("other", b"")]))
    assert other.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert ra.error == E.NONE


def test_protocol_selection_by_votes(broker):
    first = join(broker, version=3, protocols=[("range", b""), ("roundrobin", b"")])
    ra = result_of(first)
    assert ra.protocol_name == "range"
    b = join(broker, version=3, protocols=[("roundrobin", b""), ("range", b"")])
    c = join(broker, version=3, protocols=[("roundrobin", b""), ("sticky", b"")])
    # c supports no "range": only roundrobin is common to all
    r = result_of(
        join(
            broker,
            version=3,
            member_id=ra.member_id,
            protocols=[("range", b""), ("roundrobin", b"")],
        )
    )
    assert r.protocol_name == "roundrobin"
    assert result_of(b).protocol_name == result_of(c).protocol_name == "roundrobin"


def test_group_max_size(tmp_path):
    broker = make_broker(tmp_path, **{"group.max.size": 1})
    try:
        assert result_of(join(broker, version=3)).error == E.NONE
        assert result_of(join(broker, version=3)).error == E.GROUP_MAX_SIZE_REACHED
    finally:
        close(broker)


def test_initial_rebalance_delay_waits_for_more_members(tmp_path):
    broker = make_broker(tmp_path, **{"group.initial.rebalance.delay.ms": 3000})
    try:
        a = join(broker, version=3)
        advance(broker, 2000)
        b = join(broker, version=3)
        advance(broker, 2000)
        assert result_of(a) is None  # b's arrival extended the delay by another 3 s
        advance(broker, 1000)
        assert result_of(a) is None
        advance(broker, 1000)
        ra, rb = result_of(a), result_of(b)
        assert ra.generation_id == rb.generation_id == 1 and len(ra.members) == 2
    finally:
        close(broker)


def test_joins_received_together_form_one_generation_without_an_initial_delay(broker):
    """group.initial.rebalance.delay.ms=0 (the fixture): the initial rebalance still ends only
    from its delay timer, which runs after the requests the reactor read in the same turn, as
    Kafka's timer event runs after the JoinGroups already queued. Two static members whose first
    JoinGroups arrive together share generation 1."""
    a = join_request(broker, instance_id="i-a")
    b = join_request(broker, instance_id="i-b")
    assert result_of(a) is None and result_of(b) is None
    broker.reactor.advance(0)
    ra, rb = result_of(a), result_of(b)
    assert ra.error == rb.error == E.NONE and ra.generation_id == rb.generation_id == 1
    assert ra.leader_id == ra.member_id and len(ra.members) == 2 and rb.members == []
    # a member whose JoinGroup comes in a later turn starts the next rebalance
    c = join(broker, instance_id="i-c")
    assert result_of(c) is None and broker.groups.groups["g"].state is S.PREPARING_REBALANCE


def test_initial_delay_is_extended_for_a_group_that_was_empty_before(tmp_path):
    """Every rebalance out of Empty is an initial one (Kafka checks the previous state, not the
    generation): a group that emptied at generation 2 waits for more members as a new one."""
    broker = make_broker(tmp_path, **{"group.initial.rebalance.delay.ms": 3000})
    try:
        first = join(broker, version=3)
        advance(broker, 3000)
        r = result_of(first)
        assert r.generation_id == 1
        assert broker.groups.leave_group("g", [(r.member_id, None)]) == (E.NONE, [E.NONE])
        group = broker.groups.groups["g"]
        assert group.state is S.EMPTY and group.generation_id == 2
        a = join(broker, version=3)
        advance(broker, 2000)
        b = join(broker, version=3)
        advance(broker, 2000)
        assert result_of(a) is None  # b's arrival extended the delay by another 3 s
        c = join(broker, version=3)
        advance(broker, 4000)
        assert result_of(a) is None  # and c's by 3 s more
        advance(broker, 1000)
        ra, rb, rc = result_of(a), result_of(b), result_of(c)
        assert ra.generation_id == rb.generation_id == rc.generation_id == 3
        assert len(ra.members) == 3
    finally:
        close(broker)


def test_static_member_rejoins_without_rebalance(broker):
    a = result_of(join(broker, instance_id="i-a"))
    assert a.error == E.NONE and a.member_id.startswith("i-a-")
    result_of(sync(broker, a, {a.member_id: b"A"}, instance_id="i-a"))
    b = join(broker, instance_id="i-b")
    ra = result_of(join(broker, member_id=a.member_id, instance_id="i-a"))
    rb = result_of(b)
    result_of(sync(broker, rb, instance_id="i-b"))
    result_of(sync(broker, ra, {ra.member_id: b"A2", rb.member_id: b"B2"}, instance_id="i-a"))
    group = broker.groups.groups["g"]
    assert group.state is S.STABLE and group.generation_id == 2
    # i-b restarts with no member id: replaced, same generation, no rebalance
    rb2 = result_of(join(broker, instance_id="i-b"))
    assert rb2.error == E.NONE and rb2.member_id != rb.member_id
    assert rb2.generation_id == 2 and group.state is S.STABLE
    assert result_of(sync(broker, rb2, instance_id="i-b")).assignment == b"B2"
    # the old incarnation is fenced
    assert broker.groups.heartbeat("g", 2, rb.member_id, "i-b") == E.FENCED_INSTANCE_ID
    assert (
        result_of(join(broker, member_id=rb.member_id, instance_id="i-b")).error
        == E.FENCED_INSTANCE_ID
    )
    assert broker.groups.heartbeat("g", 2, rb2.member_id, "i-b") == E.NONE
    # the leader restarting (v9): told it leads, but to skip the assignment
    ra2 = result_of(join(broker, instance_id="i-a", version=9))
    assert ra2.skip_assignment and ra2.leader_id == ra2.member_id and group.generation_id == 2
    # before v9 it is told the old leader id, so it does not assign
    ra3 = result_of(join(broker, instance_id="i-a", version=5))
    assert ra3.leader_id == ra2.member_id and ra3.members == []
    # removal by instance id alone (admin)
    assert broker.groups.leave_group("g", [("", "i-b")]) == (E.NONE, [E.NONE])
    assert group.state is S.PREPARING_REBALANCE


def test_offset_commit_rules(broker):
    commit = broker.groups.offsets.commit_offsets
    c = [OffsetCommit("t", 0, 5, 1, "m")]
    # simple commit to a new group
    assert commit("s", -1, "", None, 9, c) == {("t", 0): E.NONE}
    assert commit("nope", 3, "m", None, 9, c) == {("t", 0): E.GROUP_ID_NOT_FOUND}
    assert commit("nope", 3, "m", None, 8, c) == {("t", 0): E.ILLEGAL_GENERATION}
    assert commit(
        "s",
        -1,
        "",
        None,
        9,
        [OffsetCommit("t", 9, 1), OffsetCommit("x", 0, 1), OffsetCommit("t", 1, 1, -1, "x" * 5000)],
    ) == {
        ("t", 9): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("x", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("t", 1): E.OFFSET_METADATA_TOO_LARGE,
    }
    ra, rb = stable_pair(broker)
    assert commit("g", 2, ra.member_id, None, 9, c) == {("t", 0): E.NONE}
    assert commit("g", 1, ra.member_id, None, 9, c) == {("t", 0): E.ILLEGAL_GENERATION}
    assert commit("g", 2, "ghost", None, 9, c) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert commit("g", -1, "", None, 9, c) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    join(broker, member_id=ra.member_id)  # PreparingRebalance: commits still allowed
    assert commit("g", 2, rb.member_id, None, 9, c) == {("t", 0): E.NONE}
    join(broker, member_id=rb.member_id)  # now CompletingRebalance
    assert commit("g", 3, rb.member_id, None, 9, c) == {("t", 0): E.REBALANCE_IN_PROGRESS}
    [(topic, parts)] = broker.groups.offsets.fetch_offsets("g", None)
    assert topic == "t" and parts[0][1].offset == 5 and parts[0][1].metadata == "m"
    assert broker.groups.offsets.fetch_offsets("g", [("t", [0, 1])])[0][1][1] == (1, None)


def test_offset_delete_and_delete_groups(broker):
    ra, rb = stable_pair(broker)
    create_topic(broker, "u", 1, 1, {})
    c = [OffsetCommit("t", 0, 5), OffsetCommit("u", 0, 7)]
    assert set(broker.groups.offsets.commit_offsets("g", 2, ra.member_id, None, 9, c).values()) == {
        E.NONE
    }
    top, res = broker.groups.offsets.delete_offsets("g", [("t", 0), ("u", 0)])
    assert top == E.NONE and res == {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): E.NONE}
    assert broker.groups.offsets.delete_offsets("zz", [("t", 0)])[0] == E.GROUP_ID_NOT_FOUND
    assert broker.groups.delete_groups(["g", "zz"]) == {
        "g": E.NON_EMPTY_GROUP,
        "zz": E.GROUP_ID_NOT_FOUND,
    }
    broker.groups.leave_group("g", [(ra.member_id, None), (rb.member_id, None)])
    assert broker.groups.groups["g"].state is S.EMPTY
    assert broker.groups.delete_groups(["g"]) == {"g": E.NONE}
    assert "g" not in broker.groups.groups


def test_state_survives_a_restart(tmp_path):
    broker = make_broker(tmp_path)
    create_topic(broker, "t", 4, 1, {})
    ra, rb = stable_pair(broker)
    broker.groups.offsets.commit_offsets(
        "g", 2, ra.member_id, None, 9, [OffsetCommit("t", 1, 42, 3, "meta")]
    )
    broker.groups.offsets.commit_offsets("simple", -1, "", None, 9, [OffsetCommit("t", 2, 9)])
    broker.groups.offsets.commit_offsets("gone", -1, "", None, 9, [OffsetCommit("t", 2, 9)])
    assert broker.groups.delete_groups(["gone"]) == {"gone": E.NONE}
    close(broker)

    broker = make_broker(tmp_path)
    try:
        groups = broker.groups
        # Loaded in the background, as Kafka does: until the reactor runs, nothing is known
        # and the groups' coordinator says so.
        assert groups.groups == {}
        assert groups.ensure_ready("g") == E.COORDINATOR_LOAD_IN_PROGRESS
        broker.reactor.advance(0)
        assert groups.ensure_ready("g") is None
        assert set(groups.groups) == {"g", "simple"}
        g = groups.groups["g"]
        assert g.state is S.STABLE and g.generation_id == 2 and g.protocol_name == "range"
        assert g.leader_id == ra.member_id and set(g.members) == {ra.member_id, rb.member_id}
        assert g.members[rb.member_id].assignment == b"B2"
        assert g.offsets[("t", 1)].offset == 42 and g.offsets[("t", 1)].leader_epoch == 3
        # members carry on where they were: heartbeats and commits with the old generation
        assert groups.heartbeat("g", 2, ra.member_id, None) == E.NONE
        assert groups.offsets.commit_offsets(
            "g", 2, rb.member_id, None, 9, [OffsetCommit("t", 0, 1)]
        ) == {("t", 0): E.NONE}
        assert groups.groups["simple"].offsets[("t", 2)].offset == 9
        # members that never come back are expired by their session timeout
        advance(broker, SESSION_MS + 1)
        assert g.state is S.EMPTY or g.state is S.PREPARING_REBALANCE
    finally:
        close(broker)


def test_offsets_of_empty_groups_expire(tmp_path):
    broker = make_broker(
        tmp_path, **{"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000}
    )
    try:
        create_topic(broker, "t", 1, 1, {})
        groups = broker.groups
        groups.offsets.commit_offsets("s", -1, "", None, 9, [OffsetCommit("t", 0, 1)])
        r = result_of(join(broker, version=3, session_ms=120_000))
        result_of(sync(broker, r, {}))
        groups.offsets.commit_offsets("g", 1, r.member_id, None, 9, [OffsetCommit("t", 0, 1)])
        advance(broker, 61_000)
        assert "s" not in groups.groups  # simple group: offset too old, group gone
        assert groups.groups["g"].offsets  # consumer group with a member: kept
        groups.leave_group("g", [(r.member_id, None)])
        advance(broker, 30_000)
        assert groups.groups["g"].offsets  # empty for only 30 s
        advance(broker, 31_000)
        assert "g" not in groups.groups
    finally:
        close(broker)
    broker = make_broker(tmp_path)
    try:
        assert broker.groups.groups == {}  # the tombstones were persisted
    finally:
        close(broker)


def test_offsets_topic_needs_enough_brokers(tmp_path):
    broker = make_broker(tmp_path, **{"offsets.topic.replication.factor": 3})
    try:
        assert broker.groups.ensure_ready() == E.COORDINATOR_NOT_AVAILABLE
        assert "__consumer_offsets" not in broker.logs.topics
    finally:
        close(broker)
