"""Cluster scenarios: the same steps against a 3-node Apache Kafka (KRaft) and a 3-broker
wireserver cluster (ZooKeeper), each ``fn(target, client) -> observation`` with ``target`` a
:class:`compat_tests.cluster_targets.ClusterTarget`.

Node ids differ (Kafka 0-2, wireserver 1-3), so observations hold roles and counts (replica and
ISR set sizes, "the leader is one of the replicas", "the new leader came from the ISR"), never
an id. Faults are clean stops (SIGTERM: a controlled shutdown on both, see docs/cluster.md),
and a scenario starts every node it stopped before it returns, so the next one finds three live
nodes.

Two of three nodes down: each Kafka node is also one of three KRaft controller voters, so with
two stopped there is no controller quorum and no leader or ISR change can happen any more.
``acks-min-insync`` therefore stops the two *followers* of a partition whose leader stays up
(no election is needed), one after the other and cleanly: Kafka's controlled shutdown takes
each follower out of the ISR while the quorum still stands, so the leader is left with an ISR
of one and answers acks=all with NOT_ENOUGH_REPLICAS; a stopping wireserver broker takes
itself out of the ISR the same way. (After a kill -9 of the second follower the
ISR could no longer shrink without a quorum, so acks=all would be expected to time out
instead; that case is not compared.) The refusal is also
asserted where no quorum question arises: an ISR of two below a ``min.insync.replicas`` of
three, after one follower stopped.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
import time
from typing import Any

from compat_tests import admin_clients as admin
from compat_tests import neutral
from compat_tests.clients import Client, ClientError, _kafka_error_name, record
from compat_tests.cluster_targets import ClusterTarget
from compat_tests.raw_protocol import batch
from compat_tests.scenarios import Scenario, scenario
from wireserver.testing import KafkaWire, wait_for
from wireserver.testing.cluster import cluster_metadata
from wireserver.testing.wire import fetch_request

CLUSTER_SCENARIOS: dict[str, Scenario] = {}
RAW = "raw"  # a scenario that speaks the protocol itself (KafkaWire)
STREAM_CLIENTS = ("confluent-kafka", "kafka-python")
NOT_LEADER_OR_FOLLOWER = 6
ISR_TIMEOUT = 60.0  # Kafka's replica.lag.time.max.ms is 30 s; shrinking is quicker
PRODUCE_SECONDS = 60.0  # a streaming producer's delivery timeout across a leader change

#: (scenario, client or "*") -> why wireserver differs on purpose; asserted to still differ.
DIFFERENCES: dict[tuple[str, str], str] = {}


def cluster_scenario(name: str, clients, check):
    return scenario(name, clients, check=check, registry=CLUSTER_SCENARIOS)


# ------------------------------------------------------------------------------ helpers


def states(target: ClusterTarget, topic: str, node: int | None = None) -> dict:
    """{partition: (leader, leader epoch, replicas, isr)} as one running node answers."""
    node = target.live()[0] if node is None else node
    return cluster_metadata(target.address(node), topic)[2]


def new_topic(
    target: ClusterTarget,
    prefix: str,
    partitions: int = 1,
    rf: int = 3,
    configs: dict | None = None,
) -> str:
    """Create a topic and wait until every running node shows every partition led, with
    all ``rf`` replicas in the ISR (Kafka creates asynchronously)."""
    name = neutral.topic_name(prefix)
    with KafkaWire(target.bootstrap, client_id="compat-neutral") as wire:
        wire.create_topic(name, partitions=partitions, replication_factor=rf, configs=configs)

    def ready() -> bool:
        for node in target.live():
            found = states(target, name, node)
            if len(found) != partitions or any(
                leader < 0 or len(isr) != rf for leader, _, _, isr in found.values()
            ):
                return False
        return True

    wait_for(ready, ISR_TIMEOUT, what=f"{name} to be led with a full ISR on every node")
    return name


def leader_and_followers(target: ClusterTarget, topic: str) -> tuple[int, list[int], int]:
    """(leader, followers, leader epoch) of partition 0."""
    leader, epoch, replicas, _ = states(target, topic)[0]
    return leader, [r for r in replicas if r != leader], epoch


def isr_size(target: ClusterTarget, topic: str, want: int) -> int:
    """Partition 0's ISR size as its leader sees it, once it is ``want`` (or whatever it is
    after ``ISR_TIMEOUT``: an observation, not a failure here)."""

    def size() -> int:
        leader = states(target, topic)[0][0]
        node = leader if leader in target.live() else None
        return len(states(target, topic, node)[0][3])

    try:
        return wait_for(lambda: size() == want and want, ISR_TIMEOUT, 0.2, what="the ISR")
    except AssertionError:
        return size()


def _error_code(response) -> int:
    topics = getattr(response, "responses", None) or getattr(response, "topics", None)
    for t in topics:
        for p in getattr(t, "partition_responses", None) or t.partitions:
            return p.error_code
    raise AssertionError("no partition in the response")


def raw_produce(address: str, topic: str, version: int = 9) -> int:
    from kafka.protocol.producer.produce import ProduceRequest

    td = ProduceRequest.TopicProduceData
    with KafkaWire(address, client_id="compat-raw") as wire:
        return _error_code(
            wire.request(
                ProduceRequest(
                    version=version,
                    transactional_id=None,
                    acks=1,
                    timeout_ms=10000,
                    topic_data=[
                        td(
                            name=topic,
                            partition_data=[
                                td.PartitionProduceData(
                                    index=0, records=batch([b"raw-a", b"raw-b"])
                                )
                            ],
                        )
                    ],
                )
            )
        )


def raw_fetch(address: str, topic: str, version: int) -> int:
    with KafkaWire(address, client_id="compat-raw") as wire:
        return _error_code(wire.request(fetch_request(topic, 0, version=version)))


def raw_list_offsets(address: str, topic: str) -> int:
    from kafka.protocol.consumer.offsets import ListOffsetsRequest

    lt = ListOffsetsRequest.ListOffsetsTopic
    with KafkaWire(address, client_id="compat-raw") as wire:
        return _error_code(
            wire.request(
                ListOffsetsRequest(
                    version=7,
                    replica_id=-1,
                    isolation_level=0,
                    topics=[
                        lt(
                            name=topic,
                            partitions=[
                                lt.ListOffsetsPartition(
                                    partition_index=0, current_leader_epoch=-1, timestamp=-1
                                )
                            ],
                        )
                    ],
                )
            )
        )


def end_offset(target: ClusterTarget, topic: str) -> int:
    """Partition 0's high watermark, asked of its leader."""
    leader = states(target, topic)[0][0]
    return neutral.list_offsets(target.address(leader), topic, 1)[0]


# ------------------------------------------------------------------------------ shapes


def _check_metadata(o: dict) -> None:
    assert o["brokers"] == 3
    assert len(o["partitions"]) == 3
    for shape in o["partitions"].values():
        assert shape == {
            "replicas": 3,
            "isr": 3,
            "leader_in_isr": True,
            "isr_is_replicas": True,
            "replicas_are_brokers": True,
        }, shape
    assert all(isinstance(e, int) and e >= 0 for e in o["leader_epochs"])


@cluster_scenario("cluster-metadata-rf3", admin.ADMIN_CLIENTS, _check_metadata)
def metadata_rf3(target: ClusterTarget, client: Client) -> dict:
    """An RF 3 topic with 3 partitions as the client describes it: replica and ISR sets of
    3 live brokers, a leader among them; leader epochs from a raw Metadata v12."""
    topic = new_topic(target, "md", partitions=3)
    _, brokers, raw = cluster_metadata(target.address(target.live()[0]), topic)
    seen = admin.describe_topic(client.name, target.bootstrap, topic)
    return {
        "brokers": len(brokers),
        "partitions": {
            str(p): {
                "replicas": len(v["replicas"]),
                "isr": len(v["isr"]),
                "leader_in_isr": v["leader"] in v["isr"],
                "isr_is_replicas": sorted(v["isr"]) == sorted(v["replicas"]),
                "replicas_are_brokers": set(v["replicas"]) <= set(brokers),
            }
            for p, v in sorted(seen.items())
        },
        "distinct_leaders": len({v["leader"] for v in seen.values()}),
        "leader_epochs": [raw[p][1] for p in sorted(raw)],
    }


def _check_describe(o: dict) -> None:
    assert o["brokers"] == 3
    assert o.get("controller_is_a_broker", True) is True


@cluster_scenario("cluster-describe", admin.ADMIN_CLIENTS, _check_describe)
def describe(target: ClusterTarget, client: Client) -> dict:
    """DescribeCluster (the Java tool: kafka-broker-api-versions): three brokers, and the
    controller it names is one of them (on KRaft, a random live broker)."""
    return admin.describe_cluster(client.name, target.bootstrap)


# ------------------------------------------------------------------------------ not leader


def _check_not_leader(o: dict) -> None:
    assert o["produce_to_leader"] == 0
    assert o["fetch_from_leader_v12"] == 0
    for key in (
        "produce_to_follower_v3",
        "produce_to_follower_v9",
        "fetch_from_follower_v4",
        "fetch_from_follower_v10",
        "list_offsets_on_follower",
    ):
        assert o[key] == NOT_LEADER_OR_FOLLOWER, (key, o[key])


@cluster_scenario("not-leader-or-follower", (RAW,), _check_not_leader)
def not_leader(target: ClusterTarget, _client) -> dict:
    """Raw Produce, Fetch (before v11) and ListOffsets sent to a follower of an RF 3 topic get
    NOT_LEADER_OR_FOLLOWER (6); the leader answers."""
    topic = new_topic(target, "nl")
    leader, followers, _ = leader_and_followers(target, topic)
    follower = target.address(followers[0])
    return {
        "produce_to_leader": raw_produce(target.address(leader), topic),
        "produce_to_follower_v3": raw_produce(follower, topic, version=3),
        "produce_to_follower_v9": raw_produce(follower, topic),
        "fetch_from_leader_v12": raw_fetch(target.address(leader), topic, 12),
        "fetch_from_follower_v4": raw_fetch(follower, topic, 4),
        "fetch_from_follower_v10": raw_fetch(follower, topic, 10),
        "list_offsets_on_follower": raw_list_offsets(follower, topic),
    }


def _check_follower_fetch(o: dict) -> None:
    assert o == {"fetch_v11": 0, "fetch_v12": 0}, o


@cluster_scenario("fetch-from-follower", (RAW,), _check_follower_fetch)
def fetch_from_follower(target: ClusterTarget, _client) -> dict:
    """A consumer's Fetch v11 and v12 (with client metadata, KIP-392) sent to a follower:
    served there, as by the leader."""
    topic = new_topic(target, "ff")
    _, followers, _ = leader_and_followers(target, topic)
    follower = target.address(followers[0])
    return {
        "fetch_v11": raw_fetch(follower, topic, 11),
        "fetch_v12": raw_fetch(follower, topic, 12),
    }


# ------------------------------------------------------------------------------ failover


class Stream:
    """One real producer (acks=all, idempotent) sending "0", "1", ... to partition 0 every
    5 ms until stopped; the values acknowledged and the error names reported are kept, and
    when each value was sent and acknowledged (``time.perf_counter``, for the benchmark)."""

    def __init__(self, client: str, bootstrap: str, topic: str):
        self.client, self.bootstrap, self.topic = client, bootstrap, topic
        self.acked: list[int] = []
        self.failed: list[str] = []
        self.sent_at: dict[int, float] = {}
        self.acked_at: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"stream-{client}", daemon=True)

    def __enter__(self) -> Stream:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(PRODUCE_SECONDS + 30)

    def wait_acked(self, count: int, what: str) -> None:
        wait_for(lambda: len(self.acked) >= count or self.failed, PRODUCE_SECONDS, 0.05, what=what)

    def _acked(self, value: int) -> None:
        self.acked_at[value] = time.perf_counter()
        self.acked.append(value)

    def first_acked_after(self, moment: float) -> float | None:
        """When the first value sent after ``moment`` was acknowledged."""
        times = [at for value, at in list(self.acked_at.items()) if self.sent_at[value] > moment]
        return min(times) if times else None

    def _run(self) -> None:
        (self._confluent if self.client == "confluent-kafka" else self._kafka_python)()

    def _confluent(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                "message.timeout.ms": int(PRODUCE_SECONDS * 1000),
            }
        )

        def report(value):
            return lambda err, _msg: self.failed.append(err.name()) if err else self._acked(value)

        value = 0
        while not self._stop.is_set():
            self.sent_at[value] = time.perf_counter()
            producer.produce(
                self.topic, str(value).encode(), partition=0, on_delivery=report(value)
            )
            producer.poll(0)
            value += 1
            time.sleep(0.005)
        producer.flush(PRODUCE_SECONDS)

    def _kafka_python(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap.split(","),
            acks="all",
            enable_idempotence=True,
            linger_ms=2,
            delivery_timeout_ms=int(PRODUCE_SECONDS * 1000),
        )
        value = 0
        while not self._stop.is_set():
            self.sent_at[value] = time.perf_counter()
            future = producer.send(self.topic, str(value).encode(), partition=0)
            future.add_callback(lambda _meta, v=value: self._acked(v))
            future.add_errback(lambda exc: self.failed.append(_kafka_error_name(exc)))
            value += 1
            time.sleep(0.005)
        producer.flush(PRODUCE_SECONDS)
        producer.close(10)


def _check_failover(o: dict) -> None:
    assert o["delivery_errors"] == []
    assert o["acked_after_the_stop"] is True
    assert o["acknowledged_but_not_read"] == 0
    assert o["duplicates"] == 0 and o["in_order"] is True
    assert o["new_leader_was_in_isr"] is True and o["leader_epoch_grew"] is True
    assert o["isr_after_stop"] == 2 and o["isr_after_restart"] == 3


@cluster_scenario("leader-stopped-while-producing", STREAM_CLIENTS, _check_failover)
def leader_stopped(target: ClusterTarget, client: Client) -> dict:
    """A producer (acks=all, idempotent) streams to an RF 3, min.insync.replicas=2 partition;
    its leader is stopped mid-stream. The producer carries on with the new leader, and every
    acknowledged record is read back once, in order, by the same client. The old leader then
    returns and rejoins the ISR."""
    topic = new_topic(target, "fo", configs={"min.insync.replicas": 2})
    old_leader, _, old_epoch = leader_and_followers(target, topic)
    try:
        with Stream(client.name, target.bootstrap, topic) as stream:
            stream.wait_acked(100, "records before the stop")
            target.stop(old_leader)
            acked_at_stop = len(stream.acked)
            stream.wait_acked(acked_at_stop + 100, "records acknowledged after the stop")
        leader, epoch, _, isr = states(target, topic)[0]
        isr_after_stop = isr_size(target, topic, 2)
        controller, brokers, _ = cluster_metadata(target.address(target.live()[0]))
        total = end_offset(target, topic)
        read = [int(r["value"]) for r in client.consume(target.bootstrap, topic, 0, total)]
        target.start(old_leader)
        isr_after_restart = isr_size(target, topic, 3)
    finally:
        target.restore()
    return {
        "delivery_errors": sorted(set(stream.failed)),
        "acked_after_the_stop": len(stream.acked) > acked_at_stop,
        "acknowledged_but_not_read": len(set(stream.acked) - set(read)),
        "duplicates": len(read) - len(set(read)),
        "in_order": read == sorted(read),
        "new_leader_was_in_isr": leader != old_leader and leader in target.node_ids(),
        "leader_epoch_grew": epoch > old_epoch,
        "isr_after_stop": isr_after_stop,
        "controller_is_a_live_broker": controller in brokers and controller in target.live(),
        "isr_after_restart": isr_after_restart,
    }


# ------------------------------------------------------------------------------ acks

#: per client: no retries (and so no idempotence), so that the broker's error is what the
#: producer reports rather than a delivery timeout after retrying it; 30 s timeouts for a
#: loaded machine
NO_RETRIES = {
    "confluent-kafka": {"retries": 0, "enable.idempotence": False, "message.timeout.ms": 30000},
    "kafka-python": {"retries": 0, "enable_idempotence": False, "request_timeout_ms": 30000},
}


def _produce_one(client: Client, target: ClusterTarget, topic: str, acks: str) -> str:
    try:
        client.produce(
            target.bootstrap,
            topic,
            [record(f"acks-{acks}")],
            acks=acks,
            config=NO_RETRIES[client.name],
        )
        return "ok"
    except ClientError as exc:
        return exc.name


def _check_acks(o: dict) -> None:
    assert o["all_up"] == {"min2_acks_all": "ok", "min3_acks_all": "ok", "acks_1": "ok"}
    assert o["one_follower_stopped"] == {
        "isr": 2,
        "min2_acks_all": "ok",
        "min3_acks_all": "NOT_ENOUGH_REPLICAS",
        "min3_acks_1": "ok",
    }
    assert o["two_followers_stopped"] == {
        "leader_kept": True,
        "isr": 1,
        "min2_acks_all": "NOT_ENOUGH_REPLICAS",
        "min2_acks_1": "ok",
    }


@cluster_scenario("acks-min-insync", STREAM_CLIENTS, _check_acks)
def acks_min_insync(target: ClusterTarget, client: Client) -> dict:
    """acks=all against min.insync.replicas on RF 3 topics: ``min2`` (min.insync.replicas=2)
    and ``min3`` (=3). All up: everything is written. One follower of ``min2``'s leader
    stopped: ``min2`` takes acks=all, ``min3`` refuses it with NOT_ENOUGH_REPLICAS and takes
    acks=1. Both followers stopped: ``min2`` refuses acks=all with NOT_ENOUGH_REPLICAS and
    takes acks=1."""
    min2 = new_topic(target, "min2", configs={"min.insync.replicas": 2})
    min3 = new_topic(target, "min3", configs={"min.insync.replicas": 3})
    leader, followers, _ = leader_and_followers(target, min2)
    out: dict[str, Any] = {
        "all_up": {
            "min2_acks_all": _produce_one(client, target, min2, "all"),
            "min3_acks_all": _produce_one(client, target, min3, "all"),
            "acks_1": _produce_one(client, target, min2, "1"),
        }
    }
    try:
        target.stop(followers[0])
        isr = min(isr_size(target, min2, 2), isr_size(target, min3, 2))
        out["one_follower_stopped"] = {
            "isr": isr,
            "min2_acks_all": _produce_one(client, target, min2, "all"),
            "min3_acks_all": _produce_one(client, target, min3, "all"),
            "min3_acks_1": _produce_one(client, target, min3, "1"),
        }
        target.stop(followers[1])
        out["two_followers_stopped"] = {
            "leader_kept": states(target, min2, leader)[0][0] == leader,
            "isr": isr_size(target, min2, 1),
            "min2_acks_all": _produce_one(client, target, min2, "all"),
            "min2_acks_1": _produce_one(client, target, min2, "1"),
        }
    finally:
        target.restore()
    return out


# ------------------------------------------------------------------------------ reassignment


def reassign_tool(target: ClusterTarget, *args: str) -> str:
    """``kafka-reassign-partitions`` against the cluster; its stdout (it must exit 0)."""
    from compat_tests.reference import run_tool

    proc = run_tool("kafka-reassign-partitions", list(args), bootstrap=target.bootstrap)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def _move(target: ClusterTarget, topic: str, replicas: list[int]) -> tuple[str, str]:
    """``--execute`` a move of partition 0 onto ``replicas`` and ``--verify`` it until it
    completed: (the --execute output, the last --verify output)."""
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(plan, handle)
        handle.flush()
        executed = reassign_tool(target, "--execute", "--reassignment-json-file", handle.name)
        verified = wait_for(
            lambda: (
                out
                if "is completed."
                in (
                    out := reassign_tool(
                        target, "--verify", "--reassignment-json-file", handle.name
                    )
                )
                else None
            ),
            ISR_TIMEOUT,
            1.0,
            what=f"{topic}-0 moved to {replicas}",
        )
    return executed, verified


def partition_when(target: ClusterTarget, topic: str, accept, what: str) -> tuple:
    """Partition 0's (leader, leader epoch, replicas, isr) once ``accept`` takes it."""

    def check():
        now = states(target, topic)[0]
        return now if accept(now) else None

    return wait_for(check, ISR_TIMEOUT, 0.2, what=what)


def _in_roles(text: str, topic: str, roles: dict[int, str]) -> list[str]:
    """The tool's output lines with the topic as ``T``, broker ids as roles (a list of ids as
    its sorted roles) and the replicas' log dirs left out."""

    def ids(match: re.Match) -> str:
        return ",".join(sorted(roles.get(int(i), "other") for i in match.group(1).split(",")))

    text = text.replace(topic, "T")
    lines = [
        re.sub(r"brokers ([\d,]+)", lambda m: "brokers " + ids(m), line)
        for line in text.splitlines()
    ]
    lines = [
        re.sub(r'"replicas":\[([\d,]+)\]', lambda m: f'"replicas":[{ids(m)}]', line)
        for line in lines
    ]
    # each node's own data directory, wherever its launcher put it
    return [re.sub(r'"log_dirs":\[[^]]*\]', '"log_dirs":[...]', line) for line in lines]


def _check_reassign(o: dict) -> None:
    assert o["execute"][-1] == "Successfully started partition reassignment for T-0", o
    assert "Reassignment of partition T-0 is completed." in o["verify"], o
    assert o["after"] == {"leader": "leader", "replicas": ["leader", "third"], "isr": 2}, o
    assert o["listed_after"] == ["No partition reassignments found."], o
    assert o["records"] == 2 and o["removed_replica_in_metadata"] is False, o


@cluster_scenario("reassign-partitions", ("java",), _check_reassign)
def reassign_partitions(target: ClusterTarget, _client) -> dict:
    """``kafka-reassign-partitions --execute`` then ``--verify`` moves an RF 2 partition's
    follower to the third node: what the tool prints (ids as roles), the replicas, ISR and
    leader Metadata shows afterwards, ``--list`` empty, and the records still there."""
    topic = new_topic(target, "ra", rf=2)
    leader, (follower,), _ = leader_and_followers(target, topic)
    (third,) = [n for n in target.node_ids() if n not in (leader, follower)]
    roles = {leader: "leader", follower: "follower", third: "third"}
    assert raw_produce(target.address(leader), topic) == 0
    executed, verified = _move(target, topic, [leader, third])

    new_leader, _, replicas, isr = partition_when(
        target, topic, lambda p: len(p[3]) == 2 and follower not in p[2], "the move applied"
    )
    return {
        "execute": [line for line in _in_roles(executed, topic, roles) if line],
        "verify": [line for line in _in_roles(verified, topic, roles) if line],
        "after": {
            "leader": roles.get(new_leader, "other"),
            "replicas": [roles.get(r, "other") for r in replicas],
            "isr": len(isr),
        },
        "listed_after": [line for line in reassign_tool(target, "--list").splitlines() if line],
        "records": end_offset(target, topic),
        "removed_replica_in_metadata": follower in replicas or follower in isr,
    }


def _check_epoch(o: dict) -> None:
    assert o["leader_kept"] is True and o["replicas"] == 2, o
    # Kafka 4.4's controller: no bump for a replica added, one for a replica removed
    assert o["epoch_up_after_adding"] == 0 and o["epoch_up_after_replacing"] == 1, o


@cluster_scenario("reassign-leader-epoch", (RAW,), _check_epoch)
def reassign_leader_epoch(target: ClusterTarget, _client) -> dict:
    """How much a move takes a partition's leader epoch up: a replica added to an RF 1
    partition ({leader} -> {leader, other}), then the added one replaced by the third node
    ({leader, other} -> {leader, third})."""
    topic = new_topic(target, "re", rf=1)
    leader, _, epoch = leader_and_followers(target, topic)
    other, third = [n for n in target.node_ids() if n != leader]
    _move(target, topic, [leader, other])
    added = partition_when(target, topic, lambda p: len(p[3]) == 2, "the added replica in sync")
    _move(target, topic, [leader, third])
    replaced = partition_when(
        target, topic, lambda p: sorted(p[3]) == sorted([leader, third]), "the third in sync"
    )
    return {
        "leader_kept": added[0] == leader and replaced[0] == leader,
        "replicas": len(replaced[2]),
        "epoch_up_after_adding": added[1] - epoch,
        "epoch_up_after_replacing": replaced[1] - added[1],
    }
