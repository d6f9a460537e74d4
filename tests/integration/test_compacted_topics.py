"""A compacted topic (``cleanup.policy`` with ``compact``) refuses records without a key, as
Kafka's LogValidator does: the whole batch fails with INVALID_RECORD, the response's
``record_errors`` (KIP-467) name the keyless records by their index in the batch, nothing of the
batch is written, and the other partitions of the same request are appended as usual."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.integration import raw
from wireserver.testing import KafkaWire

INVALID_RECORD = 87
CODECS = {"none": 0, "gzip": 1}


def keyed_batch(keys: list[bytes | None], compression: int = 0) -> bytes:
    """One v2 batch with a record per key (None: no key), values v0, v1, ..."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i, key in enumerate(keys):
        builder.append(i, timestamp=raw.BASE_TS + i, key=key, value=b"v%d" % i, headers=[])
    return bytes(builder.build())


def reason(topic: str, partition: int) -> str:
    return (
        f"Compacted topic cannot accept message without key in topic partition {topic}-{partition}"
    )


def create(wire: KafkaWire, topic: str, policy: str = "compact") -> None:
    wire.create_topic(topic, partitions=2, configs={"cleanup.policy": policy})
    raw.ensure_topic(wire, topic)


@pytest.mark.parametrize("codec", CODECS)
def test_keyless_records_fail_their_batch_with_record_errors(broker, topic, codec):
    with KafkaWire(broker.bootstrap_servers) as wire:
        create(wire, topic)
        response = wire.request(
            raw.produce(
                topic,
                {
                    0: keyed_batch([b"a", None, b"c", None, None, None], CODECS[codec]),
                    1: keyed_batch([b"x", b"y"], CODECS[codec]),
                },
            )
        )
        (topic_response,) = response.responses
        bad, good = sorted(topic_response.partition_responses, key=lambda p: p.index)
        why = reason(topic, 0)
        assert (bad.error_code, bad.base_offset, bad.log_start_offset) == (INVALID_RECORD, -1, 0)
        assert [(e.batch_index, e.batch_index_error_message) for e in bad.record_errors] == [
            (1, why),
            (3, why),
            (4, why),
            (5, why),
        ]
        assert bad.error_message == (
            "One or more records have been rejected due to 4 record errors in total, and only "
            "showing the first three errors at most: ["
            f"RecordError(batchIndex=1, message='{why}'), "
            f"RecordError(batchIndex=3, message='{why}'), "
            f"RecordError(batchIndex=4, message='{why}')]"
        )
        assert (good.error_code, good.base_offset, good.record_errors) == (0, 0, [])
        assert raw.fetched(wire.request(raw.fetch(topic, 0, 0))) == []
        assert [(r.key, r.value) for r in raw.fetched(wire.request(raw.fetch(topic, 1, 0)))] == [
            (b"x", b"v0"),
            (b"y", b"v1"),
        ]
        # The refused batch took no offsets; an empty key is a key.
        response = wire.request(raw.produce(topic, {0: keyed_batch([b"", b"k"])}))
        assert raw.produce_errors(response) == {0: 0}
        assert [r.key for r in raw.fetched(wire.request(raw.fetch(topic, 0, 0)))] == [b"", b"k"]


@pytest.mark.parametrize(
    "policy,error", [("compact", INVALID_RECORD), ("compact,delete", INVALID_RECORD), ("delete", 0)]
)
def test_only_compacted_topics_need_keys(broker, topic, policy, error):
    with KafkaWire(broker.bootstrap_servers) as wire:
        create(wire, topic, policy)
        response = wire.request(raw.produce(topic, {0: keyed_batch([None])}))
        assert raw.produce_errors(response) == {0: error}


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_producer_fails_the_keyless_record(broker, topic, codec):
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError, KafkaError

    with KafkaWire(broker.bootstrap_servers) as wire:
        create(wire, topic)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=500,
        compression_type=None if codec == "none" else codec,
    )
    try:
        # One batch for partition 0 (its middle record has no key), one for partition 1.
        futures = [producer.send(topic, key=k, value=b"v", partition=0) for k in (b"a", None, b"c")]
        other = producer.send(topic, key=b"x", value=b"v", partition=1)
        producer.flush(30)
        errors = [f.exception for f in futures]
        assert type(errors[1]) is InvalidRecordError
        assert reason(topic, 0) in str(errors[1])
        for e in (errors[0], errors[2]):  # failed as part of the batch, not as invalid
            assert type(e) is KafkaError and "part of a batch" in str(e)
        assert other.get(10).offset == 0
    finally:
        producer.close(5)
    with KafkaWire(broker.bootstrap_servers) as wire:
        assert raw.fetched(wire.request(raw.fetch(topic, 0, 0))) == []
        assert len(raw.fetched(wire.request(raw.fetch(topic, 1, 0)))) == 1


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_producer_fails_the_keyless_record(broker, topic, codec):
    from confluent_kafka import KafkaError, Producer

    with KafkaWire(broker.bootstrap_servers) as wire:
        create(wire, topic)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "linger.ms": 500,
            "compression.type": codec,
            "message.timeout.ms": 20000,
        }
    )
    reports: dict[bytes, object] = {}

    def delivered(err, msg):
        reports[msg.value()] = err.code() if err is not None else msg.offset()

    for value, key in ((b"a", b"a"), (b"b", None), (b"c", b"c")):
        producer.produce(topic, key=key, value=value, partition=0, on_delivery=delivered)
    producer.produce(topic, key=b"x", value=b"x", partition=1, on_delivery=delivered)
    assert producer.flush(30) == 0
    # librdkafka fails every record of the refused batch with the partition's error (as it
    # does against Kafka 4.1); partition 1's record is written.
    assert reports == {
        b"a": KafkaError.INVALID_RECORD,
        b"b": KafkaError.INVALID_RECORD,
        b"c": KafkaError.INVALID_RECORD,
        b"x": 0,
    }
    with KafkaWire(broker.bootstrap_servers) as wire:
        assert raw.fetched(wire.request(raw.fetch(topic, 0, 0))) == []
        assert [r.value for r in raw.fetched(wire.request(raw.fetch(topic, 1, 0)))] == [b"x"]
