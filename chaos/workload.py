"""The campaign's clients, each a process of its own (run inside the client namespace) that
writes what it saw, one JSON object a line, to ``--out``: the history the checker reads.

    python -m chaos.workload producer --bootstrap B --topic T --id p1 --out p1.jsonl
    python -m chaos.workload txn      --bootstrap B --topic T --id t1 --out t1.jsonl
    python -m chaos.workload reader   --bootstrap B --topic T --id r1 --out r1.jsonl
    python -m chaos.workload group    --bootstrap B --topic T --id g1 --out g1.jsonl

- ``producer``: confluent-kafka, idempotent, acks=all, librdkafka's timeouts (a
  ``socket.timeout.ms`` below the broker's acks=all wait made librdkafka time out requests in
  flight and write duplicates against Kafka 4.4: see docs/reliability.md); value ``ID-SEQ``, partition SEQ mod the
  partition count. Lines: ``{"k": "ack", "v", "p", "o", "t"}`` and ``{"k": "fail", "v", "e"}``.
- ``java``: Kafka's own ``kafka-verifiable-producer`` (the Java producer, idempotent, acks=all)
  at ``--rate`` records a second, values ``N.SEQ`` (N from the id's digits); its JSON events
  become the same ``ack`` / ``fail`` lines.
- ``txn``: a transactional producer; each transaction writes 4 records over the partitions and
  commits, or aborts one time in five. Lines: ``{"k": "txn", "n", "vals", "out"}`` with ``out``
  ``commit`` (commit returned), ``abort`` (abort returned) or ``unknown`` (neither; then either
  all of the transaction is visible to read_committed or none of it).
- ``reader``: a read_committed consumer of every partition from the start: ``{"k": "read", "v",
  "p", "o"}`` for each record it is given, while faults go on.
- ``group``: a member of group ``chaos-group`` that commits what it consumed every second:
  ``{"k": "commit", "p", "o", "t"}`` per successful commit.

SIGTERM stops a workload: the producers then wait (bounded) for outstanding deliveries.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

stopping = False
#: The Java producer's log4j2 file (beside this module): its epoch bumps and re-sequenced batches
#: are logged, which the campaign quotes when it finds duplicates.
LOG4J2_JAVA = "log4j2-producer.xml"


def _stop(*_args) -> None:
    global stopping
    stopping = True


class History:
    def __init__(self, path: str):
        self.handle = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115

    def write(self, **entry) -> None:
        self.handle.write(json.dumps(entry, separators=(",", ":")) + "\n")


def _partitions(bootstrap: str, topic: str) -> int:
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-probe"})
    try:
        while True:
            try:
                meta = probe.list_topics(topic, timeout=10)
                count = len(meta.topics[topic].partitions)
                if count:
                    return count
            except KafkaException:
                pass
            time.sleep(0.5)
    finally:
        probe.close()


def run_producer(args, history: History) -> None:
    count = _partitions(args.bootstrap, args.topic)
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": args.delivery_timeout_ms,
            "metadata.max.age.ms": 5000,
        }
    )

    def report(err, msg) -> None:
        value = msg.value().decode()
        if err is None:
            history.write(k="ack", v=value, p=msg.partition(), o=msg.offset(), t=time.time())
        else:
            history.write(k="fail", v=value, e=str(err), t=time.time())

    seq = 0
    interval = 1.0 / args.rate
    next_send = time.monotonic()
    while not stopping:
        value = f"{args.id}-{seq:08d}"
        try:
            producer.produce(args.topic, value.encode(), partition=seq % count, on_delivery=report)
            seq += 1
        except BufferError:
            pass
        next_send += interval
        producer.poll(max(0.0, next_send - time.monotonic()))
    history.write(k="sent", n=seq, t=time.time())
    producer.flush(args.delivery_timeout_ms / 1000 + 5)


def run_java(args, history: History) -> None:
    import os
    import subprocess
    import tempfile

    from compat_tests.reference.launcher import tool_command

    config = tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False)  # noqa: SIM115
    # The tool sets retries=0 (which turns idempotence off): the file turns both back on.
    config.write(
        "enable.idempotence=true\nretries=2147483647\nlinger.ms=5\n"
        "max.in.flight.requests.per.connection=5\nretry.backoff.ms=100\n"
        "reconnect.backoff.ms=100\nreconnect.backoff.max.ms=1000\n"
        f"delivery.timeout.ms={args.delivery_timeout_ms}\nrequest.timeout.ms=10000\n"
        "metadata.max.age.ms=5000\n"
    )
    config.close()
    prefix = "".join(ch for ch in args.id if ch.isdigit()) or "0"
    argv = tool_command(
        "kafka-verifiable-producer",
        [
            "--bootstrap-server", args.bootstrap, "--topic", args.topic,
            "--max-messages", "-1", "--throughput", str(int(args.rate)), "--acks", "-1",
            "--value-prefix", prefix, "--producer.config", config.name,
        ],
        log4j2=os.path.join(os.path.dirname(__file__), LOG4J2_JAVA),
    )  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    assert process.stdout is not None
    for line in process.stdout:
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        name = event.get("name")
        if name == "producer_send_success":
            history.write(
                k="ack", v=event["value"], p=event["partition"], o=event["offset"], t=time.time()
            )
        elif name == "producer_send_error":
            history.write(k="fail", v=event.get("value"), e=event.get("message"), t=time.time())
    process.wait()
    os.unlink(config.name)


def run_txn(args, history: History) -> None:
    count = _partitions(args.bootstrap, args.topic)
    rng = random.Random(args.id)
    config = {
        "bootstrap.servers": args.bootstrap,
        "transactional.id": f"chaos-{args.id}",
        "transaction.timeout.ms": 20000,
        "message.timeout.ms": 20000,
    }
    producer = None
    n = 0
    while not stopping:
        if producer is None:
            producer = Producer(config)
            try:
                producer.init_transactions(30)
            except KafkaException as exc:
                history.write(k="init-failed", e=str(exc), t=time.time())
                producer = None
                time.sleep(1)
                continue
        values = [f"{args.id}-{n:06d}-{i}" for i in range(4)]
        commit = rng.random() >= 0.2
        outcome = "unknown"
        try:
            producer.begin_transaction()
            for i, value in enumerate(values):
                producer.produce(args.topic, value.encode(), partition=(n + i) % count)
            if commit:
                producer.commit_transaction(30)
                outcome = "commit"
            else:
                producer.abort_transaction(30)
                outcome = "abort"
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                try:
                    producer.abort_transaction(30)
                    outcome = "abort"
                except KafkaException:
                    producer = None
            elif error.retriable() and commit:
                try:  # a retriable commit error: committing again is how the client retries
                    producer.commit_transaction(30)
                    outcome = "commit"
                except KafkaException:
                    producer = None
            else:
                producer = None  # fatal: a new producer's init fences and aborts
            if outcome == "unknown":
                history.write(k="txn-error", n=n, e=str(error), t=time.time())
        history.write(k="txn", n=n, vals=values, out=outcome, t=time.time())
        n += 1
        time.sleep(1.0 / args.rate)


def run_reader(args, history: History) -> None:
    count = _partitions(args.bootstrap, args.topic)
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": f"chaos-reader-{args.id}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(args.topic, p, 0) for p in range(count)])
    while not stopping:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        history.write(k="read", v=msg.value().decode(), p=msg.partition(), o=msg.offset())
    consumer.close()


def run_group(args, history: History) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": "chaos-group",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
        }
    )
    consumer.subscribe([args.topic])
    last_commit = time.monotonic()
    while not stopping:
        consumer.poll(0.2)
        if time.monotonic() - last_commit >= 1.0:
            last_commit = time.monotonic()
            try:
                committed = consumer.commit(asynchronous=False)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError._NO_OFFSET:
                    history.write(k="commit-failed", e=str(exc), t=time.time())
                continue
            for tp in committed or []:
                if tp.error is None and tp.offset >= 0:
                    history.write(k="commit", p=tp.partition, o=tp.offset, t=time.time())
    consumer.close()


KINDS = {
    "producer": run_producer,
    "java": run_java,
    "txn": run_txn,
    "reader": run_reader,
    "group": run_group,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.workload")
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--id", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rate", type=float, default=100.0, help="records (or txns) a second")
    parser.add_argument("--delivery-timeout-ms", type=int, default=60000)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    history = History(args.out)
    history.write(k="start", t=time.time())
    KINDS[args.kind](args, history)
    history.write(k="end", t=time.time())
    return 0


if __name__ == "__main__":
    sys.exit(main())
