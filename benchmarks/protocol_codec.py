"""Protocol-layer micro-benchmark (issue: foundation).

1. Decode a ~1 MB ProduceRequest carrying 100 partitions (one ~10 KB batch each, as a client
   sends it), split each partition's records into batches, verify every CRC-32C and patch
   baseOffset / partitionLeaderEpoch in place — the work the produce path does per request.
2. Encode a FetchResponse of 100 partitions x 64 KB of records (header included, framed), with
   kafka-python's generated encoder and with the hand-written one the broker uses.

Run: python -m benchmarks.protocol_codec [--seconds 3]
Prints microseconds per operation and MB/s of request or response bytes.
"""

from __future__ import annotations

import argparse
import os
import time

from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.producer.produce import ProduceRequest

from wireserver.protocol.framing import FrameDecoder
from wireserver.protocol.messages import decode_request, encode_response, encode_response_chunks
from wireserver.protocol.records import Codec, RecordBatchBuilder, iter_batches
from wireserver.protocol.served import SERVED

PARTITIONS = 100


def make_batch(target_bytes: int, seed: int) -> bytes:
    builder = RecordBatchBuilder(compression=Codec.NONE)
    value = os.urandom(1000)
    size = 61
    i = 0
    while size < target_bytes:
        builder.append(1_700_000_000_000 + i, b"key-%d-%d" % (seed, i), value)
        size += 1020
        i += 1
    return bytes(builder.build())


def produce_frame() -> bytes:
    partition_class = ProduceRequest.TopicProduceData.PartitionProduceData
    partitions = [
        partition_class(index=p, records=make_batch(10_400, p)) for p in range(PARTITIONS)
    ]
    request = ProduceRequest(
        version=11,
        transactional_id=None,
        acks=-1,
        timeout_ms=30000,
        topic_data=[ProduceRequest.TopicProduceData(name="bench", partition_data=partitions)],
    )
    request.with_header(correlation_id=1, client_id="bench")
    return bytes(request.encode(header=True, framed=True))


def handle_produce(frame: memoryview) -> int:
    request = decode_request(frame, SERVED)
    next_offset = 0
    for topic in request.body.topic_data:
        for partition in topic.partition_data:
            buf = bytearray(partition.records)
            for batch in iter_batches(buf):
                if not batch.verify_crc():
                    raise AssertionError("bad CRC")
                batch.set_base_offset(next_offset)
                batch.set_partition_leader_epoch(0)
                next_offset += batch.record_count
    return next_offset


def fetch_response(records: bytes):
    spec = SERVED.get(1)
    topic_class = FetchResponse.FetchableTopicResponse
    partition_class = topic_class.PartitionData
    partitions = [
        partition_class(
            partition_index=p,
            error_code=0,
            high_watermark=1000,
            last_stable_offset=1000,
            log_start_offset=0,
            aborted_transactions=None,
            preferred_read_replica=-1,
            records=records,
        )
        for p in range(PARTITIONS)
    ]
    return spec, FetchResponse(
        version=16,
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[topic_class(topic="bench", partitions=partitions)],
    )


def timed(func, seconds: float) -> tuple[float, int]:
    func()  # warm up (compiles kafka-python's codecs)
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        func()
        count += 1
        now = time.perf_counter()
        if now >= deadline:
            return (now - start) / count, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()

    wire = produce_frame()
    frame = FrameDecoder().feed(wire)[0]
    per_op, runs = timed(lambda: handle_produce(frame), args.seconds)
    print(
        f"produce decode+CRC+patch: {len(wire) / 1e6:.2f} MB request, {PARTITIONS} partitions: "
        f"{per_op * 1e6:,.0f} us/op, {len(wire) / per_op / 1e6:,.0f} MB/s ({runs} runs)"
    )

    records = make_batch(64 * 1024, 7)[: 64 * 1024]
    spec, response = fetch_response(records)
    size = len(encode_response(spec, 16, 1, response))
    per_op, runs = timed(lambda: encode_response(spec, 16, 1, response), args.seconds)
    print(
        f"fetch response encode, kafka-python's encoder: {size / 1e6:.2f} MB response, "
        f"{PARTITIONS} x 64 KB: {per_op * 1e6:,.0f} us/op, {size / per_op / 1e6:,.0f} MB/s "
        f"({runs} runs)"
    )
    per_op, runs = timed(lambda: encode_response_chunks(spec, 16, 1, response), args.seconds)
    print(
        f"fetch response encode, the broker's chunked encoder (records passed through): "
        f"{per_op * 1e6:,.0f} us/op, {size / per_op / 1e6:,.0f} MB/s ({runs} runs)"
    )


if __name__ == "__main__":
    main()
