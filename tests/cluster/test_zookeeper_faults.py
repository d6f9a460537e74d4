"""ZooKeeper failures a cluster must ride out (found by the fault campaign, ``scripts/chaos``):

- every broker's session expiring at once (all three paused past the session timeout, as
  after a ZooKeeper outage): the brokers register again, one becomes controller and every
  partition leads again;
- a ``/controller`` watch that hands over a value read before this broker's own election (what
  kazoo delivers after a session loss) must not make the controller resign while it holds the
  znode: the cluster was left with no controller and its partitions offline for good.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.topics import create
from wireserver.cluster import zkdata as zd
from wireserver.testing import EmbeddedBroker
from wireserver.testing.cluster import cluster_metadata as metadata

pytestmark = pytest.mark.integration


def all_led(bootstrap: str, topic: str, isr: list[int]) -> bool:
    try:
        state = metadata(bootstrap, topic)[2]
    except (OSError, RuntimeError):
        return False
    return bool(state) and all(p[0] > 0 and sorted(p[3]) == isr for p in state.values())


def registrations(zookeeper) -> list[int | None]:
    """The session that owns each broker's registration (None: not registered)."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    client = KazooClient(hosts=zookeeper.connect + "/wireserver-zk-kill")
    client.start(timeout=30)
    try:
        owners: list[int | None] = []
        for broker_id in (1, 2, 3):
            try:
                owners.append(client.exists(zd.broker_path(broker_id)).ephemeralOwner)
            except (NoNodeError, AttributeError):
                owners.append(None)
        return owners
    finally:
        client.stop()
        client.close()


def test_every_session_expiring_at_once(zookeeper):
    cluster = Cluster(zookeeper, 3, "/wireserver-zk-kill").start()
    try:
        create(cluster, "zk-kill", partitions=3, rf=3, min_insync_replicas=2)
        first = cluster.brokers[1].bootstrap_servers
        wait_for(lambda: all_led(first, "zk-kill", [1, 2, 3]), 60, 0.2, what="leaders")
        sessions = registrations(zookeeper)
        for broker in cluster.brokers.values():
            os.kill(broker.pid, signal.SIGSTOP)
        time.sleep(6)  # the fault: longer than zookeeper.session.timeout.ms (4 s)
        for broker in cluster.brokers.values():
            os.kill(broker.pid, signal.SIGCONT)
        # Metadata still shows the state from before the pause until the brokers learn that
        # their sessions are gone: first wait until all three registered again.
        wait_for(
            lambda: all(
                new is not None and new != old
                for old, new in zip(sessions, registrations(zookeeper))
            ),
            60,
            0.5,
            what="every broker registered under a new session",
        )
        wait_for(
            lambda: all_led(first, "zk-kill", [1, 2, 3]),
            60,
            0.5,
            what="every partition led and in sync after ZooKeeper came back",
        )
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for p in range(3):
            producer.produce("zk-kill", b"after", partition=p)
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "zk-kill"})
        consumer.assign([TopicPartition("zk-kill", p, 0) for p in range(3)])
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is not None and not msg.error():
                seen.append((msg.partition(), msg.value()))
        consumer.close()
        assert sorted(seen) == [(0, b"after"), (1, b"after"), (2, b"after")]
    finally:
        cluster.close()


def test_a_stale_controller_watch_does_not_depose_the_controller(zookeeper):
    connect = zookeeper.connect + "/wireserver-stale-watch"
    broker = EmbeddedBroker(
        "thread", overrides={"broker.id": "1", "zookeeper.connect": connect}
    ).start()
    try:
        node = broker.broker.cluster
        wait_for(lambda: node.controller is not None, 30, 0.1, what="broker 1 the controller")
        # What kazoo hands over after a session loss: the znode as it was before this broker's
        # election, naming another broker.
        broker._runner.call(node._on_controller, zd.encode_controller(3), None)
        assert node.controller is not None and node.controller_id == 1
        broker.create_topic("after-stale-watch", 1, 1)
        wait_for(
            lambda: all_led(broker.bootstrap_servers, "after-stale-watch", [1]),
            30,
            0.2,
            what="the new topic led: a controller is still at work",
        )
    finally:
        broker.close()
