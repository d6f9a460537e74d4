"""Finalized feature levels in a cluster: a new cluster starts with Kafka 4.4's defaults in
ZooKeeper's ``/feature`` (Kafka's ZooKeeper-era layout), an UpdateFeatures through one broker
changes what every broker's ApiVersions reports (with the znode's version as the epoch), and
the levels outlive a broker's restart. Share groups are served (``share.version`` 1 by
default), and refused once the feature is disabled, as Kafka."""

from __future__ import annotations

import json

import pytest

from tests.cluster.conftest import Cluster, wait_for, zk_client
from tests.features.requests import SAFE_DOWNGRADE, UPGRADE, api_versions, update
from tests.security.share_requests import share_acknowledge, share_fetch, share_group_heartbeat
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
            "share.version": {"max_version_level": 1},
            "streams.version": {"max_version_level": 1},
            "transaction.version": {"max_version_level": 2},
        },
    }
    assert reported(cluster) == {
        (
            stat.version,
            (
                ("group.version", 1),
                ("share.version", 1),
                ("streams.version", 1),
                ("transaction.version", 2),
            ),
        )
    }

    first = next(iter(cluster.brokers.values()))
    answer = update(first.bootstrap_servers, ("transaction.version", 1, SAFE_DOWNGRADE))
    assert answer.error_code == ErrorCode.NONE
    expected = {
        (
            stat.version + 1,
            (
                ("group.version", 1),
                ("share.version", 1),
                ("streams.version", 1),
                ("transaction.version", 1),
            ),
        )
    }
    wait_for(lambda: reported(cluster) == expected, 30, what="every broker to report TV 1")

    last = list(cluster.brokers.values())[-1]
    last.stop()
    last.start()
    wait_for(lambda: reported(cluster) == expected, 60, what="the restarted broker's levels")


def test_a_cluster_serves_share_groups_until_the_feature_is_disabled(cluster):
    """``share.version`` 1 is finalized in a new cluster and supported by every broker: the
    share APIs are answered (here: a member joins its group at its coordinator); disabled
    through one broker (``UpdateFeatures``), every broker answers them UNSUPPORTED_VERSION, as
    a Kafka broker whose share groups are not enabled."""
    brokers = list(cluster.brokers.values())
    for broker in brokers:
        response = api_versions(broker.bootstrap_servers, 4)
        assert ("share.version", 1) in {
            (f.name, f.max_version_level) for f in response.finalized_features
        }
        assert [
            f.max_version for f in response.supported_features if f.name == "share.version"
        ] == [1]

    def joined() -> bool:
        for broker in brokers:
            with KafkaWire(broker.bootstrap_servers) as wire:
                if wire.request(share_group_heartbeat("sg")).error_code == ErrorCode.NONE:
                    return True
        return False

    wait_for(joined, 60, what="a share member to join at its group coordinator")

    answer = update(brokers[0].bootstrap_servers, ("share.version", 0, SAFE_DOWNGRADE))
    assert answer.error_code == ErrorCode.NONE
    try:
        wait_for(
            lambda: all(
                not {f.name for f in api_versions(b.bootstrap_servers, 4).finalized_features}
                & {"share.version"}
                for b in brokers
            ),
            30,
            what="every broker to see share.version disabled",
        )
        with KafkaWire(brokers[-1].bootstrap_servers) as wire:
            heartbeat = wire.request(share_group_heartbeat("sg"))
            described = wire.request(
                ShareGroupDescribeRequest(
                    version=1, group_ids=["sg"], include_authorized_operations=False
                )
            )
            fetched = wire.request(share_fetch("sg"))
            acknowledged = wire.request(share_acknowledge("sg"))
    finally:
        update(brokers[0].bootstrap_servers, ("share.version", 1, UPGRADE))
    unsupported = ErrorCode.UNSUPPORTED_VERSION
    assert heartbeat.error_code == unsupported
    assert [g.error_code for g in described.groups] == [unsupported]
    assert fetched.error_code == unsupported
    assert acknowledged.error_code == unsupported
