"""confluent-kafka (librdkafka) load generator for ``benchmarks.compare``.

It runs as its own process, so the broker and the client can be pinned to separate cores,
and prints one JSON object on its last stdout line. Every sub-command works against any
bootstrap address (Apache Kafka or wireserver) with the same client settings.

    python -m benchmarks.rdkafka_load produce  --bootstrap H:P --topic T --partitions 8 \\
        --records 200000 --size 1024 --acks all --reps 3 --warmup 20000 [--replication-factor 3] \\
        [--keys 10000]
    python -m benchmarks.rdkafka_load consume  --bootstrap H:P --topic T --reps 3 [--share 0/2]
    python -m benchmarks.rdkafka_load latency  --bootstrap H:P --topic T --rate 5000 --seconds 10
    python -m benchmarks.rdkafka_load e2e      --bootstrap H:P --topic T --rate 1000 --seconds 10
    python -m benchmarks.rdkafka_load join     --bootstrap H:P --topic T --reps 5

Figures: produce and consume time the whole transfer (produce: first ``produce()`` until
``flush()`` returns, i.e. every record acknowledged); MB is MiB of payload (values only), as
Kafka's perf tools count it. Latencies are in milliseconds. ``--start-at EPOCH`` (produce,
consume) holds the timed part until that wall-clock time, so that several processes started
together (``benchmarks.scaling_cores``) load the broker at once; each repetition then also
reports its wall-clock ``started`` and ``ended``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import struct
import sys
import threading
import time
import uuid

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic

#: Producer settings shared by every produce workload (librdkafka defaults otherwise:
#: linger.ms=5, no compression). Idempotence is off, as it is by default in librdkafka.
PRODUCER_BASE = {
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 1_000_000,
    "enable.idempotence": False,
    "compression.type": "none",
}
#: The latency workloads use a short linger so that batching adds at most 1 ms.
LATENCY_LINGER_MS = 1
#: Consumer settings for reading a full log: large fetches, no group commits.
CONSUMER_BASE = {
    "enable.auto.commit": False,
    "fetch.max.bytes": 52_428_800,
    "max.partition.fetch.bytes": 10_485_760,
    "auto.offset.reset": "earliest",
}
#: For reading a full log as fast as the broker serves it. librdkafka stops fetching a
#: partition while more than ``queued.min.messages`` (100k) records wait in its queue, and then
#: looks again only after ``fetch.queue.backoff.ms`` (default 1000). Reading 100 B records,
#: the queue passes 100k within one fetch, so with the default every run was whole idle seconds
#: of the client's (about 280k records/s against Kafka and wireserver alike) rather than the
#: broker's speed. The same settings go to both brokers.
DRAIN = {"fetch.queue.backoff.ms": 1}
_STAMP = struct.Struct(">q")


def ensure_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
    """Create ``topic``; an existing topic is fine."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor)],
        operation_timeout=30,
    )
    try:
        futures[topic].result(60)
    except confluent_kafka.KafkaException as exc:
        if exc.args[0].code() != confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    # Wait until the metadata shows every partition with a leader.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) == partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return
        time.sleep(0.05)
    raise SystemExit(f"topic {topic} has no leaders after 30 s")


def _producer(bootstrap: str, acks: str, **extra) -> confluent_kafka.Producer:
    return confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "acks": acks, **PRODUCER_BASE, **extra}
    )


def _produce_batch(
    producer: confluent_kafka.Producer,
    topic: str,
    count: int,
    value: bytes,
    failures: list,
    keys: list[bytes | None] | None = None,
) -> float:
    """Send ``count`` records of ``value``; their keys cycle through ``keys`` (none: no key)."""

    def delivered(error, _message):
        if error is not None:
            failures.append(str(error))

    produce = producer.produce
    poll = producer.poll
    start = time.perf_counter()
    for i, key in enumerate(itertools.islice(itertools.cycle(keys or [None]), count)):
        while True:
            try:
                produce(topic, value, key, on_delivery=delivered)
                break
            except BufferError:
                poll(0.005)
        if i & 1023 == 0:
            poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - start
    if remaining:
        failures.append(f"{remaining} records not acknowledged after 120 s")
    return elapsed


def wait_until(epoch: float) -> None:
    """Sleep until the wall-clock time ``epoch`` (0: not at all)."""
    time.sleep(max(0.0, epoch - time.time()))


def cmd_produce(args) -> dict:
    ensure_topic(args.bootstrap, args.topic, args.partitions, args.replication_factor)
    producer = _producer(
        args.bootstrap,
        args.acks,
        **{"compression.type": args.compression, "batch.size": args.batch_size},
    )
    value = os.urandom(args.size)
    keys = [b"key-%d" % k for k in range(args.keys)] if args.keys else None
    failures: list = []
    if args.warmup:
        _produce_batch(producer, args.topic, args.warmup, value, failures, keys)
    wait_until(args.start_at)
    reps = []
    for _ in range(args.reps):
        started = time.time()
        seconds = _produce_batch(producer, args.topic, args.records, value, failures, keys)
        reps.append(
            {
                "seconds": seconds,
                "records": args.records,
                "bytes": args.records * args.size,
                "started": started,
                "ended": time.time(),
            }
        )
    if failures:
        return {"error": f"{len(failures)} delivery failures, first: {failures[0]}"}
    return {"reps": reps}


def _partitions(bootstrap: str, topic: str) -> list[int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    return sorted(meta.partitions)


def cmd_consume(args) -> dict:
    """Read the whole topic from offset 0 (no group: explicit assignment), ``reps`` times;
    with ``--share I/K`` only the partitions ``p`` with ``p % K == I``."""
    parts = _partitions(args.bootstrap, args.topic)
    if args.share:
        index, count = (int(n) for n in args.share.split("/"))
        parts = [p for p in parts if p % count == index]
    probe = confluent_kafka.Consumer(
        {"bootstrap.servers": args.bootstrap, "group.id": "bench-probe"}
    )
    total = 0
    for p in parts:
        low, high = probe.get_watermark_offsets(
            confluent_kafka.TopicPartition(args.topic, p), timeout=10
        )
        total += high - low
    probe.close()
    if args.max_records:
        total = min(total, args.max_records)
    wait_until(args.start_at)
    reps = []
    for _ in range(args.reps + (1 if args.warmup else 0)):
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": args.bootstrap,
                "group.id": f"bench-{uuid.uuid4().hex}",
                **CONSUMER_BASE,
                **DRAIN,
            }
        )
        consumer.assign(
            [
                confluent_kafka.TopicPartition(args.topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in parts
            ]
        )
        seen = nbytes = 0
        started = time.time()
        start = time.perf_counter()
        deadline = start + args.deadline
        while seen < total and time.perf_counter() < deadline:
            # consume() waits for the full count or the timeout: never ask for more than is left.
            for message in consumer.consume(min(10_000, total - seen), 1.0):
                if message.error() is None:
                    seen += 1
                    nbytes += len(message.value())
        elapsed = time.perf_counter() - start
        consumer.close()
        if seen < total:
            return {"error": f"consumed {seen} of {total} records in {args.deadline:.0f} s"}
        reps.append(
            {
                "seconds": elapsed,
                "records": seen,
                "bytes": nbytes,
                "started": started,
                "ended": started + elapsed,
            }
        )
    if args.warmup:
        reps = reps[1:]
    return {"reps": reps}


def _percentiles(values: list[float]) -> dict:
    values = sorted(values)
    if not values:
        return {"count": 0}

    def pct(q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))]

    return {
        "count": len(values),
        "p50": pct(0.50),
        "p99": pct(0.99),
        "p999": pct(0.999),
        "max": values[-1],
    }


def _paced(rate: int, seconds: float, send) -> int:
    """Call ``send(i)`` ``rate`` times a second for ``seconds``; returns how many were sent."""
    count = int(rate * seconds)
    interval = 1.0 / rate
    start = time.perf_counter()
    for i in range(count):
        due = start + i * interval
        while True:
            ahead = due - time.perf_counter()
            if ahead <= 0:
                break
            time.sleep(ahead if ahead > 0.0005 else 0)
        send(i)
    return count


def cmd_latency(args) -> dict:
    """Produce at a fixed rate; latency = ``produce()`` call to delivery report."""
    ensure_topic(args.bootstrap, args.topic, args.partitions)
    producer = _producer(args.bootstrap, args.acks, **{"linger.ms": LATENCY_LINGER_MS})
    padding = os.urandom(max(0, args.size - _STAMP.size))
    latencies: list[float] = []
    failures: list = []
    warmup_count = int(args.rate * args.warmup_seconds)

    def delivered(error, message):
        now = time.perf_counter_ns()
        if error is not None:
            failures.append(str(error))
            return
        (sent,) = _STAMP.unpack_from(message.value())
        if message.key() != b"w":
            latencies.append((now - sent) / 1e6)

    def send(i: int) -> None:
        key = b"w" if i < warmup_count else None
        while True:
            try:
                producer.produce(
                    args.topic,
                    _STAMP.pack(time.perf_counter_ns()) + padding,
                    key=key,
                    on_delivery=delivered,
                )
                break
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)

    _paced(args.rate, args.seconds + args.warmup_seconds, send)
    producer.flush(60)
    if failures:
        return {"error": f"{len(failures)} delivery failures, first: {failures[0]}"}
    return _percentiles(latencies)


def cmd_e2e(args) -> dict:
    """Produce at a fixed rate while a consumer (assigned from the end) reads; latency =
    ``produce()`` call to the record coming out of ``consume()``, same process clock."""
    ensure_topic(args.bootstrap, args.topic, args.partitions)
    parts = list(range(args.partitions))
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": f"bench-e2e-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign(
        [confluent_kafka.TopicPartition(args.topic, p, confluent_kafka.OFFSET_END) for p in parts]
    )
    producer = _producer(args.bootstrap, args.acks, **{"linger.ms": LATENCY_LINGER_MS})
    padding = os.urandom(max(0, args.size - _STAMP.size))
    warmup_count = int(args.rate * args.warmup_seconds)
    total = int(args.rate * (args.seconds + args.warmup_seconds))
    latencies: list[float] = []
    received = [0]
    done = threading.Event()

    def consume_loop() -> None:
        while not done.is_set():
            message = consumer.poll(0.05)  # returns as soon as one record is there
            now = time.perf_counter_ns()
            if message is None or message.error() is not None:
                continue
            received[0] += 1
            (sent,) = _STAMP.unpack_from(message.value())
            if message.key() != b"w":
                latencies.append((now - sent) / 1e6)

    # Let the consumer get its (end) offsets before the first record is sent.
    thread = threading.Thread(target=consume_loop, daemon=True)
    thread.start()
    time.sleep(1.0)

    def send(i: int) -> None:
        key = b"w" if i < warmup_count else None
        while True:
            try:
                producer.produce(args.topic, _STAMP.pack(time.perf_counter_ns()) + padding, key=key)
                break
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)

    _paced(args.rate, args.seconds + args.warmup_seconds, send)
    producer.flush(60)
    deadline = time.monotonic() + 30
    while received[0] < total and time.monotonic() < deadline:
        time.sleep(0.05)
    done.set()
    thread.join(5)
    consumer.close()
    result = _percentiles(latencies)
    if received[0] < total:
        result["error"] = f"received {received[0]} of {total} records"
    return result


def cmd_join(args) -> dict:
    """Time for a consumer with a fresh group to get its assignment: from constructing the
    Consumer (bootstrap included) to ``on_assign``."""
    reps = []
    for rep in range(args.reps + 1):  # the first is a warm-up
        assigned = threading.Event()
        start = time.perf_counter()
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": args.bootstrap,
                "group.id": f"bench-join-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "session.timeout.ms": 10000,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([args.topic], on_assign=lambda c, p, done=assigned: done.set())
        deadline = start + args.timeout
        while not assigned.is_set() and time.perf_counter() < deadline:
            consumer.poll(0.005)
        elapsed = time.perf_counter() - start
        consumer.close()
        if not assigned.is_set():
            return {"error": f"no assignment within {args.timeout} s"}
        if rep:
            reps.append(elapsed * 1000)
    return {"ms": reps}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.rdkafka_load", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap", required=True)
    common.add_argument("--topic", required=True)
    common.add_argument("--partitions", type=int, default=1)
    common.add_argument("--size", type=int, default=1024)
    common.add_argument("--acks", default="1")
    common.add_argument(
        "--start-at", type=float, default=0.0, help="wall-clock time to start timing at"
    )
    p = sub.add_parser("produce", parents=[common])
    p.add_argument("--records", type=int, required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=0, help="records sent before the timed reps")
    p.add_argument("--replication-factor", type=int, default=1)
    p.add_argument(
        "--keys", type=int, default=0, help="keys cycle over this many (0: records have none)"
    )
    p.add_argument("--compression", default="none", help="none, gzip, snappy, lz4 or zstd")
    p.add_argument(
        "--batch-size",
        type=int,
        default=PRODUCER_BASE["batch.size"],
        help="librdkafka batch.size: the most bytes of records a batch holds",
    )
    c = sub.add_parser("consume", parents=[common])
    c.add_argument("--reps", type=int, default=3)
    c.add_argument("--warmup", action="store_true", help="one untimed read first")
    c.add_argument("--max-records", type=int, default=0)
    c.add_argument("--share", default="", help="I/K: read partitions p with p %% K == I")
    c.add_argument(
        "--deadline",
        type=float,
        default=300.0,
        help="seconds one read may take (scaling_history reads tens of GiB)",
    )
    for name in ("latency", "e2e"):
        s = sub.add_parser(name, parents=[common])
        s.add_argument("--rate", type=int, default=5000)
        s.add_argument("--seconds", type=float, default=10.0)
        s.add_argument("--warmup-seconds", type=float, default=1.0)
    j = sub.add_parser("join", parents=[common])
    j.add_argument("--reps", type=int, default=5)
    j.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    command = {
        "produce": cmd_produce,
        "consume": cmd_consume,
        "latency": cmd_latency,
        "e2e": cmd_e2e,
        "join": cmd_join,
    }[args.command]
    try:
        result = command(args)
    except Exception as exc:  # reported to the orchestrator as a failed workload
        result = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
