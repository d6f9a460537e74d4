"""Client quotas in cluster mode: a quota set through one broker is written in Kafka's
ZooKeeper-era layout (``/config/clients/<client-id>``, ``/config/users/<user>/clients/<c>``
with a ``/config/changes`` notification), described and enforced by the other broker, and
a user's quota keeps that user's other config entries."""

from __future__ import annotations

import json

import pytest

from tests.apis.client_quotas import EXACT, alter, describe, produce_throttle_ms
from tests.cluster.conftest import Cluster, wait_for, zk_client
from wireserver.testing import KafkaWire

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-quotas"


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 2, CHROOT, {"quota.window.num": "2"}, mode="thread").start()
    yield nodes
    nodes.close()


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def test_a_quota_set_through_one_broker_is_enforced_by_another(cluster, zk):
    first, second = cluster.brokers[1], cluster.brokers[2]
    with KafkaWire(first.bootstrap_servers) as wire:
        assert alter(
            wire,
            [
                ({"client-id": "slow client"}, {"producer_byte_rate": 10000.0}),
                ({"user": "ann", "client-id": None}, {"consumer_byte_rate": 5000.0}),
            ],
        ) == [(0, None), (0, None)]
    data, _ = zk.get("/config/clients/slow%20client")
    assert json.loads(data) == {"version": 1, "config": {"producer_byte_rate": "10000"}}
    data, _ = zk.get("/config/users/ann/clients/<default>")
    assert json.loads(data)["config"] == {"consumer_byte_rate": "5000"}
    notified = [
        json.loads(zk.get(f"/config/changes/{child}")[0])["entity_path"]
        for child in zk.get_children("/config/changes")
    ]
    assert {"clients/slow%20client", "users/ann/clients/<default>"} <= set(notified)

    def described_on_second():
        with KafkaWire(second.bootstrap_servers) as wire:
            return describe(wire, [("client-id", EXACT, "slow client")])[2]

    wait_for(described_on_second, timeout=15, what="the quota on broker 2")
    # every produce counts, answered NOT_LEADER_OR_FOLLOWER or not
    bootstrap = second.bootstrap_servers
    assert produce_throttle_ms(bootstrap, "slow client", "cluster-quota", expect_ok=False) > 0
    assert produce_throttle_ms(bootstrap, "fast client", "cluster-quota", expect_ok=False) == 0
