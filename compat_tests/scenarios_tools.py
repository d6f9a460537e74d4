"""Kafka's command-line tools (the 4.4.0 jars) against both brokers: one ``tool-`` scenario per
tool, registered with ``compat_tests.scenarios.scenario`` for the ``java`` client.

Each runs the tool as a user would (``run_tool``: ``java -cp <jars> <main class>``, a timeout
on every run, so a tool that hangs shows as ``"timeout"``) and observes its exit code, its
standard output with what differs between any two brokers replaced (topic, group and
transactional-id names, host:port, node ids, topic and cluster ids, times), and the Kafka
exception classes it names on standard error. ``stack_trace`` says whether the tool printed a
Java stack trace: where wireserver lacks a feature the tool must end with a clear error, never
a trace Kafka would not print.

CI runs the others in about 4 minutes for both brokers (measured on the project's 2-core
machine: some 6 to 8 s per tool run); the rest are registered only with
``WIRESERVER_COMPAT_LONG=1``, which ``scripts/compat`` sets: the perf tests, the verifiable
clients, end-to-end latency, the console producer and consumer (the java client of every
other scenario runs them anyway) and kafka-client-metrics (it waits on a feature nobody is
building).

kafka-acls against a broker with an authorizer registers in the security registry
(compat_tests/test_security_compat.py runs it); on the plain targets it shows the error.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import tempfile
import time
from typing import Any

from compat_tests import neutral
from compat_tests.clients import Client, record
from compat_tests.scenarios import DIFFERENCES, scenario

#: ``scripts/compat`` sets it: the long tool scenarios run there, not in CI
LONG = os.environ.get("WIRESERVER_COMPAT_LONG") == "1"
JAVA = ("java",)
TIMEOUT = 60.0
#: why wireserver's answer differs today, for tools that wait on work done elsewhere in #16

_FILES = tempfile.TemporaryDirectory(prefix="compat-tools-")
_HOST_PORT = re.compile(r"(?:127\.0\.0\.1|localhost|\[?::1\]?):\d+")
_IDS = re.compile(r"(TopicId: |Cluster ID: |ClusterId: )[A-Za-z0-9_-]{22}")
_PATHS = re.compile(r'"/[^"]*"')
_NODE_LABELS = r"(Leader|Replicas|Isr|broker|Broker|brokers|brokerId|BrokerId|Coordinator|CoordinatorId|LeaderId|ReplicaId|node|id)"
_TRACE = re.compile(r"^\s+at [\w.$]+\(", re.M)
_EXCEPTION = re.compile(r"org\.apache\.kafka\.common\.errors\.(\w+)")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,:]\d+)?")


def tool_scenario(name: str, *, long: bool = False, **kwargs: Any):
    """Register a ``tool-`` scenario for the Java client (long ones only when :data:`LONG`)."""
    if long and not LONG:
        return lambda fn: fn
    return scenario(name, clients=JAVA, **kwargs)


class Session:
    """One scenario's tool runs against one broker, with the names it made replaced."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.node = neutral.node_id(bootstrap)
        self.names: dict[str, str] = {}
        self.stdout = ""  # the last run's, as printed

    def name(self, prefix: str, placeholder: str) -> str:
        real = neutral.topic_name(prefix)
        self.names[real] = placeholder
        return real

    def topic(self, prefix: str, partitions: int = 1, **configs: Any) -> str:
        real = neutral.create_topic(self.bootstrap, prefix, partitions, configs or None)
        self.names[real] = f"<{prefix}>"
        return real

    def normalize(self, text: str) -> str:
        for real, placeholder in sorted(self.names.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(real, placeholder)
        text = _HOST_PORT.sub("<host:port>", text)
        text = _TIMESTAMP.sub("<time>", text)
        text = _IDS.sub(r"\1<id>", text)
        text = _PATHS.sub('"<dir>"', text)
        node = re.escape(str(self.node))
        text = re.sub(rf"({_NODE_LABELS}\W{{1,4}}){node}(?!\d)", r"\1<node>", text)
        text = re.sub(rf"(\[|<host:port> \(){node}([\])])", r"\1<node>\2", text)
        # the known difference of describe-configs (MIN_ISR_SOURCE): a cluster-level value
        # Kafka's controller writes, which kafka-topics --describe lists among the Configs
        text = re.sub(r"(Configs: )min\.insync\.replicas=1,?", r"\1", text)
        return re.sub(r" {2,}", " ", text)  # columns padded to the width of replaced values

    def run(
        self,
        tool: str,
        args: list[str],
        *,
        timeout: float = TIMEOUT,
        input: str | None = None,
        ordered: bool = True,
    ) -> dict[str, Any]:
        """exit code, normalized stdout lines (sorted unless ``ordered``: some tools print
        partitions in hash order), exception classes named on stderr, whether a stack trace
        was printed; ``{"exit": "timeout"}`` when it did not end in time."""
        from compat_tests.reference import run_tool

        try:
            proc = run_tool(tool, args, bootstrap=self.bootstrap, timeout=timeout, input=input)
        except subprocess.TimeoutExpired:
            return {"exit": "timeout"}
        self.stdout = proc.stdout
        out = [self.normalize(line.rstrip()) for line in proc.stdout.splitlines()]
        out = [line for line in out if line.strip()]
        return {
            "exit": proc.returncode,
            "out": out if ordered else sorted(out),
            "errors": sorted(set(_EXCEPTION.findall(proc.stderr + proc.stdout))),
            "stack_trace": bool(_TRACE.search(proc.stdout + proc.stderr)),
        }

    def json_file(self, data: Any) -> str:
        """A JSON file for a tool's --*-json-file option (removed when the run ends)."""
        handle = tempfile.NamedTemporaryFile("w", suffix=".json", dir=_FILES.name, delete=False)
        with handle:
            json.dump(data, handle)
        return handle.name


def _ok(step: dict) -> bool:
    return step.get("exit") == 0 and not step.get("stack_trace")


def _commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """``group`` commits ``offsets`` (partition -> offset) with confluent-kafka's admin."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    neutral.commit_offset(bootstrap, group, topic, offsets.get(0, 0))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p, o) for p, o in offsets.items()]
    )
    [future] = admin.alter_consumer_group_offsets([request]).values()
    future.result(timeout=30)


def _write(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    """``per_partition`` keyed records on each partition, CreateTime 1 s apart from BASE_TS."""
    neutral.write(
        bootstrap,
        topic,
        [
            record(
                f"v{i}", key=f"k{i}", partition=i % partitions, timestamp=neutral.BASE_TS + i * 1000
            )
            for i in range(partitions * per_partition)
        ],
    )


# ------------------------------------------------------------------------------ topics, configs


@tool_scenario("tool-kafka-topics", check=lambda o: _check_topics(o))
def kafka_topics(bootstrap: str, client: Client) -> dict:
    """kafka-topics: create with a config, a duplicate create, describe, grow to 3 partitions,
    try to shrink to 1, delete"""
    s = Session(bootstrap)
    topic = s.name("topics", "<topic>")
    create = ["--topic", topic, "--partitions", "2", "--replication-factor", "1"]
    obs = {
        "create": s.run("kafka-topics", ["--create", *create, "--config", "retention.ms=3600000"]),
        "duplicate": s.run("kafka-topics", ["--create", *create]),
    }
    neutral.wait_until_served(bootstrap, topic, 2)
    obs["describe"] = s.run("kafka-topics", ["--describe", "--topic", topic])
    obs["grow"] = s.run("kafka-topics", ["--alter", "--topic", topic, "--partitions", "3"])
    obs["shrink"] = s.run("kafka-topics", ["--alter", "--topic", topic, "--partitions", "1"])
    obs["delete"] = s.run("kafka-topics", ["--delete", "--topic", topic])
    return obs


def _check_topics(obs: dict) -> None:
    assert _ok(obs["create"]) and obs["create"]["out"] == ["Created topic <topic>."], obs
    assert obs["duplicate"]["exit"] != 0 and _ok(obs["delete"]), obs
    assert _ok(obs["grow"]) and obs["shrink"]["exit"] != 0, obs


def _configs(s: Session, entity: list[str], change: list[str], delete: str | None) -> dict:
    """kafka-configs --alter then --describe (after a second: Kafka applies a change
    asynchronously) of one entity; then --delete-config ``delete`` and --describe again."""
    obs = {"alter": s.run("kafka-configs", ["--alter", *entity, *change])}
    time.sleep(1)
    obs["describe"] = s.run("kafka-configs", ["--describe", *entity])
    if delete:
        obs["delete"] = s.run("kafka-configs", ["--alter", *entity, "--delete-config", delete])
        time.sleep(1)
        obs["after_delete"] = s.run("kafka-configs", ["--describe", *entity])
    return obs


@tool_scenario("tool-kafka-configs[topic]", check=lambda o: _check_configs(o))
def kafka_configs_topic(bootstrap: str, client: Client) -> dict:
    """kafka-configs on a topic: add two configs, describe, an invalid value"""
    s = Session(bootstrap)
    entity = ["--entity-type", "topics", "--entity-name", s.topic("configs")]
    change = ["--add-config", "retention.ms=7200000,cleanup.policy=compact"]
    obs = _configs(s, entity, change, None)
    obs["invalid"] = s.run("kafka-configs", ["--alter", *entity, "--add-config", "retention.ms=x"])
    return obs


@tool_scenario("tool-kafka-configs[broker]", check=lambda o: _check_configs(o))
def kafka_configs_broker(bootstrap: str, client: Client) -> dict:
    """kafka-configs on the broker: set a dynamic key, describe, delete it, describe"""
    s = Session(bootstrap)
    entity = ["--entity-type", "brokers", "--entity-name", str(s.node)]
    key = "sasl.kerberos.min.time.before.relogin"
    return _configs(s, entity, ["--add-config", f"{key}=70000"], key)


@tool_scenario(
    "tool-kafka-configs[group]",
    check=lambda o: _check_configs(o),
)
def kafka_configs_group(bootstrap: str, client: Client) -> dict:
    """kafka-configs on a group that has no members: set the session timeout, describe,
    delete it, describe (the group is gone with its last config)"""
    s = Session(bootstrap)
    entity = ["--entity-type", "groups", "--entity-name", s.name("cfg-group", "<group>")]
    key = "consumer.session.timeout.ms"
    return _configs(s, entity, ["--add-config", f"{key}=50000"], key)


def _check_configs(obs: dict) -> None:
    assert _ok(obs["alter"]) and _ok(obs["describe"]), obs
    assert obs.get("invalid", {"exit": 1})["exit"] != 0, obs
    assert obs.get("after_delete", {}).get("out") != obs["describe"]["out"], obs


@tool_scenario("tool-kafka-configs[quotas]", check=lambda o: _check_quotas(o))
def kafka_configs_quotas(bootstrap: str, client: Client) -> dict:
    """kafka-configs on client quotas: set a client-id's producer_byte_rate and
    consumer_byte_rate, describe, delete one, describe; a negative and an unknown key refused;
    then three 20 kB produces by that client-id are throttled (throttle_time_ms > 0) and by
    another client-id are not"""
    s = Session(bootstrap)
    client_id = s.name("quota-client", "<client>")
    entity = ["--entity-type", "clients", "--entity-name", client_id]
    change = ["--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"]
    obs = _configs(s, entity, change, "consumer_byte_rate")
    for step, config in (("negative", "producer_byte_rate=-1"), ("unknown", "no_such_rate=1")):
        obs[step] = s.run("kafka-configs", ["--alter", *entity, "--add-config", config])
    topic = s.topic("quota")
    neutral.wait_until_served(bootstrap, topic, 1)
    obs["throttled"] = _produce_throttled(bootstrap, client_id, topic)
    obs["other_throttled"] = _produce_throttled(bootstrap, s.name("free", "<free>"), topic)
    return obs


def _produce_throttled(bootstrap: str, client_id: str, topic: str) -> bool:
    """Whether any of three 20 kB produces by ``client_id`` came back with a throttle time."""
    from kafka.protocol.producer.produce import ProduceRequest

    from compat_tests.raw_protocol import batch as record_batch
    from wireserver.testing import KafkaWire

    batch = record_batch([b"q" * 20000], base_ts=neutral.BASE_TS)
    topic_class = ProduceRequest.TopicProduceData
    throttled = False
    with KafkaWire(bootstrap, client_id=client_id) as wire:
        for _ in range(3):
            request = ProduceRequest(
                version=9,
                transactional_id=None,
                acks=1,
                timeout_ms=10000,
                topic_data=[
                    topic_class(
                        name=topic,
                        partition_data=[topic_class.PartitionProduceData(index=0, records=batch)],
                    )
                ],
            )
            throttled = throttled or wire.request(request).throttle_time_ms > 0
    return throttled


def _check_quotas(obs: dict) -> None:
    _check_configs(obs)
    assert obs["negative"]["exit"] != 0, obs
    assert obs["throttled"] and not obs["other_throttled"], obs


@tool_scenario(
    "tool-kafka-client-metrics",
    long=True,
    check=lambda o: _check_client_metrics(o),
)
def kafka_client_metrics(bootstrap: str, client: Client) -> dict:
    """a client metrics subscription made with kafka-configs --entity-type client-metrics,
    then kafka-client-metrics --describe, --list and --delete"""
    s = Session(bootstrap)
    name = s.name("metrics", "<metrics>")
    entity = ["--entity-type", "client-metrics", "--entity-name", name]
    change = ["--add-config", "metrics=org.apache.kafka.producer.,interval.ms=5000"]
    obs = {"configs_alter": s.run("kafka-configs", ["--alter", *entity, *change])}
    time.sleep(1)
    obs["describe"] = s.run("kafka-client-metrics", ["--describe", "--name", name])
    listed = s.run("kafka-client-metrics", ["--list"])
    obs["listed"] = any("<metrics>" in line for line in listed.get("out", []))
    obs["delete"] = s.run("kafka-client-metrics", ["--delete", "--name", name])
    return obs


DIFFERENCES[("tool-kafka-client-metrics", "*")] = (
    "wireserver does not serve client metrics subscriptions (KIP-714): the CLIENT_METRICS "
    "config resource is refused with INVALID_REQUEST and a message saying so, which "
    "kafka-client-metrics prints and kafka-configs prints with the stack trace it prints for "
    "every failed change"
)


def _check_client_metrics(obs: dict) -> None:
    assert _ok(obs["configs_alter"]) and _ok(obs["describe"]) and obs["listed"], obs


# ------------------------------------------------------------------------------ groups


@tool_scenario("tool-kafka-consumer-groups", check=lambda o: _check_groups(o))
def kafka_consumer_groups(bootstrap: str, client: Client) -> dict:
    """kafka-consumer-groups on a group with offsets 4 and 5 committed on a 2-partition topic
    of 6 records each: describe, --reset-offsets --to-earliest / --shift-by 3 / --to-datetime
    --execute, --delete-offsets of partition 1, --delete"""
    s = Session(bootstrap)
    topic = s.topic("cg", partitions=2)
    group = s.name("cg-group", "<group>")
    _write(bootstrap, topic, 2, 6)
    _commit(bootstrap, group, topic, {0: 4, 1: 5})
    reset = ["--reset-offsets", "--group", group, "--topic", topic, "--execute"]
    middle = datetime.datetime.fromtimestamp(
        (neutral.BASE_TS + 4500) / 1000, tz=datetime.UTC
    ).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return {
        "describe": s.run("kafka-consumer-groups", ["--describe", "--group", group]),
        "to_earliest": s.run("kafka-consumer-groups", [*reset, "--to-earliest"], ordered=False),
        "shift_by": s.run("kafka-consumer-groups", [*reset, "--shift-by", "3"], ordered=False),
        "to_datetime": s.run(
            "kafka-consumer-groups", [*reset, "--to-datetime", middle], ordered=False
        ),
        "delete_offsets": s.run(
            "kafka-consumer-groups", ["--delete-offsets", "--group", group, "--topic", f"{topic}:1"]
        ),
        "delete": s.run("kafka-consumer-groups", ["--delete", "--group", group]),
    }


def _check_groups(obs: dict) -> None:
    for step in ("describe", "to_earliest", "shift_by", "to_datetime", "delete"):
        assert _ok(obs[step]), (step, obs)


@tool_scenario("tool-kafka-share-groups", long=True, check=lambda o: _check_share_groups(o))
def kafka_share_groups(bootstrap: str, client: Client) -> dict:
    """kafka-share-groups on a group that does not exist: describe, describe --offsets, delete
    and a dry-run offset reset"""
    s = Session(bootstrap)
    group = ["--group", s.name("share-group", "<group>")]
    reset = [*group, "--reset-offsets", "--to-earliest", "--all-topics", "--dry-run"]
    return {
        "describe": s.run("kafka-share-groups", ["--describe", *group]),
        "offsets": s.run("kafka-share-groups", ["--describe", *group, "--offsets"]),
        "delete": s.run("kafka-share-groups", ["--delete", *group]),
        "reset": s.run("kafka-share-groups", reset),
    }


def _check_share_groups(obs: dict) -> None:
    assert any("is not a share group" in line for line in obs["delete"]["out"]), obs


DIFFERENCES[("tool-kafka-share-groups", "*")] = (
    "a dry-run --reset-offsets of a share group that does not exist: Kafka prints nothing (a "
    "reset would create the group), wireserver ends with 'Group <group> is not a share group.' "
    "(AlterShareGroupOffsets does not create a group: docs/compatibility.md); describe and "
    "delete are the same"
)


@tool_scenario("tool-kafka-groups", check=lambda o: _check_group_lists(o))
def kafka_groups(bootstrap: str, client: Client) -> dict:
    """kafka-groups, kafka-share-groups and kafka-streams-groups --list after a classic
    group committed: whether each lists it"""
    s = Session(bootstrap)
    topic = s.topic("groups")
    group = s.name("list-group", "<group>")
    neutral.commit_offset(bootstrap, group, topic)
    runs = {
        "groups": s.run("kafka-groups", ["--list"]),
        "share_groups": s.run("kafka-share-groups", ["--list"]),
        "streams_groups": s.run("kafka-streams-groups", ["--list"]),
    }
    return {
        label: {
            "exit": run.get("exit"),
            "lists_group": any("<group>" in line for line in run.get("out", [])),
            "errors": run.get("errors"),
            "stack_trace": run.get("stack_trace"),
        }
        for label, run in runs.items()
    }


def _check_group_lists(obs: dict) -> None:
    assert obs["groups"]["lists_group"], obs
    assert not obs["share_groups"]["lists_group"], obs


# ------------------------------------------------------------------------------ records, offsets


@tool_scenario("tool-kafka-get-offsets", check=lambda o: _check_get_offsets(o))
def kafka_get_offsets(bootstrap: str, client: Client) -> dict:
    """kafka-get-offsets of a 2-partition topic of 5 records each: latest (the default),
    earliest (-2), by a CreateTime, and earliest pending upload (-5, ListOffsets v11,
    KIP-1023) on a topic without remote storage"""
    s = Session(bootstrap)
    topic = s.topic("offsets", partitions=2)
    _write(bootstrap, topic, 2, 5)
    by = ["--topic", topic, "--time"]
    return {
        "latest": s.run("kafka-get-offsets", ["--topic", topic]),
        "earliest": s.run("kafka-get-offsets", [*by, "-2"]),
        "by_time": s.run("kafka-get-offsets", [*by, str(neutral.BASE_TS + 4500)]),
        "pending_upload": s.run("kafka-get-offsets", [*by, "-5"]),
    }


def _check_get_offsets(obs: dict) -> None:
    assert obs["latest"]["out"] == ["<offsets>:0:5", "<offsets>:1:5"], obs
    assert obs["earliest"]["out"] == ["<offsets>:0:0", "<offsets>:1:0"], obs


@tool_scenario("tool-kafka-delete-records", check=lambda o: _check_delete_records(o))
def kafka_delete_records(bootstrap: str, client: Client) -> dict:
    """kafka-delete-records before offset 3 of partition 0 and past the end of partition 1,
    then the earliest offsets"""
    s = Session(bootstrap)
    topic = s.topic("delrec", partitions=2)
    _write(bootstrap, topic, 2, 5)
    plan = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": 0, "offset": 3},
            {"topic": topic, "partition": 1, "offset": 9},
        ],
    }
    return {
        "delete": s.run(
            "kafka-delete-records", ["--offset-json-file", s.json_file(plan)], ordered=False
        ),
        "earliest": neutral.list_offsets(bootstrap, topic, 2, -2),
    }


def _check_delete_records(obs: dict) -> None:
    assert obs["earliest"] == [3, 0], obs


@tool_scenario("tool-kafka-log-dirs", check=lambda o: _check_log_dirs(o))
def kafka_log_dirs(bootstrap: str, client: Client) -> dict:
    """kafka-log-dirs --describe of a 2-partition topic: each partition's size, lag and
    whether it is a future replica (the directory's path differs by nature)"""
    s = Session(bootstrap)
    topic = s.topic("logdirs", partitions=2)
    _write(bootstrap, topic, 2, 3)
    run = s.run("kafka-log-dirs", ["--describe", "--topic-list", topic])
    found = [json.loads(line) for line in s.stdout.splitlines() if line.startswith("{")]
    partitions = sorted(
        (s.normalize(p["partition"]), p["size"], p["offsetLag"], p["isFuture"])
        for doc in found
        for broker in doc.get("brokers", [])
        for log_dir in broker.get("logDirs", [])
        for p in log_dir.get("partitions", [])
    )
    return {
        "exit": run.get("exit"),
        "text": [line for line in run.get("out", []) if not line.startswith("{")],
        "partitions": partitions,
        "dir_errors": sorted(
            str(log_dir.get("error"))
            for doc in found
            for broker in doc.get("brokers", [])
            for log_dir in broker.get("logDirs", [])
        ),
    }


def _check_log_dirs(obs: dict) -> None:
    assert obs["exit"] == 0 and [p[0] for p in obs["partitions"]] == [
        "<logdirs>-0",
        "<logdirs>-1",
    ], obs


@tool_scenario("tool-kafka-leader-election", check=lambda o: _check_election(o))
def kafka_leader_election(bootstrap: str, client: Client) -> dict:
    """kafka-leader-election: preferred for one partition, and for a partition that does not
    exist (one broker: no election is ever needed)"""
    s = Session(bootstrap)
    topic = s.topic("elect")
    one = ["--topic", topic, "--partition"]
    return {
        "preferred": s.run("kafka-leader-election", ["--election-type", "preferred", *one, "0"]),
        "missing": s.run("kafka-leader-election", ["--election-type", "preferred", *one, "7"]),
    }


def _check_election(obs: dict) -> None:
    assert _ok(obs["preferred"]) and obs["missing"]["exit"] != 0, obs


@tool_scenario("tool-kafka-reassign-partitions", check=lambda o: _check_reassign(o))
def kafka_reassign_partitions(bootstrap: str, client: Client) -> dict:
    """kafka-reassign-partitions --generate for the one broker, --execute of that plan (the
    replicas stay where they are: one broker has nowhere to move them), --verify"""
    s = Session(bootstrap)
    topic = s.topic("reassign", partitions=2)
    topics = s.json_file({"version": 1, "topics": [{"topic": topic}]})
    generated = s.run(
        "kafka-reassign-partitions",
        ["--generate", "--topics-to-move-json-file", topics, "--broker-list", str(s.node)],
    )
    plan = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": p, "replicas": [s.node], "log_dirs": ["any"]}
            for p in range(2)
        ],
    }
    plan_file = s.json_file(plan)
    return {
        "generate": generated,
        "execute": s.run(
            "kafka-reassign-partitions", ["--execute", "--reassignment-json-file", plan_file]
        ),
        "verify": s.run(
            "kafka-reassign-partitions", ["--verify", "--reassignment-json-file", plan_file]
        ),
    }


def _check_reassign(obs: dict) -> None:
    assert _ok(obs["generate"]) and _ok(obs["execute"]) and _ok(obs["verify"]), obs


# ------------------------------------------------------------------------------ transactions


@tool_scenario("tool-kafka-transactions", check=lambda o: _check_transactions(o))
def kafka_transactions(bootstrap: str, client: Client) -> dict:
    """kafka-transactions after confluent-kafka committed one transaction: list (our id's
    row), describe, describe-producers of its partition, find-hanging on the broker"""
    from confluent_kafka import Producer

    s = Session(bootstrap)
    topic = s.topic("txn-tool")
    txn = s.name("txn", "<txn>")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"v", b"k")
    producer.commit_transaction(30)
    listed = s.run("kafka-transactions", ["list"])

    def columns(run: dict, keep: tuple[int, ...]) -> list:
        rows = [line.split() for line in run.get("out", [])]
        return [[row[i].strip() for i in keep if i < len(row)] for row in rows]

    return {
        # TransactionalId, Coordinator, ProducerId, TransactionState: the id and state
        "list": [
            row for row in columns(listed, (0, 3)) if row and row[0] in ("<txn>", "TransactionalId")
        ],
        # CoordinatorId ... TopicPartitions: the id, state, timeout and partitions
        "describe": columns(
            s.run("kafka-transactions", ["describe", "--transactional-id", txn]), (1, 4, 5, 8)
        ),
        # ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp
        # CurrentTransactionStartOffset: the sequence and open transaction
        "describe_producers": columns(
            s.run(
                "kafka-transactions", ["describe-producers", "--topic", topic, "--partition", "0"]
            ),
            (3, 5),
        ),
        "find_hanging": s.run("kafka-transactions", ["find-hanging", "--broker-id", str(s.node)]),
    }


def _check_transactions(obs: dict) -> None:
    assert ["<txn>", "CompleteCommit"] in obs["list"], obs
    assert obs["find_hanging"]["exit"] == 0, obs


# ------------------------------------------------------------------------------ cluster


@tool_scenario("tool-kafka-acls", check=lambda o: _check_acls(o))
def kafka_acls(bootstrap: str, client: Client) -> dict:
    """kafka-acls --list and --add on a broker without an authorizer (the compat targets have
    none): the error a user sees"""
    s = Session(bootstrap)
    topic = s.topic("acls")
    add = ["--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic]
    return {"list": s.run("kafka-acls", ["--list"]), "add": s.run("kafka-acls", add)}


def _check_acls(obs: dict) -> None:
    assert "SecurityDisabledException" in obs["list"]["errors"] + obs["list"]["out"][-1:], obs


@tool_scenario("tool-kafka-features", check=lambda o: _check_features(o))
def kafka_features(bootstrap: str, client: Client) -> dict:
    """kafka-features describe: every feature with its supported range and finalized level"""
    s = Session(bootstrap)
    described = s.run("kafka-features", ["describe"])
    # the epoch is the offset of the metadata record that finalized the levels
    described["out"] = [
        re.sub(r"Epoch: \d+", "Epoch: <n>", line) for line in described.get("out", [])
    ]
    return described


DIFFERENCES[("tool-kafka-features", "*")] = (
    "wireserver finalizes only the features it implements (group.version, streams.version, "
    "transaction.version, share.version at 1 where Kafka 4.4 finalizes 2); it has no KRaft "
    "metadata log (metadata.version, kraft.version) and no eligible leader replicas "
    "(eligible.leader.replicas.version)"
)


def _check_features(obs: dict) -> None:
    assert _ok(obs) and any(line.startswith("Feature: metadata.version") for line in obs["out"]), (
        obs
    )


@tool_scenario("tool-kafka-cluster", check=lambda o: _check_cluster(o))
def kafka_cluster(bootstrap: str, client: Client) -> dict:
    """kafka-cluster cluster-id, and unregister of a broker id that was never registered"""
    s = Session(bootstrap)
    return {
        "cluster_id": s.run("kafka-cluster", ["cluster-id"]),
        "unregister": s.run("kafka-cluster", ["unregister", "--id", "77"]),
    }


DIFFERENCES[("tool-kafka-cluster", "*")] = (
    "unregister: wireserver's brokers register in ZooKeeper, not with a KRaft controller; the "
    "tool prints that the cluster does not support broker unregistration (exit 0) where Kafka "
    "answers BROKER_ID_NOT_REGISTERED for an unknown id"
)


def _check_cluster(obs: dict) -> None:
    assert obs["cluster_id"]["out"] == ["Cluster ID: <id>"], obs


@tool_scenario("tool-kafka-metadata-quorum", check=lambda o: _check_quorum(o))
def kafka_metadata_quorum(bootstrap: str, client: Client) -> dict:
    """kafka-metadata-quorum describe --status (through a broker)"""
    s = Session(bootstrap)
    status = s.run("kafka-metadata-quorum", ["describe", "--status"])
    # LeaderId, epochs, offsets and lags move with the cluster's age: keep the field names
    status["out"] = [line.split(":")[0] for line in status.get("out", [])]
    return status


DIFFERENCES[("tool-kafka-metadata-quorum", "*")] = (
    "wireserver has no KRaft controller quorum to describe (ZooKeeper coordinates its brokers): "
    "DescribeQuorum is answered UNSUPPORTED_VERSION with a message saying so, which the tool "
    "prints followed by the stack trace it prints for any failed call"
)


def _check_quorum(obs: dict) -> None:
    assert _ok(obs) and "ClusterId" in obs["out"], obs


@tool_scenario("tool-kafka-broker-api-versions", check=lambda o: _check_api_versions(o))
def kafka_broker_api_versions(bootstrap: str, client: Client) -> dict:
    """kafka-broker-api-versions: the APIs the broker answers as usable (not UNSUPPORTED)"""
    s = Session(bootstrap)
    run = s.run("kafka-broker-api-versions", [])
    usable = sorted(line.strip().rstrip(",") for line in run.get("out", []) if "usable" in line)
    return {"exit": run.get("exit"), "usable": usable, "stack_trace": run.get("stack_trace")}


def _check_api_versions(obs: dict) -> None:
    assert obs["exit"] == 0 and any(api.startswith("Produce(0)") for api in obs["usable"]), obs


# ------------------------------------------------------------------------------ clients


@tool_scenario("tool-kafka-console-producer-consumer", long=True, check=lambda o: _check_console(o))
def kafka_console(bootstrap: str, client: Client) -> dict:
    """kafka-console-producer writes three keyed lines; kafka-console-consumer reads them back
    from the beginning with keys, and times out waiting for a fourth"""
    s = Session(bootstrap)
    topic = s.topic("console")
    produced = s.run(
        "kafka-console-producer",
        ["--topic", topic, "--property", "parse.key=true", "--property", "key.separator=:"],
        input="a:1\nb:2\nc:3\n",
    )
    consumed = s.run(
        "kafka-console-consumer",
        [
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            "4",
            "--timeout-ms",
            "5000",
            "--property",
            "print.key=true",
            "--property",
            "key.separator=:",
        ],
    )
    return {"produce": produced, "consume": consumed}


def _check_console(obs: dict) -> None:
    assert obs["consume"]["out"][:3] == ["a:1", "b:2", "c:3"], obs


@tool_scenario("tool-kafka-consumer-perf-test", long=True, check=lambda o: _check_consumer_perf(o))
def kafka_consumer_perf_test(bootstrap: str, client: Client) -> dict:
    """kafka-consumer-perf-test reads 30 records: the count it reports"""
    s = Session(bootstrap)
    topic = s.topic("cperf")
    _write(bootstrap, topic, 1, 30)
    run = s.run(
        "kafka-consumer-perf-test", ["--topic", topic, "--messages", "30", "--timeout", "20000"]
    )
    rows = [line.split(", ") for line in run.get("out", []) if ", " in line]
    header = rows[0] if rows else []
    counts = [
        row[header.index("data.consumed.in.nMsg")]
        for row in rows[1:]
        if "data.consumed.in.nMsg" in header
    ]
    return {"exit": run.get("exit"), "consumed": counts, "stack_trace": run.get("stack_trace")}


def _check_consumer_perf(obs: dict) -> None:
    assert obs["exit"] == 0 and obs["consumed"] == ["30"], obs


@tool_scenario("tool-kafka-e2e-latency", long=True, check=lambda o: _check_e2e(o))
def kafka_e2e_latency(bootstrap: str, client: Client) -> dict:
    """kafka-e2e-latency: 50 round trips of 100-byte records, acks=1"""
    s = Session(bootstrap)
    topic = s.topic("e2e")
    run = s.run(
        "kafka-e2e-latency",
        ["--topic", topic, "--num-records", "50", "--producer-acks", "1", "--record-size", "100"],
        timeout=120,
    )
    return {
        "exit": run.get("exit"),
        "reported": any(line.startswith("Avg latency") for line in run.get("out", [])),
        "stack_trace": run.get("stack_trace"),
        "errors": run.get("errors"),
    }


def _check_e2e(obs: dict) -> None:
    assert obs["exit"] == 0 and obs["reported"], obs


# ------------------------------------------------------------------------------ producers, consumers


@tool_scenario("tool-kafka-verifiable-producer", long=True, check=lambda o: _check_verifiable(o))
def verifiable_producer(bootstrap: str, client: Client) -> dict:
    """kafka-verifiable-producer: 200 acked sends (acks=all), then the high watermark"""
    from compat_tests.reference import run_tool

    topic = neutral.create_topic(bootstrap, "verif", partitions=2)
    proc = run_tool(
        "kafka-verifiable-producer",
        ["--topic", topic, "--max-messages", "200", "--acks", "-1"],
        bootstrap=bootstrap,
        timeout=120,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    acked = [e for e in events if e.get("name") == "producer_send_success"]
    failed = [e for e in events if e.get("name") == "producer_send_error"]
    return {
        "acked": len(acked),
        "failed": len(failed),
        "errors": sorted({e.get("exception", "?") for e in failed}),
        # the sticky partitioner picks partitions at random: only the spread counts
        "high_watermarks": sorted(neutral.list_offsets(bootstrap, topic, 2)),
    }


def _check_verifiable(obs: dict) -> None:
    assert obs["acked"] == 200 and sum(obs["high_watermarks"]) == 200, obs


@tool_scenario("tool-kafka-producer-perf-test", long=True, check=lambda o: _check_perf(o))
def producer_perf_test(bootstrap: str, client: Client) -> dict:
    """kafka-producer-perf-test: 2000 records of 100 bytes, lz4"""
    from compat_tests.reference import run_tool

    topic = neutral.create_topic(bootstrap, "perf")
    proc = run_tool(
        "kafka-producer-perf-test",
        [
            "--topic",
            topic,
            "--num-records",
            "2000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            "compression.type=lz4",
            "acks=all",
        ],
        bootstrap=bootstrap,
        timeout=120,
    )
    m = re.search(r"^(\d+) records sent", proc.stdout, re.M)
    return {
        "sent": int(m.group(1)) if m else None,
        "exit": proc.returncode,
        "high_watermark": neutral.list_offsets(bootstrap, topic, 1),
    }


def _check_perf(obs: dict) -> None:
    assert obs == {"sent": 2000, "exit": 0, "high_watermark": [2000]}, obs


@tool_scenario("tool-kafka-verifiable-consumer", long=True, check=lambda o: _check_vconsumer(o))
def verifiable_consumer(bootstrap: str, client: Client) -> dict:
    """kafka-verifiable-consumer in a group reads 20 records written by confluent-kafka"""
    from compat_tests.reference import run_tool

    topic = neutral.create_topic(bootstrap, "vcons")
    neutral.write(bootstrap, topic, [record(f"v{i}", key=f"k{i}") for i in range(20)])
    try:
        proc = run_tool(
            "kafka-verifiable-consumer",
            [
                "--topic",
                topic,
                "--group-id",
                neutral.topic_name("group"),
                "--max-messages",
                "20",
                "--reset-policy",
                "earliest",
            ],
            bootstrap=bootstrap,
            timeout=25,
        )
    except subprocess.TimeoutExpired:  # it waits for its group forever
        return {"consumed": 0, "exit": "timeout"}
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    consumed = sum(e.get("count", 0) for e in events if e.get("name") == "records_consumed")
    return {"consumed": consumed, "exit": proc.returncode}


def _check_vconsumer(obs: dict) -> None:
    assert obs == {"consumed": 20, "exit": 0}, obs


# ------------------------------------------------------------------------------ with an authorizer


def _security_scenario(name: str, check: Any):
    """Register in the security registry: its brokers have StandardAuthorizer (and SASL)."""
    from compat_tests.scenarios_security import SECURITY_SCENARIOS

    return scenario(name, JAVA, check=check, registry=SECURITY_SCENARIOS)


@_security_scenario("tool-kafka-acls[authorizer]", check=lambda o: _check_acls_authorizer(o))
def kafka_acls_authorizer(target: Any, client: str) -> dict:
    """kafka-acls through the super user's listener of a broker with an authorizer: add a
    READ grant for alice on a topic, list the topic's ACLs, remove the grant"""
    s = Session(target.admin)
    topic = s.topic("acl-tool")
    resource = ["--topic", topic]
    grant = ["--allow-principal", "User:alice", "--operation", "Read", *resource]
    obs = {"add": s.run("kafka-acls", ["--add", *grant])}
    time.sleep(1)  # Kafka applies ACLs from its metadata log, a moment after it answers
    obs["list"] = s.run("kafka-acls", ["--list", *resource])
    obs["remove"] = s.run("kafka-acls", ["--remove", "--force", *grant])
    return obs


def _check_acls_authorizer(obs: dict) -> None:
    assert _ok(obs["add"]) and _ok(obs["list"]) and _ok(obs["remove"]), obs
    assert any("User:alice" in line for line in obs["list"]["out"]), obs
