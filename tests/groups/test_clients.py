"""Consumer groups of real clients against a wireserver subprocess: kafka-python, aiokafka and
confluent-kafka groups share partitions exactly once; a silent member is expired after its
session timeout; leaving rebalances; committed offsets survive a broker restart; a static member
restarts without a rebalance; admin clients list, describe and delete groups and offsets."""

from __future__ import annotations

import asyncio
import re
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

from tests.groups.conftest import wait_for

PARTITIONS = 6
RECORDS = 120


def make_topic(broker, partitions=PARTITIONS) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(name, partitions, 1)])
    admin.close()
    return name


def produce(broker, topic, count=RECORDS, start=0) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
    for i in range(start, start + count):
        producer.send(topic, str(i).encode(), partition=i % PARTITIONS)
    producer.flush()
    producer.close()


def check_exactly_once(consumed: list[bytes], count=RECORDS) -> None:
    assert len(consumed) == count, f"{len(consumed)} records consumed, expected {count}"
    assert sorted(int(v) for v in consumed) == list(range(count))


def check_disjoint(assignments: list[set]) -> None:
    union = set().union(*assignments)
    assert sum(len(a) for a in assignments) == len(union) == PARTITIONS


# -- kafka-python -----------------------------------------------------------------------------


def kp_consumer(broker, topic, group, assignor="range", **kw):
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    strategy = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    settings = dict(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        partition_assignment_strategy=[strategy[assignor]],
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    settings.update(kw)
    consumer = KafkaConsumer(**settings)
    consumer.subscribe([topic])
    know_partitions(consumer, topic)
    return consumer


def know_partitions(consumer, topic) -> None:
    """Give a subscribed kafka-python consumer the topic's partitions before it first joins.

    kafka-python 3.0.12 can lose a rebalance that its leader starts because the subscribed
    topics' metadata changed: once the leader has computed the assignment, ``need_rejoin()`` is
    False again, so when the ``poll()`` timeout expires before the SyncGroup answer, no later
    ``poll()`` applies the finished join. The member then owns nothing and stops heartbeating
    (Java keeps a pending join in ``rejoinNeededOrPending()`` and calls ``requestRejoin()``,
    KAFKA-9815). A consumer that joins before its first Metadata answer for the topic (its
    refresh waits ``retry_backoff_ms`` while FindCoordinator/JoinGroup/SyncGroup do not) assigns
    nothing ("No partition metadata for topic") and then starts exactly such a rebalance.
    ``topics()`` waits for a Metadata answer, which records the partitions for the subscription;
    every later rebalance is started by the coordinator and is not lost."""
    wait_for(lambda: topic in consumer.topics(), 30, what=f"metadata for {topic}")


@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
def test_kafka_python_group_shares_partitions_exactly_once(served_broker, assignor):
    """Three kafka-python consumers, each polled by its own thread as kafka-python expects (one
    thread polling all three in turn makes its leader discard a join that completed between two
    of its polls and join again, rebalancing the group for ever, on any broker)."""
    topic = make_topic(served_broker)
    consumers = [kp_consumer(served_broker, topic, "kp-" + assignor, assignor) for _ in range(3)]
    consumed: list[bytes] = []
    stop = threading.Event()

    def poll(consumer):
        while not stop.is_set():
            for records in consumer.poll(timeout_ms=100).values():
                consumed.extend(r.value for r in records)

    threads = [threading.Thread(target=poll, args=(c,), daemon=True) for c in consumers]
    for thread in threads:
        thread.start()
    try:
        try:
            wait_for(
                lambda: [len(c.assignment()) for c in consumers] == [2, 2, 2],
                60,
                what="three members with two partitions each",
            )
        except AssertionError:
            print("".join(served_broker.output[:40]))
            print([c.assignment() for c in consumers])
            raise
        check_disjoint([c.assignment() for c in consumers])
        produce(served_broker, topic)
        wait_for(lambda: len(consumed) >= RECORDS, 30, what="every record")
        time.sleep(0.5)  # anything read twice would arrive now
        check_exactly_once(consumed)
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)
        for c in consumers:
            c.close()


# -- aiokafka ---------------------------------------------------------------------------------


def test_aiokafka_group_shares_partitions_exactly_once(served_broker):
    from aiokafka import AIOKafkaConsumer

    topic = make_topic(served_broker)

    async def run():
        consumers = [
            AIOKafkaConsumer(
                topic,
                bootstrap_servers=served_broker.bootstrap,
                group_id="aio",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                session_timeout_ms=6000,
                heartbeat_interval_ms=500,
            )
            for _ in range(3)
        ]
        for c in consumers:
            await c.start()
        consumed: list[bytes] = []
        try:
            deadline = time.monotonic() + 60
            while [len(c.assignment()) for c in consumers] != [2, 2, 2]:
                assert time.monotonic() < deadline, "group never settled"
                for c in consumers:
                    for records in (await c.getmany(timeout_ms=50)).values():
                        consumed.extend(r.value for r in records)
            check_disjoint([c.assignment() for c in consumers])
            produce(served_broker, topic)
            deadline = time.monotonic() + 30
            while len(consumed) < RECORDS and time.monotonic() < deadline:
                for c in consumers:
                    for records in (await c.getmany(timeout_ms=50)).values():
                        consumed.extend(r.value for r in records)
            check_exactly_once(consumed)
        finally:
            for c in consumers:
                await c.stop()

    asyncio.run(run())


# -- confluent-kafka --------------------------------------------------------------------------


def ck_consumer(broker, topic, group, assignor="range", on_assign=None, **extra):
    from confluent_kafka import Consumer

    config = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "partition.assignment.strategy": assignor,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    config.update(extra)
    consumer = Consumer(config)
    kwargs = {"on_assign": on_assign} if on_assign else {}
    consumer.subscribe([topic], **kwargs)
    return consumer


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_confluent_group_shares_partitions_exactly_once(served_broker, assignor):
    topic = make_topic(served_broker)
    consumers = [ck_consumer(served_broker, topic, "ck-" + assignor, assignor) for _ in range(3)]
    consumed: list[bytes] = []

    def poll_all():
        for c in consumers:
            message = c.poll(0.05)
            if message is not None and not message.error():
                consumed.append(message.value())

    try:
        wait_for(
            lambda: [len(c.assignment()) for c in consumers] == [2, 2, 2],
            60,
            poll_all,
            "three members with two partitions each",
        )
        check_disjoint([{(p.topic, p.partition) for p in c.assignment()} for c in consumers])
        produce(served_broker, topic)
        wait_for(lambda: len(consumed) >= RECORDS, 30, poll_all, "every record")
        for _ in range(10):
            poll_all()
        check_exactly_once(consumed)
    finally:
        for c in consumers:
            c.close()


# -- failures and restarts --------------------------------------------------------------------

SILENT_MEMBER = textwrap.dedent("""
    import sys
    import time
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                             session_timeout_ms=3000, heartbeat_interval_ms=500,
                             enable_auto_commit=False)
    consumer.subscribe([sys.argv[2]])
    while sys.argv[2] not in consumer.topics():  # see know_partitions
        time.sleep(0.05)
    while not consumer.assignment():
        consumer.poll(timeout_ms=100)
    print("assigned", len(consumer.assignment()), flush=True)
    while True:
        consumer.poll(timeout_ms=100)
""")


def test_stopped_member_is_expired_and_its_partitions_move(served_broker):
    topic = make_topic(served_broker)
    child = subprocess.Popen(
        [sys.executable, "-c", SILENT_MEMBER, served_broker.bootstrap, topic, "silent"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # (poll, not select: in a long test run this process's descriptors pass 1024)
        waiting = select.poll()
        waiting.register(child.stdout, select.POLLIN)
        assert waiting.poll(60_000), "the silent member got no assignment within 60 s"
        assert child.stdout.readline().startswith("assigned")
        survivor = kp_consumer(served_broker, topic, "silent", session_timeout_ms=3000)
        poll = lambda: survivor.poll(timeout_ms=50)  # noqa: E731
        wait_for(lambda: len(survivor.assignment()) == 3, 30, poll, "a 3/3 split")
        child.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        wait_for(
            lambda: len(survivor.assignment()) == PARTITIONS,
            30,
            poll,
            "the stopped member's partitions",
        )
        assert time.monotonic() - stopped >= 2.5  # not before its session timeout
        # The broker's log tells it in Kafka's GroupCoordinator words.
        failed = re.compile(
            r"\[GroupCoordinator \d+\]: Member (\S+) in group silent has failed, removing it "
            r"from the group$",
            re.M,
        )
        wait_for(lambda: failed.search("".join(served_broker.output)), 10, what="the log")
        log = "".join(served_broker.output)
        member = failed.search(log).group(1)
        offsets = r"\(__consumer_offsets-\d+\)"
        for line in (
            r"Preparing to rebalance group silent in state PreparingRebalance with old "
            rf"generation \d+ {offsets} \(reason: Adding new member \S+ with group instance "
            r"id None; client reason: not provided\)",
            r"Preparing to rebalance group silent in state PreparingRebalance with old "
            rf"generation \d+ {offsets} \(reason: removing member {re.escape(member)} on "
            r"heartbeat expiration\)",
            rf"Stabilized group silent generation \d+ {offsets} with 2 members",
            rf"Stabilized group silent generation \d+ {offsets} with 1 members",
            r"Assignment received from leader \S+ for group silent for generation \d+\. "
            r"The group has 1 members, 0 of which are static\.",
        ):
            assert re.search(r"\[GroupCoordinator \d+\]: " + line + "$", log, re.M), line
        survivor.close()
    finally:
        child.send_signal(signal.SIGCONT)
        child.kill()
        child.wait()


class PolledConsumer:
    """A kafka-python consumer polled by a thread of its own until ``close()``, which closes it
    in that thread (kafka-python is not thread-safe). One thread polling two members in turn
    can leave a join that completed between two of a member's polls unapplied, so the member
    joins again and the group rebalances until the test's deadline, on any broker."""

    def __init__(self, consumer):
        self.consumer = consumer
        self.assigned = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stopping.is_set():
            self.consumer.poll(timeout_ms=50)
            self.assigned = len(self.consumer.assignment())
        self.consumer.close()  # sends LeaveGroup

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the consumer did not close within 10 s"


def test_leaving_member_triggers_a_rebalance(served_broker):
    topic = make_topic(served_broker)
    a = PolledConsumer(kp_consumer(served_broker, topic, "leave", session_timeout_ms=30000))
    b = PolledConsumer(kp_consumer(served_broker, topic, "leave", session_timeout_ms=30000))
    try:
        wait_for(lambda: a.assigned == b.assigned == 3, 30, what="a 3/3 split")
        b.close()
        left = time.monotonic()
        wait_for(lambda: a.assigned == PARTITIONS, 20, what="a takes over")
        assert time.monotonic() - left < 10  # well before the 30 s session timeout
    finally:
        a.close()
        b.close()


def consume_values(consumer, count: int) -> list[int]:
    """Poll ``consumer`` until it has ``count`` records; their values as ints, sorted."""
    records = []
    wait_for(
        lambda: len(records) >= count,
        30,
        lambda: [records.extend(rs) for rs in consumer.poll(timeout_ms=100).values()],
        "records",
    )
    return sorted(int(r.value) for r in records)


def consume_all_and_commit(broker, topic, group) -> dict:
    """A kafka-python group member reads all ``RECORDS`` of ``topic`` and commits; returns its
    committed offset per partition."""
    c = kp_consumer(broker, topic, group)
    assert consume_values(c, RECORDS) == list(range(RECORDS))
    c.commit()
    committed = {tp: c.committed(tp) for tp in c.assignment()}
    c.close()
    return committed


def test_committed_offsets_survive_a_restart(served_broker):
    topic = make_topic(served_broker)
    produce(served_broker, topic)
    committed = consume_all_and_commit(served_broker, topic, "restart")
    served_broker.restart()
    produce(served_broker, topic, count=60, start=RECORDS)
    c = kp_consumer(served_broker, topic, "restart")
    assert consume_values(c, 60) == list(range(RECORDS, RECORDS + 60))
    for tp, offset in committed.items():
        assert c.committed(tp) >= offset == RECORDS // PARTITIONS
    c.close()


def test_static_member_restarts_without_a_rebalance(served_broker):
    topic = make_topic(served_broker)
    assigned = []
    a = ck_consumer(
        served_broker,
        topic,
        "static",
        on_assign=lambda c, ps: assigned.append(ps),
        **{"group.instance.id": "a", "session.timeout.ms": 20000},
    )
    b = ck_consumer(
        served_broker, topic, "static", **{"group.instance.id": "b", "session.timeout.ms": 20000}
    )
    poll = lambda: (a.poll(0.05), b.poll(0.05))  # noqa: E731
    wait_for(lambda: len(a.assignment()) == len(b.assignment()) == 3, 60, poll, "a 3/3 split")
    before = sorted(p.partition for p in b.assignment())
    rounds = len(assigned)
    b.close()  # a static member does not leave the group
    b = ck_consumer(
        served_broker, topic, "static", **{"group.instance.id": "b", "session.timeout.ms": 20000}
    )
    wait_for(lambda: len(b.assignment()) == 3, 30, poll, "b back")
    assert sorted(p.partition for p in b.assignment()) == before
    for _ in range(20):
        poll()
    assert len(assigned) == rounds, "the other member saw a rebalance"
    a.close()
    b.close()


def unread_connections(port: int) -> set[int]:
    """The client ports of established connections to local ``port`` that hold bytes the
    server has not read (the kernel's receive queue, from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                local, remote, state, queues = fields[1], fields[2], fields[3], fields[4]
                unread = int(queues.split(":")[1], 16)
                if state == "01" and int(local.split(":")[1], 16) == port and unread:
                    found.add(int(remote.split(":")[1], 16))
    return found


def test_static_members_whose_joins_arrive_together_form_one_generation(served_broker):
    """Two static kafka-python members send their first JoinGroup to a fresh group while the
    broker is paused (as a busy coordinator receives them together), with
    ``group.initial.rebalance.delay.ms=0``. Kafka ends an initial rebalance only from its delay
    timer, after the requests already received, so both land in generation 1: the leader
    assigns once, for both, and nobody's partitions are revoked. (Ending the join inline in
    the first JoinGroup formed generation 1 with the first member alone.)"""
    from kafka import TopicPartition
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    topic = make_topic(served_broker)
    seen: dict[str, list] = {"a": [], "b": []}

    class Recording(RangePartitionAssignor, ConsumerRebalanceListener):
        """The range assignor and a rebalance listener that note, per member, the members it
        assigns (as leader), each generation it is assigned in, and what it has revoked."""

        def __init__(self, name):
            self.events = seen[name]

        def assign(self, cluster, members):
            self.events.append(("assign", len(members)))
            return super().assign(cluster, members)

        def on_assignment(self, assignment, generation):
            self.events.append(("generation", generation))
            return super().on_assignment(assignment, generation)

        def on_partitions_revoked(self, revoked):
            if revoked:
                self.events.append(("revoked", len(revoked)))

        def on_partitions_assigned(self, assigned):
            self.events.append(("assigned", len(assigned)))

    consumers = []
    for name in seen:
        recording = Recording(name)
        c = KafkaConsumer(
            bootstrap_servers=served_broker.bootstrap,
            group_id="together",
            group_instance_id=name,
            partition_assignment_strategy=[recording],
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
        )
        c.subscribe([topic], listener=recording)
        know_partitions(c, topic)
        c.committed(TopicPartition(topic, 0))  # finds and connects to the coordinator
        consumers.append(c)
    stop = threading.Event()

    def keep_polling(c):
        # Long polls in a thread each: kafka-python 3.0.12 drops a join that finishes between
        # two poll() calls and joins again.
        while not stop.is_set():
            c.poll(timeout_ms=2000)

    threads = [threading.Thread(target=keep_polling, args=(c,)) for c in consumers]
    served_broker.process.send_signal(signal.SIGSTOP)
    try:
        for t in threads:
            t.start()
        # Both JoinGroups are sent and wait in the paused broker's sockets. A fixed 0.5 s was
        # too short once on a loaded CI machine: the second member's join came after the
        # first member's generation had formed.
        wait_for(
            lambda: len(unread_connections(served_broker.port)) >= 2,
            10,
            what="both members' requests waiting in the broker's sockets",
        )
        time.sleep(0.2)
    finally:
        served_broker.process.send_signal(signal.SIGCONT)
    try:
        wait_for(
            lambda: all(("assigned", 3) in events for events in seen.values()),
            30,
            what="a 3/3 split",
        )
        time.sleep(2)  # no further rebalance
    finally:
        stop.set()
        for t in threads:
            t.join()
    check_disjoint([c.assignment() for c in consumers])
    leader, follower = sorted((list(events) for events in seen.values()), key=len, reverse=True)
    for c in consumers:
        c.close()  # (revokes its partitions)
    assert leader == [("assign", 2), ("generation", 1), ("assigned", 3)]
    assert follower == [("generation", 1), ("assigned", 3)]


def test_admin_clients_see_groups_and_offsets(served_broker):
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
    from confluent_kafka.admin import AdminClient

    topic = make_topic(served_broker)
    produce(served_broker, topic)
    c = kp_consumer(served_broker, topic, "admin-g")
    consumed = []
    wait_for(
        lambda: len(consumed) >= RECORDS,
        30,
        lambda: [consumed.extend(rs) for rs in c.poll(timeout_ms=100).values()],
        "records",
    )
    c.commit()

    kp = KafkaAdminClient(bootstrap_servers=served_broker.bootstrap)
    listed = {g["group_id"]: g for g in kp.list_groups()}
    assert listed["admin-g"]["group_state"] == "Stable"
    described = kp.describe_groups(["admin-g"])["admin-g"]
    assert described["protocol_data"] == "range" and len(described["members"]) == 1
    offsets = kp.list_group_offsets("admin-g")["admin-g"]
    assert sum(o.offset for o in offsets.values()) == RECORDS

    ck = AdminClient({"bootstrap.servers": served_broker.bootstrap})
    result = ck.list_consumer_groups().result()
    assert "admin-g" in {g.group_id for g in result.valid}
    group = ck.describe_consumer_groups(["admin-g"])["admin-g"].result()
    assert len(group.members) == 1 and str(group.state).endswith("STABLE")
    fetched = ck.list_consumer_group_offsets([ConsumerGroupTopicPartitions("admin-g")])
    partitions = fetched["admin-g"].result().topic_partitions
    assert sum(p.offset for p in partitions) == RECORDS

    # a group with members cannot be deleted; once empty it can
    with pytest.raises(KafkaException) as refused:
        ck.delete_consumer_groups(["admin-g"])["admin-g"].result()
    assert refused.value.args[0].name() == "NON_EMPTY_GROUP"
    c.close()
    ck.delete_consumer_groups(["admin-g"])["admin-g"].result()
    assert "admin-g" not in {g["group_id"] for g in kp.list_groups()}
    kp.close()


def test_an_unknown_group_is_described_dead(served_broker):
    """DescribeGroups v6 (kafka-python's): GROUP_ID_NOT_FOUND with the state "Dead", as Kafka
    4.1 answers (the state was empty)."""
    kp = KafkaAdminClient(bootstrap_servers=served_broker.bootstrap)
    try:
        described = kp.describe_groups(["nobody"])["nobody"]
    finally:
        kp.close()
    assert described["group_state"] == "Dead"
    assert described["error"] == "[Error 69] GroupIdNotFoundError: Group nobody not found."


def test_offsets_of_a_deleted_topic_are_gone_when_it_is_created_again(served_broker):
    """As in Kafka: deleting a topic removes every group's committed offsets of it (with
    tombstones, so also after a restart), so a topic re-created under the same name is read
    from auto_offset_reset, not from the old topic's offsets."""
    topic = make_topic(served_broker)
    produce(served_broker, topic)
    committed = consume_all_and_commit(served_broker, topic, "recreated")
    assert set(committed.values()) == {RECORDS // PARTITIONS}
    admin = KafkaAdminClient(bootstrap_servers=served_broker.bootstrap)
    admin.delete_topics([topic])
    wait_for(lambda: topic not in admin.list_topics(), 30, what="the topic to go")
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    admin.close()
    served_broker.restart()
    admin = KafkaAdminClient(bootstrap_servers=served_broker.bootstrap)
    assert admin.list_group_offsets("recreated") == {"recreated": {}}
    admin.close()
    produce(served_broker, topic, count=12)
    c = kp_consumer(served_broker, topic, "recreated")
    assert consume_values(c, 12) == list(range(12))
    c.close()
