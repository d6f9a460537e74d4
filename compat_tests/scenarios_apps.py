"""Kafka's applications against both brokers: Kafka Streams (exactly_once_v2), Connect in
distributed mode with the file connectors, MirrorMaker 2. Registered in :data:`APP_SCENARIOS`
with the name prefix ``app-`` and run by compat_tests/test_apps_compat.py; the report lists
them with the client column naming the application (or, for MirrorMaker 2, the direction).

Each observes what the application's user sees, and nothing timing-dependent:

* ``app-streams-eos``: ``{"records_in", "counts": {key: final count}, "monotonic": bool,
  "keys_counted"}``. Two instances of compat_tests/apps/CountApp.java count per key into an
  output topic; one is killed (SIGKILL) mid-run and started again; the counts read with
  read_committed end exact (= records in per key) and never go down on a key.
* ``app-connect-file``: ``{"sink_equals_source", "sink_lines", "topic_records",
  "distinct_topic_records", "source_state", "sink_state", "source_offset"}``. A distributed
  worker runs FileStreamSource (file -> topic) and FileStreamSink (topic -> file); the worker
  is stopped after the first half, the second half is appended, the worker starts again: the
  source resumes from its committed offset (no record twice in the topic), the sink file ends
  equal to the source file.
* ``app-mirrormaker2``: ``{"mirrored_topic", "records", "retention_ms", "group_offset",
  "heartbeats", "checkpoints"}``. ``connect-mirror-maker`` (dedicated mode) mirrors a topic,
  its configs, a consumer group's committed offset (checkpoints, sync.group.offsets) and
  emits heartbeats; the reference is Kafka -> Kafka, compared with wireserver -> wireserver,
  wireserver -> Kafka and Kafka -> wireserver.

Sizes: the bounded runs (the default; CI) are small. ``WIRESERVER_COMPAT_LONG=1``
(scripts/compat sets it) adds the ``-long`` variants: more records, more keys.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable

from compat_tests import neutral
from compat_tests.applications import (
    ConnectWorker,
    JavaApp,
    connect_classpath,
    read_committed,
    remove,
    running,
    streams_classpath,
    wait_for,
    workdir,
    write_properties,
)
from compat_tests.clients import record
from compat_tests.scenarios import Scenario, scenario

APP_SCENARIOS: dict[str, Scenario] = {}
#: scenario name -> True for the long variants (run only with WIRESERVER_COMPAT_LONG=1)
LONG: set[str] = set()
TIMEOUT = 120.0


def _register(name: str, clients: tuple[str, ...], check, sizes: dict[str, dict], fn) -> None:
    for suffix, size in sizes.items():
        full = name + suffix
        scenario(full, clients, check=check, registry=APP_SCENARIOS)(
            lambda target, client, _size=size: fn(target, client, **_size)
        )
        APP_SCENARIOS[full].doc = (fn.__doc__ or "").strip()
        if suffix:
            LONG.add(full)


# ------------------------------------------------------------------------- Kafka Streams


def streams_eos(bootstrap: str, _client: object, keys: int, per_key: int) -> dict:
    """Two CountApp instances, exactly_once_v2; one killed mid-run and restarted."""
    tmp = workdir("streams")
    app_id = neutral.topic_name("app-streams")
    source = neutral.create_topic(bootstrap, "streams-in", partitions=3)
    sink = neutral.create_topic(bootstrap, "streams-out", partitions=3)
    names = [f"k{i}" for i in range(keys)]

    def produce(rounds: range) -> None:
        neutral.write(bootstrap, source, [record(f"v{r}", k) for r in rounds for k in names])

    def instance(name: str) -> JavaApp:
        args = [bootstrap, app_id, source, sink, str(tmp / name)]
        return JavaApp("CountApp", args, tmp / f"{name}.log", streams_classpath())

    def counts() -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for key, value in read_committed(bootstrap, sink):
            out.setdefault(key, []).append(struct.unpack(">q", value)[0])
        return out

    def done() -> dict[str, list[int]] | None:
        seen = counts()
        finished = len(seen) == keys and all(c[-1] >= per_key for c in seen.values())
        return seen if finished else None

    a, b = instance("a"), instance("b")
    try:
        produce(range(per_key // 2))
        with running(a, b):
            for app in (a, b):
                wait_for(
                    "a Streams instance RUNNING",
                    lambda a=app: "STATE RUNNING" in a.output(),
                    TIMEOUT,
                    a,
                    b,
                )
            wait_for("the first counts", counts, TIMEOUT, a, b)
            a.kill()
            produce(range(per_key // 2, per_key))
            a.start()
            seen = wait_for("the final counts", done, TIMEOUT * 2, a, b, interval=1.0)
        return {
            "records_in": keys * per_key,
            "keys_counted": len(seen),
            "counts": {k: c[-1] for k, c in sorted(seen.items())},
            "monotonic": all(c == sorted(c) for c in seen.values()),
        }
    finally:
        remove(tmp)


def _check_streams(obs: dict) -> None:
    per_key = obs["records_in"] // obs["keys_counted"]
    assert set(obs["counts"].values()) == {per_key}, obs
    assert obs["monotonic"], obs


_register(
    "app-streams-eos",
    ("kafka-streams",),
    _check_streams,
    {"": {"keys": 8, "per_key": 40}, "-long": {"keys": 50, "per_key": 400}},
    streams_eos,
)


# ----------------------------------------------------------------------- Kafka Connect


def connect_file(bootstrap: str, _client: object, lines: int) -> dict:
    """FileStreamSource -> topic -> FileStreamSink on a distributed worker restarted mid-way."""
    tmp = workdir("connect")
    topic = neutral.create_topic(bootstrap, "connect-file", partitions=1)
    group = neutral.topic_name("app-connect")
    source, sink = tmp / "source.txt", tmp / "sink.txt"
    text = [f"line-{i}-" + "x" * (i % 17) for i in range(lines)]
    half = lines // 2

    def sink_lines(count: int) -> Callable[[], bool]:
        return lambda: sink.exists() and len(sink.read_text().splitlines()) >= count

    worker = ConnectWorker(bootstrap, group, tmp)
    try:
        source.write_text("".join(f"{line}\n" for line in text[:half]))
        with running(worker):
            wait_for("the Connect worker's REST API", worker.ready, TIMEOUT, worker)
            _put(
                worker,
                "file-source",
                {
                    "connector.class": "FileStreamSource",
                    "file": str(source),
                    "topic": topic,
                },
            )
            _put(
                worker,
                "file-sink",
                {
                    "connector.class": "FileStreamSink",
                    "file": str(sink),
                    "topics": topic,
                },
            )
            wait_for("the first half in the sink file", sink_lines(half), TIMEOUT, worker)
        with open(source, "a") as out:
            out.write("".join(f"{line}\n" for line in text[half:]))
        with running(worker):
            wait_for("the Connect worker's REST API", worker.ready, TIMEOUT, worker)
            wait_for("every line in the sink file", sink_lines(lines), TIMEOUT, worker)
            time.sleep(3)  # a record delivered twice would reach the file by now
            states = {name: _state(worker, name) for name in ("file-source", "file-sink")}
            _, offsets = worker.rest("GET", "/connectors/file-source/offsets")
        in_topic = [value for _key, value in read_committed(bootstrap, topic)]
        written = sink.read_text().splitlines()
        return {
            "sink_equals_source": sink.read_text() == source.read_text(),
            "sink_lines": len(written),
            "topic_records": len(in_topic),
            "distinct_topic_records": len(set(in_topic)),
            "source_state": states["file-source"],
            "sink_state": states["file-sink"],
            "source_offset": [o["offset"] for o in (offsets or {}).get("offsets", [])],
        }
    finally:
        worker.stop()
        remove(tmp)


def _put(worker: ConnectWorker, name: str, config: dict) -> None:
    status, body = worker.rest("PUT", f"/connectors/{name}/config", {**config, "tasks.max": "1"})
    if status not in (200, 201):
        raise RuntimeError(f"PUT /connectors/{name}/config: {status} {body}\n{worker.tail()}")


def _state(worker: ConnectWorker, name: str) -> list[str]:
    """The connector's state and its tasks' states, once none is still UNASSIGNED."""

    def settled():
        status, body = worker.rest("GET", f"/connectors/{name}/status")
        if status != 200:
            return None
        states = [body["connector"]["state"], *(t["state"] for t in body["tasks"])]
        return states if "UNASSIGNED" not in states and len(states) > 1 else None

    return wait_for(f"the status of {name}", settled, TIMEOUT, worker)


def _check_connect(obs: dict) -> None:
    assert obs["sink_equals_source"], obs
    assert obs["topic_records"] == obs["distinct_topic_records"] == obs["sink_lines"], obs
    assert obs["source_state"] == obs["sink_state"] == ["RUNNING", "RUNNING"], obs


_register(
    "app-connect-file",
    ("connect-distributed",),
    _check_connect,
    {"": {"lines": 200}, "-long": {"lines": 20000}},
    connect_file,
)


# --------------------------------------------------------------------- MirrorMaker 2

#: the directions compared with the reference (Kafka -> Kafka): the report's client column
MM2_DIRECTIONS = ("wireserver->wireserver", "wireserver->kafka", "kafka->wireserver")


def mirror_maker(pair: tuple[str, str], _client: object, records: int) -> dict:
    """connect-mirror-maker (dedicated mode) from the first cluster to the second."""
    upstream, downstream = pair
    tag = uuid.uuid4().hex[:6]
    src, dst = f"src{tag}", f"dst{tag}"
    topic = neutral.create_topic(upstream, "mm2", partitions=1, configs={"retention.ms": 7200000})
    neutral.write(upstream, topic, [record(f"m{i}", f"k{i}") for i in range(records)])
    group = neutral.topic_name("mm2-group")
    neutral.commit_offset(upstream, group, topic, records)
    tmp = workdir("mm2")
    flow = f"{src}->{dst}"
    config = {
        "clusters": f"{src},{dst}",
        f"{src}.bootstrap.servers": upstream,
        f"{dst}.bootstrap.servers": downstream,
        f"{flow}.enabled": "true",
        f"{dst}->{src}.enabled": "false",
        f"{flow}.topics": topic,
        f"{flow}.groups": group,
        "sync.topic.configs.enabled": "true",
        "sync.group.offsets.enabled": "true",
        # an offset sync for every record, so the group's offset translates exactly
        "offset.lag.max": 0,
        "emit.checkpoints.interval.seconds": 1,
        "sync.group.offsets.interval.seconds": 1,
        "emit.heartbeats.interval.seconds": 1,
        "refresh.topics.interval.seconds": 2,
        "refresh.groups.interval.seconds": 2,
        "sync.topic.configs.interval.seconds": 2,
        "replication.factor": 1,
        **{
            f"{name}.replication.factor": 1
            for name in (
                "checkpoints.topic",
                "heartbeats.topic",
                "offset-syncs.topic",
                "offset.storage",
                "status.storage",
                "config.storage",
            )
        },
    }
    mirrored = f"{src}.{topic}"
    app = JavaApp(
        "org.apache.kafka.connect.mirror.MirrorMaker",
        [str(write_properties(tmp / "mm2.properties", config)), "--clusters", dst],
        tmp / "mm2.log",
        connect_classpath(),
    )
    waits = {
        "records": ("the mirrored records", lambda: _values(downstream, mirrored, records)),
        "retention_ms": (
            "retention.ms synced",
            lambda: _topic_config(downstream, mirrored, "retention.ms", "7200000"),
        ),
        "group_offset": (
            "the group's offset translated to the end of the mirrored topic",
            lambda: _group_offset(downstream, group, mirrored, records),
        ),
        "heartbeats": ("heartbeats", lambda: _keyed(downstream, "heartbeats", src)),
        "checkpoints": (
            "checkpoints",
            lambda: _keyed(downstream, f"{src}.checkpoints.internal", group),
        ),
    }
    try:
        with running(app):
            seen = {key: wait_for(what, fn, TIMEOUT, app) for key, (what, fn) in waits.items()}
        return {
            "mirrored_topic": mirrored.replace(tag, "<tag>").replace(topic, "<topic>"),
            **seen,
        }
    finally:
        app.stop()
        remove(tmp)


def _values(bootstrap: str, topic: str, count: int) -> list[str] | None:
    if not neutral.topic_exists(bootstrap, topic):
        return None
    values = [v.decode() for _k, v in read_committed(bootstrap, topic)]
    return values if len(values) >= count else None


def _keyed(bootstrap: str, topic: str, marker: str) -> bool:
    """True when a record of ``topic`` has ``marker`` in its key (a heartbeat names its
    source alias, a checkpoint its group)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    if not neutral.topic_exists(bootstrap, topic):
        return False
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-apps-keys"})
    try:
        parts = consumer.list_topics(topic, timeout=5).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error() and marker.encode() in (msg.key() or b""):
                return True
        return False
    finally:
        consumer.close()


def _topic_config(bootstrap: str, topic: str, name: str, expect: str) -> str | None:
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    [future] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    value = future.result(timeout=30)[name].value
    return value if value == expect else None


def _group_offset(bootstrap: str, group: str, topic: str, expect: int) -> int | None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    [future] = admin.list_consumer_group_offsets([request]).values()
    [partition] = future.result(timeout=30).topic_partitions
    return partition.offset if partition.offset == expect else None


def _check_mm2(obs: dict) -> None:
    assert obs["records"] == [f"m{i}" for i in range(len(obs["records"]))], obs
    assert obs["retention_ms"] == "7200000", obs
    assert obs["group_offset"] == len(obs["records"]), obs
    assert obs["heartbeats"] and obs["checkpoints"], obs


_register(
    "app-mirrormaker2",
    MM2_DIRECTIONS,
    _check_mm2,
    {"": {"records": 50}, "-long": {"records": 5000}},
    mirror_maker,
)
