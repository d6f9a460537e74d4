"""Idempotent and transactional producer scenarios, registered with
``compat_tests.scenarios.scenario`` like the others.

What they observe, on both brokers:

* ``idempotent-produce``: records stored once and in order by each client's idempotent
  producer (kafka-python's default, confluent-kafka with ``enable.idempotence``, the Java
  producer through ``kafka-verifiable-producer``), and the producer state DescribeProducers
  reports for the partition (one active producer, its epoch and last sequence).
* ``txn-commit-abort``: a transactional producer commits, aborts, commits; read_committed and
  read_uncommitted consumers (confluent-kafka and kafka-python) read the partition; the high
  watermark and the last stable offset (ListOffsets with isolation READ_COMMITTED), which
  count the control records, before and after a transaction left open.
* ``txn-send-offsets``: consume-transform-produce; the group's committed offset is unchanged
  after an aborted ``send_offsets_to_transaction`` and set after a committed one.
* ``txn-send-offsets-kip848[dynamic|static]``: the same with a KIP-848 consumer
  (``group.protocol=consumer``, with and without ``group.instance.id``), whose TxnOffsetCommit
  carries its member id and member epoch.
* ``txn-offsets-kip848-member-checks``: the answers to TxnOffsetCommit with hand-made group
  metadata (kafka-python) for a KIP-848 group: wrong epochs, unknown member, no member.
* ``txn-fencing``: a second producer with the same transactional id fences the first; the
  error names the zombie sees.
* ``txn-admin``: ListTransactions / DescribeTransactions through kafka-python's admin client
  and the ``kafka-transactions`` tool, state names normalized.
* ``txn-v2-raw``: transaction protocol v2 (KIP-890 part 2) by hand: EndTxn v5 answers and
  epoch bumps (relative), Produce v12 without AddPartitionsToTxn, fencing of an ended epoch.
* ``txn-v2-java``: Kafka 4.4's Java producer in v2 transactions (TransactionalMessageCopier).

The transactional code of each client lives here (a ``TxnProducer`` per client) rather than in
clients.py: only these scenarios use it.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from compat_tests import neutral
from compat_tests.clients import CLIENTS, TIMEOUT, Client, ClientError, record
from compat_tests.scenarios import scenario

TXN_CLIENTS = ("confluent-kafka", "kafka-python")


def _id(prefix: str) -> str:
    return f"compat-{prefix}-{uuid.uuid4().hex[:10]}"


def _state(name: Any) -> str:
    """A transaction state name, normalized: "CompleteCommit", COMPLETE_COMMIT,
    TransactionState.COMPLETE_COMMIT -> "completecommit"."""
    text = str(getattr(name, "value", name))
    return re.sub(r"[^a-z]", "", text.lower())


def offsets(bootstrap: str, topic: str, isolation: int) -> int:
    """ListOffsets latest for partition 0: the high watermark (isolation 0) or the last
    stable offset (isolation 1, READ_COMMITTED)."""
    from kafka.protocol.consumer.offsets import ListOffsetsRequest

    from wireserver.testing import KafkaWire

    with KafkaWire(bootstrap, client_id="compat-neutral") as wire:
        version = wire.version(ListOffsetsRequest, 7)
        t_class = ListOffsetsRequest.ListOffsetsTopic
        p_class = t_class.ListOffsetsPartition
        response = wire.request(
            ListOffsetsRequest(
                version=version,
                replica_id=-1,
                isolation_level=isolation,
                topics=[
                    t_class(
                        name=topic,
                        partitions=[
                            p_class(partition_index=0, current_leader_epoch=-1, timestamp=-1)
                        ],
                    )
                ],
            )
        )
    [partition] = [p for t in response.topics for p in t.partitions]
    if partition.error_code:
        raise RuntimeError(f"ListOffsets {topic}-0: error {partition.error_code}")
    return partition.offset


def watermarks(bootstrap: str, topic: str) -> dict[str, int]:
    return {"high_watermark": offsets(bootstrap, topic, 0), "lso": offsets(bootstrap, topic, 1)}


def settled_watermarks(bootstrap: str, topic: str, timeout: float = 10.0) -> dict[str, int]:
    """The watermarks once no transaction holds the LSO back. Kafka's commit_transaction
    returns when the coordinator logged PrepareCommit; the markers reach the partitions a
    little later, so right after a commit the LSO may still be the transaction's start."""
    deadline = time.monotonic() + timeout
    while True:
        found = watermarks(bootstrap, topic)
        if found["lso"] == found["high_watermark"] or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


# ------------------------------------------------------------------------------ readers


def read_values(
    bootstrap: str, reader: str, topic: str, isolation: str, timeout: float = 1.5
) -> list[list]:
    """[offset, value] of every record of partition 0 a consumer with ``isolation`` reads
    from the start until it has been idle at the end of what it may read."""
    return [
        [r["offset"], r["value"]]
        for r in read_records(bootstrap, reader, topic, isolation, timeout)
    ]


def read_records(
    bootstrap: str, reader: str, topic: str, isolation: str, timeout: float = 1.5
) -> list[dict[str, Any]]:
    """{"offset", "key", "value", "headers"} of every record of partition 0 a consumer of
    ``reader`` (confluent-kafka or kafka-python) with ``isolation`` reads from the start until
    it reaches the end of what it may read (confluent-kafka: its end-of-partition event;
    kafka-python: idle for ``timeout`` seconds). Keys, values and header values are text or
    None (a tombstone's value)."""
    if reader == "confluent-kafka":
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "compat-unused",
                "isolation.level": isolation,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "client.id": "compat-confluent",
            }
        )
        out: list[dict[str, Any]] = []
        try:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        break
                    raise ClientError(msg.error().name(), msg.error().str())
                out.append(_read(msg.offset(), msg.key(), msg.value(), msg.headers()))
        finally:
            consumer.close()
        return out
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        isolation_level=isolation,
        enable_auto_commit=False,
        consumer_timeout_ms=int(timeout * 1000),
        request_timeout_ms=10000,
        client_id="compat-kafka-python",
    )
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [_read(m.offset, m.key, m.value, m.headers) for m in consumer]
    finally:
        consumer.close()


def _read(offset: int, key: Any, value: Any, headers: Any) -> dict[str, Any]:
    def text(data: Any) -> str | None:
        return None if data is None else bytes(data).decode()

    return {
        "offset": offset,
        "key": text(key),
        "value": text(value),
        "headers": [[k, text(v)] for k, v in headers or []],
    }


# ------------------------------------------------------------------------------ producers


class TxnProducer:
    """A transactional producer of one client. Errors surface as :class:`ClientError` with
    the Kafka error name (or the client's exception class name)."""

    def __init__(self, client: str, bootstrap: str, transactional_id: str):
        self.client = client
        if client == "confluent-kafka":
            from confluent_kafka import Producer

            self.producer = Producer(
                {
                    "bootstrap.servers": bootstrap,
                    "linger.ms": 0,
                    "transactional.id": transactional_id,
                    "client.id": "compat-confluent",
                }
            )
        else:
            from kafka import KafkaProducer

            self.producer = KafkaProducer(
                bootstrap_servers=bootstrap,
                transactional_id=transactional_id,
                request_timeout_ms=10000,
                max_block_ms=20000,
                client_id="compat-kafka-python",
            )
        self._call("init_transactions")

    def _call(self, method: str, *args) -> None:
        if self.client == "confluent-kafka":
            from confluent_kafka import KafkaException

            try:
                getattr(self.producer, method)(
                    *args,
                    *(
                        [TIMEOUT]
                        if method
                        in (
                            "init_transactions",
                            "commit_transaction",
                            "abort_transaction",
                            "send_offsets_to_transaction",
                        )
                        else []
                    ),
                )
            except KafkaException as exc:
                raise ClientError(exc.args[0].name(), exc.args[0].str()) from exc
            return
        from kafka.errors import KafkaError

        try:
            getattr(self.producer, method)(*args)
        except KafkaError as exc:
            raise ClientError(_kafka_python_error(exc), str(exc)) from exc

    def begin(self) -> None:
        self._call("begin_transaction")

    def commit(self) -> None:
        self._call("commit_transaction")

    def abort(self) -> None:
        self._call("abort_transaction")

    def send(self, topic: str, values: list[str]) -> None:
        """Send ``values`` (no key, no headers) to partition 0 and wait until each is
        acknowledged."""
        self.send_records(topic, [record(v) for v in values])

    def send_records(self, topic: str, records: list[dict[str, Any]]) -> None:
        """Send ``records`` (:func:`compat_tests.clients.record`: key, value or None for a
        tombstone, headers) to partition 0 and wait until each is acknowledged."""

        def encoded(text: str | None) -> bytes | None:
            return None if text is None else text.encode()

        if self.client == "confluent-kafka":
            from confluent_kafka import KafkaException

            errors: list = []
            try:
                for r in records:
                    self.producer.produce(
                        topic,
                        encoded(r["value"]),
                        encoded(r["key"]),
                        partition=0,
                        on_delivery=lambda err, _m: errors.append(err),
                        headers=[(k, encoded(v)) for k, v in r["headers"]] or None,
                    )
                self.producer.flush(TIMEOUT)
            except (KafkaException, SystemError) as exc:
                # A fatal error surfaces from flush, as a KafkaException or, when a delivery
                # callback runs while it is pending, as a SystemError caused by it.
                cause = (
                    exc if isinstance(exc, KafkaException) else (exc.__cause__ or exc.__context__)
                )
                if not isinstance(cause, KafkaException):
                    raise
                raise ClientError(cause.args[0].name(), cause.args[0].str()) from exc
            failed = [e for e in errors if e is not None]
            if failed:
                raise ClientError(failed[0].name(), failed[0].str())
            return
        from kafka.errors import KafkaError

        futures = [
            self.producer.send(
                topic,
                value=encoded(r["value"]),
                key=encoded(r["key"]),
                partition=0,
                headers=[(k, encoded(v)) for k, v in r["headers"]] or None,
            )
            for r in records
        ]
        try:
            self.producer.flush(TIMEOUT)
            for future in futures:
                future.get(TIMEOUT)
        except KafkaError as exc:
            raise ClientError(_kafka_python_error(exc), str(exc)) from exc

    def send_offsets(self, consumer: Any, topic: str, offset: int) -> None:
        if self.client == "confluent-kafka":
            from confluent_kafka import TopicPartition

            self._call(
                "send_offsets_to_transaction",
                [TopicPartition(topic, 0, offset)],
                consumer.consumer_group_metadata(),
            )
        else:
            from kafka import TopicPartition
            from kafka.structs import OffsetAndMetadata

            self._call(
                "send_offsets_to_transaction",
                {TopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)},
                consumer.group_metadata(),
            )

    def wait_until_failed(self, timeout: float = 10.0) -> None:
        """kafka-python handles a fatal answer in its sender thread: wait for it."""
        if self.client == "kafka-python":
            manager = self.producer._transaction_manager
            deadline = time.monotonic() + timeout
            while not manager.has_fatal_error() and time.monotonic() < deadline:
                time.sleep(0.05)

    def close(self) -> None:
        if self.client == "confluent-kafka":
            try:
                self.producer.flush(1)
            except Exception:  # noqa: BLE001 - a fenced producer raises its fatal error again
                pass
            self.producer = None  # librdkafka's handle goes with the last reference
        else:
            self.producer.close(timeout=2)


def _kafka_python_error(exc: BaseException) -> str:
    """The Kafka error name behind a kafka-python exception; kafka-python raises a bare
    KafkaError("Cannot execute transactional method because we are in an error state: X")
    once the producer failed, so X is looked for in the message too."""
    errno = getattr(type(exc), "errno", None)
    message = getattr(type(exc), "message", None)
    if isinstance(errno, int) and errno > 0 and isinstance(message, str):
        return message
    import kafka.errors

    for found in re.findall(r"\b([A-Z][A-Za-z]+Error)\b", str(exc)):
        cls = getattr(kafka.errors, found, None)
        if found != "KafkaError" and isinstance(getattr(cls, "message", None), str):
            return cls.message
    return type(exc).__name__


def group_consumer(
    client: str,
    bootstrap: str,
    topic: str,
    group: str,
    count: int = 4,
    extra: dict[str, str] | None = None,
):
    """A consumer of ``client`` subscribed to ``topic`` in ``group`` (read_committed, no
    auto-commit, ``extra`` config for confluent-kafka); returns (consumer, the values it read)
    once it read ``count`` source records."""
    deadline = time.monotonic() + TIMEOUT
    values: list[str] = []
    if client == "confluent-kafka":
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "client.id": "compat-confluent",
                **(extra or {}),
            }
        )
        consumer.subscribe([topic])
        while len(values) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.3)
            if msg is not None and not msg.error():
                values.append(msg.value().decode())
        return consumer, values
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        request_timeout_ms=10000,
        client_id="compat-kafka-python",
    )
    while len(values) < count and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=300).values():
            values.extend(m.value.decode() for m in batch)
    return consumer, values


def committed_offset(bootstrap: str, group: str, topic: str) -> int | None:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-neutral")
    try:
        found = admin.list_group_offsets({group: [TopicPartition(topic, 0)]})
    finally:
        admin.close()
    meta = found.get(group, {}).get(TopicPartition(topic, 0))
    return None if meta is None or meta.offset < 0 else meta.offset


# ------------------------------------------------------------------------------ idempotence

IDEMPOTENT_COUNT = 300


def _java_idempotent(bootstrap: str, topic: str) -> dict:
    """kafka-verifiable-producer; it sets retries=0, which silently turns the Java producer's
    default idempotence off, so a properties file turns it back on."""
    import tempfile

    from compat_tests.reference import run_tool

    with tempfile.NamedTemporaryFile("w", suffix=".properties") as config:
        config.write("enable.idempotence=true\nretries=2147483647\nlinger.ms=5\nbatch.size=2048\n")
        config.flush()
        proc = run_tool(
            "kafka-verifiable-producer",
            [
                "--topic",
                topic,
                "--max-messages",
                str(IDEMPOTENT_COUNT),
                "--acks",
                "-1",
                "--value-prefix",
                "5",
                "--producer.config",
                config.name,
            ],
            bootstrap=bootstrap,
            timeout=90,
        )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    failed = [e for e in events if e.get("name") == "producer_send_error"]
    return {
        "acked": sum(e.get("name") == "producer_send_success" for e in events),
        "failed": sorted({e.get("exception", "?") for e in failed}),
    }


@scenario(
    "idempotent-produce",
    clients=("kafka-python", "confluent-kafka", "java"),
    check=lambda o: _check_idempotent(o),
)
def idempotent_produce(bootstrap: str, client: Client) -> dict:
    """the client's idempotent producer sends 300 records to a one-partition topic; read
    back with confluent-kafka; DescribeProducers reports the partition's producer state"""
    topic = neutral.create_topic(bootstrap, "idem")
    values = [f"5.{i}" for i in range(IDEMPOTENT_COUNT)]  # the Java tool's format
    if client.name == "java":
        sent = _java_idempotent(bootstrap, topic)
    else:
        config = {
            "confluent-kafka": {
                "enable.idempotence": True,
                "linger.ms": 5,
                "batch.num.messages": 20,
            },
            "kafka-python": {"linger_ms": 5, "batch_size": 1024},
        }[client.name]
        reports = client.produce(
            bootstrap, topic, [record(v, partition=0) for v in values], config=config
        )
        sent = {"acked": len(reports), "failed": []}
    read = CLIENTS["confluent-kafka"].consume(bootstrap, topic, 0, IDEMPOTENT_COUNT)
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-neutral")
    try:
        [state] = admin.describe_producers([TopicPartition(topic, 0)]).values()
    finally:
        admin.close()
    return {
        **sent,
        "in_order_once": [r["value"] for r in read] == values,
        "offsets": [r["offset"] for r in read] == list(range(IDEMPOTENT_COUNT)),
        "high_watermark": offsets(bootstrap, topic, 0),
        "producers": [
            {
                "epoch": p.producer_epoch,
                "last_sequence": p.last_sequence,
                "txn_start": p.current_transaction_start_offset,
                "has_id": p.producer_id >= 0,
            }
            for p in state.active_producers
        ],
    }


def _check_idempotent(obs: dict) -> None:
    assert obs["acked"] == IDEMPOTENT_COUNT and obs["failed"] == [], obs
    assert obs["in_order_once"] and obs["offsets"], obs
    assert obs["high_watermark"] == IDEMPOTENT_COUNT, obs
    assert obs["producers"] == [
        {"epoch": 0, "last_sequence": IDEMPOTENT_COUNT - 1, "txn_start": -1, "has_id": True}
    ], obs


# ------------------------------------------------------------------------------ transactions


@scenario("txn-commit-abort", clients=TXN_CLIENTS, check=lambda o: _check_commit_abort(o))
def txn_commit_abort(bootstrap: str, client: Client) -> dict:
    """a transactional producer commits [c1, c2], aborts [a1, a2, a3], commits [c3]; both
    isolation levels read with confluent-kafka and kafka-python; high watermark and LSO
    (control records take offsets), then with a transaction left open and after its commit"""
    topic = neutral.create_topic(bootstrap, "txn")
    producer = TxnProducer(client.name, bootstrap, _id("tid"))
    obs: dict[str, Any] = {}
    try:
        for values, end in (
            (["c1", "c2"], producer.commit),
            (["a1", "a2", "a3"], producer.abort),
            (["c3"], producer.commit),
        ):
            producer.begin()
            producer.send(topic, values)
            end()
        obs["closed"] = settled_watermarks(bootstrap, topic)
        for reader in ("confluent-kafka", "kafka-python"):
            for isolation in ("read_committed", "read_uncommitted"):
                obs[f"{reader}/{isolation}"] = read_values(bootstrap, reader, topic, isolation)
        producer.begin()
        producer.send(topic, ["open"])
        obs["open"] = watermarks(bootstrap, topic)
        obs["open/read_committed"] = read_values(
            bootstrap, "confluent-kafka", topic, "read_committed"
        )
        producer.commit()
        obs["after"] = settled_watermarks(bootstrap, topic)
    finally:
        producer.close()
    return obs


def _check_commit_abort(obs: dict) -> None:
    committed = [[0, "c1"], [1, "c2"], [7, "c3"]]
    everything = [[0, "c1"], [1, "c2"], [3, "a1"], [4, "a2"], [5, "a3"], [7, "c3"]]
    for reader in ("confluent-kafka", "kafka-python"):
        assert obs[f"{reader}/read_committed"] == committed, obs
        assert obs[f"{reader}/read_uncommitted"] == everything, obs
    assert obs["closed"] == {"high_watermark": 9, "lso": 9}, obs
    assert obs["open"] == {"high_watermark": 10, "lso": 9}, obs
    assert obs["open/read_committed"] == committed, obs
    assert obs["after"] == {"high_watermark": 11, "lso": 11}, obs


@scenario("txn-send-offsets", clients=TXN_CLIENTS, check=lambda o: _check_send_offsets(o))
def txn_send_offsets(bootstrap: str, client: Client) -> dict:
    """consume-transform-produce: a group consumer reads 4 records; a transaction sends the
    transformed records and offset 2 and aborts; another sends all of them and offset 4 and
    commits; the committed group offset after each, and the sink read_committed"""
    return _send_offsets(bootstrap, client.name)


def _send_offsets(bootstrap: str, client: str, extra: dict[str, str] | None = None) -> dict:
    source = neutral.create_topic(bootstrap, "txn-src")
    sink = neutral.create_topic(bootstrap, "txn-sink")
    neutral.write(bootstrap, source, [record(f"m{i}", partition=0) for i in range(4)])
    group = _id("etl")
    consumer, values = group_consumer(client, bootstrap, source, group, extra=extra)
    producer = TxnProducer(client, bootstrap, _id("etl"))
    obs: dict[str, Any] = {"consumed": values}
    try:
        producer.begin()
        producer.send(sink, [v.upper() for v in values[:2]])
        producer.send_offsets(consumer, source, 2)
        producer.abort()
        obs["after_abort"] = committed_offset(bootstrap, group, source)
        producer.begin()
        producer.send(sink, [v.upper() for v in values])
        producer.send_offsets(consumer, source, 4)
        producer.commit()
        obs["after_commit"] = committed_offset(bootstrap, group, source)
    finally:
        producer.close()
        consumer.close()
    obs["sink_watermarks"] = settled_watermarks(bootstrap, sink)
    obs["sink"] = read_values(bootstrap, "confluent-kafka", sink, "read_committed")
    return obs


def _send_offsets_kip848(static: bool):
    def fn(bootstrap: str, client: Client) -> dict:
        extra = {"group.protocol": "consumer"}
        if static:
            extra["group.instance.id"] = _id("instance")
        return _send_offsets(bootstrap, client.name, extra)

    fn.__doc__ = (
        f"txn-send-offsets with a KIP-848 consumer (group.protocol=consumer"
        f"{', static: group.instance.id' if static else ''}): TxnOffsetCommit carries "
        f"its member id and member epoch, which the coordinator checks against the "
        f"consumer group"
    )
    return fn


for _kind in ("dynamic", "static"):
    scenario(
        f"txn-send-offsets-kip848[{_kind}]",
        clients=("confluent-kafka",),
        check=lambda o: _check_send_offsets(o),
    )(_send_offsets_kip848(_kind == "static"))


@scenario(
    "txn-offsets-kip848-member-checks",
    clients=("kafka-python",),
    check=lambda o: _check_member_checks(o),
)
def txn_offsets_member_checks(bootstrap: str, client: Client) -> dict:
    """a KIP-848 consumer (confluent-kafka, group.protocol=consumer) is the one member of a
    group; kafka-python's transactional producer sends offsets with hand-made group metadata
    (KIP-447): that member at epochs 0-3, an unknown member id, no member at all, an instance
    id with no member id. The answer to each (each transaction aborted), then a commit at the
    member's epoch and the group's committed offset"""
    from confluent_kafka.admin import AdminClient
    from kafka import TopicPartition
    from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata

    source = neutral.create_topic(bootstrap, "txn-848")
    neutral.write(bootstrap, source, [record("m0", partition=0)])
    group = _id("etl848")
    consumer, values = group_consumer(
        "confluent-kafka", bootstrap, source, group, count=1, extra={"group.protocol": "consumer"}
    )
    producer = TxnProducer(client.name, bootstrap, _id("etl848"))
    offsets = {TopicPartition(source, 0): OffsetAndMetadata(1, "", -1)}

    def send(generation: int, member_id: str, instance_id: str | None = None) -> str:
        producer.begin()
        try:
            producer._call(
                "send_offsets_to_transaction",
                offsets,
                ConsumerGroupMetadata(group, generation, member_id, instance_id),
            )
            return "NONE"
        except ClientError as exc:
            return exc.name
        finally:
            producer.abort()

    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        [member] = admin.describe_consumer_groups([group])[group].result(TIMEOUT).members
        by_epoch = {epoch: send(epoch, member.member_id) for epoch in range(4)}
        obs: dict[str, Any] = {
            "consumed": values,
            "by_epoch": by_epoch,
            "unknown_member": send(1, "compat-no-such-member"),
            "no_member": send(-1, ""),
            "instance_without_member": send(-1, "", "compat-instance"),
        }
        epoch = next((e for e, answer in by_epoch.items() if answer == "NONE"), -1)
        producer.begin()
        producer._call(
            "send_offsets_to_transaction",
            offsets,
            ConsumerGroupMetadata(group, epoch, member.member_id, None),
        )
        producer.commit()
        obs["committed"] = committed_offset(bootstrap, group, source)
    finally:
        producer.close()
        consumer.close()
    return obs


def _check_member_checks(obs: dict) -> None:
    assert obs["consumed"] == ["m0"] and obs["committed"] == 1, obs
    assert list(obs["by_epoch"].values()).count("NONE") == 1, obs
    assert set(obs["by_epoch"].values()) == {"NONE", "ILLEGAL_GENERATION"}, obs
    assert obs["unknown_member"] == "UNKNOWN_MEMBER_ID" and obs["no_member"] == "NONE", obs
    assert obs["instance_without_member"] == "UNKNOWN_MEMBER_ID", obs


def _check_send_offsets(obs: dict) -> None:
    assert obs["consumed"] == ["m0", "m1", "m2", "m3"], obs
    assert obs["after_abort"] is None and obs["after_commit"] == 4, obs
    assert [v for _, v in obs["sink"]] == ["M0", "M1", "M2", "M3"], obs


@scenario("txn-fencing", clients=TXN_CLIENTS, check=lambda o: _check_fencing(o))
def txn_fencing(bootstrap: str, client: Client) -> dict:
    """a producer sends in a transaction; a second one with the same transactional id
    initializes (fencing the first and aborting its transaction); the zombie sends and
    commits: the error names it gets; the live producer commits"""
    topic = neutral.create_topic(bootstrap, "fence")
    tid = _id("tid")
    zombie = TxnProducer(client.name, bootstrap, tid)
    obs: dict[str, Any] = {}
    try:
        zombie.begin()
        zombie.send(topic, ["zombie"])
        live = TxnProducer(client.name, bootstrap, tid)
        try:
            for step, call in (
                ("zombie_send", lambda: zombie.send(topic, ["late"])),
                ("zombie_commit", zombie.commit),
            ):
                try:
                    call()
                    obs[step] = "ok"
                except ClientError as exc:
                    obs[step] = exc.name
                    zombie.wait_until_failed()
            live.begin()
            live.send(topic, ["live"])
            live.commit()
        finally:
            live.close()
    finally:
        zombie.close()
    obs["watermarks"] = settled_watermarks(bootstrap, topic)
    obs["read_committed"] = read_values(bootstrap, "confluent-kafka", topic, "read_committed")
    obs["read_uncommitted"] = [
        v for _, v in read_values(bootstrap, "confluent-kafka", topic, "read_uncommitted")
    ]
    return obs


def _check_fencing(obs: dict) -> None:
    assert obs["zombie_commit"] in ("_FENCED", "PRODUCER_FENCED"), obs
    assert [v for _, v in obs["read_committed"]] == ["live"], obs


# ------------------------------------------------------------------------------ admin


def _transactions_tool(bootstrap: str, args: list[str]) -> list[dict[str, str]]:
    """Rows of a ``kafka-transactions`` table (header row -> column names)."""
    from compat_tests.reference import run_tool

    # its --bootstrap-server goes before the sub-command
    proc = run_tool("kafka-transactions", ["--bootstrap-server", bootstrap, *args], timeout=60)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if not lines:
        raise ClientError("no output", proc.stderr[-500:])
    header = lines[0].split()
    return [dict(zip(header, row.split())) for row in lines[1:]]


def _admin_view(client: str, bootstrap: str, tid: str) -> dict:
    """{"listed": state of ``tid`` in ListTransactions or None, "described": its state and
    partitions per DescribeTransactions} through kafka-python's admin or the Java tool."""
    if client == "java":
        listed = {
            r.get("TransactionalId"): _state(r.get("TransactionState"))
            for r in _transactions_tool(bootstrap, ["list"])
        }
        [described] = _transactions_tool(bootstrap, ["describe", "--transactional-id", tid])
        partitions = described.get("TopicPartitions", "")
        return {
            "listed": listed.get(tid),
            "described": _state(described.get("TransactionState")),
            "partitions": sorted(p for p in partitions.split(",") if p and p != "None"),
        }
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-kafka-python")
    try:
        listed = {
            t.transactional_id: _state(t.state)
            for rows in admin.list_transactions().values()
            for t in rows
        }
        description = admin.describe_transactions([tid])[tid]
        return {
            "listed": listed.get(tid),
            "described": _state(description.state),
            "partitions": sorted(
                f"{tp.topic}-{tp.partition}" for tp in description.topic_partitions
            ),
        }
    finally:
        admin.close()


def _wait_for_state(bootstrap: str, tid: str, state: str, timeout: float = 10.0) -> None:
    """Kafka's coordinator stays in PrepareCommit until the markers are written, a moment
    after commit_transaction returned: wait (through kafka-python's admin) for ``state``."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-neutral")
    try:
        deadline = time.monotonic() + timeout
        while (
            _state(admin.describe_transactions([tid])[tid].state) != state
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
    finally:
        admin.close()


@scenario("txn-admin", clients=("kafka-python", "java"), check=lambda o: _check_admin(o))
def txn_admin(bootstrap: str, client: Client) -> dict:
    """a confluent-kafka transaction left open, then committed: ListTransactions and
    DescribeTransactions through kafka-python's admin client or kafka-transactions"""
    topic = neutral.create_topic(bootstrap, "txn-admin")
    tid = _id("tid")
    producer = TxnProducer("confluent-kafka", bootstrap, tid)
    try:
        producer.begin()
        producer.send(topic, ["x"])
        ongoing = _admin_view(client.name, bootstrap, tid)
        producer.commit()
    finally:
        producer.close()
    _wait_for_state(bootstrap, tid, "completecommit")
    committed = _admin_view(client.name, bootstrap, tid)
    for view in (ongoing, committed):
        view["partitions"] = [p.replace(topic, "TOPIC") for p in view["partitions"]]
    return {"ongoing": ongoing, "committed": committed}


def _check_admin(obs: dict) -> None:
    assert obs["ongoing"] == {
        "listed": "ongoing",
        "described": "ongoing",
        "partitions": ["TOPIC-0"],
    }, obs
    assert obs["committed"]["listed"] == "completecommit", obs
    assert obs["committed"]["described"] == "completecommit", obs


# ------------------------------------------------------------------------------ protocol v2


def _raw_v2_steps(bootstrap: str) -> dict:
    """Transaction protocol v2 by hand (kafka-python's classes, as a Kafka 4.4 producer sends
    them), every epoch relative to InitProducerId's."""
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
    from kafka.protocol.producer.transaction import EndTxnRequest

    from compat_tests.raw_protocol import init_producer_id, transactional_produce
    from wireserver.testing import KafkaWire

    topic = neutral.create_topic(bootstrap, "txn-v2")
    tid = _id("v2")
    out: dict[str, Any] = {}
    with KafkaWire(bootstrap, client_id="compat-raw") as wire:
        deadline = time.monotonic() + 60
        while True:  # __transaction_state may still be being created and loaded
            found = wire.request(
                FindCoordinatorRequest(version=4, key_type=1, coordinator_keys=[tid])
            )
            init = init_producer_id(wire, tid)
            if found.coordinators[0].error_code == 0 == init.error_code:
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        pid, epoch0 = init.producer_id, init.producer_epoch

        def end(epoch: int, commit: bool) -> list:
            answer = wire.request(
                EndTxnRequest(
                    version=5,
                    transactional_id=tid,
                    producer_id=pid,
                    producer_epoch=epoch,
                    committed=commit,
                )
            )
            same = answer.producer_id == pid
            return [answer.error_code, answer.producer_epoch - epoch0 if same else None]

        def produce(epoch: int, sequence: int, version: int = 12) -> int:
            return transactional_produce(wire, tid, topic, (pid, epoch), sequence, b"v", version)

        out["init"] = init.error_code
        out["commit_empty"] = end(epoch0, True)
        out["abort_empty"] = end(epoch0, False)
        # Kafka writes markers after answering: retries and late batches wait for the end.
        _wait_for_state(bootstrap, tid, "completeabort")
        out["abort_empty_retry"] = end(epoch0, False)
        out["produce_old_epoch"] = produce(epoch0, 0)
        e1 = epoch0 + 1
        out["produce_without_add"] = produce(e1, 0)
        _wait_for_state(bootstrap, tid, "ongoing")
        out["commit"] = end(e1, True)
        _wait_for_state(bootstrap, tid, "completecommit")
        out["commit_retry"] = end(e1, True)
        out["produce_ended_epoch"] = produce(e1, 1)
        out["produce_v11_without_add"] = produce(e1 + 1, 0, version=11)
    return out


@scenario("txn-v2-raw", clients=("kafka-python",), check=lambda o: _check_v2_raw(o))
def txn_v2_raw(bootstrap: str, client: Client) -> dict:
    """transaction protocol v2 by hand: EndTxn v5 on an empty transaction (commit, abort,
    retry), Produce v12 without AddPartitionsToTxn, EndTxn v5 commit and its retry, the ended
    epoch fenced, Produce v11 (protocol v1) without AddPartitionsToTxn"""
    return _raw_v2_steps(bootstrap)


def _check_v2_raw(obs: dict) -> None:
    assert obs["init"] == 0 and obs["produce_without_add"] == 0, obs
    assert obs["abort_empty"] == [0, 1] and obs["commit"] == [0, 2], obs


def java_copier(bootstrap: str, count: int = 20, per_transaction: int = 5) -> dict:
    """Kafka's TransactionalMessageCopier (the Java producer, transaction protocol v2 where
    ``transaction.version`` 2 is finalized) copies ``count`` records in transactions."""
    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition

    from compat_tests.reference import run_tool

    source = neutral.create_topic(bootstrap, "copy-in")
    target = neutral.create_topic(bootstrap, "copy-out")
    group = _id("copier")
    CLIENTS["confluent-kafka"].produce(
        bootstrap, source, [record(str(i), partition=0) for i in range(count)]
    )
    proc = run_tool(
        "org.apache.kafka.tools.TransactionalMessageCopier",
        [
            "--broker-list",
            bootstrap,
            "--input-topic",
            source,
            "--input-partition",
            "0",
            "--output-topic",
            target,
            "--consumer-group",
            group,
            "--transactional-id",
            _id("copier"),
            "--max-messages",
            str(count),
            "--transaction-size",
            str(per_transaction),
        ],
        timeout=120,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-neutral")
    try:
        [state] = admin.describe_producers([TopicPartition(target, 0)]).values()
    finally:
        admin.close()
    return {
        "exit": proc.returncode,
        "stage": events[-1].get("stage") if events else None,
        "processed": events[-1].get("totalProcessed") if events else None,
        "read_committed": [
            v for _, v in read_values(bootstrap, "confluent-kafka", target, "read_committed")
        ],
        "committed_offset": committed_offset(bootstrap, group, source),
        "epoch_bumped_per_transaction": [
            p.producer_epoch >= count // per_transaction for p in state.active_producers
        ],
    }


@scenario("txn-v2-java", clients=("java",), check=lambda o: _check_v2_java(o))
def txn_v2_java(bootstrap: str, client: Client) -> dict:
    """Kafka 4.4's Java producer (TransactionalMessageCopier) copies 20 records in
    transactions of 5 with a read_committed consumer and sendOffsetsToTransaction; what
    read_committed reads, the committed offset, the epoch bumps DescribeProducers shows"""
    return java_copier(bootstrap)


def _check_v2_java(obs: dict) -> None:
    assert obs["exit"] == 0 and obs["stage"] == "ShutdownComplete", obs
    assert obs["read_committed"] == [str(i) for i in range(20)], obs
    assert obs["committed_offset"] == 20 and obs["epoch_bumped_per_transaction"] == [True], obs
