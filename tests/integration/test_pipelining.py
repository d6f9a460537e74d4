"""Requests written back to back on one socket are answered in request order, whatever order
their handlers finish in; acks=0 produce answers nothing and holds nothing up. Fetch long-poll
returns as soon as data arrives, and after max_wait_ms when none does."""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time

from tests.integration import raw
from tests.integration.raw import encode
from wireserver.testing import EmbeddedBroker, KafkaWire


def test_responses_leave_in_request_order(broker, topic):
    """A long-poll Fetch first, then Metadata requests: the Metadata answers are ready at once
    but wait behind the Fetch, which completes when another client produces."""
    with (
        KafkaWire(broker.bootstrap_servers) as wire,
        KafkaWire(broker.bootstrap_servers) as producer,
    ):
        raw.ensure_topic(wire, topic)
        requests = [raw.fetch(topic, 0, 0, max_wait_ms=10000, min_bytes=1)]
        requests += [raw.metadata([topic], auto_create=False) for _ in range(10)]
        wire.send_raw(b"".join(encode(wire, r) for r in requests))
        time.sleep(0.2)  # let the broker read them all; the Fetch is now parked
        response = producer.request(raw.produce(topic, {0: raw.v2_batch([b"wake up"])}))
        assert raw.produce_errors(response) == {0: raw.NONE}
        started = time.monotonic()
        responses = [wire.read_response(r) for r in requests]  # checks correlation ids
        assert time.monotonic() - started < 5, "the Fetch waited for max_wait_ms"
        assert [r.value for r in raw.fetched(responses[0])] == [b"wake up"]
        assert all(r.topics[0].name == topic for r in responses[1:])


def test_many_pipelined_requests(broker, topic):
    """A few hundred mixed requests in one write, answered one by one in order."""
    with KafkaWire(broker.bootstrap_servers) as wire:
        raw.ensure_topic(wire, topic)
        requests = []
        for i in range(300):
            if i % 3 == 0:
                requests.append(raw.produce(topic, {i % 2: raw.v2_batch([b"%d" % i])}))
            elif i % 3 == 1:
                requests.append(raw.fetch(topic, i % 2, 0, max_wait_ms=0, min_bytes=0))
            else:
                requests.append(raw.metadata([topic], auto_create=False))
        wire.send_raw(b"".join(encode(wire, r) for r in requests))
        for request in requests:
            wire.read_response(request)
        values = [r.value for r in raw.fetched(wire.request(raw.fetch(topic, 0, 0)))]
        assert values == [b"%d" % i for i in range(0, 300, 3) if i % 2 == 0]


def test_acks_0_produce_answers_nothing(broker, topic):
    with KafkaWire(broker.bootstrap_servers) as wire:
        raw.ensure_topic(wire, topic)
        fire_and_forget = raw.produce(topic, {0: raw.v2_batch([b"acks=0"])}, acks=0)
        follow_up = raw.metadata([topic], auto_create=False)
        wire.send_raw(encode(wire, fire_and_forget) + encode(wire, follow_up))
        # The very next frame is the Metadata response (read_response checks the id).
        assert wire.read_response(follow_up).topics[0].name == topic
        deadline = time.monotonic() + 5
        while True:
            records = raw.fetched(wire.request(raw.fetch(topic, 0, 0)))
            if records:
                break
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert [r.value for r in records] == [b"acks=0"]


def test_long_poll_returns_when_data_arrives(broker, topic):
    with KafkaWire(broker.bootstrap_servers) as wire:
        raw.ensure_topic(wire, topic)
        produced_at: list[float] = []

        def produce_soon():
            time.sleep(0.3)
            with KafkaWire(broker.bootstrap_servers) as producer:
                produced_at.append(time.monotonic())
                producer.request(raw.produce(topic, {0: raw.v2_batch([b"late"])}))

        thread = threading.Thread(target=produce_soon)
        started = time.monotonic()
        thread.start()
        response = wire.request(raw.fetch(topic, 0, 0, max_wait_ms=5000, min_bytes=1))
        returned = time.monotonic()
        thread.join()
        assert [r.value for r in raw.fetched(response)] == [b"late"]
        assert produced_at and returned >= produced_at[0]
        assert returned - started < 4.5, "returned only when max_wait_ms ran out"


def test_long_poll_without_data_waits_max_wait(broker, topic):
    with KafkaWire(broker.bootstrap_servers) as wire:
        raw.ensure_topic(wire, topic)
        started = time.monotonic()
        response = wire.request(raw.fetch(topic, 0, 0, max_wait_ms=1000, min_bytes=1))
        elapsed = time.monotonic() - started
        assert raw.fetched(response) == []
        assert 0.9 <= elapsed < 4, elapsed


def test_long_poll_over_many_partitions_answers_the_one_appended_to(broker, topic):
    """A consumer's long poll over eight partitions, all caught up, is woken by an append to
    one of them: that partition comes with its records and new high watermark, the others
    empty at theirs, well before max_wait_ms."""
    with (
        KafkaWire(broker.bootstrap_servers) as wire,
        KafkaWire(broker.bootstrap_servers) as producer,
    ):
        wire.create_topic(topic, 8)
        for partition in range(8):
            response = producer.request(raw.produce(topic, {partition: raw.v2_batch([b"first"])}))
            assert raw.produce_errors(response) == {partition: raw.NONE}
        request = raw.fetch_many({topic: list(range(8))}, 1, max_wait_ms=20000)
        wire.send_raw(encode(wire, request))
        time.sleep(0.2)  # the Fetch is parked now
        started = time.monotonic()
        batch = raw.v2_batch([b"second", b"third"])
        assert raw.produce_errors(producer.request(raw.produce(topic, {5: batch}))) == {5: raw.NONE}
        response = wire.read_response(request)
        assert time.monotonic() - started < 10, "the Fetch waited for max_wait_ms"
        (answer,) = response.responses
        by_index = {p.partition_index: p for p in answer.partitions}
        assert sorted(by_index) == list(range(8))
        assert [r.value for r in raw.records_of(by_index[5].records)] == [b"second", b"third"]
        assert {i: p.high_watermark for i, p in by_index.items()} == {
            i: 3 if i == 5 else 1 for i in range(8)
        }
        assert all(not by_index[i].records for i in range(8) if i != 5)
        assert all(p.error_code == raw.NONE for p in answer.partitions)


def test_long_poll_for_min_bytes_gathers_appends_to_several_partitions(broker, topic):
    """With min_bytes above one batch, an append to one partition is not enough: the Fetch
    waits on, and answers when a second partition's append brings the total up, with the
    records of both."""
    with (
        KafkaWire(broker.bootstrap_servers) as wire,
        KafkaWire(broker.bootstrap_servers) as producer,
    ):
        wire.create_topic(topic, 4)
        one = raw.v2_batch([b"x" * 50])
        request = raw.fetch_many({topic: list(range(4))}, 0, max_wait_ms=20000)
        request.min_bytes = len(one) + 1
        wire.send_raw(encode(wire, request))
        time.sleep(0.2)
        assert raw.produce_errors(producer.request(raw.produce(topic, {1: one}))) == {1: raw.NONE}
        time.sleep(0.3)  # woken, not enough bytes: parked again
        started = time.monotonic()
        assert raw.produce_errors(producer.request(raw.produce(topic, {3: one}))) == {3: raw.NONE}
        response = wire.read_response(request)
        assert time.monotonic() - started < 10, "the Fetch waited for max_wait_ms"
        (answer,) = response.responses
        got = {p.partition_index: len(raw.records_of(p.records or b"")) for p in answer.partitions}
        assert got == {0: 0, 1: 1, 2: 0, 3: 1}


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def write_without_reading(bootstrap: str, topic: str, ssl_context=None):
    """Four batches of 900 KB in partition 0, then a client that writes 200 Fetch requests
    for the first of them and reads nothing for a second. Returns how many more descriptors
    and resident bytes this process (broker included) held then, and the answers the client
    reads after that."""
    with KafkaWire(bootstrap, ssl_context=ssl_context) as producer:
        raw.ensure_topic(producer, topic)
        for b in range(4):
            batch = raw.v2_batch([bytes([65 + b]) * 1000] * 900)
            assert raw.produce_errors(producer.request(raw.produce(topic, {0: batch}))) == {
                0: raw.NONE
            }
    descriptors, resident = open_descriptors(), resident_bytes()
    with KafkaWire(bootstrap, ssl_context=ssl_context) as reader:
        reader.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        requests = [raw.fetch(topic, 0, 0, partition_max_bytes=1 << 20) for _ in range(200)]
        reader.send_raw(b"".join(encode(reader, r) for r in requests))
        time.sleep(1)  # time to read every request and answer them all, had it done so
        held = (open_descriptors() - descriptors, resident_bytes() - resident)
        with KafkaWire(bootstrap, ssl_context=ssl_context) as other:
            raw.roundtrip(bootstrap, topic, partition=1, wire=other)
        answers = [reader.read_response(r) for r in requests]  # in order, by correlation id
    for answer in answers:
        records = raw.fetched(answer)
        assert len(records) == 900 and records[0].value == b"A" * 1000
    return held, open_descriptors() - descriptors


def test_a_client_that_does_not_read_its_answers_holds_up_only_itself(broker, topic):
    """A client writes 200 Fetch requests of about 1 MB each and reads nothing: the broker
    (in this process) handles no further request of it while an answer waits to be sent, as
    Kafka reads nothing from a channel whose response is being sent, instead of answering
    them all with a descriptor for each answer's file region (over 200 more before). Other
    clients are served meanwhile; when the client reads, every answer comes, in order."""
    (descriptors, _), after = write_without_reading(broker.bootstrap_servers, topic)
    assert descriptors < 20, f"{descriptors} more descriptors while the answers waited"
    assert after <= 2


def test_a_client_that_does_not_read_its_answers_over_tls_holds_up_only_itself():
    """The same over TLS, where answers are bytes in the transport's buffer: the broker stops
    once that buffer is full, instead of holding all 200 answers (180 MB) in memory."""
    with EmbeddedBroker(tls=True, overrides={"num.partitions": 2}) as tls_broker:
        context = ssl.create_default_context(cafile=tls_broker.ca_path)
        (_, resident), _ = write_without_reading(
            tls_broker.bootstrap_servers, "no-reader", ssl_context=context
        )
    assert resident < 60 << 20, f"{resident >> 20} MiB more while the answers waited"
