"""Hand-made requests for the raw-socket tests, built with kafka-python's message classes and
record batch builders (the client side, independent of the broker's own code)."""

from __future__ import annotations

import socket
import struct
import time

from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from wireserver.testing import KafkaWire

NONE = 0
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
UNSUPPORTED_VERSION = 35
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43

PRODUCE_VERSION = 9
FETCH_VERSION = 12
METADATA_VERSION = 12

# CreateTime for hand-made batches: an hour ago, fixed for the run. A date years back would
# be deleted by time retention (7 days) whenever the session broker's 5-minute check ran.
BASE_TS = (int(time.time()) // 3600 - 1) * 3600 * 1000


def v2_batch(
    values: list[bytes], compression: int = 0, key: bytes | None = None, timestamp: int = BASE_TS
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamp + i, key=key, value=value, headers=[])
    return bytes(builder.build())


def magic1_batch(values: list[bytes]) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 30)
    for i, value in enumerate(values):
        builder.append(i, timestamp=BASE_TS + i, key=None, value=value)
    return bytes(builder.build())


def with_bad_crc(batch: bytes) -> bytes:
    """The same batch with one byte of its records flipped, so its CRC-32C no longer holds."""
    data = bytearray(batch)
    data[-1] ^= 0xFF
    return bytes(data)


def metadata(topics: list[str] | None, auto_create: bool = True) -> MetadataRequest:
    entries = (
        None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
    )
    return MetadataRequest(
        version=METADATA_VERSION, topics=entries, allow_auto_topic_creation=auto_create
    )


def produce(
    topic: str, partitions: dict[int, bytes], acks: int = 1, timeout_ms: int = 10000
) -> ProduceRequest:
    topic_class = ProduceRequest.TopicProduceData
    partition_class = topic_class.PartitionProduceData
    data = [
        topic_class(
            name=topic,
            partition_data=[partition_class(index=p, records=r) for p, r in partitions.items()],
        )
    ]
    return ProduceRequest(
        version=PRODUCE_VERSION,
        transactional_id=None,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=data,
    )


def fetch(
    topic: str,
    partition: int,
    offset: int,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    partition_max_bytes: int = 1 << 20,
) -> FetchRequest:
    return fetch_many({topic: [partition]}, offset, max_wait_ms, min_bytes, partition_max_bytes)


def fetch_many(
    partitions: dict[str, list[int]],
    offset: int,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    partition_max_bytes: int = 1 << 20,
    isolation_level: int = 0,
) -> FetchRequest:
    """A sessionless Fetch of every listed partition of every topic from ``offset``, as a
    client without fetch sessions (librdkafka) sends them."""

    def partition_data(index: int):
        return FetchRequest.FetchTopic.FetchPartition(
            partition=index,
            current_leader_epoch=-1,
            fetch_offset=offset,
            last_fetched_epoch=-1,
            log_start_offset=-1,
            partition_max_bytes=partition_max_bytes,
        )

    return FetchRequest(
        version=FETCH_VERSION,
        cluster_id=None,
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max(1 << 24, partition_max_bytes),
        isolation_level=isolation_level,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(topic=topic, partitions=[partition_data(i) for i in indexes])
            for topic, indexes in partitions.items()
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def produce_errors(response) -> dict[int, int]:
    """{partition: error_code} of a ProduceResponse with one topic."""
    (topic,) = response.responses
    return {p.index: p.error_code for p in topic.partition_responses}


def fetched(response) -> list:
    """The records of a one-partition FetchResponse, as kafka-python decodes them."""
    (topic,) = response.responses
    (partition,) = topic.partitions
    assert partition.error_code == NONE, partition
    return records_of(partition.records or b"")


def records_of(data: bytes) -> list:
    records, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if pos + 12 + length > len(data):
            break  # a partial batch at the end of a fetch
        batch = DefaultRecordBatch(bytes(data[pos : pos + 12 + length]))
        records.extend(batch)
        pos += 12 + length
    return records


def batch_codecs(data: bytes) -> list[int]:
    """The compression codec (attributes & 7) of every v2 batch in ``data``."""
    codecs, pos = [], 0
    while pos + 23 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        (attributes,) = struct.unpack_from(">h", data, pos + 21)
        codecs.append(attributes & 7)
        pos += 12 + length
    return codecs


def ensure_topic(wire: KafkaWire, topic: str) -> None:
    """Auto-create ``topic`` through Metadata and wait until it has a leader."""
    deadline = time.monotonic() + 10
    while True:
        response = wire.request(metadata([topic]))
        (entry,) = response.topics
        if entry.error_code == NONE and entry.partitions:
            return
        assert time.monotonic() < deadline, entry
        time.sleep(0.02)


def connection_closed(sock: socket.socket, timeout: float = 5.0) -> bool:
    """True once the broker has closed ``sock`` (EOF or reset), False if it sent data or
    kept it open past ``timeout``."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(65536)
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return data == b""


def roundtrip(
    bootstrap: str, topic: str, partition: int = 0, wire: KafkaWire | None = None
) -> None:
    """Produce one record (acks=1) and fetch it back: proof the broker still serves."""
    own = wire is None
    wire = wire or KafkaWire(bootstrap)
    try:
        ensure_topic(wire, topic)
        value = f"alive-{time.monotonic_ns()}".encode()
        response = wire.request(produce(topic, {partition: v2_batch([value])}))
        (topic_response,) = response.responses
        (result,) = topic_response.partition_responses
        assert result.error_code == NONE, result
        records = fetched(wire.request(fetch(topic, partition, result.base_offset)))
        assert records and records[0].value == value
    finally:
        if own:
            wire.close()


def encode(wire: KafkaWire, request) -> bytes:
    """``request`` framed with ``wire``'s next correlation id, for tests that write several
    requests before reading an answer."""
    wire._correlation += 1
    request.with_header(correlation_id=wire._correlation, client_id="pipeline")
    return bytes(request.encode(header=True, framed=True))
