"""Fetch responses on a plain TCP listener send their records straight from the segment files
(``os.sendfile``, wireserver.zero_copy). What a client must see is unchanged: every byte in
place, responses in request order, however slowly the client reads, and the data that was
read even when its segments are deleted before the response has left."""

from __future__ import annotations

import socket

from tests.integration import raw
from tests.integration.raw import encode
from wireserver.testing import KafkaWire

BATCHES = 32
RECORDS_PER_BATCH = 8
VALUE_SIZE = 32 * 1024  # 32 batches of 256 KiB: an 8 MiB response


def produce_large(wire: KafkaWire, topic: str) -> list[bytes]:
    """Write 8 MiB to partition 0, batch by batch; returns the values in order."""
    raw.ensure_topic(wire, topic)
    values = []
    for b in range(BATCHES):
        batch = [
            b"%04d-%02d-" % (b, i) + bytes([b % 251]) * VALUE_SIZE for i in range(RECORDS_PER_BATCH)
        ]
        response = wire.request(raw.produce(topic, {0: raw.v2_batch(batch)}))
        assert raw.produce_errors(response) == {0: raw.NONE}
        values += batch
    return values


def small_window(broker) -> KafkaWire:
    """A connection with a fixed 64 KiB receive buffer (no autotuning): an 8 MiB answer cannot
    leave in one go, so the broker's sends stop at EAGAIN and resume when the client reads."""
    wire = KafkaWire(broker.bootstrap_servers)
    wire.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    return wire


def test_large_fetch_arrives_whole_and_in_order(broker, topic):
    """An 8 MiB Fetch between two Metadata requests on one connection: the three answers come
    back in order and the records are exactly those produced."""
    with KafkaWire(broker.bootstrap_servers) as producer:
        values = produce_large(producer, topic)
    with small_window(broker) as wire:
        requests = [
            raw.metadata([topic], auto_create=False),
            raw.fetch(topic, 0, 0, partition_max_bytes=64 << 20),
            raw.metadata([topic], auto_create=False),
        ]
        wire.send_raw(b"".join(encode(wire, r) for r in requests))
        first, fetched, last = [wire.read_response(r) for r in requests]  # correlation ids
        assert [r.value for r in raw.fetched(fetched)] == values
        assert first.topics[0].name == last.topics[0].name == topic
        raw.roundtrip(broker.bootstrap_servers, topic, wire=wire)


def test_fetch_answer_survives_deleting_the_topic(broker, topic):
    """The topic is deleted while most of an 8 MiB answer is still unsent: the client gets
    every record that was read (Kafka likewise deletes segment files only later)."""
    with KafkaWire(broker.bootstrap_servers) as admin:
        values = produce_large(admin, topic)
        with small_window(broker) as wire:
            request = raw.fetch(topic, 0, 0, partition_max_bytes=64 << 20)
            wire.send_raw(encode(wire, request))
            # The first bytes of the answer are here: the broker has read the partition.
            assert len(wire.sock.recv(4, socket.MSG_PEEK | socket.MSG_WAITALL)) == 4
            admin.delete_topics([topic])
            assert topic not in admin.topics()
            assert [r.value for r in raw.fetched(wire.read_response(request))] == values


def test_answers_sent_at_the_turns_end_keep_their_order_when_the_socket_fills(broker, topic):
    """Answers without file data go out at the end of the reactor's turn, straight to the
    socket, and what the socket does not take through the transport. 400 pipelined requests
    (Metadata, with a Fetch carrying file data every 50th) to a client that reads nothing until
    all are sent, through a 64 KiB window: every answer arrives, in request order, whole."""
    with KafkaWire(broker.bootstrap_servers) as producer:
        values = produce_large(producer, topic)
    with small_window(broker) as wire:
        requests = [
            raw.fetch(topic, 0, 0, partition_max_bytes=1 << 20)
            if i % 50 == 25
            else raw.metadata([topic], auto_create=False)
            for i in range(400)
        ]
        wire.send_raw(b"".join(encode(wire, r) for r in requests))
        for i, request in enumerate(requests):
            answer = wire.read_response(request)  # checks the correlation id
            if i % 50 == 25:
                assert [r.value for r in raw.fetched(answer)] == values[: len(raw.fetched(answer))]
                assert raw.fetched(answer)
            else:
                assert answer.topics[0].name == topic
