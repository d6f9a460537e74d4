"""Fetch sessions (KIP-227) with stock clients over real sockets: kafka-python's consumer,
which keeps an incremental session per broker, is never refused a session epoch (it was on
every other fetch); a session driven step by step is answered as Kafka 4.1.1 answers (the
compat scenario ``fetch-session-rules`` compares the two live); a full session cache answers
without a session and consumers carry on."""

from __future__ import annotations

import logging
import time

from kafka import KafkaConsumer, KafkaProducer

from compat_tests.scenarios_fetch import SessionClient, session_rules
from wireserver.testing import EmbeddedBroker, KafkaWire

REFUSED = "was unable to process the fetch request"
SHARD_IDS = (2**31 - 1) // 8  # session ids per shard of Kafka's cache
INCREMENTAL = "sent an incremental fetch response for session"

EMPTY = {"error": "NO_ERROR", "partitions": [], "session": "s1"}
BOTH_EMPTY = [[0, "NO_ERROR", "empty"], [1, "NO_ERROR", "empty"]]


def refused(session: str | int = 0, error: str = "INVALID_FETCH_SESSION_EPOCH") -> dict:
    return {"error": error, "partitions": [], "session": session}


def answered(session: str | int, partitions: list | None = None) -> dict:
    return {"error": "NO_ERROR", "partitions": partitions or [], "session": session}


#: What Kafka 4.1.1 answers to each step of ``session_rules`` (recorded from the compat run).
KAFKA_ANSWERS = {
    "open": answered("s1", BOTH_EMPTY),
    "incremental-1": answered("s1"),
    "repeat-epoch-1": refused(),
    "epoch-2-after-refusal": answered("s1"),
    "epoch-too-high": refused(),
    "unknown-session": refused(error="FETCH_SESSION_ID_NOT_FOUND"),
    "epoch-4-while-3-waits": answered("s1"),
    "epoch-3-when-it-returns": refused("s1"),
    "epoch-5": answered("s1"),
    "epoch-6-with-topic-ids": refused(error="FETCH_SESSION_TOPIC_ID_ERROR"),
    "epoch-6-with-names": answered("s1"),
    "reopen": answered("s2", BOTH_EMPTY),
    "old-session-after-reopen": refused(error="FETCH_SESSION_ID_NOT_FOUND"),
    "forget-all": answered(0),
    "after-forget-all": refused(error="FETCH_SESSION_ID_NOT_FOUND"),
    "open-3": answered("s3", BOTH_EMPTY),
    "close": answered(0, BOTH_EMPTY),
    "after-close": refused(error="FETCH_SESSION_ID_NOT_FOUND"),
    "open-with-topic-ids": answered("s4", BOTH_EMPTY),
    "continue-with-names": refused(error="FETCH_SESSION_TOPIC_ID_ERROR"),
    "continue-with-topic-ids": answered("s4"),
    "rotation-open": answered("s5", [[0, "NO_ERROR", "records"], [1, "NO_ERROR", "empty"]]),
    "rotation-1": answered("s5", [[0, "NO_ERROR", "records"]]),
    "rotation-2": answered("s5", [[1, "NO_ERROR", "records"]]),
    "rotation-3": answered("s5", [[0, "NO_ERROR", "records"]]),
}


def test_a_session_is_answered_step_by_step_as_kafka_answers(broker):
    assert session_rules(broker.bootstrap_servers) == KAFKA_ANSWERS


def consume_in_rounds(bootstrap: str, topic: str, rounds: int = 4, per_round: int = 10) -> list:
    """Produce ``per_round`` records, read them with one kafka-python consumer (long polls and
    incremental fetches in between), ``rounds`` times. The values read, in order per round."""
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        group_id=f"{topic}-group",
        fetch_max_wait_ms=100,
    )
    read: list = []
    try:
        for round_ in range(rounds):
            for i in range(per_round):
                producer.send(topic, f"r{round_}-{i}".encode())
            producer.flush()
            deadline = time.monotonic() + 30
            while len(read) < (round_ + 1) * per_round and time.monotonic() < deadline:
                for records in consumer.poll(200).values():
                    read.extend(r.value.decode() for r in records)
            for _ in range(3):  # idle fetches too: nothing new, the session carries on
                consumer.poll(150)
    finally:
        consumer.close()
        producer.close()
    return read


def test_kafka_python_consumer_is_never_refused_its_session_epoch(broker, topic, caplog):
    caplog.set_level(logging.DEBUG, logger="kafka.consumer.fetcher")
    read = consume_in_rounds(broker.bootstrap_servers, topic)
    assert sorted(read) == sorted(f"r{r}-{i}" for r in range(4) for i in range(10))
    messages = [record.getMessage() for record in caplog.records]
    assert [m for m in messages if REFUSED in m] == []
    assert sum(INCREMENTAL in m for m in messages) >= 10  # it did fetch incrementally


def test_a_full_session_cache_answers_without_a_session_and_consumers_carry_on(caplog):
    """8 slots: one per shard. Eight sessions fill the cache, one per shard in turn; the next
    full fetch with epoch 0 is answered without a session (all eight are young) and the eight
    stay open, as Kafka 4.1.1 answers (checked by hand with the same steps and setting); a
    kafka-python consumer then fetches without a session, unrefused."""
    slots = {"max.incremental.fetch.session.cache.slots": 8, "num.partitions": 2}
    with EmbeddedBroker("thread", overrides=slots) as broker:
        bootstrap = broker.bootstrap_servers
        with KafkaWire(bootstrap) as wire:
            wire.create_topic("full-cache", partitions=2)
        client = SessionClient(bootstrap, "full-cache", None)
        opened = [client.fetch(0, 0, partitions={0: 0, 1: 0})[0] for _ in range(8)]
        assert [sid // SHARD_IDS for sid in opened] == list(range(8))  # one per shard, in turn
        assert client.fetch(0, 0, partitions={0: 0, 1: 0})[1] == answered(0, BOTH_EMPTY)
        caplog.set_level(logging.INFO, logger="kafka.consumer.fetcher")
        assert len(consume_in_rounds(bootstrap, "full-cache", rounds=2)) == 20
        assert [r for r in caplog.records if REFUSED in r.getMessage()] == []
        assert all(client.fetch(sid, 1)[1]["error"] == "NO_ERROR" for sid in opened)
