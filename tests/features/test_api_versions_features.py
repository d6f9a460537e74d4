"""ApiVersions v3-5 over a socket to a real broker: the feature levels it reports and the
cluster id / node id check of v5 (KIP-1242), as a Kafka 4.4 broker answers."""

from __future__ import annotations

import pytest

from tests.apis.conftest import RunningBroker
from tests.features.requests import api_versions
from wireserver.protocol.errors import ErrorCode
from wireserver.testing import KafkaWire


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    running = RunningBroker(tmp_path_factory.mktemp("features"))
    yield running
    running.stop()


def cluster_id(bootstrap: str) -> str:
    from kafka.protocol.metadata.metadata import MetadataRequest

    with KafkaWire(bootstrap) as wire:
        return wire.request(MetadataRequest(version=12, topics=[])).cluster_id


def test_v4_reports_supported_and_finalized_features(broker):
    response = api_versions(broker.bootstrap, 4)
    assert response.error_code == ErrorCode.NONE
    assert {(f.name, f.min_version, f.max_version) for f in response.supported_features} == {
        ("group.version", 0, 1),
        ("transaction.version", 0, 2),
        ("streams.version", 0, 1),
        ("share.version", 0, 1),
    }
    assert {
        (f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features
    } == {
        ("group.version", 1, 1),
        ("streams.version", 1, 1),
        ("share.version", 1, 1),
        ("transaction.version", 2, 2),
    }
    assert response.finalized_features_epoch == 0
    assert response.zk_migration_ready is False


def test_v3_leaves_out_features_whose_minimum_is_zero(broker):
    """KAFKA-17011: a v3 client cannot read a supported minimum of 0."""
    response = api_versions(broker.bootstrap, 3)
    assert response.supported_features == []
    assert {f.name for f in response.finalized_features} == {
        "group.version",
        "streams.version",
        "share.version",
        "transaction.version",
    }


def test_v5_with_this_brokers_cluster_and_node_id_is_answered(broker):
    response = api_versions(broker.bootstrap, 5, cluster_id=cluster_id(broker.bootstrap), node_id=1)
    assert response.error_code == ErrorCode.NONE
    assert any(key.api_key == 18 and key.max_version == 5 for key in response.api_keys)


def test_v5_without_ids_is_answered(broker):
    response = api_versions(broker.bootstrap, 5, cluster_id=None, node_id=-1)
    assert response.error_code == ErrorCode.NONE


@pytest.mark.parametrize("wrong", ["cluster", "node"])
def test_v5_for_another_cluster_or_node_needs_a_rebootstrap(broker, wrong):
    ids = {"cluster_id": cluster_id(broker.bootstrap), "node_id": 1}
    ids.update({"cluster_id": "another-cluster"} if wrong == "cluster" else {"node_id": 7})
    response = api_versions(broker.bootstrap, 5, **ids)
    assert response.error_code == ErrorCode.REBOOTSTRAP_REQUIRED
    assert response.api_keys == []


@pytest.mark.parametrize(
    "ids", [{"cluster_id": None, "node_id": 1}, {"cluster_id": "c", "node_id": -1}]
)
def test_v5_with_only_one_of_the_ids_is_invalid(broker, ids):
    response = api_versions(broker.bootstrap, 5, **ids)
    assert response.error_code == ErrorCode.INVALID_REQUEST
