"""Share groups (KIP-932) against both brokers with Kafka's own Java ``KafkaShareConsumer``
(compat_tests/share_members.py runs compat_tests/apps/share/ShareClient.java, built on the
reference jars) and Kafka's share tools: ``share-`` scenarios of the ``java`` client.

- members sharing one partition together get every record exactly once when they accept;
- a released record is delivered again, to another member, with delivery count 2;
- records a member holds and does not acknowledge (its JVM stopped, connected) go to another
  member once the acquisition lock (``share.record.lock.duration.ms``, set to 2 s for the
  group with ``kafka-configs --entity-type groups``) has expired;
- a member killed -9 while holding records: its connection closes and they go to another
  member at once (Kafka 4.4 ends the share session of a closed connection), not after the
  lock;
- rejected records, and one released up to ``share.delivery.count.limit``, are archived:
  not delivered again, and ``kafka-share-groups --describe`` shows no lag;
- ``kafka-console-share-consumer`` reads the records, then ``kafka-share-groups --describe``
  (offsets and lag, ``--members``, ``--state``) shows the same group on both brokers, the
  ids replaced.

A 4.4 KRaft node formatted with its latest metadata version has share groups on
(``share.version`` 2 is the latest production level, so ``kafka-storage format`` enables it):
no ``group.share.enable`` or ``unstable.api.versions.enable`` is needed. Both brokers run with
``group.share.min.record.lock.duration.ms=1000`` (targets.py): Kafka's floor of 15 s for the
group's lock duration would make the lock expiry scenario wait 15 s.

What a member got depends on timing (which member fetched first, how many records one fetch
brought): the observations are what holds whatever the timing, records as sorted values.
"""

from __future__ import annotations

import functools
import re
import time

from compat_tests import admin_clients as admin
from compat_tests.clients import Client
from compat_tests.scenarios import scenario
from compat_tests.scenarios_tools import Session
from compat_tests.share_members import ShareMember, produce_one_batch_each, set_group_configs

JAVA = ("java",)
#: a killed member's records come back after this (the group's share.record.lock.duration.ms)
LOCK_DURATION_MS = 2000
#: member ids (a Uuid, base64) and the console consumer's client id suffix
_MEMBER_ID = re.compile(r"(?<![\w-])[A-Za-z0-9_-]{22}(?![\w-])")


@functools.cache
def _classpath() -> str:
    from compat_tests.applications import share_client_classpath

    return share_client_classpath()


class ShareSession(Session):
    """A tool session that also starts ShareClient members of its group on its topic."""

    def __init__(self, bootstrap: str, **group_configs: str) -> None:
        """A new topic of one partition, and a share group (by name: it is made by its first
        member) that starts at the earliest record, with ``group_configs`` set (confluent's
        IncrementalAlterConfigs: a JVM less than kafka-configs)."""
        super().__init__(bootstrap)
        self.topic_name = self.topic("share")
        self.group = self.name("share-group", "<group>")
        configs = {"share.auto.offset.reset": "earliest", **group_configs}
        result = admin.alter_configs("confluent-kafka", bootstrap, "group", self.group, configs)
        assert result == "ok", result

    def member(self, *mode: str, first_record_wait_ms: int = 15000) -> ShareMember:
        return ShareMember(
            _classpath(),
            self.bootstrap,
            self.topic_name,
            self.group,
            *mode,
            first_record_wait_ms=first_record_wait_ms,
        )

    def produce(self, values: list[str]) -> None:
        produce_one_batch_each(self.bootstrap, self.topic_name, values)

    def normalize(self, text: str) -> str:
        return _MEMBER_ID.sub("<id>", super().normalize(text))


def _values(records: list[tuple[int, int, str]]) -> list[str]:
    return sorted(value for _, _, value in records)


@scenario("share-members-exactly-once", clients=JAVA, check=lambda o: _check_exactly_once(o))
def members_exactly_once(bootstrap: str, client: Client) -> dict:
    """two KafkaShareConsumers of one group on a one-partition topic, both accepting: together
    they get every record once, each on its first delivery"""
    s = ShareSession(bootstrap)
    members = [s.member(), s.member()]
    for member in members:
        member.wait_for(lambda m=member: "subscribed" in m.lines)
    values = [f"v{i:03d}" for i in range(60)]
    s.produce(values)
    got = [record for member in members for record in member.finish()]
    return {
        "sent": len(values),
        "values_equal_sent": _values(got) == sorted(values),
        "duplicates": len(got) - len({value for _, _, value in got}),
        "delivery_counts": sorted({count for _, count, _ in got}),
    }


def _check_exactly_once(obs: dict) -> None:
    assert obs["values_equal_sent"] and obs["duplicates"] == 0, obs
    assert obs["delivery_counts"] == [1], obs


@scenario("share-release-redelivered", clients=JAVA, check=lambda o: _check_release(o))
def release_redelivered(bootstrap: str, client: Client) -> dict:
    """a member releases the first record and leaves; another member gets it again, delivered
    the second time; the records the first accepted go to nobody else"""
    s = ShareSession(bootstrap)
    s.produce(["release-me", "a", "b"])
    first = s.member("once").finish()
    second = s.member().finish()
    offset, count, value = second[0]
    return {
        "first_member_first_record": list(first[0]),
        "second_member_first_record": [offset, value],
        # the first member's client may have fetched it once more before it left, and given
        # it back: at least the second delivery
        "second_delivery_or_later": count >= 2,
        "accepted": sorted(
            [v for _, _, v in first if v != "release-me"]
            + [v for _, _, v in second if v != "release-me"]
        ),
    }


def _check_release(obs: dict) -> None:
    assert obs["first_member_first_record"] == [0, 1, "release-me"], obs
    assert obs["second_member_first_record"] == [0, "release-me"], obs
    assert obs["second_delivery_or_later"] and obs["accepted"] == ["a", "b"], obs


@scenario("share-lock-expiry", clients=JAVA, check=lambda o: _check_lock_expiry(o))
def lock_expiry(bootstrap: str, client: Client) -> dict:
    """a member holds five records and never acknowledges them (its JVM stopped, its
    connections open); another member gets the five once their acquisition lock
    (share.record.lock.duration.ms, 2 s for the group) has expired, each on its second
    delivery"""
    s = ShareSession(bootstrap)
    # as a user sets it: kafka-configs --alter --entity-type groups
    set_group_configs(bootstrap, s.group, share_record_lock_duration_ms=LOCK_DURATION_MS)
    values = [f"h{i}" for i in range(5)]
    s.produce(values)
    holder = s.member("hold")
    try:
        holder.wait_for(lambda: len(holder.records()) == len(values))
        held_at = time.monotonic()
        holder.pause()
        other = s.member()
        other.wait_for(lambda: len(other.records()) == len(values))
        waited = time.monotonic() - held_at
        holder_alive = holder.process.poll() is None
    finally:
        holder.kill()
    got = other.finish()
    return {
        "holder": _values(holder.records()),
        "other": _values(got),
        "other_delivery_counts": sorted({count for _, count, _ in got}),
        # the lock started before the holder printed the records: a lower bound, loosely
        "while_the_holder_holds_them": holder_alive,
        "not_before_the_lock_expired": waited >= LOCK_DURATION_MS / 1000 / 2,
    }


def _check_lock_expiry(obs: dict) -> None:
    assert obs["holder"] == obs["other"] == [f"h{i}" for i in range(5)], obs
    assert obs["other_delivery_counts"] == [2] and obs["while_the_holder_holds_them"], obs
    assert obs["not_before_the_lock_expired"], obs


@scenario("share-killed-member", clients=JAVA, check=lambda o: _check_killed(o))
def killed_member(bootstrap: str, client: Client) -> dict:
    """a member holding five records is killed -9 (it stays in the group until its session
    times out): the broker sees its connection close and gives the records back at once (as
    Kafka 4.4's share session cache does), so another member gets them, each on its second
    delivery, long before their acquisition lock (30 s, the default) would expire"""
    s = ShareSession(bootstrap)
    values = [f"k{i}" for i in range(5)]
    s.produce(values)
    holder = s.member("hold")
    holder.wait_for(lambda: len(holder.records()) == len(values))
    other = s.member()
    other.wait_for(lambda: "subscribed" in other.lines)
    killed_at = time.monotonic()
    holder.kill()
    other.wait_for(lambda: len(other.records()) == len(values))
    waited = time.monotonic() - killed_at
    got = other.finish()
    return {
        "holder": _values(holder.records()),
        "other": _values(got),
        "other_delivery_counts": sorted({count for _, count, _ in got}),
        "well_before_the_lock_expired": waited < 10,
    }


def _check_killed(obs: dict) -> None:
    assert obs["holder"] == obs["other"] == [f"k{i}" for i in range(5)], obs
    assert obs["other_delivery_counts"] == [2] and obs["well_before_the_lock_expired"], obs


@scenario("share-reject-and-delivery-limit", clients=JAVA, check=lambda o: _check_archived(o))
def reject_and_delivery_limit(bootstrap: str, client: Client) -> dict:
    """with share.delivery.count.limit=2 a member rejects one record and releases another
    each time it gets it (and reads on for 2 s after the last): the rejected one is not
    delivered again, the released one twice, then archived; kafka-share-groups --describe
    shows nothing left (lag 0) at the start offset last persisted"""
    s = ShareSession(bootstrap, **{"share.delivery.count.limit": "2"})
    s.produce(["a", "reject-1", "release-1", "b"])
    deliveries: dict[str, list[int]] = {}
    for _, count, value in s.member().finish():
        deliveries.setdefault(value, []).append(count)
    return {
        "deliveries": deliveries,
        "describe": s.run("kafka-share-groups", ["--describe", "--group", s.group]),
    }


def _check_archived(obs: dict) -> None:
    assert obs["deliveries"] == {"a": [1], "reject-1": [1], "release-1": [1, 2], "b": [1]}, obs
    assert obs["describe"]["exit"] == 0, obs


@scenario("share-console-and-describe", clients=JAVA, check=lambda o: _check_describe(o))
def console_and_describe(bootstrap: str, client: Client) -> dict:
    """kafka-console-share-consumer reads the four records there are; two more are written and
    a member holds them: kafka-share-groups --describe (offsets and lag), --members and
    --state, member ids and hosts replaced"""
    s = ShareSession(bootstrap)
    s.produce([f"c{i}" for i in range(4)])
    console = s.run(
        "kafka-console-share-consumer",
        [
            "--topic",
            s.topic_name,
            "--group",
            s.group,
            "--max-messages",
            "4",
            "--timeout-ms",
            "20000",
        ],
        ordered=False,
    )
    after_console = s.run("kafka-share-groups", ["--describe", "--group", s.group, "--state"])
    s.produce(["c4", "c5"])
    holder = s.member("hold")
    try:
        holder.wait_for(lambda: len(holder.records()) == 2)
        describe = {
            flag: s.run("kafka-share-groups", ["--describe", "--group", s.group, *flag.split()])
            for flag in ("--offsets", "--members", "--state")
        }
    finally:
        holder.kill()
    return {"console": console, "state_after_console": after_console, **describe}


def _check_describe(obs: dict) -> None:
    assert obs["console"]["out"] == ["c0", "c1", "c2", "c3"], obs
    for step in ("state_after_console", "--offsets", "--members", "--state"):
        assert obs[step]["exit"] == 0 and not obs[step]["stack_trace"], (step, obs)
    assert obs["state_after_console"]["out"][-1].split()[-2:] == ["Empty", "0"], obs
    assert obs["--state"]["out"][-1].split()[-2:] == ["Stable", "1"], obs
    assert obs["--members"]["out"][-1].endswith(" 1 <share>:0"), obs


# ------------------------------------------------------------------ confluent-kafka (librdkafka)


def _confluent_member(
    bootstrap: str, group: str, topic: str, acknowledge=None, first_wait: float = 20.0
) -> list[tuple[str, int]]:
    """A confluent-kafka ShareConsumer (librdkafka's KIP-932 consumer) reading until 2 s pass
    without a record (at most ``first_wait`` for the first): (value, delivery count) of each
    record. ``acknowledge(value)`` gives each record's AcknowledgeType (explicit mode; the
    member leaves after the first poll that returned records, so that what it released goes
    to another); without it the records are accepted implicitly."""
    from confluent_kafka import ShareConsumer

    config = {"bootstrap.servers": bootstrap, "group.id": group}
    if acknowledge is not None:
        config["share.acknowledgement.mode"] = "explicit"
    consumer = ShareConsumer(config)
    got: list[tuple[str, int]] = []
    try:
        consumer.subscribe([topic])
        last = time.monotonic()
        while time.monotonic() - last < (2.0 if got else first_wait):
            for message in consumer.poll(0.2):
                if message.error() is not None:
                    raise RuntimeError(str(message.error()))
                last = time.monotonic()
                value = message.value().decode()
                got.append((value, message.delivery_count()))
                if acknowledge is not None:
                    consumer.acknowledge(message, acknowledge(value))
            if acknowledge is not None and got:
                consumer.commit_sync()
                break
    finally:
        consumer.close()
    return got


@scenario(
    "share-confluent-kafka", clients=("confluent-kafka",), check=lambda o: _check_confluent(o)
)
def confluent_share_consumer(bootstrap: str, client: Client) -> dict:
    """confluent-kafka's ShareConsumer: one member (explicit mode) releases a record, rejects
    one and accepts the rest; another (implicit mode) gets the released one on its second
    delivery and nothing else; then two members at once share 40 new records, each once"""
    from concurrent.futures import ThreadPoolExecutor

    from confluent_kafka import AcknowledgeType

    s = ShareSession(bootstrap)
    s.produce(["release-me", "reject-me", "a", "b"])

    def decide(value: str):
        return {"release-me": AcknowledgeType.RELEASE, "reject-me": AcknowledgeType.REJECT}.get(
            value, AcknowledgeType.ACCEPT
        )

    first = _confluent_member(bootstrap, s.group, s.topic_name, decide)
    second = _confluent_member(bootstrap, s.group, s.topic_name)
    values = [f"q{i:02d}" for i in range(40)]
    with ThreadPoolExecutor(2) as pool:
        members = [
            pool.submit(_confluent_member, bootstrap, s.group, s.topic_name) for _ in range(2)
        ]
        time.sleep(2)  # both subscribed (the first poll joins) before the records come
        s.produce(values)
        shared = [record for member in members for record in member.result()]
    return {
        "first": sorted(first),
        "second": sorted(second),
        "shared_values_equal_sent": sorted(v for v, _ in shared) == values,
        "shared_delivery_counts": sorted({count for _, count in shared}),
    }


def _check_confluent(obs: dict) -> None:
    assert obs["first"] == [["a", 1], ["b", 1], ["reject-me", 1], ["release-me", 1]], obs
    assert obs["second"] == [["release-me", 2]], obs
    assert obs["shared_values_equal_sent"] and obs["shared_delivery_counts"] == [1], obs
