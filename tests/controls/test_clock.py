"""``BrokerClock``: a reactor proxy whose time jumps ahead, on Twisted's own test reactors, then
on real thread-mode brokers: a group member's session expires at once when the clock passes
its timeout, and brokers sharing the test process's reactor keep their own time."""

from __future__ import annotations

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest
from kafka.protocol.consumer.group import JoinGroupRequest
from twisted.internet import task
from twisted.internet.interfaces import IReactorTCP, IReactorThreads, IReactorTime
from twisted.internet.testing import MemoryReactorClock

from wireserver.controls.clock import BrokerClock
from wireserver.testing import EmbeddedBroker

# -- on Twisted's test reactors -----------------------------------------------------------


def test_seconds_run_ahead_by_the_advance():
    reactor = task.Clock()
    reactor.advance(100)
    clock = BrokerClock(reactor)
    assert clock.seconds() == 100
    clock.advance(30)
    assert clock.seconds() == 130
    reactor.advance(5)
    assert clock.seconds() == 135
    clock.move_back(30)
    assert clock.seconds() == 105


def test_due_timers_fire_at_once_and_the_others_come_closer():
    reactor = task.Clock()
    clock = BrokerClock(reactor)
    fired = []
    clock.callLater(10, fired.append, "session")
    clock.callLater(60, fired.append, "transaction")
    cancelled = clock.callLater(5, fired.append, "cancelled")
    cancelled.cancel()
    clock.advance(20)
    reactor.advance(0)
    assert fired == ["session"]
    reactor.advance(39)
    assert fired == ["session"]
    reactor.advance(1)  # 60 s after it was set, on the broker's clock
    assert fired == ["session", "transaction"]


def test_a_looping_call_runs_at_once_then_keeps_its_interval():
    reactor = task.Clock()
    clock = BrokerClock(reactor)
    runs = []
    loop = task.LoopingCall(lambda: runs.append(clock.seconds()))
    loop.clock = clock
    loop.start(10, now=False)
    clock.advance(25)
    reactor.advance(0)
    assert runs == [25]
    reactor.advance(5)  # the next interval boundary on the broker's clock: 30
    assert runs == [25, 30]
    loop.stop()


def test_clocks_on_one_reactor_keep_their_own_time():
    """Thread-mode brokers share a reactor: one's jump moves neither the other's time nor
    its timers."""
    reactor = task.Clock()
    first, second = BrokerClock(reactor), BrokerClock(reactor)
    fired = []
    first.callLater(10, fired.append, "first")
    second.callLater(10, fired.append, "second")
    first.advance(10)
    reactor.advance(0)
    assert fired == ["first"]
    assert (first.seconds(), second.seconds()) == (10, 0)
    reactor.advance(10)
    assert fired == ["first", "second"]


def test_a_negative_advance_is_refused():
    clock = BrokerClock(task.Clock())
    with pytest.raises(ValueError, match="negative"):
        clock.advance(-1)
    assert clock.seconds() == 0


def test_it_provides_the_reactor_interfaces_and_delegates_the_rest():
    reactor = MemoryReactorClock()
    clock = BrokerClock(reactor)
    assert IReactorTime.providedBy(clock)
    assert IReactorTCP.providedBy(clock)
    assert not IReactorThreads.providedBy(clock)  # only what the reactor provides
    clock.listenTCP(0, None)
    assert reactor.tcpServers[0][0] == 0


def test_only_pending_timers_are_remembered():
    reactor = task.Clock()
    clock = BrokerClock(reactor)
    for _ in range(1000):
        clock.callLater(1, lambda: None).cancel()
    reactor.advance(2)
    pending = clock.callLater(5, lambda: None)
    assert len(clock._timers) < 100
    clock.advance(5)
    reactor.advance(0)
    assert pending.called


# -- on real brokers ----------------------------------------------------------------------


def join(wire, group: str, session_timeout_ms: int) -> str:
    """Join ``group`` as its only member (its leader); the member id. The member's session
    timer runs from here: it never syncs nor heartbeats."""
    version = wire.version(JoinGroupRequest, 5)
    member_id = ""
    while True:
        joined = wire.request(
            JoinGroupRequest(
                version=version,
                group_id=group,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=session_timeout_ms,
                member_id=member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
            )
        )
        if joined.error_code != 79:  # MEMBER_ID_REQUIRED: join again with the id given
            assert joined.error_code == 0
            return joined.member_id
        member_id = joined.member_id


def describe(wire, group: str):
    response = wire.request(
        DescribeGroupsRequest(version=wire.version(DescribeGroupsRequest, 4), groups=[group])
    )
    (described,) = response.groups
    return described


def test_a_member_session_expires_when_the_clock_passes_its_timeout():
    with EmbeddedBroker() as kafka, kafka.wire() as wire:
        member_id = join(wire, "sessions", session_timeout_ms=45_000)
        described = describe(wire, "sessions")
        assert described.group_state == "CompletingRebalance"
        assert [member.member_id for member in described.members] == [member_id]
        kafka.controls.advance_clock(46_000)
        # The session timer fired on the jump: the group is empty, 45 s early in real time.
        described = describe(wire, "sessions")
        assert described.group_state == "Empty"
        assert described.members == []


def test_thread_mode_brokers_keep_their_own_clocks():
    with EmbeddedBroker() as first, EmbeddedBroker() as second:
        assert first._runner is second._runner  # one reactor thread for both
        before = second.controls.now_ms()
        first.controls.advance_clock(86_400_000)
        assert first.controls.now_ms() >= before + 86_400_000
        assert second.controls.now_ms() < before + 86_400_000
