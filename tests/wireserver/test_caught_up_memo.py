"""A connection's sessionless fetches answer caught-up partitions from what they were last
sent (``wireserver.apis.fetch.CaughtUpMemo``), and never once that changed: new records, a
moved log start, a deleted or re-created topic, a new leadership or leader epoch. Each test
first checks the partition's answer is kept, so that what follows goes through the memo."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from twisted.internet.testing import MemoryReactorClock

from tests.integration import raw
from tests.wireserver.connection import connect, responses, send
from wireserver.apis.fetch import CaughtUpMemo
from wireserver.broker import Broker
from wireserver.config import BrokerConfig
from wireserver.protocol.records import RecordBatchBuilder
from wireserver.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType

TOPIC = "orders"
NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION = 0, 1, 3
FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED = 74, 100, 29


@pytest.fixture
def broker(tmp_path):
    config = BrokerConfig.load(
        None, {"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0"}
    )
    instance = Broker(config, MemoryReactorClock())
    instance.start()
    instance.logs.create_topic(TOPIC, 2)
    yield instance
    instance.logs.close()


class Client:
    """One connection sending sessionless fetches of both partitions, as librdkafka does."""

    def __init__(self, broker: Broker, version: int = 12, isolation_level: int = 0):
        self.broker = broker
        self.connection, self.transport = connect(broker)
        self.version = version
        self.isolation_level = isolation_level
        self.correlation = 0

    def topic_id(self):
        names = self.broker.logs.topic_names_by_id
        return next(topic_id for topic_id, name in names.items() if name == TOPIC)

    def fetch(
        self, offsets: dict[int, int], leader_epoch: int = -1, topic_id=None, *more: dict
    ) -> dict:
        """partition -> (error, high watermark, log start, record bytes, aborted); ``more``
        names the topic again, with those partitions and offsets."""
        self.send_fetch(offsets, leader_epoch, topic_id, *more)
        [frame] = responses(self.transport)
        return self.read(frame)

    def send_fetch(
        self,
        offsets: dict[int, int],
        leader_epoch: int = -1,
        topic_id=None,
        *more: dict | tuple[str, dict],
        max_wait_ms: int = 0,
    ) -> None:
        """``more``: the topic again (partition -> offset), or another topic by name
        (its name, partition -> offset; v12)."""
        topics = [
            FetchRequest.FetchTopic(
                topic=named[0] if isinstance(named, tuple) else TOPIC,
                topic_id=topic_id or (self.topic_id() if self.version >= 13 else None),
                partitions=[
                    FetchRequest.FetchTopic.FetchPartition(
                        partition=p,
                        current_leader_epoch=leader_epoch,
                        fetch_offset=offset,
                        partition_max_bytes=1 << 20,
                    )
                    for p, offset in (named[1] if isinstance(named, tuple) else named).items()
                ],
            )
            for named in (offsets, *more)
        ]
        self.correlation += 1
        send(
            self.connection,
            FetchRequest(
                version=self.version,
                replica_id=-1,
                max_wait_ms=max_wait_ms,
                min_bytes=1,
                max_bytes=1 << 20,
                isolation_level=self.isolation_level,
                session_id=0,
                session_epoch=-1,
                topics=topics,
                forgotten_topics_data=[],
                rack_id="",
            ),
            self.correlation,
        )

    def entries(self, frame) -> list[tuple[str, list[int]]]:
        """The answer's topic entries: (topic, its partitions)."""
        answer = FetchResponse.decode(bytes(frame), version=self.version, header=True)
        return [
            (entry.topic, [p.partition_index for p in entry.partitions])
            for entry in answer.responses
        ]

    def read(self, frame) -> dict:
        answer = FetchResponse.decode(bytes(frame), version=self.version, header=True)
        return {
            p.partition_index: (
                p.error_code,
                p.high_watermark,
                p.log_start_offset,
                len(p.records or b""),
                p.aborted_transactions,
            )
            for topic_answer in answer.responses
            for p in topic_answer.partitions
        }

    def produce(self, partition: int, count: int) -> None:
        self.correlation += 1
        values = [b"v%d" % n for n in range(count)]
        batch = raw.v2_batch(values, timestamp=0)  # the broker's clock is at 0
        send(self.connection, raw.produce(TOPIC, {partition: batch}), 999)
        responses(self.transport)

    def kept(self, partition: int) -> bool:
        """Whether the memo holds ``partition``'s answer."""
        memos = [m for m in self.connection.handler_cache.values() if isinstance(m, CaughtUpMemo)]
        return any(partition in memo.tables.get(TOPIC, {}) for memo in memos)

    def kept_whole(self) -> bool:
        """Whether the memo holds the topic's whole answer (``KeptTopic``)."""
        memos = [m for m in self.connection.handler_cache.values() if isinstance(m, CaughtUpMemo)]
        return any(
            kept.name == TOPIC and kept.sequence <= self.broker.logs.changes.sequence
            for memo in memos
            for kept in memo.topics.values()
        )


def caught_up(client: Client, offsets: dict[int, int], **kwargs) -> dict:
    """Fetch twice at the log ends (the second answer from the memo); returns the answer."""
    first = client.fetch(offsets, **kwargs)
    assert all(client.kept(p) for p in offsets)
    assert client.kept_whole()
    assert client.fetch(offsets, **kwargs) == first
    return first


@pytest.mark.parametrize("version", [12, 13, 16, 18])
def test_new_records_are_fetched_and_the_new_end_kept(broker, version):
    client = Client(broker, version)
    client.produce(0, 3)
    assert caught_up(client, {0: 3, 1: 0}) == {
        0: (NONE, 3, 0, 0, None),
        1: (NONE, 0, 0, 0, None),
    }
    client.produce(0, 2)
    answer = client.fetch({0: 3, 1: 0})
    assert answer[0][:3] == (NONE, 5, 0) and answer[0][3] > 0
    assert answer[1] == (NONE, 0, 0, 0, None)
    assert caught_up(client, {0: 5, 1: 0})[0] == (NONE, 5, 0, 0, None)


def test_read_committed_answers_carry_an_empty_aborted_list(broker):
    committed, uncommitted = Client(broker, 12, 1), Client(broker, 12, 0)
    client = committed
    client.produce(1, 2)
    assert caught_up(committed, {1: 2})[1] == (NONE, 2, 0, 0, [])
    assert caught_up(uncommitted, {1: 2})[1] == (NONE, 2, 0, 0, None)
    # the same connection with the other isolation level: its own entries
    client.isolation_level = 0
    assert client.fetch({1: 2})[1] == (NONE, 2, 0, 0, None)


def test_a_moved_log_start_is_reported(broker):
    client = Client(broker)
    client.produce(0, 4)
    assert caught_up(client, {0: 4})[0] == (NONE, 4, 0, 0, None)
    broker.logs.get_log(TOPIC, 0).delete_records_before(3)
    assert client.fetch({0: 4})[0] == (NONE, 4, 3, 0, None)


@pytest.mark.parametrize("version", [12, 16])
def test_a_deleted_topic_is_unknown_and_a_recreated_one_starts_anew(broker, version):
    client = Client(broker, version)
    client.produce(0, 2)
    old_id = client.topic_id()
    assert caught_up(client, {0: 2})[0] == (NONE, 2, 0, 0, None)
    broker.logs.delete_topic(TOPIC)
    unknown = UNKNOWN_TOPIC_ID if version >= 13 else UNKNOWN_TOPIC_OR_PARTITION
    assert client.fetch({0: 2}, topic_id=old_id)[0][0] == unknown
    broker.logs.create_topic(TOPIC, 2)
    if version >= 13:
        assert client.fetch({0: 2}, topic_id=old_id)[0][0] == unknown
    else:
        # the new log ends at 0: offset 2 is past it
        assert client.fetch({0: 2})[0][0] == OFFSET_OUT_OF_RANGE
        assert caught_up(client, {0: 0})[0] == (NONE, 0, 0, 0, None)


def test_a_deleted_topic_is_forgotten_by_the_next_fetch(broker):
    """A long-lived connection does not keep a deleted topic's answers (and its logs): the
    next fetch that uses the memo drops them, whichever topics it names."""
    client = Client(broker)
    broker.logs.create_topic("other", 1)
    caught_up(client, {0: 0, 1: 0})
    broker.logs.delete_topic(TOPIC)
    assert client.fetch({}, -1, None, ("other", {0: 0})) == {0: (NONE, 0, 0, 0, None)}
    assert not client.kept(0) and not client.kept(1) and not client.kept_whole()


def test_a_new_leader_epoch_fences_the_old_one(broker):
    client = Client(broker)
    client.produce(0, 1)
    partition = broker.replicas.partition(TOPIC, 0)
    epoch = partition.leader_epoch
    assert caught_up(client, {0: 1}, leader_epoch=epoch)[0] == (NONE, 1, 0, 0, None)
    partition.make_leader(epoch + 1, partition.isr, partition.replicas)
    assert client.fetch({0: 1}, leader_epoch=epoch)[0][0] == FENCED_LEADER_EPOCH
    assert caught_up(client, {0: 1}, leader_epoch=epoch + 1)[0] == (NONE, 1, 0, 0, None)
    # the epoch moved without a new leadership (a reassignment's state)
    partition.apply_state(partition.leader_id, epoch + 2, partition.isr, partition.replicas)
    assert client.fetch({0: 1}, leader_epoch=epoch + 1)[0][0] == FENCED_LEADER_EPOCH


def test_versions_before_flexible_ones_are_not_kept(broker):
    client = Client(broker, version=10)
    client.produce(0, 1)
    assert client.fetch({0: 1})[0] == (NONE, 1, 0, 0, None)
    assert not client.kept(0)


def test_a_partition_no_longer_led_here_is_read_again(broker):
    client = Client(broker)
    client.produce(0, 1)
    assert caught_up(client, {0: 1})[0] == (NONE, 1, 0, 0, None)
    partition = broker.replicas.partition(TOPIC, 0)
    partition.resign()
    # A v11+ consumer may read from a replica: answered as by a follower, from the log.
    assert client.fetch({0: 1})[0] == (NONE, 1, 0, 0, None)
    partition.make_leader(partition.leader_epoch + 1, partition.isr, partition.replicas)
    client.produce(0, 1)
    assert caught_up(client, {0: 2})[0] == (NONE, 2, 0, 0, None)


def test_a_high_watermark_moved_without_an_append_is_reported(broker):
    """Records appended while the high watermark waits (as for followers in a cluster): the
    kept answer stands until the high watermark moves, and then the records come."""
    client = Client(broker)
    client.produce(0, 1)
    log = broker.logs.get_log(TOPIC, 0)
    log.append(bytearray(raw.v2_batch([b"a", b"b"], timestamp=0)), leader_epoch=0)
    log.high_watermark = 1  # (the one node's append moved it to the log end)
    assert caught_up(client, {0: 1})[0] == (NONE, 1, 0, 0, None)
    log.high_watermark = 3
    answer = client.fetch({0: 1})[0]
    assert answer[:3] == (NONE, 3, 0) and answer[3] > 0


def test_a_committed_transaction_is_read_committed_at_once(broker):
    """read_committed at the last stable offset: nothing until the commit marker, then the
    transaction's records, though the high watermark does not move in between."""
    client = Client(broker, isolation_level=1)
    log = broker.logs.get_log(TOPIC, 0)
    transactional = RecordBatchBuilder(
        producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    transactional.append(0, None, b"t")
    log.append(transactional.build(), leader_epoch=0)
    log.append(bytearray(raw.v2_batch([b"a"], timestamp=0)), leader_epoch=0)
    log.high_watermark = 2  # the transaction's record and the one after it
    assert caught_up(client, {0: 0})[0] == (NONE, 2, 0, 0, [])
    log.append_marker(5, 0, True)
    log.high_watermark = 2  # unchanged: the marker is past it
    answer = client.fetch({0: 0})[0]
    assert answer[:3] == (NONE, 2, 0) and answer[3] > 0


def test_a_topic_named_again_further_on_gets_an_entry_each_time_as_in_kafka(broker):
    """Kafka's answer keeps the request's order and puts consecutive partitions of a topic
    in one entry: a topic named again after another gets a second entry, and each is kept
    on its own; named twice in a row, its partitions share one entry."""
    broker.logs.create_topic("other", 1)
    client = Client(broker)
    client.produce(0, 1)
    apart = ({0: 1}, -1, None, ("other", {0: 0}), {1: 0})
    for _ in range(2):  # read, then kept
        client.send_fetch(*apart)
        [frame] = responses(client.transport)
        assert client.entries(frame) == [(TOPIC, [0]), ("other", [0]), (TOPIC, [1])]
        assert client.read(frame)[1] == (NONE, 0, 0, 0, None)
    assert sum(1 for key in memo_of(client).topics if key[0] == TOPIC) == 2
    client.produce(1, 2)
    client.send_fetch(*apart)
    [frame] = responses(client.transport)
    assert client.entries(frame) == [(TOPIC, [0]), ("other", [0]), (TOPIC, [1])]
    answer = client.read(frame)
    assert answer[1][:3] == (NONE, 2, 0) and answer[1][3] > 0
    in_a_row = client.fetch({0: 1}, -1, None, {1: 2})
    assert in_a_row == {0: (NONE, 1, 0, 0, None), 1: (NONE, 2, 0, 0, None)}
    client.send_fetch({0: 1}, -1, None, {1: 2})
    [frame] = responses(client.transport)
    assert client.entries(frame) == [(TOPIC, [0, 1])]


def memo_of(client: Client) -> CaughtUpMemo:
    [memo] = [m for m in client.connection.handler_cache.values() if isinstance(m, CaughtUpMemo)]
    return memo


def test_a_waiting_fetch_wakes_on_a_record_in_a_kept_topic(broker):
    """A fetch that finds nothing waits on each kept topic as a whole (one purgatory key),
    wakes on a record in any of its partitions, and answers it beside the others' kept
    entries."""
    client, producer = Client(broker), Client(broker)
    client.produce(0, 1)
    assert caught_up(client, {0: 1, 1: 0}) == {0: (NONE, 1, 0, 0, None), 1: (NONE, 0, 0, 0, None)}
    client.send_fetch({0: 1, 1: 0}, max_wait_ms=500)
    assert responses(client.transport) == []
    assert broker.purgatory.waiting(("append", TOPIC)) == 1
    assert broker.purgatory.waiting(("append", TOPIC, 1)) == 0
    producer.produce(1, 2)
    [frame] = responses(client.transport)
    answer = client.read(frame)
    assert answer[0] == (NONE, 1, 0, 0, None)
    assert answer[1][:3] == (NONE, 2, 0) and answer[1][3] > 0
    assert broker.purgatory.waiting(("append", TOPIC)) == 0
    # the woken topic is kept again once caught up
    assert caught_up(client, {0: 1, 1: 2})[1] == (NONE, 2, 0, 0, None)


def test_a_waiting_fetch_answers_at_its_deadline_from_a_fresh_read(broker):
    """At the deadline every partition is read again, kept topics included: a log start
    moved while the fetch waited (no append, so no wake) is in the answer."""
    client = Client(broker)
    client.produce(0, 4)
    assert caught_up(client, {0: 4})[0] == (NONE, 4, 0, 0, None)
    client.send_fetch({0: 4}, max_wait_ms=500)
    assert responses(client.transport) == []
    broker.logs.get_log(TOPIC, 0).delete_records_before(3)
    broker.reactor.advance(0.6)
    [frame] = responses(client.transport)
    assert client.read(frame)[0] == (NONE, 4, 3, 0, None)


def test_a_kept_topic_denied_after_an_acl_change_answers_the_denial(tmp_path):
    """The topic's READ is checked on every fetch, kept topics included."""
    config = BrokerConfig.load(
        None,
        {
            "log.dirs": str(tmp_path),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
        },
    )
    instance = Broker(config, MemoryReactorClock())
    instance.start()
    try:
        instance.logs.create_topic(TOPIC, 2)
        client = Client(instance)
        client.produce(0, 1)
        assert caught_up(client, {0: 1, 1: 0})[0] == (NONE, 1, 0, 0, None)
        instance.security.authorizer.add(
            [
                AclBinding(
                    ResourceType.TOPIC,
                    TOPIC,
                    PatternType.LITERAL,
                    "User:ANONYMOUS",
                    "*",
                    Operation.READ,
                    Permission.DENY,
                )
            ]
        )
        answer = client.fetch({0: 1, 1: 0})
        assert [answer[p][0] for p in (0, 1)] == [TOPIC_AUTHORIZATION_FAILED] * 2
    finally:
        instance.logs.close()
