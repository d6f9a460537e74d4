"""The clients the compatibility suite drives, behind one small interface.

Every client is used the way its users use it: default settings except what a scenario
asks for (acks, compression, a reset policy) and bounded timeouts so that a broker that
does not answer makes a scenario fail in seconds, not minutes. In particular the
idempotent default of the Java producer and of kafka-python 3's producer is left on.

Records travel as plain dicts so that observations are JSON-able::

    {"key": "k1" | None, "value": "v1", "headers": [["h", "v"]], "partition": 0,
     "timestamp": 1700000000000 | None, "offset": 0}

Keys, values and header values are ASCII text, because the CLI tools (kcat, the console
producer/consumer) read and print text lines.

A client raises :class:`ClientError` with a Kafka error *name* (``MESSAGE_TOO_LARGE``,
``UNKNOWN_TOPIC_OR_PARTITION``, ...) or a client-side name (``KafkaTimeoutError``) when the
operation fails in a way a user would see; scenarios put that name into observations.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Sequence
from typing import Any

from compat_tests.reference import run_tool

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: seconds a client may wait for anything (metadata, an ack, a record)
TIMEOUT = 30.0  # generous: a cold client on a loaded 2-core machine can take a while


class ClientError(Exception):
    """An error a user of the client sees; ``name`` is what observations record."""

    def __init__(self, name: str, detail: str = ""):
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name
        self.detail = detail


class Unsupported(Exception):
    """The client has no way to do this (e.g. kcat has no per-record timestamps)."""


def record(
    value: str,
    key: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    partition: int | None = None,
    timestamp: int | None = None,
) -> dict[str, Any]:
    return {
        "key": key,
        "value": value,
        "headers": [list(h) for h in headers],
        "partition": partition,
        "timestamp": timestamp,
    }


def _kafka_error_name(exc: BaseException) -> str:
    """The Kafka error name behind a kafka-python / aiokafka exception, else its class name."""
    cls = type(exc)
    for candidate in (exc, getattr(exc, "__cause__", None)):
        if candidate is None:
            continue
        errno = getattr(type(candidate), "errno", None)
        message = getattr(type(candidate), "message", None)
        if isinstance(errno, int) and errno > 0 and isinstance(message, str):
            return message
    return cls.__name__


class Client:
    name = "?"
    #: what the client can set per record
    per_record_timestamps = True
    per_record_headers = True
    per_record_partition = True

    def produce(
        self,
        bootstrap: str,
        topic: str,
        records: list[dict[str, Any]],
        *,
        acks: str | None = None,
        compression: str = "none",
        config: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Send ``records`` in order and wait for every acknowledgement. Returns what the
        client reports per record ({"partition", "offset"}). ``acks=None`` keeps the
        client's default (all for Java, kafka-python 3, librdkafka; 1 for aiokafka)."""
        raise NotImplementedError

    def consume(
        self,
        bootstrap: str,
        topic: str,
        partition: int,
        count: int,
        *,
        offset: int | str = "earliest",
        reset: str = "earliest",
        timeout: float = TIMEOUT,
    ) -> list[dict[str, Any]]:
        """Read up to ``count`` records of one partition starting at ``offset`` (a number,
        "earliest" or "latest") without a consumer group. kafka-python and confluent-kafka
        also take ``config=`` (extra consumer settings: SASL credentials, say)."""
        raise NotImplementedError

    def offsets_for_time(
        self, bootstrap: str, topic: str, partition: int, timestamp: int
    ) -> int | None:
        raise Unsupported(self.name)

    def consume_group(
        self, bootstrap: str, topic: str, group: str, count: int, *, timeout: float = TIMEOUT
    ) -> list[str]:
        """Subscribe to ``topic`` in consumer group ``group`` from the earliest offset, read
        ``count`` records, commit what was read and leave. Returns the values read."""
        raise Unsupported(self.name)

    def consume_group_with(
        self,
        bootstrap: str,
        topic: str,
        group: str,
        count: int,
        config: dict[str, str],
        *,
        timeout: float = TIMEOUT,
    ) -> list[str]:
        """:meth:`consume_group` with extra consumer settings (``group.protocol=consumer``
        for the KIP-848 protocol, say). Returns the values read."""
        raise Unsupported(self.name)

    def __repr__(self) -> str:
        return self.name


# ---------------------------------------------------------------------------- kafka-python


class KafkaPythonClient(Client):
    name = "kafka-python"

    def produce(self, bootstrap, topic, records, *, acks=None, compression="none", config=None):
        from kafka import KafkaProducer
        from kafka.errors import KafkaError

        settings = {
            "bootstrap_servers": bootstrap,
            "compression_type": None if compression == "none" else compression,
            "max_block_ms": int(TIMEOUT * 1000),
            "request_timeout_ms": 10000,
            "client_id": "compat-kafka-python",
            **(config or {}),
        }
        if acks is not None:
            settings["acks"] = _acks(acks, int)
        producer = KafkaProducer(**settings)
        try:
            futures = []
            for r in records:
                futures.append(
                    producer.send(
                        topic,
                        value=_b(r["value"]),
                        key=_b(r["key"]),
                        partition=r["partition"],
                        timestamp_ms=r["timestamp"],
                        headers=[(k, _b(v)) for k, v in r["headers"]] or None,
                    )
                )
            producer.flush(timeout=TIMEOUT)
            out = []
            for f in futures:
                meta = f.get(timeout=TIMEOUT)
                out.append({"partition": meta.partition, "offset": meta.offset})
            return out
        except KafkaError as exc:
            raise ClientError(_kafka_error_name(exc), str(exc)) from exc
        finally:
            producer.close(timeout=5)

    def _consumer(self, bootstrap, reset, config=None):
        from kafka import KafkaConsumer

        return KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset=reset,
            request_timeout_ms=10000,
            client_id="compat-kafka-python",
            **(config or {}),
        )

    def consume(
        self,
        bootstrap,
        topic,
        partition,
        count,
        *,
        offset="earliest",
        reset="earliest",
        timeout=TIMEOUT,
        config=None,
    ):
        from kafka import TopicPartition
        from kafka.errors import KafkaError

        consumer = self._consumer(bootstrap, reset, config)
        tp = TopicPartition(topic, partition)
        out: list[dict[str, Any]] = []
        try:
            consumer.assign([tp])
            if offset == "earliest":
                consumer.seek_to_beginning(tp)
            elif offset == "latest":
                consumer.seek_to_end(tp)
            else:
                consumer.seek(tp, offset)
            deadline = time.monotonic() + timeout
            while len(out) < count and time.monotonic() < deadline:
                for batch in consumer.poll(timeout_ms=300).values():
                    for m in batch:
                        out.append(
                            _rec(
                                m.key,
                                m.value,
                                m.headers,
                                m.partition,
                                m.timestamp,
                                m.offset,
                                m.timestamp_type,
                            )
                        )
            return out[:count]
        except KafkaError as exc:
            raise ClientError(_kafka_error_name(exc), str(exc)) from exc
        finally:
            consumer.close()

    def consume_group(self, bootstrap, topic, group, count, *, timeout=TIMEOUT):
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=10000,
            client_id="compat-kafka-python",
        )
        values: list[str] = []
        try:
            deadline = time.monotonic() + timeout
            while len(values) < count and time.monotonic() < deadline:
                for batch in consumer.poll(timeout_ms=300).values():
                    values.extend(_s(m.value) for m in batch)
            consumer.commit()
            return values
        finally:
            consumer.close()

    def offsets_for_time(self, bootstrap, topic, partition, timestamp):
        from kafka import TopicPartition

        consumer = self._consumer(bootstrap, "earliest")
        try:
            tp = TopicPartition(topic, partition)
            found = consumer.offsets_for_times({tp: timestamp})[tp]
            return None if found is None else found.offset
        finally:
            consumer.close()


# ---------------------------------------------------------------------------- aiokafka


class AioKafkaClient(Client):
    name = "aiokafka"

    def produce(self, bootstrap, topic, records, *, acks=None, compression="none", config=None):
        return asyncio.run(
            self._produce(bootstrap, topic, records, acks, compression, config or {})
        )

    async def _produce(self, bootstrap, topic, records, acks, compression, config):
        from aiokafka import AIOKafkaProducer
        from aiokafka.errors import KafkaError

        settings = {
            "bootstrap_servers": bootstrap,
            "compression_type": None if compression == "none" else compression,
            "request_timeout_ms": 10000,
            "client_id": "compat-aiokafka",
            **config,
        }
        if acks is not None:
            settings["acks"] = _acks(acks, int)
        producer = AIOKafkaProducer(**settings)
        try:
            await asyncio.wait_for(producer.start(), TIMEOUT)
            futures = []
            for r in records:
                futures.append(
                    await producer.send(
                        topic,
                        value=_b(r["value"]),
                        key=_b(r["key"]),
                        partition=r["partition"],
                        timestamp_ms=r["timestamp"],
                        headers=[(k, _b(v)) for k, v in r["headers"]] or None,
                    )
                )
            out = []
            for r, f in zip(records, futures):
                meta = await asyncio.wait_for(f, TIMEOUT)
                out.append(
                    {"partition": r["partition"], "offset": None}
                    if meta is None
                    else {"partition": meta.partition, "offset": meta.offset}
                )
            return out
        except KafkaError as exc:
            raise ClientError(_kafka_error_name(exc), str(exc)) from exc
        except TimeoutError as exc:
            raise ClientError("KafkaTimeoutError", "no answer in time") from exc
        finally:
            await producer.stop()

    def consume(
        self,
        bootstrap,
        topic,
        partition,
        count,
        *,
        offset="earliest",
        reset="earliest",
        timeout=TIMEOUT,
    ):
        return asyncio.run(
            self._consume(bootstrap, topic, partition, count, offset, reset, timeout)
        )

    async def _consume(self, bootstrap, topic, partition, count, offset, reset, timeout):
        from aiokafka import AIOKafkaConsumer, TopicPartition
        from aiokafka.errors import KafkaError

        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset=reset,
            request_timeout_ms=10000,
            client_id="compat-aiokafka",
        )
        out: list[dict[str, Any]] = []
        try:
            await asyncio.wait_for(consumer.start(), TIMEOUT)
            tp = TopicPartition(topic, partition)
            consumer.assign([tp])
            if offset == "earliest":
                await consumer.seek_to_beginning(tp)
            elif offset == "latest":
                await consumer.seek_to_end(tp)
            else:
                consumer.seek(tp, offset)
            deadline = time.monotonic() + timeout
            while len(out) < count and time.monotonic() < deadline:
                for batch in (await consumer.getmany(tp, timeout_ms=300)).values():
                    for m in batch:
                        out.append(
                            _rec(
                                m.key,
                                m.value,
                                m.headers,
                                m.partition,
                                m.timestamp,
                                m.offset,
                                m.timestamp_type,
                            )
                        )
            return out[:count]
        except KafkaError as exc:
            raise ClientError(_kafka_error_name(exc), str(exc)) from exc
        finally:
            await consumer.stop()

    def offsets_for_time(self, bootstrap, topic, partition, timestamp):
        return asyncio.run(self._offsets_for_time(bootstrap, topic, partition, timestamp))

    def consume_group(self, bootstrap, topic, group, count, *, timeout=TIMEOUT):
        return asyncio.run(self._consume_group(bootstrap, topic, group, count, timeout))

    async def _consume_group(self, bootstrap, topic, group, count, timeout):
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=10000,
            client_id="compat-aiokafka",
        )
        values: list[str] = []
        try:
            await asyncio.wait_for(consumer.start(), TIMEOUT)
            deadline = time.monotonic() + timeout
            while len(values) < count and time.monotonic() < deadline:
                for batch in (await consumer.getmany(timeout_ms=300)).values():
                    values.extend(_s(m.value) for m in batch)
            await consumer.commit()
            return values
        finally:
            await consumer.stop()

    async def _offsets_for_time(self, bootstrap, topic, partition, timestamp):
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            request_timeout_ms=10000,
        )
        try:
            await asyncio.wait_for(consumer.start(), TIMEOUT)
            tp = TopicPartition(topic, partition)
            found = (await consumer.offsets_for_times({tp: timestamp}))[tp]
            return None if found is None else found.offset
        finally:
            await consumer.stop()


# ---------------------------------------------------------------------------- confluent-kafka


class ConfluentClient(Client):
    name = "confluent-kafka"

    def produce(self, bootstrap, topic, records, *, acks=None, compression="none", config=None):
        from confluent_kafka import KafkaException, Producer

        settings = {
            "bootstrap.servers": bootstrap,
            "compression.type": compression,
            "message.timeout.ms": 10000,
            "client.id": "compat-confluent",
            **(config or {}),
        }
        if acks is not None:
            settings["acks"] = acks
        producer = Producer(settings)
        if "linger.ms" in settings:
            # A linger holds records together only once librdkafka knows the topic's
            # partitions: before that it parks them unassigned and, when the metadata comes,
            # moves them to the partition one at a time from its main thread; if that took
            # longer than the linger, the broker thread may send the first one alone (seen
            # against both brokers). The Java, kafka-python and aiokafka producers wait for
            # the metadata before they take a record, so this makes librdkafka do the same.
            producer.list_topics(topic, timeout=TIMEOUT)
        reports: list[Any] = [None] * len(records)

        def delivered(index):
            def callback(err, msg):
                reports[index] = (
                    err
                    if err is not None
                    else {"partition": msg.partition(), "offset": msg.offset()}
                )

            return callback

        try:
            for i, r in enumerate(records):
                kwargs: dict[str, Any] = {
                    "value": r["value"],
                    "key": r["key"],
                    "on_delivery": delivered(i),
                }
                if r["partition"] is not None:
                    kwargs["partition"] = r["partition"]
                if r["timestamp"] is not None:
                    kwargs["timestamp"] = r["timestamp"]
                if r["headers"]:
                    kwargs["headers"] = [(k, v.encode()) for k, v in r["headers"]]
                producer.produce(topic, **kwargs)
                producer.poll(0)
        except KafkaException as exc:
            raise ClientError(exc.args[0].name(), exc.args[0].str()) from exc
        producer.flush(TIMEOUT)
        for report in reports:
            if report is None:
                raise ClientError("KafkaTimeoutError", "no delivery report")
            if not isinstance(report, dict):
                raise ClientError(report.name(), report.str())
        return [{"partition": r["partition"], "offset": r["offset"]} for r in reports]

    def _consumer(self, bootstrap, reset, config=None):
        from confluent_kafka import Consumer

        # librdkafka wants a group.id even for assign(); no offsets are committed or fetched
        # because every assignment names a start offset.
        return Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "compat-unused",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": reset,
                "client.id": "compat-confluent",
                "enable.partition.eof": False,
                **(config or {}),
            }
        )

    def consume(
        self,
        bootstrap,
        topic,
        partition,
        count,
        *,
        offset="earliest",
        reset="earliest",
        timeout=TIMEOUT,
        config=None,
    ):
        from confluent_kafka import (
            OFFSET_BEGINNING,
            OFFSET_END,
            KafkaError,
            KafkaException,
            TopicPartition,
        )

        consumer = self._consumer(bootstrap, reset, config)
        start = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}.get(offset, offset)
        out: list[dict[str, Any]] = []
        try:
            consumer.assign([TopicPartition(topic, partition, start)])
            deadline = time.monotonic() + timeout
            while len(out) < count and time.monotonic() < deadline:
                msg = consumer.poll(0.3)
                if msg is None:
                    continue
                if msg.error():
                    err = msg.error()
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ClientError(err.name(), err.str())
                ts_type, ts = msg.timestamp()
                out.append(
                    _rec(
                        msg.key(),
                        msg.value(),
                        msg.headers() or [],
                        msg.partition(),
                        ts,
                        msg.offset(),
                        ts_type - 1 if ts_type else None,
                    )
                )
            return out[:count]
        except KafkaException as exc:
            raise ClientError(exc.args[0].name(), exc.args[0].str()) from exc
        finally:
            consumer.close()

    def offsets_for_time(self, bootstrap, topic, partition, timestamp):
        from confluent_kafka import TopicPartition

        consumer = self._consumer(bootstrap, "earliest")
        try:
            [found] = consumer.offsets_for_times(
                [TopicPartition(topic, partition, timestamp)], timeout=TIMEOUT
            )
            if found.error:
                raise ClientError(found.error.name(), found.error.str())
            return None if found.offset < 0 else found.offset
        finally:
            consumer.close()

    def consume_group(self, bootstrap, topic, group, count, *, timeout=TIMEOUT):
        return self.consume_group_with(bootstrap, topic, group, count, {}, timeout=timeout)

    def consume_group_with(self, bootstrap, topic, group, count, config, *, timeout=TIMEOUT):
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "client.id": "compat-confluent",
                **config,
            }
        )
        values: list[str] = []
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + timeout
            while len(values) < count and time.monotonic() < deadline:
                message = consumer.poll(0.3)
                if message is not None and message.error() is None:
                    values.append(_s(message.value()))
            consumer.commit(asynchronous=False)
            return values
        finally:
            consumer.close()


# ---------------------------------------------------------------------------- kcat


def kcat_path() -> str | None:
    return shutil.which("kcat") or shutil.which("kafkacat")


class KcatClient(Client):
    name = "kcat"
    per_record_timestamps = False  # kcat -P has no per-message timestamp
    per_record_headers = False  # -H applies to every message of a run

    def _run(self, args: list[str], input: str | None = None, timeout: float = 60):
        exe = kcat_path()
        if exe is None:
            raise RuntimeError("kcat is not installed (scripts/test installs it)")
        return subprocess.run(
            [exe, *args], input=input, capture_output=True, text=True, timeout=timeout
        )

    def produce(self, bootstrap, topic, records, *, acks=None, compression="none", config=None):
        if any(r["timestamp"] is not None for r in records):
            raise Unsupported("kcat cannot set a per-record timestamp")
        headers = {tuple(h) for r in records for h in r["headers"]}
        if headers and any(
            [list(h) for h in sorted(headers)] != sorted(r["headers"]) for r in records
        ):
            raise Unsupported("kcat sets the same headers on every record of a run")
        out = []
        # one kcat run per partition target, keeping record order
        groups: list[tuple[int | None, list[dict]]] = []
        for r in records:
            if groups and groups[-1][0] == r["partition"]:
                groups[-1][1].append(r)
            else:
                groups.append((r["partition"], [r]))
        for partition, group in groups:
            args = [
                "-P",
                "-b",
                bootstrap,
                "-t",
                topic,
                "-K",
                "\t",
                "-z",
                compression,
                "-X",
                "message.timeout.ms=10000",
                "-X",
                "client.id=compat-kcat",
            ]
            if acks is not None:
                args += ["-X", f"acks={acks}"]
            for key, value in (config or {}).items():
                args += ["-X", f"{key}={value}"]
            if partition is not None:
                args += ["-p", str(partition)]
            for k, v in sorted(headers):
                args += ["-H", f"{k}={v}"]
            lines = "".join(f"{r['key'] or ''}\t{r['value']}\n" for r in group)
            proc = self._run(args, input=lines)
            if proc.returncode != 0 or "ERROR" in proc.stderr or "failed" in proc.stderr:
                raise ClientError(_kcat_error(proc.stderr), proc.stderr.strip()[-500:])
            out.extend({"partition": partition, "offset": None} for _ in group)
        return out

    def consume(
        self,
        bootstrap,
        topic,
        partition,
        count,
        *,
        offset="earliest",
        reset="earliest",
        timeout=TIMEOUT,
    ):
        start = {"earliest": "beginning", "latest": "end"}.get(offset, offset)
        args = [
            "-C",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-p",
            str(partition),
            "-o",
            str(start),
            "-c",
            str(count),
            "-e",
            "-J",
            "-X",
            f"auto.offset.reset={reset}",
            "-X",
            "client.id=compat-kcat",
        ]
        proc = self._run(args, timeout=timeout + 30)
        if proc.returncode != 0 or "ERROR" in proc.stderr:
            raise ClientError(_kcat_error(proc.stderr), proc.stderr.strip()[-500:])
        out = []
        for line in proc.stdout.splitlines():
            m = json.loads(line)
            h = m.get("headers") or []
            out.append(
                _rec(
                    m.get("key"),
                    m.get("payload"),
                    list(zip(h[::2], h[1::2])),
                    m["partition"],
                    m.get("ts"),
                    m["offset"],
                    {"create": 0, "logappend": 1}.get(m.get("tstype")),
                )
            )
        return out

    def offsets_for_time(self, bootstrap, topic, partition, timestamp):
        proc = self._run(["-Q", "-b", bootstrap, "-t", f"{topic}:{partition}:{timestamp}", "-J"])
        if proc.returncode != 0:
            raise ClientError(_kcat_error(proc.stderr), proc.stderr.strip()[-500:])
        found = json.loads(proc.stdout)[topic][str(partition)]
        if "error" in found:
            raise ClientError(found["error"])
        return None if found["offset"] < 0 else found["offset"]


def _kcat_error(stderr: str) -> str:
    match = re.search(r"(Broker|Local): ([^:\n(]+)", stderr)
    if match:
        return match.group(2).strip().upper().replace(" ", "_")
    return stderr.strip().splitlines()[-1][:120] if stderr.strip() else "kcat failed"


# ---------------------------------------------------------------------------- Java


class JavaClient(Client):
    """The Java client through Kafka's console producer and consumer and kafka-get-offsets."""

    name = "java"
    per_record_timestamps = False  # the console producer stamps CreateTime itself
    per_record_partition = False  # ... and has no partition option (keys pick it)

    def produce(self, bootstrap, topic, records, *, acks=None, compression="none", config=None):
        if any(r["timestamp"] is not None for r in records):
            raise Unsupported("the console producer cannot set a per-record timestamp")
        partitions = {r["partition"] for r in records}
        if len(partitions) > 1:
            raise Unsupported("the console producer sends to one partition per run")
        [partition] = partitions or {None}
        props = {
            "compression.type": compression,
            "max.block.ms": 10000,
            "request.timeout.ms": 8000,
            "delivery.timeout.ms": 10000,
            "client.id": "compat-java",
            **(config or {}),
        }
        if acks is not None:
            props["acks"] = acks
        args = [
            "--topic",
            topic,
            "--property",
            "parse.key=true",
            "--property",
            "parse.headers=true",
            "--property",
            "null.marker=<null>",
        ]
        if partition is not None:
            raise Unsupported("the console producer has no partition option")
        for k, v in props.items():
            args += ["--producer-property", f"{k}={v}"]
        lines = []
        for r in records:
            headers = ",".join(f"{k}:{v}" for k, v in r["headers"]) or "<null>"
            key = "<null>" if r["key"] is None else r["key"]
            lines.append(f"{headers}\t{key}\t{r['value']}")
        proc = run_tool(
            "kafka-console-producer",
            args,
            bootstrap=bootstrap,
            input="\n".join(lines) + "\n",
            timeout=90,
        )
        error = _java_error(proc.stderr)
        if proc.returncode != 0 or error:
            raise ClientError(error or f"exit {proc.returncode}", proc.stderr.strip()[-800:])
        return [{"partition": partition, "offset": None} for _ in records]

    def consume(
        self,
        bootstrap,
        topic,
        partition,
        count,
        *,
        offset="earliest",
        reset="earliest",
        timeout=TIMEOUT,
    ):
        args = [
            "--topic",
            topic,
            "--partition",
            str(partition),
            "--offset",
            str(offset),
            "--max-messages",
            str(count),
            "--timeout-ms",
            str(int(timeout * 1000)),
            "--consumer-property",
            f"auto.offset.reset={reset}",
            "--consumer-property",
            "client.id=compat-java",
        ]
        for p in (
            "print.timestamp",
            "print.partition",
            "print.offset",
            "print.headers",
            "print.key",
            "print.value",
        ):
            args += ["--property", f"{p}=true"]
        args += ["--property", "null.literal=<null>"]
        proc = run_tool("kafka-console-consumer", args, bootstrap=bootstrap, timeout=timeout + 60)
        error = _java_error(proc.stderr, ignore=("TimeoutException",))
        if error:
            raise ClientError(error, proc.stderr.strip()[-800:])
        out = []
        for line in proc.stdout.splitlines():
            fields = line.split("\t")
            if len(fields) != 6:
                continue
            ts, part, off, headers, key, value = fields
            ts_type, _, ts_value = ts.partition(":")
            hs = [] if headers == "NO_HEADERS" else [h.split(":", 1) for h in headers.split(",")]
            out.append(
                _rec(
                    None if key == "<null>" else key,
                    value,
                    hs,
                    int(part.split(":")[1]),
                    int(ts_value),
                    int(off.split(":")[1]),
                    {"CreateTime": 0, "LogAppendTime": 1}.get(ts_type),
                )
            )
        return out

    def consume_group(self, bootstrap, topic, group, count, *, timeout=TIMEOUT):
        return self.consume_group_with(bootstrap, topic, group, count, {}, timeout=timeout)

    def consume_group_with(self, bootstrap, topic, group, count, config, *, timeout=TIMEOUT):
        args = [
            "--topic",
            topic,
            "--group",
            group,
            "--from-beginning",
            "--max-messages",
            str(count),
            "--timeout-ms",
            str(int(timeout * 1000)),
            "--consumer-property",
            "client.id=compat-java",
        ]
        for key, value in config.items():
            args += ["--consumer-property", f"{key}={value}"]
        proc = run_tool("kafka-console-consumer", args, bootstrap=bootstrap, timeout=timeout + 60)
        error = _java_error(proc.stderr, ignore=("TimeoutException",))
        if error:
            raise ClientError(error, proc.stderr.strip()[-800:])
        return proc.stdout.splitlines()  # it commits on close (enable.auto.commit)

    def offsets_for_time(self, bootstrap, topic, partition, timestamp):
        proc = run_tool(
            "kafka-get-offsets",
            ["--topic", topic, "--partitions", str(partition), "--time", str(timestamp)],
            bootstrap=bootstrap,
            timeout=60,
        )
        error = _java_error(proc.stderr)
        if proc.returncode != 0 or error:
            raise ClientError(error or f"exit {proc.returncode}", proc.stderr.strip()[-800:])
        # "topic:partition:offset"; no line when no record has a later timestamp
        for line in proc.stdout.splitlines():
            t, p, o = line.rsplit(":", 2)
            if t == topic and int(p) == partition:
                return int(o) if o else None
        return None


# InvalidRecordException (INVALID_RECORD) is the one error class outside the errors package.
_JAVA_EXC = re.compile(r"org\.apache\.kafka\.common\.(?:errors\.(\w+)|(InvalidRecordException))")


def _java_error(stderr: str, ignore: Iterable[str] = ()) -> str | None:
    """The first Kafka exception class named in a tool's stderr, as a Kafka error name
    where the mapping is obvious (``RecordTooLargeException`` -> the class name)."""
    for match in _JAVA_EXC.finditer(stderr):
        name = match.group(1) or match.group(2)
        if name not in ignore:
            return name
    return None


# ---------------------------------------------------------------------------- helpers


def _acks(acks: str, kind):
    return "all" if acks in ("all", "-1") else kind(acks)


def _b(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _s(data: Any) -> str | None:
    if data is None:
        return None
    return data.decode() if isinstance(data, (bytes, bytearray)) else str(data)


def _rec(key, value, headers, partition, timestamp, offset, timestamp_type) -> dict[str, Any]:
    return {
        "key": _s(key),
        "value": _s(value),
        "headers": [[k, _s(v)] for k, v in headers or []],
        "partition": partition,
        "offset": offset,
        "timestamp": timestamp,
        "timestamp_type": {0: "CreateTime", 1: "LogAppendTime"}.get(timestamp_type, timestamp_type),
    }


CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (KafkaPythonClient(), AioKafkaClient(), ConfluentClient(), KcatClient(), JavaClient())
}
