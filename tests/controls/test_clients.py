"""The test-broker controls as real clients see them: each control makes the broker fail the
way a Kafka broker fails, and confluent-kafka, kafka-python and aiokafka react as they do
against Kafka: they retry injected errors and deliver every record once and in order, an
idempotent producer survives lost acknowledgements, a group consumer rides out an unavailable
coordinator, a clock advance expires transactions, sessions and old records without waiting
for them, latency and throttling show in the clients' own measurements, and a producer keeps
its records through refused connections and a down/up cycle.

Every test asserts what the client's user observes: delivery reports, the records a consumer
reads back (offsets and values), committed offsets, assignments, callbacks and metrics. Where
the control is reached differently (the Python API calls the broker's rules object on its
reactor thread, or goes over HTTP to a subprocess broker) the test runs in both modes."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
import threading
import uuid

import pytest

from wireserver.testing import EmbeddedBroker, wait_for

MODES = ["thread", "subprocess"]


@pytest.fixture(params=MODES)
def broker(request):
    """A fresh broker of each mode (controls are on in the test defaults)."""
    with EmbeddedBroker(mode=request.param) as kafka:
        yield kafka


@pytest.fixture
def thread_broker():
    """A fresh in-process broker, for tests where the mode changes nothing the client sees."""
    with EmbeddedBroker() as kafka:
        yield kafka


def new_topic(broker, partitions: int = 1, configs: dict | None = None) -> str:
    name = f"controls-{uuid.uuid4().hex[:10]}"
    broker.create_topic(name, partitions, configs=configs)
    return name


def values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(count)]


class Delivery:
    """confluent-kafka's delivery reports, collected in the order the client gave them."""

    def __init__(self) -> None:
        self.errors: list = []
        self.records: list[tuple[int, bytes]] = []  # (offset, value)
        self.latencies: list[float] = []

    def __call__(self, err, msg) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.records.append((msg.offset(), msg.value()))
            self.latencies.append(msg.latency())


@pytest.fixture
def confluent():
    """Makes confluent-kafka producers (``confluent(broker, **config)``); after the test each
    drops what it still holds and closes, before its broker closes (fixtures listed after the
    broker are torn down first), so none goes on reconnecting to a closed port."""
    from confluent_kafka import KafkaException, Producer

    made = []

    def make(broker, **config):
        settings = {
            "bootstrap.servers": broker.bootstrap_servers,
            "linger.ms": 2,
            "retry.backoff.ms": 20,
            "retry.backoff.max.ms": 200,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 200,
            "message.timeout.ms": 30000,
        }
        settings.update(config)
        made.append(Producer(settings))
        return made[-1]

    yield make
    for producer in made:
        producer.purge()
        try:
            producer.close()
        except KafkaException as closing:
            # A fenced transactional producer fails to abort its transaction; it is closed.
            if not closing.args[0].fatal():
                raise


def produce_all(producer, topic: str, records: list[bytes], report: Delivery, **extra) -> None:
    for value in records:
        producer.produce(topic, value=value, partition=0, on_delivery=report, **extra)
        producer.poll(0)


def deliver(producer, topic: str, records: list[bytes], report=None, **extra) -> Delivery:
    """Produce ``records`` to partition 0 and wait until each is delivered (a delivery error
    fails the test); the reports, added to ``report`` when one is given."""
    report = Delivery() if report is None else report
    produce_all(producer, topic, records, report, **extra)
    assert producer.flush(20) == 0
    assert report.errors == []
    return report


def read_back(
    broker, topic: str, partition: int = 0, isolation: str = "read_uncommitted"
) -> list[tuple[int, bytes]]:
    """Every (offset, value) of a partition from its log start to its end (the high watermark,
    or the last stable offset with ``read_committed``), read by kafka-python without a group."""
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, partition)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        isolation_level=isolation,
    )
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        found: list[tuple[int, bytes]] = []

        def caught_up() -> bool:
            for batch in consumer.poll(timeout_ms=200).values():
                found.extend((record.offset, record.value) for record in batch)
            return consumer.position(tp) >= end

        wait_for(caught_up, 20, what=f"{topic}-{partition} read up to offset {end}")
        return found
    finally:
        consumer.close()


def offsets(broker, topic: str, partition: int = 0, isolation: str = "read_uncommitted"):
    """(earliest, latest) by ListOffsets: the log start offset and, by isolation level, the
    high watermark or the last stable offset."""
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, partition)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, group_id=None, isolation_level=isolation
    )
    try:
        return consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()


def assert_exactly_once(broker, topic: str, sent: list[bytes]) -> None:
    """The partition holds every sent value once, in send order, at offsets 0, 1, 2, ..."""
    stored = read_back(broker, topic)
    assert [value for _, value in stored] == sent
    assert [offset for offset, _ in stored] == list(range(len(sent)))


def assert_served(broker, control) -> None:
    """A control with a count has answered all of them and left the list by itself."""
    assert control.remaining() == 0
    assert control.id not in [active["id"] for active in broker.controls.active()]


# -- injected errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "count"), [("NOT_LEADER_OR_FOLLOWER", 2), ("REQUEST_TIMED_OUT", 3)]
)
def test_confluent_producer_retries_injected_produce_errors(broker, error, count, confluent):
    """librdkafka retries a retriable Produce error (after a metadata refresh for
    NOT_LEADER_OR_FOLLOWER): each record lands once and in order, and its statistics count the
    requests and records sent again."""
    topic = new_topic(broker)
    sent = values("retried", 40)
    injected = broker.controls.inject_error("Produce", error, count=count, topic=topic)
    stats: list[dict] = []
    producer = confluent(
        broker,
        **{
            "enable.idempotence": False,
            "max.in.flight.requests.per.connection": 1,
            "statistics.interval.ms": 100,
            "stats_cb": lambda text: stats.append(json.loads(text)),
        },
    )
    report = deliver(producer, topic, sent)
    assert [value for _, value in report.records] == sent
    assert_exactly_once(broker, topic, sent)
    assert_served(broker, injected)

    def sent_again() -> bool:
        """librdkafka's statistics: Produce requests sent and records transmitted, counting
        resends (the partition's txmsgs)."""
        producer.poll(0.1)
        if not stats:
            return False
        requests = sum(b["req"].get("Produce", 0) for b in stats[-1]["brokers"].values())
        transmitted = stats[-1]["topics"][topic]["partitions"]["0"]["txmsgs"]
        return requests >= count + 1 and transmitted >= len(sent) + count

    wait_for(sent_again, 10, what=f"librdkafka's statistics counting {count} resends")


def test_aiokafka_producer_retries_injected_produce_errors(thread_broker):
    """aiokafka retries NOT_LEADER_OR_FOLLOWER after refreshing metadata; every send_and_wait
    returns its own offset, in order."""
    from aiokafka import AIOKafkaProducer

    topic = new_topic(thread_broker)
    sent = values("aiokafka", 10)
    injected = thread_broker.controls.inject_error(
        "Produce", "NOT_LEADER_OR_FOLLOWER", count=2, topic=topic
    )

    async def produce() -> list[int]:
        producer = AIOKafkaProducer(
            bootstrap_servers=thread_broker.bootstrap_servers, retry_backoff_ms=20
        )
        await producer.start()
        try:
            return [
                (await producer.send_and_wait(topic, value, partition=0)).offset for value in sent
            ]
        finally:
            await producer.stop()

    assert asyncio.run(produce()) == list(range(len(sent)))
    assert_exactly_once(thread_broker, topic, sent)
    assert_served(thread_broker, injected)


# -- lost acknowledgements ---------------------------------------------------------------------


def test_idempotent_producer_survives_disconnects_after_handling(broker, confluent):
    """The lost-ack case: the broker appends a batch and closes the connection instead of
    answering. An idempotent producer resends with the same sequence numbers and the broker
    keeps one copy: no duplicates, no gaps."""
    topic = new_topic(broker)
    sent = values("idempotent", 200)
    lost = broker.controls.disconnect(api="Produce", count=2, handle=True)
    producer = confluent(broker, **{"enable.idempotence": True, "batch.num.messages": 10})
    report = deliver(producer, topic, sent)
    assert sorted(report.records) == list(enumerate(sent))
    assert_exactly_once(broker, topic, sent)
    assert_served(broker, lost)


def test_plain_producer_duplicates_after_a_lost_ack(thread_broker, confluent):
    """The same control without idempotence shows that the batch really was appended before
    the connection closed: librdkafka resends it and the partition holds it twice, as it would
    on Kafka (at-least-once)."""
    topic = new_topic(thread_broker)
    producer = confluent(thread_broker, **{"enable.idempotence": False})
    deliver(producer, topic, [b"first"])
    lost = thread_broker.controls.disconnect(api="Produce", count=1, handle=True)
    deliver(producer, topic, [b"twice"])
    assert [value for _, value in read_back(thread_broker, topic)] == [b"first", b"twice", b"twice"]
    assert_served(thread_broker, lost)


# -- group coordinator errors ------------------------------------------------------------------


def test_kafka_python_group_consumer_rides_out_coordinator_not_available(broker, confluent):
    """kafka-python's group consumer meets COORDINATOR_NOT_AVAILABLE on FindCoordinator and
    JoinGroup (it looks the coordinator up again and rejoins), then on Heartbeat and
    OffsetCommit: it keeps consuming every record once and its commits land (OffsetFetch by
    a separate admin client)."""
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

    topic = new_topic(broker, partitions=2)
    group = f"group-{uuid.uuid4().hex[:8]}"
    first, second = values("first", 20), values("second", 20)
    producer = confluent(broker)
    for i, value in enumerate(first):
        producer.produce(topic, value=value, partition=i % 2)
    assert producer.flush(10) == 0

    controls = broker.controls
    find_errors = controls.inject_error(
        "FindCoordinator", "COORDINATOR_NOT_AVAILABLE", count=2, group=group
    )
    join_errors = controls.inject_error(
        "JoinGroup", "COORDINATOR_NOT_AVAILABLE", count=2, group=group
    )
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=10000,
        heartbeat_interval_ms=100,
        retry_backoff_ms=20,
    )
    consumed: list[bytes] = []

    def poll() -> None:
        for batch in consumer.poll(timeout_ms=100).values():
            consumed.extend(record.value for record in batch)

    try:
        wait_for(lambda: poll() or len(consumed) >= len(first), 20, what="the first records")
        assert_served(broker, find_errors)
        assert_served(broker, join_errors)

        heartbeat_errors = controls.inject_error(
            "Heartbeat", "COORDINATOR_NOT_AVAILABLE", count=2, group=group
        )
        commit_errors = controls.inject_error(
            "OffsetCommit", "COORDINATOR_NOT_AVAILABLE", count=2, group=group
        )
        consumer.commit()  # retried until it lands
        assert_served(broker, commit_errors)
        wait_for(lambda: poll() or heartbeat_errors.remaining() == 0, 20, what="failed heartbeats")
        assert_served(broker, heartbeat_errors)

        for i, value in enumerate(second):
            producer.produce(topic, value=value, partition=i % 2)
        assert producer.flush(10) == 0
        wait_for(
            lambda: poll() or len(consumed) >= len(first + second), 20, what="the later records"
        )
        assert sorted(consumed) == sorted(first + second)
        consumer.commit()
        partitions = [TopicPartition(topic, p) for p in (0, 1)]
        assert {tp: consumer.committed(tp) for tp in partitions} == dict.fromkeys(partitions, 20)
    finally:
        consumer.close()

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        fetched = admin.list_group_offsets([group])[group]
    finally:
        admin.close()
    assert {tp: meta.offset for tp, meta in fetched.items()} == dict.fromkeys(partitions, 20)


# -- the clock ---------------------------------------------------------------------------------

#: Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms default: the coordinator
#: looks for expired transactions this often.
TXN_ABORT_CHECK_MS = 10_000
#: Kafka's log.retention.check.interval.ms default.
RETENTION_CHECK_MS = 300_000


def test_clock_advance_aborts_an_expired_transaction(broker, confluent):
    """A transactional producer begins, sends and never commits. Advancing the broker's clock
    past transaction.timeout.ms (60 s, longer than this test waits for anything) makes the
    coordinator abort it: a read_committed consumer sees the last stable offset move past the
    abort marker and none of the records, and the producer's commit_transaction fails: the
    coordinator bumped the producer's epoch when it aborted, so the producer is fenced."""
    from confluent_kafka import KafkaError, KafkaException

    topic = new_topic(broker)
    sent = values("expired", 5)
    producer = confluent(
        broker,
        **{
            "transactional.id": f"txn-{uuid.uuid4().hex[:8]}",
            "transaction.timeout.ms": 60000,
        },
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    report = deliver(producer, topic, sent)
    assert [value for _, value in report.records] == sent
    assert offsets(broker, topic) == (0, len(sent))  # appended ...
    assert offsets(broker, topic, isolation="read_committed") == (0, 0)  # ... and still open

    broker.controls.advance_clock(60000 + TXN_ABORT_CHECK_MS + 1000)
    after_marker = len(sent) + 1
    wait_for(
        lambda: offsets(broker, topic, isolation="read_committed")[1] == after_marker,
        15,
        what="the coordinator aborting the expired transaction",
    )
    assert read_back(broker, topic, isolation="read_committed") == []
    assert [value for _, value in read_back(broker, topic)] == sent  # there, but aborted

    with pytest.raises(KafkaException) as failed:
        producer.commit_transaction(10)
    error = failed.value.args[0]
    assert error.code() == KafkaError._FENCED, error
    assert error.fatal()


SESSION_TIMEOUT_MS = 30000

GROUP_MEMBER = textwrap.dedent("""
    import json, sys
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                             session_timeout_ms=int(sys.argv[4]), heartbeat_interval_ms=200,
                             enable_auto_commit=False)
    consumer.partitions_for_topic(sys.argv[2])  # metadata before joining: see the test
    assigned = None
    while True:
        consumer.poll(timeout_ms=100)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != assigned:
            print(json.dumps(now), flush=True)
            assigned = now
""")


def test_clock_advance_expires_a_frozen_members_session(broker):
    """Two consumers share a topic's four partitions; one (its own process) is frozen with
    SIGSTOP. Advancing the broker's clock past its session.timeout.ms (30 s) but not past the
    live member's last heartbeat expires the frozen one: the live consumer gets all four
    partitions without anyone waiting 30 s."""
    from kafka import KafkaConsumer

    topic = new_topic(broker, partitions=4)
    group = f"session-{uuid.uuid4().hex[:8]}"
    frozen = subprocess.Popen(
        [
            sys.executable,
            "-c",
            GROUP_MEMBER,
            broker.bootstrap_servers,
            topic,
            group,
            str(SESSION_TIMEOUT_MS),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    frozen_assignment: list[list[int]] = []
    threading.Thread(
        target=lambda: frozen_assignment.extend(json.loads(line) for line in frozen.stdout),
        daemon=True,
    ).start()
    live = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=200,
        enable_auto_commit=False,
    )
    # kafka-python joins on its first poll whether or not its metadata has the topic yet; a
    # leader that assigns before it does gives everyone nothing and waits for a later refresh
    # to rebalance. Both members learn the topic's partitions first so the split comes from
    # one join, which is not what this test is about.
    live.partitions_for_topic(topic)

    def live_holds(count: int) -> bool:
        live.poll(timeout_ms=100)
        return len(live.assignment()) == count

    try:
        wait_for(
            lambda: live_holds(2) and frozen_assignment and len(frozen_assignment[-1]) == 2,
            30,
            what="a 2/2 split",
        )
        frozen.send_signal(signal.SIGSTOP)
        controls = broker.controls
        stopped_at = controls.now_ms()
        # The live member heartbeats every 200 ms meanwhile; the frozen one's last heartbeat
        # is now at least 3 s old, so an advance of the session timeout less 1.5 s expires
        # the frozen member alone.
        wait_for(
            lambda: live_holds(2) and controls.now_ms() >= stopped_at + 3000,
            10,
            what="3 s of heartbeats from the live member only",
        )
        controls.advance_clock(SESSION_TIMEOUT_MS - 1500)
        wait_for(lambda: live_holds(4), 15, what="the live member taking all four partitions")
    finally:
        live.close()
        frozen.send_signal(signal.SIGCONT)
        frozen.kill()
        frozen.wait()


def test_clock_advance_runs_retention(broker, confluent):
    """A topic with retention.ms = 60 s: after the clock moves past it (and past the next
    retention check) the old records are deleted, the log start offset (ListOffsets earliest)
    moves to the end, and a consumer from the beginning sees only the records produced after."""
    topic = new_topic(broker, configs={"retention.ms": "60000"})
    old, new = values("old", 10), values("new", 5)
    producer = confluent(broker)
    deliver(producer, topic, old)
    assert offsets(broker, topic) == (0, len(old))

    broker.controls.advance_clock(60000 + RETENTION_CHECK_MS + 1000)
    wait_for(
        lambda: offsets(broker, topic) == (len(old), len(old)),
        15,
        what="retention deleting the old records",
    )
    # New records stamped with the broker's (advanced) time, as a producer whose clock agrees
    # with the broker's would stamp them.
    deliver(producer, topic, new, timestamp=broker.controls.now_ms())
    stored = read_back(broker, topic)
    assert [value for _, value in stored] == new
    assert [offset for offset, _ in stored] == list(range(len(old), len(old) + len(new)))


# -- latency -----------------------------------------------------------------------------------


def test_latency_shows_in_the_clients_round_trips(thread_broker, confluent):
    """Produce responses held 400 ms: librdkafka's delivery latency of each record and
    kafka-python's fetch latency are at least that long (a lower bound only)."""
    from kafka import KafkaConsumer, TopicPartition

    topic = new_topic(thread_broker)
    producer = confluent(thread_broker, **{"linger.ms": 0})
    with thread_broker.controls.add_latency(400, api="Produce"):
        report = deliver(producer, topic, [b"slow"])
    assert report.latencies[0] >= 0.4

    consumer = KafkaConsumer(
        bootstrap_servers=thread_broker.bootstrap_servers, group_id=None, fetch_max_wait_ms=10
    )
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        with thread_broker.controls.add_latency(400, api="Fetch"):
            wait_for(lambda: consumer.poll(timeout_ms=100), 10, what="the record")
        metrics = consumer.metrics()["consumer-fetch-manager-metrics"]
        assert metrics["fetch-latency-max"] >= 400
    finally:
        consumer.close()


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_idempotent_producer_retries_past_request_timeout_exactly_once(broker, client, confluent):
    """Produce responses held 3 s against a request timeout of 1 s (kafka-python's
    request_timeout_ms; librdkafka's socket.timeout.ms, as its request.timeout.ms is only the
    ack timeout it sends to the broker): the client gives up on the request and sends the batch
    again, twice (the retry is held too), though the broker had appended it; idempotence keeps
    one copy of each record."""
    topic = new_topic(broker)
    sent = values("timed-out", 20)
    slow = broker.controls.add_latency(3000, api="Produce", count=2)
    if client == "kafka-python":
        from kafka import KafkaProducer

        producer = KafkaProducer(
            bootstrap_servers=broker.bootstrap_servers,
            enable_idempotence=True,
            request_timeout_ms=1000,
            retry_backoff_ms=50,
            linger_ms=2,
        )
        try:
            futures = [producer.send(topic, value, partition=0) for value in sent]
            producer.flush(20)
            assert [future.get(0).offset for future in futures] == list(range(len(sent)))
        finally:
            producer.close()
    else:
        rdkafka = confluent(broker, **{"enable.idempotence": True, "socket.timeout.ms": 1000})
        report = deliver(rdkafka, topic, sent)
        assert sorted(report.records) == list(enumerate(sent))
    assert_exactly_once(broker, topic, sent)
    assert_served(broker, slow)  # both held requests were sent: the client retried


# -- throttling --------------------------------------------------------------------------------


def test_confluent_throttle_callback_reports_the_throttle(broker, confluent):
    """librdkafka hands the broker's throttle_time_ms to throttle_cb."""
    topic = new_topic(broker)
    throttles: list = []
    producer = confluent(broker, throttle_cb=throttles.append)
    with broker.controls.throttle("Produce", 500):
        deliver(producer, topic, [b"throttled"])
    wait_for(lambda: producer.poll(0.1) is not None and throttles, 10, what="throttle_cb")
    assert throttles[0].throttle_time == pytest.approx(0.5)
    assert throttles[0].broker_id == broker.node_id


def test_kafka_python_metrics_show_the_throttle(thread_broker):
    """kafka-python records the throttle_time_ms of Produce and Fetch responses in its
    throttle-time metrics (producer-metrics / consumer-metrics)."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = new_topic(thread_broker)
    producer = KafkaProducer(bootstrap_servers=thread_broker.bootstrap_servers)
    consumer = KafkaConsumer(bootstrap_servers=thread_broker.bootstrap_servers, group_id=None)
    tp = TopicPartition(topic, 0)
    try:
        with thread_broker.controls.throttle("Produce", 300):
            producer.send(topic, b"throttled", partition=0).get(10)
        assert producer.metrics()["producer-metrics"]["throttle-time-max"] == 300
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        with thread_broker.controls.throttle("Fetch", 200):
            wait_for(lambda: consumer.poll(timeout_ms=100), 10, what="the record")
        assert consumer.metrics()["consumer-metrics"]["throttle-time-max"] == 200
    finally:
        producer.close()
        consumer.close()


# -- refused connections and down/up -----------------------------------------------------------


def can_connect(broker) -> bool:
    """Whether a new kafka-python client reaches the broker (its bootstrap fails otherwise)."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaTimeoutError

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=broker.bootstrap_servers, bootstrap_timeout_ms=2000
        )
    except KafkaTimeoutError:  # "Unable to bootstrap from ..."
        return False
    admin.close()
    return True


def test_refused_connections_keep_new_clients_out_until_undone(broker, confluent):
    """While connections are refused a new client cannot bootstrap, and a producer connected
    before keeps producing on its connection; after undo new clients connect again."""
    topic = new_topic(broker)
    producer = confluent(broker)
    deliver(producer, topic, [b"before"])
    with broker.controls.refuse_connections():
        assert not can_connect(broker)
        deliver(producer, topic, [b"during"])
    assert can_connect(broker)
    assert_exactly_once(broker, topic, [b"before", b"during"])


def test_producer_keeps_its_records_through_down_and_up(broker, confluent):
    """The broker goes down (its Kafka listeners closed, every connection dropped) while a
    producer has records to send: nothing is delivered to a closed port, and after up every
    record is delivered once."""
    topic = new_topic(broker)
    before, during = values("before", 10), values("during", 10)
    producer = confluent(broker, **{"enable.idempotence": True})
    report = deliver(producer, topic, before)
    down = broker.controls.down()
    assert not can_connect(broker)
    produce_all(producer, topic, during, report)
    assert producer.flush(1) == len(during)  # held while the broker is down
    broker.controls.up()
    assert producer.flush(20) == 0
    assert report.errors == []
    assert sorted(report.records) == list(enumerate(before + during))
    assert_exactly_once(broker, topic, before + during)
    assert down.id not in [active["id"] for active in broker.controls.active()]
