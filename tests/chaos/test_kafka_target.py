"""The fault campaign's Kafka target (``chaos.kafka_cluster``) on its own: a real Kafka 4.4
(KRaft: three brokers and a dedicated controller, each JVM in a network namespace of its own)
that stock clients reach from the client namespace, whose brokers the campaign can kill -9 and
start again, and that leaves nothing behind when closed.

Needs root, ``ip``, ``nft`` and the reference Kafka's jars (Java): a missing one skips, and fails
under ``CI=true``. Starts JVMs: run it under ``flock /tmp/wireserver-heavy.lock``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from chaos.cluster import PORT
from chaos.kafka_cluster import KafkaKRaftCluster
from chaos.netns import Network, missing_prerequisites
from compat_tests.reference import must_not_skip
from compat_tests.reference.resolve import resolve
from wireserver.testing import wait_for

PREFIX, SUBNET = "wskt", "10.95.0"
TOPIC = "kafka-target"

#: Runs in the client namespace: produce ``count`` records (acks=all) with values from ``first``
#: on, or read the topic from the start until ``count`` records came; prints what it got.
CLIENT = """
import json, sys
from confluent_kafka import Consumer, Producer
bootstrap, topic, mode, first, count = sys.argv[1:]
first, count = int(first), int(count)
if mode == "produce":
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    acked = []
    for n in range(first, first + count):
        producer.produce(topic, str(n).encode(), on_delivery=lambda e, m: acked.append(
            None if e else m.value().decode()))
    producer.flush(60)
    print(json.dumps(acked))
else:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafka-target",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen = []
    while len(seen) < count:
        message = consumer.poll(60)
        if message is None:
            break
        if not message.error():
            seen.append(message.value().decode())
    consumer.close()
    print(json.dumps(seen))
"""


@pytest.fixture
def network():
    missing = missing_prerequisites()
    try:
        resolve()
    except Exception as exc:  # noqa: BLE001 - no JVM or jars on this machine
        missing.append(f"the reference Kafka's jars ({exc})")
    if missing:
        if must_not_skip():
            pytest.fail("this machine lacks: " + ", ".join(missing))
        pytest.skip("this machine lacks: " + ", ".join(missing))
    with Network(PREFIX, SUBNET) as net:
        yield net


def client(network: Network, bootstrap: str, mode: str, first: int, count: int) -> list:
    done = subprocess.run(
        [*network.prefix("client"), sys.executable, "-c", CLIENT, bootstrap, TOPIC, mode]
        + [str(first), str(count)],
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(os.environ, PYTHONPATH=""),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def namespaces() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(f"{PREFIX}-")]


def test_kafka_target_serves_clients_survives_a_kill_and_leaves_nothing(network, tmp_path):
    target = KafkaKRaftCluster(network)
    network.add("client")
    closed = False
    try:
        target.start()
        brokers = {target.broker_pid(b) for b in target.broker_nodes}
        (controller,) = target.coordination_pids()
        assert None not in brokers and controller not in brokers, "a controller of its own"
        target.create_topic(TOPIC, 1, {"min.insync.replicas": "2"})
        wait_for(lambda: target.metadata(TOPIC)[2].get(0, (-1,))[0] > 0, 60, what="a leader")
        first = client(network, target.bootstrap, "produce", 0, 20)
        assert first == [str(n) for n in range(20)]

        leader, _, replicas, isr = target.metadata(TOPIC)[2][0]
        assert sorted(replicas) == sorted(isr) == [1, 2, 3]
        pid = target.broker_pid(leader)
        target.kill_broker(leader)
        assert not target.broker_running(leader) and target.broker_pid(leader) is None
        assert not os.path.exists(f"/proc/{pid}/status")
        wait_for(
            lambda: (m := target.metadata(TOPIC)) and m[2][0][0] not in (-1, leader),
            60,
            what=f"a new leader after broker {leader} was killed",
        )
        second = client(network, target.bootstrap, "produce", 20, 20)
        assert second == [str(n) for n in range(20, 40)], "acks=all with 2 of 3 in sync"

        target.start_broker(leader)
        assert target.broker_running(leader)
        socket.create_connection((target.broker_nodes[leader].ip, PORT), timeout=5).close()
        wait_for(
            lambda: (m := target.metadata(TOPIC)) and m[1] == [1, 2, 3] and len(m[2][0][3]) == 3,
            120,
            what=f"broker {leader} back in the ISR",
        )
        assert target.answers(leader)
        read = client(network, target.bootstrap, "consume", 0, 40)
        assert read == [str(n) for n in range(40)]
        assert os.path.isdir(os.path.join(target.data_dir(leader), f"{TOPIC}-0"))

        target.save_logs(str(tmp_path))
        for name in ("broker-1", "broker-2", "broker-3", "controller"):
            assert "Kafka Server started" in (tmp_path / f"{name}.log").read_text(), name
        pids = [target.broker_pid(b) for b in target.broker_nodes] + [controller]
        mounts = [disk.path for disk in target.disks.values()]
        target.close()
        closed = True
        network.close()
        assert namespaces() == []
        assert all(not os.path.exists(f"/proc/{pid}/status") for pid in pids)
        with open("/proc/mounts") as handle:
            mounted = handle.read()
        assert not any(path in mounted for path in mounts)
    finally:
        if not closed:
            target.close()
