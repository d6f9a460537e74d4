"""Produce and consume throughput against a wireserver subprocess, with confluent-kafka
(librdkafka) as the client — the single-node broker issue's benchmark.

Run: python -m benchmarks.throughput [--records 200000] [--size 1024] [--acks 1]
Prints MB/s and records/s for produce (until every record is acknowledged) and for consuming
the whole log back from offset 0.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import confluent_kafka


def start_broker(data_dir: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wireserver.cli",
            "serve",
            "--override",
            f"log.dirs={data_dir}",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    match = re.search(r"PLAINTEXT://([\d.]+:\d+)", line)
    if not match:
        process.kill()
        raise SystemExit(f"broker did not start: {line!r}")
    return process, match.group(1)


def produce(bootstrap: str, topic: str, records: int, size: int, acks: str) -> float:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "enable.idempotence": False,
        }
    )
    value = os.urandom(size)
    failures = []

    def delivered(error, _message):
        if error is not None:
            failures.append(error)

    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    remaining = producer.flush(60)
    elapsed = time.perf_counter() - start
    if remaining or failures:
        raise SystemExit(f"produce failed: {remaining} unflushed, errors {failures[:3]}")
    return elapsed


def consume(bootstrap: str, topic: str, records: int) -> float:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    seen = 0
    start = time.perf_counter()
    deadline = start + 120
    while seen < records and time.perf_counter() < deadline:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if seen < records:
        raise SystemExit(f"consumed only {seen} of {records}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--acks", default="1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        process, bootstrap = start_broker(data_dir)
        try:
            megabytes = args.records * args.size / 1e6
            produce_s = produce(bootstrap, "bench", args.records, args.size, args.acks)
            print(
                f"produce {args.records} x {args.size} B, acks={args.acks}: "
                f"{megabytes / produce_s:,.1f} MB/s, {args.records / produce_s:,.0f} records/s"
            )
            consume_s = consume(bootstrap, "bench", args.records)
            print(
                f"consume {args.records} x {args.size} B: "
                f"{megabytes / consume_s:,.1f} MB/s, {args.records / consume_s:,.0f} records/s"
            )
        finally:
            process.terminate()
            process.wait(30)


if __name__ == "__main__":
    main()
