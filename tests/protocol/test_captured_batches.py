"""Batches written by real producers (librdkafka through confluent-kafka, and kafka-python),
captured by a tiny broker, must parse, pass their CRC, give back exactly what was sent, and
survive the baseOffset patch with only those 8 bytes changed."""

from __future__ import annotations

import itertools
import logging
import time

import pytest

from tests.protocol.capture_broker import CaptureBroker, kafka_python_codecs
from wireserver.protocol.records import Codec, RecordBatch, iter_batches

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
_topics = itertools.count()


@pytest.fixture(scope="module")
def broker():
    with CaptureBroker() as b:
        yield b
    assert not b.errors, b.errors


def _messages(n: int = 8, allow_null_header_value: bool = True):
    """(key, value, headers, timestamp) tuples; values compress well so every codec is
    really used (kafka-python sends a batch uncompressed when compression does not help)."""
    base_ts = 1_700_000_000_000
    out = []
    for i in range(n):
        key = None if i == 3 else f"key-{i}".encode()
        value = None if i == 5 else (f"value-{i}-".encode() + b"abcdefgh" * 40)
        if i == 2:
            headers = []
        else:
            headers = [("h1", b"a"), ("trace-id", f"{i:08d}".encode()), ("empty", b"")]
            if allow_null_header_value and i == 4:
                headers.append(("null", None))
        out.append((key, value, headers, base_ts + i * 7 - (3 if i == 6 else 0)))
    return out


def _check_captured(broker: CaptureBroker, topic: str, codec: str, sent) -> list[RecordBatch]:
    captured = broker.records_for(topic)
    assert captured, "nothing captured"
    batches = []
    for c in captured:
        assert c.partition == 0
        batches.extend(iter_batches(memoryview(bytearray(c.records))))
    got = []
    for batch in batches:
        batch.validate(strict=True)
        assert batch.verify_crc()
        assert batch.magic == 2
        assert batch.compression == Codec[codec.upper()]
        assert batch.record_count == batch.last_offset_delta + 1
        assert not batch.is_control and not batch.is_transactional
        records = list(batch.records())
        assert len(records) == batch.record_count
        assert [r.offset - batch.base_offset for r in records] == list(range(len(records)))
        assert batch.max_timestamp == max(r.timestamp for r in records)
        got.extend((r.key, r.value, r.headers, r.timestamp) for r in records)

        original = bytes(batch.buffer)
        batch.set_base_offset(12345)
        patched = bytes(batch.buffer)
        assert patched[8:] == original[8:]
        assert patched[:8] == (12345).to_bytes(8, "big")
        assert batch.base_offset == 12345
        assert batch.verify_crc()
        assert [(r.key, r.value, r.headers) for r in batch.records()] == [
            (r.key, r.value, r.headers) for r in records
        ]
    assert got == [(k, v, list(h), ts) for k, v, h, ts in sent]
    return batches


def _wait(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.01)


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka(broker, codec, idempotent):
    import confluent_kafka

    topic = f"ck-{codec}-{next(_topics)}"
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "compression.type": codec,
            "enable.idempotence": idempotent,
            "linger.ms": 50,
            "message.timeout.ms": 10000,
            "socket.timeout.ms": 5000,
            "broker.address.family": "v4",
            "log.connection.close": False,
        },
        logger=logging.getLogger("librdkafka"),
    )
    sent = _messages()
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)

    for key, value, headers, ts in sent:
        producer.produce(
            topic, key=key, value=value, headers=headers, timestamp=ts, on_delivery=on_delivery
        )
    assert producer.flush(15) == 0
    assert errors == []
    del producer
    batches = _check_captured(broker, topic, codec, sent)
    for batch in batches:
        if idempotent:
            assert batch.producer_id >= 1000 and batch.producer_epoch == 0
            assert batch.base_sequence >= 0
        else:
            assert batch.producer_id == -1 and batch.base_sequence == -1


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python(broker, codec):
    from kafka import KafkaProducer

    topic = f"kp-{codec}-{next(_topics)}"
    sent = _messages(allow_null_header_value=False)  # kafka-python insists on bytes values
    with kafka_python_codecs():
        producer = KafkaProducer(
            bootstrap_servers=broker.bootstrap,
            compression_type=None if codec == "none" else codec,
            linger_ms=50,
            request_timeout_ms=5000,
            max_block_ms=10000,
            retries=1,
        )
        try:
            futures = [
                producer.send(topic, key=key, value=value, headers=headers, timestamp_ms=ts)
                for key, value, headers, ts in sent
            ]
            producer.flush(timeout=15)
            for f in futures:
                f.get(timeout=5)
        finally:
            producer.close(timeout=5)
    batches = _check_captured(broker, topic, codec, sent)
    for batch in batches:  # kafka-python is idempotent by default
        assert batch.producer_id >= 1000
        assert batch.base_sequence >= 0


def test_capture_broker_counts_offsets(broker):
    """Two flushes to one topic land as two batches with running base offsets answered."""
    import confluent_kafka

    topic = f"ck-twice-{next(_topics)}"
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "linger.ms": 0,
            "message.timeout.ms": 10000,
            "broker.address.family": "v4",
        }
    )
    offsets = []
    for i in range(2):
        producer.produce(
            topic, value=b"v%d" % i, on_delivery=lambda err, msg: offsets.append(msg.offset())
        )
        assert producer.flush(15) == 0
    assert offsets == [0, 1]
    _wait(lambda: len(broker.records_for(topic)) == 2)
