"""wireserver's share assignor (``share_assignor.simple_assign``) against Kafka 4.4's own
``SimpleAssignor``: the same cases go to both, the targets must be equal for every case.

Kafka's side is compat_tests/apps/assignor/SimpleAssignorCases.java, one JVM reading all the
cases from stdin. Both sides fill their collections in the order a case lists things in (the
members, each subscription's topics, each previous assignment's topics and partitions): the
assignor's choices follow the iteration order of those collections, so equal inputs are equal
in that order too.

Cases are seeded-random: 1-8 topics of 1-12 partitions, 1-15 members, homogeneous and
heterogeneous subscriptions, no previous assignment, a random one (partitions a member no
longer subscribes to, topics nobody does), and chains where the previous assignment is the
last result and then members leave and join, subscriptions change, partitions are added.
"""

from __future__ import annotations

import base64
import random
import subprocess
import uuid

import pytest

from compat_tests.applications import app_command, share_assignor_classpath
from compat_tests.reference import require_tools
from wireserver.groups.share_assignor import kafka_member_order, simple_assign
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.messages_share import ShareGroupHeartbeatRequest
from wireserver.testing import EmbeddedBroker, KafkaWire

pytestmark = pytest.mark.integration

SEED = 932
CHAINS = 60
STEPS = 5  # cases per chain: 300 in all


def kafka_id(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


class Case:
    """One assignor input: everything in the order both sides fill their collections in."""

    def __init__(self, homogeneous, topics, members, subscriptions, previous):
        self.homogeneous: bool = homogeneous
        self.topics: dict[uuid.UUID, int] = topics
        self.members: list[str] = members
        self.subscriptions: dict[str, list[uuid.UUID]] = subscriptions
        self.previous: dict[str, dict[uuid.UUID, list[int]]] = previous

    def text(self) -> str:
        lines = [f"case {'H' if self.homogeneous else 'X'}"]
        lines += [f"topic {kafka_id(t)} {n}" for t, n in self.topics.items()]
        for member in self.members:
            subs = ",".join(kafka_id(t) for t in self.subscriptions[member]) or "-"
            prev = (
                ";".join(
                    f"{kafka_id(t)}={','.join(map(str, ps))}"
                    for t, ps in self.previous.get(member, {}).items()
                )
                or "-"
            )
            lines.append(f"member {member} {subs} {prev}")
        lines.append("end")
        return "\n".join(lines)

    def wireserver(self) -> list[str]:
        try:
            target = simple_assign(
                self.members, self.subscriptions, self.topics, self.previous, self.homogeneous
            )
        except LookupError as exc:
            return [f"error {exc}"]
        return [f"member {m} {render(target[m])}" for m in self.members]


def render(partitions: dict[uuid.UUID, set[int]]) -> str:
    if not partitions:
        return "-"
    topics = sorted((kafka_id(t), sorted(ps)) for t, ps in partitions.items())
    return ";".join(f"{t}={','.join(map(str, ps))}" for t, ps in topics)


def member_id(rng: random.Random) -> str:
    """Like Kafka's client-made member ids (a Uuid's base64)."""
    return kafka_id(uuid.UUID(int=rng.getrandbits(128)))


def subscriptions_for(rng, members, topic_ids, homogeneous):
    """Sometimes no topic that exists (members subscribed to names not created yet)."""
    if homogeneous:
        chosen = rng.sample(topic_ids, rng.randint(0 if rng.random() < 0.1 else 1, len(topic_ids)))
        return {m: rng.sample(chosen, len(chosen)) for m in members}
    if rng.random() < 0.05:
        return {m: [] for m in members}
    while True:
        subs = {m: rng.sample(topic_ids, rng.randint(0, len(topic_ids))) for m in members}
        if len(members) == 1 or len({frozenset(s) for s in subs.values()}) > 1:
            return subs


def random_previous(rng, members, topics):
    previous = {}
    for m in members:
        if rng.random() < 0.3:
            continue
        assigned = {}
        for t in rng.sample(list(topics), rng.randint(0, len(topics))):
            assigned[t] = rng.sample(range(topics[t]), rng.randint(0, topics[t]))
        previous[m] = assigned
    return previous


def ordered(target: dict[str, dict[uuid.UUID, set[int]]], rng) -> dict:
    """A result as the next case's previous assignment, topics and partitions shuffled."""
    return {
        m: {t: rng.sample(sorted(ps), len(ps)) for t, ps in rng.sample(list(a.items()), len(a))}
        for m, a in target.items()
    }


def chain(rng: random.Random) -> list[Case]:
    topics = {
        uuid.UUID(int=rng.getrandbits(128)): rng.randint(1, 12) for _ in range(rng.randint(1, 8))
    }
    members = [member_id(rng) for _ in range(rng.randint(1, 15))]
    homogeneous = rng.random() < 0.5
    subs = subscriptions_for(rng, members, list(topics), homogeneous)
    previous = random_previous(rng, members, topics) if rng.random() < 0.5 else {}
    cases = []
    for _ in range(STEPS):
        order = kafka_member_order(members) if rng.random() < 0.5 else list(members)
        case = Case(homogeneous, dict(topics), order, subs, previous)
        cases.append(case)
        target = simple_assign(order, subs, topics, previous, homogeneous)
        previous = ordered(target, rng)
        # what changes before the next assignment
        leaving = rng.sample(members, rng.randint(0, len(members) - 1))
        members = [m for m in members if m not in leaving]
        members += [member_id(rng) for _ in range(rng.randint(0, max(0, 15 - len(members))))]
        for t in topics:
            if rng.random() < 0.15:
                topics[t] = min(12, topics[t] + rng.randint(1, 3))
        if rng.random() < 0.3:
            homogeneous = not homogeneous
            subs = subscriptions_for(rng, members, list(topics), homogeneous)
        elif homogeneous:
            first = subs[next(iter(subs))] if subs else list(topics)[:1]
            subs = {m: subs.get(m, rng.sample(first, len(first))) for m in members}
        else:
            subs = {m: subs.get(m) or rng.sample(list(topics), 1) for m in members}
            if len(members) > 1 and len({frozenset(s) for s in subs.values()}) == 1:
                subs[members[-1]] = []
    return cases


def kafka_answers(cases: list[Case]) -> list[list[str]]:
    require_tools()
    proc = subprocess.run(
        app_command(
            share_assignor_classpath(),
            "SimpleAssignorCases",
            jvm_options=("-Xmx256m", "-XX:+UseSerialGC"),
        ),
        input="\n".join(case.text() for case in cases) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    answers, current = [], []
    for line in proc.stdout.splitlines():
        if line == "end":
            answers.append(current)
            current = []
        elif line.startswith(("member ", "error ")):
            current.append(line)
    assert len(answers) == len(cases), proc.stderr[-2000:]
    return answers


def test_wireserver_assigns_as_kafkas_simple_assignor():
    rng = random.Random(SEED)
    cases = [case for _ in range(CHAINS) for case in chain(rng)]
    assert {c.homogeneous for c in cases} == {True, False}
    assert any(c.previous for c in cases) and any(not c.previous for c in cases)
    differences = []
    for case, kafka in zip(cases, kafka_answers(cases), strict=True):
        ours = case.wireserver()
        if ours != kafka:
            differences.append(f"{case.text()}\nkafka: {kafka}\nwireserver: {ours}")
    assert not differences, f"{len(differences)} of {len(cases)} differ; first:\n{differences[0]}"


def heartbeat(wire, member: str, epoch: int, topics: list[str] | None = None):
    """One ShareGroupHeartbeat: (the member's epoch, its partitions when the response says)."""
    response = wire.request(
        ShareGroupHeartbeatRequest(
            version=1,
            group_id="sticky",
            member_id=member,
            member_epoch=epoch,
            rack_id=None,
            subscribed_topic_names=topics,
        )
    )
    assert response.error_code == ErrorCode.NONE, response
    if response.assignment is None:
        return response.member_epoch, None
    return response.member_epoch, {
        p for t in response.assignment.topic_partitions for p in t.partitions
    }


def test_members_keep_their_partitions_when_another_joins():
    """What a member sees over the wire: with 4 partitions shared out to two members, a
    third member that joins takes one partition from one of them, and neither of the first
    two is handed a partition it did not have."""
    with EmbeddedBroker() as broker:
        broker.create_topic("s", partitions=4)
        with KafkaWire(broker.bootstrap_servers) as wire:
            epochs, held = {}, {}
            for member in ("member-a", "member-b"):
                epochs[member], held[member] = heartbeat(wire, member, 0, ["s"])
            epochs["member-a"], held["member-a"] = heartbeat(wire, "member-a", epochs["member-a"])
            assert sorted(len(held[m]) for m in held) == [2, 2]
            assert held["member-a"] | held["member-b"] == {0, 1, 2, 3}

            epochs["member-c"], held["member-c"] = heartbeat(wire, "member-c", 0, ["s"])
            for member in ("member-a", "member-b"):
                epochs[member], now = heartbeat(wire, member, epochs[member])
                assert now is None or now <= held[member], (member, held[member], now)
                held[member] = held[member] if now is None else now
    assert len(held["member-c"]) == 1
    assert sorted(len(ps) for ps in held.values()) == [1, 1, 2]
    assert set().union(*held.values()) == {0, 1, 2, 3}
