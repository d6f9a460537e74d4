"""Finalized feature levels in a cluster: a new cluster starts with Kafka 4.4's defaults in
ZooKeeper's ``/feature`` (Kafka's ZooKeeper-era layout), an UpdateFeatures through one broker
changes what every broker's ApiVersions reports (with the znode's version as the epoch), and
the levels outlive a broker's restart. Share groups, served on one node only, are refused."""

from __future__ import annotations

import json

import pytest

from tests.cluster.conftest import Cluster, wait_for, zk_client
from tests.features.test_api_versions_features import api_versions
from tests.features.test_update_features import SAFE_DOWNGRADE, update
from tests.security.test_acl_coverage import share_acknowledge, share_fetch, share_group_heartbeat
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.messages_share import ShareGroupDescribeRequest
from wireserver.testing import KafkaWire

pytestmark = pytest.mark.integration
CHROOT = "/wireserver-features"


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 2, CHROOT).start()
    yield nodes
    nodes.close()


@pytest.fixture(scope="module")
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def reported(cluster) -> set:
    """Each broker's (epoch, finalized levels)."""
    out = set()
    for broker in cluster.brokers.values():
        response = api_versions(broker.bootstrap_servers, 4)
        levels = tuple(sorted((f.name, f.max_version_level) for f in response.finalized_features))
        out.add((response.finalized_features_epoch, levels))
    return out


def test_levels_live_in_zookeeper_and_every_broker_reports_them(cluster, zk):
    data, stat = zk.get("/feature")
    assert json.loads(data) == {
        "version": 2,
        "status": 1,
        "features": {
            "group.version": {"max_version_level": 1},
            "streams.version": {"max_version_level": 1},
            "transaction.version": {"max_version_level": 2},
        },
    }
    assert reported(cluster) == {
        (stat.version, (("group.version", 1), ("streams.version", 1), ("transaction.version", 2)))
    }

    first = next(iter(cluster.brokers.values()))
    answer = update(first.bootstrap_servers, ("transaction.version", 1, SAFE_DOWNGRADE))
    assert answer.error_code == ErrorCode.NONE
    expected = {
        (
            stat.version + 1,
            (("group.version", 1), ("streams.version", 1), ("transaction.version", 1)),
        )
    }
    wait_for(lambda: reported(cluster) == expected, 30, what="every broker to report TV 1")

    last = list(cluster.brokers.values())[-1]
    last.stop()
    last.start()
    wait_for(lambda: reported(cluster) == expected, 60, what="the restarted broker's levels")


def test_a_cluster_refuses_share_groups_as_kafka_without_them(cluster):
    """Share groups are served on one node only: a cluster broker does not support
    ``share.version`` and answers the share APIs UNSUPPORTED_VERSION, as a Kafka broker whose
    share groups are not enabled."""
    broker = next(iter(cluster.brokers.values()))
    response = api_versions(broker.bootstrap_servers, 4)
    assert "share.version" not in {f.name for f in response.finalized_features}
    assert [f.max_version for f in response.supported_features if f.name == "share.version"] in (
        [],
        [0],
    )
    with KafkaWire(broker.bootstrap_servers) as wire:
        heartbeat = wire.request(share_group_heartbeat("sg"))
        described = wire.request(
            ShareGroupDescribeRequest(
                version=1, group_ids=["sg"], include_authorized_operations=False
            )
        )
        fetched = wire.request(share_fetch("sg"))
        acknowledged = wire.request(share_acknowledge("sg"))
    unsupported = ErrorCode.UNSUPPORTED_VERSION
    assert heartbeat.error_code == unsupported
    assert [g.error_code for g in described.groups] == [unsupported]
    assert fetched.error_code == unsupported
    assert acknowledged.error_code == unsupported
