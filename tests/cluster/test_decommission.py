"""Decommissioning a broker and the rest of partition reassignment (issue #21) on a 4-broker
cluster, driven by Kafka's own ``kafka-reassign-partitions`` and ``kafka-topics``, under load
from the fault campaign's producer (``python -m chaos.workload producer``: confluent-kafka,
idempotent, acks=all) and judged by the campaign's checker (``chaos.checker``: every
acknowledged record read back once, at its offset, in order; every replica holding the
leader's bytes):

- broker 4 is decommissioned as docs/cluster.md says: ``--generate`` a plan onto brokers 1-3,
  ``--execute`` and ``--verify`` it, then stop the broker (a controlled shutdown);
- the leader epoch of a moving partition goes up as Kafka 4.4 counts it: not when a move
  starts or only adds a replica, once when a replica is replaced or a move cancelled;
- deleting the topic during a throttled move (``kafka-topics --delete``) deletes it and its
  reassignment, as Kafka 4.4 does, leaving nothing behind;
- the controller killed (kill -9) during a throttled move: the next controller resumes the
  move from the topic's znode and it completes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from chaos import checker
from compat_tests import reference as kafka_reference
from tests.cluster.reassignment import execute_throttled, log_bytes, plan_file, reassign_tool
from tests.cluster.topics import log_dirs
from wireserver.testing.cluster import cluster_metadata

from .conftest import Cluster, wait_for, zk_client

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-decommission"
ROOT = str(Path(__file__).resolve().parents[2])


@pytest.fixture(scope="module")
def reference():
    kafka_reference.require_tools()
    return kafka_reference


@pytest.fixture(scope="module")
def nodes(zookeeper):
    """Brokers 1-4, started one after the other (broker 1 is the first controller)."""
    cluster = Cluster(zookeeper, 4, CHROOT)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(autouse=True)
def all_brokers_back(nodes):
    """Each test starts with four brokers, whichever one the test before stopped."""
    yield
    for broker in nodes.brokers.values():
        if not broker.running:
            broker.start()
    nodes.wait_ready()


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


class CampaignProducer:
    """The fault campaign's producer process, writing its history (one JSON line per
    acknowledged or failed record) for ``chaos.checker``."""

    def __init__(self, bootstrap: str, topic: str, tmp_path: Path, rate: int = 100):
        self.out = str(tmp_path / f"{topic}-producer.jsonl")
        self.stderr = open(self.out + ".stderr", "w+b")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "chaos.workload",
                "producer",
                "--bootstrap",
                bootstrap,
                "--topic",
                topic,
                "--id",
                "p1",
                "--out",
                self.out,
                "--rate",
                str(rate),
            ],  # fmt: skip
            env=dict(os.environ, PYTHONPATH=ROOT),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
        )

    def history(self) -> list[dict]:
        return checker.load(self.out)

    def acked(self) -> int:
        return sum(1 for entry in self.history() if entry.get("k") == "ack")

    def wait_acks(self, more: int, what: str, timeout: float = 60.0) -> None:
        mark = self.acked()
        wait_for(lambda: self.acked() >= mark + more, timeout, 0.2, what=what)

    def finish(self) -> list[dict]:
        """SIGTERM (the workload then flushes what it holds); its history."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(90)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.stderr.seek(0)
        errors = self.stderr.read().decode(errors="replace")[-2000:]
        self.stderr.close()
        history = self.history()
        assert any(entry.get("k") == "end" for entry in history), errors
        return history


def partitions_of(bootstrap: str, topic: str) -> dict:
    """{partition: (leader, leader epoch, replicas, isr)}."""
    return cluster_metadata(bootstrap, topic)[2]


def check_campaign(nodes: Cluster, topic: str, count: int, history: list[dict]) -> None:
    """The campaign's verdict: nothing the producer was told failed, every acknowledged
    record once at its offset and in order, and every replica the leader's copy below the
    high watermark (read from the log files)."""
    failed = [entry for entry in history if entry.get("k") == "fail"]
    assert not failed, failed[:5]
    records = checker.read_topic(nodes.bootstrap, topic, count, committed_only=False, timeout=60)
    verdict = checker.check_producers([history], records)
    assert verdict.acknowledged > 0
    assert verdict.lost == [] and verdict.duplicated == [], verdict
    assert verdict.wrong_offset == [] and verdict.reordered == 0, verdict
    consumer = Consumer({"bootstrap.servers": nodes.bootstrap, "group.id": "decommission-hw"})
    try:
        for partition, (leader, _, replicas, _) in sorted(
            partitions_of(nodes.bootstrap, topic).items()
        ):
            high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=20)[1]
            copies = {b: nodes.brokers[b].data_dir for b in replicas}
            assert checker.divergent_replicas(copies, topic, partition, leader, high) == []
    finally:
        consumer.close()


def create_topic(bootstrap: str, name: str, partitions: int, replicas=None, rf: int = 3) -> None:
    """A topic with ``min.insync.replicas=2``, placed by the cluster (``rf``) or on ``replicas``
    (one list, every partition); returns once every partition has its full ISR."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"min.insync.replicas": "2"}
    if replicas is None:
        topic = NewTopic(name, partitions, rf, config=config)
    else:
        topic = NewTopic(
            name, partitions, replica_assignment=[replicas] * partitions, config=config
        )
    admin.create_topics([topic])[name].result(timeout=30)
    wait_for(
        lambda: (
            len(now := partitions_of(bootstrap, name)) == partitions
            and all(p[0] >= 0 and sorted(p[3]) == sorted(p[2]) for p in now.values())
        ),
        30,
        0.2,
        what=f"{name}: a leader and a full ISR everywhere",
    )


def fill(bootstrap: str, topic: str, size: int) -> None:
    """``size`` bytes of 10 KB records into partition 0 (acks=all), named as the campaign
    names its records (``ID-SEQ``) so that its checker reads them too."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "batch.size": 16384})
    padding = "." * 9990
    for i in range(size // 10_000):
        producer.produce(topic, f"fill{padding}-{i:08d}".encode(), partition=0)
    assert producer.flush(30) == 0


def write_json(tmp_path: Path, name: str, doc: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def verify_until_complete(reference, bootstrap: str, plan: str, count: int, timeout=60.0) -> str:
    """Run ``--verify`` until it says every one of the plan's ``count`` partitions completed."""

    def complete() -> str | None:
        out = reassign_tool(reference, bootstrap, "--verify", "--reassignment-json-file", plan)
        return out if out.count("is completed.") == count else None

    return wait_for(complete, timeout, 1.0, what="--verify to report every partition complete")


def test_decommission_a_broker_under_load(nodes, reference, tmp_path):
    topics = {"decom-a": 4, "decom-b": 2}
    for name, count in topics.items():
        create_topic(nodes.bootstrap, name, count)
    led = [p for p in partitions_of(nodes.bootstrap, "decom-a").values() if p[0] == 4]
    assert led, "broker 4 leads no partition: nothing to hand over"
    producers = {name: CampaignProducer(nodes.bootstrap, name, tmp_path) for name in topics}
    histories = {}
    try:
        for name, producer in producers.items():
            producer.wait_acks(100, f"{name}: acknowledgements before the move")
        moving = write_json(
            tmp_path, "topics.json", {"version": 1, "topics": [{"topic": t} for t in topics]}
        )
        out = reassign_tool(
            reference,
            nodes.bootstrap,
            "--generate",
            "--topics-to-move-json-file",
            moving,
            "--broker-list",
            "1,2,3",
        )
        proposed = json.loads(out.split("Proposed partition reassignment configuration")[1])
        assert len(proposed["partitions"]) == sum(topics.values())
        assert all(sorted(p["replicas"]) == [1, 2, 3] for p in proposed["partitions"]), proposed
        plan = write_json(tmp_path, "plan.json", proposed)
        out = reassign_tool(
            reference, nodes.bootstrap, "--execute", "--reassignment-json-file", plan
        )
        assert "Successfully started partition reassignment" in out, out
        verify_until_complete(reference, nodes.bootstrap, plan, sum(topics.values()))
        for name, count in topics.items():
            now = partitions_of(nodes.bootstrap, name)
            assert all(4 not in p[2] and 4 not in p[3] and p[0] != 4 for p in now.values()), now
            assert sorted(now) == list(range(count))
            # the removed replicas deleted their data
            wait_for(
                lambda name=name, count=count: all(
                    log_bytes(nodes.brokers[4], name, p) == 0 for p in range(count)
                ),
                30,
                what=f"broker 4 to delete its replicas of {name}",
            )
        for name, producer in producers.items():
            producer.wait_acks(50, f"{name}: acknowledgements after the move")
        nodes.brokers[4].stop()  # SIGTERM: a controlled shutdown with nothing left to hand over
        assert cluster_metadata(nodes.bootstrap)[1] == [1, 2, 3]
        for name, producer in producers.items():
            producer.wait_acks(50, f"{name}: acknowledgements with broker 4 gone")
    finally:
        for name, producer in producers.items():
            histories[name] = producer.finish()
    for name, count in topics.items():
        check_campaign(nodes, name, count, histories[name])


def epoch_once(bootstrap: str, topic: str, replicas: list[int], isr: list[int]) -> int:
    """Partition 0's leader epoch once Metadata shows ``replicas`` and ``isr`` (any order)
    with broker 1 leading."""
    leader, epoch, _, _ = wait_for(
        lambda: (
            now
            if (now := partitions_of(bootstrap, topic)[0])[0] == 1
            and now[2] == replicas
            and sorted(now[3]) == sorted(isr)
            else None
        ),
        30,
        0.2,
        what=f"{topic}-0 on {replicas}, ISR {isr}, led by 1",
    )
    return epoch


def test_leader_epochs_of_moves_as_kafka_4_4_counts_them(nodes, reference, tmp_path):
    """Kafka 4.4's controller bumps a moving partition's leader epoch only when its leader
    changes or its replica set loses a replica: adding a replica leaves the epoch where it
    was, replacing one takes it up once (when the move completes), a move keeps it while in
    progress and cancelling that move (which drops the replica it was adding) takes it up
    once."""
    topic = "epochs"
    bootstrap = nodes.bootstrap
    create_topic(bootstrap, topic, 1, replicas=[1])
    epoch = epoch_once(bootstrap, topic, [1], [1])
    plan = plan_file(tmp_path, topic, [1, 2])
    reassign_tool(reference, bootstrap, "--execute", "--reassignment-json-file", plan)
    verify_until_complete(reference, bootstrap, plan, 1)
    assert epoch_once(bootstrap, topic, [1, 2], [1, 2]) == epoch  # adding: 0
    plan = plan_file(tmp_path, topic, [1, 3])
    reassign_tool(reference, bootstrap, "--execute", "--reassignment-json-file", plan)
    verify_until_complete(reference, bootstrap, plan, 1)
    assert epoch_once(bootstrap, topic, [1, 3], [1, 3]) == epoch + 1  # replacing: 1
    fill(bootstrap, topic, 3_000_000)
    plan = plan_file(tmp_path, topic, [1, 4])
    # 10 KB/s: after its first fetch, broker 4 waits minutes for the next
    reassign_tool(
        reference,
        bootstrap,
        "--execute",
        "--throttle",
        "10000",
        "--reassignment-json-file",
        plan,
    )
    assert epoch_once(bootstrap, topic, [1, 4, 3], [1, 3]) == epoch + 1  # started: 0
    listed = reassign_tool(reference, bootstrap, "--list")
    assert f"{topic}-0: replicas: 1,4,3. adding: 4. removing: 3." in listed, listed
    out = reassign_tool(reference, bootstrap, "--cancel", "--reassignment-json-file", plan)
    assert f"Successfully cancelled partition reassignment for: {topic}-0" in out, out
    assert epoch_once(bootstrap, topic, [1, 3], [1, 3]) == epoch + 2  # cancelled: 1
    wait_for(
        lambda: log_bytes(nodes.brokers[4], topic) == 0,
        30,
        what="broker 4 to delete its partial replica",
    )
    assert partitions_of(bootstrap, topic)[0][1] == epoch + 2


def test_a_cancel_that_needs_an_unclean_election_is_refused_unless_the_topic_allows_it(
    nodes, reference, tmp_path
):
    """A move from broker 4 to brokers 2 and 3 with broker 3's copy throttled: 2 catches up
    and joins the ISR, then 4 stops, leaving only 2 (a replica being added) in the ISR.
    Cancelling would give the partition back to 4 alone, outside the ISR: Kafka 4.4's
    controller refuses that with INVALID_REPLICA_ASSIGNMENT unless the topic allows unclean
    elections, and the move stays in progress; once the topic allows them, the cancel goes
    through."""
    topic = "unclean-cancel"
    bootstrap = nodes.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    throttled = {"follower.replication.throttled.replicas": "0:3"}
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[4]], config=throttled)])[
        topic
    ].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1"})
    for _ in range(200):
        producer.produce(topic, b"." * 10_000, partition=0)
    assert producer.flush(30) == 0
    configs_tool(
        reference,
        bootstrap,
        "brokers",
        "3",
        "--add-config",
        "follower.replication.throttled.rate=10000",
    )
    try:
        plan = plan_file(tmp_path, topic, [2, 3])
        reassign_tool(reference, bootstrap, "--execute", "--reassignment-json-file", plan)
        wait_for(
            lambda: sorted(partitions_of(bootstrap, topic)[0][3]) == [2, 4],
            30,
            0.2,
            what="broker 2 in the ISR",
        )
        nodes.brokers[4].stop()
        wait_for(
            lambda: partitions_of(bootstrap, topic)[0][3] == [2],
            30,
            0.2,
            what="the ISR down to broker 2",
        )
        cancel = reference.tool_command(
            "kafka-reassign-partitions",
            ["--bootstrap-server", bootstrap, "--cancel", "--reassignment-json-file", plan],
        )
        refused = subprocess.run(cancel, capture_output=True, text=True, timeout=120)
        said = refused.stdout + refused.stderr
        assert refused.returncode != 0, said
        assert (
            f"Unable to revert partition assignment for {topic}:0 because it would require an "
            "unclean leader election." in said
        ), said
        listed = reassign_tool(reference, bootstrap, "--list")
        assert f"{topic}-0: replicas: 2,3,4. adding: 2,3. removing: 4." in listed, listed
        configs_tool(
            reference,
            bootstrap,
            "topics",
            topic,
            "--add-config",
            "unclean.leader.election.enable=true",
        )
        out = wait_for(
            lambda: (
                done.stdout
                if (
                    done := subprocess.run(cancel, capture_output=True, text=True, timeout=120)
                ).returncode
                == 0
                else None
            ),
            30,
            1,
            what="the cancel to be accepted once the topic allows unclean elections",
        )
        assert f"Successfully cancelled partition reassignment for: {topic}-0" in out, out
        assert partitions_of(bootstrap, topic)[0][2] == [4]
    finally:
        configs_tool(
            reference,
            bootstrap,
            "brokers",
            "3",
            "--delete-config",
            "follower.replication.throttled.rate",
        )


def configs_tool(reference, bootstrap: str, entity_type: str, name: str, *args: str) -> None:
    """``kafka-configs --alter`` on one entity (it must exit 0)."""
    command = reference.tool_command(
        "kafka-configs",
        [
            "--bootstrap-server",
            bootstrap,
            "--alter",
            "--entity-type",
            entity_type,
            "--entity-name",
            name,
            *args,
        ],
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_deleting_a_topic_during_a_move_ends_it(nodes, reference, tmp_path, zk):
    """Kafka 4.4 deletes a topic being reassigned together with its reassignment."""
    topic = "doomed-move"
    create_topic(nodes.bootstrap, topic, 1, replicas=[1, 2])
    fill(nodes.bootstrap, topic, 3_000_000)  # about 22 s to copy at the throttled rate
    leader, epoch, _, _ = partitions_of(nodes.bootstrap, topic)[0]
    execute_throttled(reference, nodes.bootstrap, plan_file(tmp_path, topic, [1, 3]))
    wait_for(
        lambda: partitions_of(nodes.bootstrap, topic)[0][:3] == (leader, epoch, [1, 3, 2]),
        30,
        0.2,
        what="the move started, at the same leader epoch",
    )
    listed = reassign_tool(reference, nodes.bootstrap, "--list")
    assert f"{topic}-0: replicas: 1,3,2. adding: 3. removing: 2." in listed, listed
    deleted = kafka_reference.run_tool(
        "kafka-topics", ["--delete", "--topic", topic], bootstrap=nodes.bootstrap
    )
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    for broker in nodes.brokers.values():
        wait_for(
            lambda broker=broker: log_dirs(broker, topic) == [],
            30,
            what=f"broker {broker.node_id} to delete the topic's logs",
        )
    listed = reassign_tool(reference, nodes.bootstrap, "--list")
    assert "No partition reassignments found." in listed, listed
    for path in (f"/brokers/topics/{topic}", f"/config/topics/{topic}"):
        assert zk.exists(path) is None, path
    wait_for(
        lambda: zk.exists(f"/admin/delete_topics/{topic}") is None,
        30,
        what="the deletion request removed",
    )
    # The name is free again: a new topic of that name starts empty, elsewhere, and moves
    # nowhere.
    create_topic(nodes.bootstrap, topic, 1, replicas=[2, 4])
    producer = Producer({"bootstrap.servers": nodes.bootstrap, "acks": "all"})
    producer.produce(topic, b"new", partition=0)
    assert producer.flush(30) == 0
    records = checker.read_topic(nodes.bootstrap, topic, 1, committed_only=False, timeout=30)
    assert [value for _, value in records[0]] == ["new"]
    assert partitions_of(nodes.bootstrap, topic)[0][2] == [2, 4]
    listed = reassign_tool(reference, nodes.bootstrap, "--list")
    assert "No partition reassignments found." in listed, listed
    assert log_bytes(nodes.brokers[1], topic) == 0 and log_bytes(nodes.brokers[3], topic) == 0


def test_a_new_controller_resumes_a_move(nodes, reference, tmp_path):
    """The controller is killed (kill -9) during a throttled move under load: the next one
    finds the reassignment in the topic's znode and completes it, with the one leader epoch
    bump Kafka 4.4 makes for the replica the move removes and none of its own."""
    controller = cluster_metadata(nodes.bootstrap)[0]
    a, b, c = sorted(set(nodes.brokers) - {controller})
    topic = "failover-move"
    create_topic(nodes.bootstrap, topic, 1, replicas=[a, b])
    fill(nodes.bootstrap, topic, 3_000_000)  # about 22 s to copy at the throttled rate
    producer = CampaignProducer(nodes.bootstrap, topic, tmp_path)
    try:
        producer.wait_acks(100, "acknowledgements before the move")
        plan = plan_file(tmp_path, topic, [a, c])
        execute_throttled(reference, nodes.bootstrap, plan)
        # The brokers learn of the move through their ZooKeeper watches, a moment after the
        # tool's answer (as Kafka's brokers learn it from the metadata log).
        wait_for(
            lambda: partitions_of(nodes.bootstrap, topic)[0][2] == [a, c, b],
            10,
            0.1,
            what="the move in the partition's metadata",
        )
        leader, epoch, replicas, isr = partitions_of(nodes.bootstrap, topic)[0]
        assert replicas == [a, c, b] and c not in isr  # still moving
        nodes.brokers[controller].kill()
        wait_for(
            lambda: cluster_metadata(nodes.bootstrap)[0] not in (-1, controller),
            30,
            0.2,
            what="a new controller",
        )
        out = verify_until_complete(reference, nodes.bootstrap, plan, 1)
        assert "Clearing broker-level throttles" in out, out
        moved = partitions_of(nodes.bootstrap, topic)[0]
        assert moved[2] == [a, c] and sorted(moved[3]) == sorted([a, c])
        assert moved[:2] == (leader, epoch + 1)  # the leader kept, b removed: one bump
        wait_for(
            lambda: log_bytes(nodes.brokers[b], topic) == 0,
            30,
            what=f"broker {b} to delete its replica",
        )
        producer.wait_acks(50, "acknowledgements after the move")
        nodes.brokers[controller].start()
        nodes.wait_ready()
    finally:
        history = producer.finish()
    check_campaign(nodes, topic, 1, history)
