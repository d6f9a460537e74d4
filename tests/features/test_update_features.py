"""UpdateFeatures over a socket to a real broker, and what ApiVersions reports after it: Kafka
4.4's checks and messages, all-or-nothing requests, validate-only, and levels that outlive a
restart (one node: a file in the data dir)."""

from __future__ import annotations

import pytest
from kafka.protocol.admin.cluster import UpdateFeaturesRequest

from tests.apis.conftest import RunningBroker
from tests.features.requests import SAFE_DOWNGRADE, UPGRADE, api_versions, update
from wireserver.protocol.errors import ErrorCode
from wireserver.testing import KafkaWire

#: what a new broker finalizes (Kafka 4.4's defaults for the features wireserver has)
DEFAULT_LEVELS = {
    "group.version": 1,
    "share.version": 1,
    "streams.version": 1,
    "transaction.version": 2,
}


def finalized(bootstrap: str) -> tuple[int, dict[str, int]]:
    response = api_versions(bootstrap, 4)
    levels = {f.name: f.max_version_level for f in response.finalized_features}
    return response.finalized_features_epoch, levels


@pytest.fixture
def broker(tmp_path):
    running = RunningBroker(tmp_path)
    yield running
    running.stop()


def test_downgrade_and_upgrade_change_what_api_versions_reports(broker):
    answer = update(broker.bootstrap, ("group.version", 0, SAFE_DOWNGRADE))
    assert (answer.error_code, answer.error_message) == (ErrorCode.NONE, None)
    assert finalized(broker.bootstrap) == (
        1,
        {"share.version": 1, "streams.version": 1, "transaction.version": 2},
    )
    answer = update(broker.bootstrap, ("group.version", 1, UPGRADE))
    assert answer.error_code == ErrorCode.NONE
    assert finalized(broker.bootstrap) == (
        2,
        {"share.version": 1, "streams.version": 1, "transaction.version": 2, "group.version": 1},
    )


def test_levels_outlive_a_restart(tmp_path):
    first = RunningBroker(tmp_path)
    try:
        assert update(first.bootstrap, ("group.version", 0, SAFE_DOWNGRADE)).error_code == 0
    finally:
        first.stop()
    second = RunningBroker(tmp_path)
    try:
        assert finalized(second.bootstrap) == (
            1,
            {"share.version": 1, "streams.version": 1, "transaction.version": 2},
        )
    finally:
        second.stop()


@pytest.mark.parametrize(
    "change,message",
    [
        (
            ("group.version", 0, UPGRADE),
            "Invalid update version 0 for feature group.version. Can't downgrade the version "
            "of this feature without setting the upgrade type to either safe or unsafe "
            "downgrade.",
        ),
        (
            ("nosuch.version", 1, UPGRADE),
            "Invalid update version 1 for feature nosuch.version. Local controller 1 does not "
            "support this feature.",
        ),
        (
            ("group.version", 1, 0),
            "Invalid update version 1 for feature group.version. The controller does not "
            "support the given upgrade type.",
        ),
        (
            ("group.version", -1, 3),
            "Invalid update version -1 for feature group.version. A feature version cannot "
            "be less than 0.",
        ),
        (
            ("group.version", 2, UPGRADE),
            "Invalid update version 2 for feature group.version. Local controller 1 only "
            "supports versions 0-1",
        ),
    ],
)
def test_refused_updates_change_nothing(broker, change, message):
    answer = update(broker.bootstrap, ("transaction.version", 0, SAFE_DOWNGRADE), change)
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.INVALID_UPDATE_VERSION,
        "The update failed for all features since the following feature had an error: " + message,
    )
    assert finalized(broker.bootstrap) == (0, DEFAULT_LEVELS)


def test_v1_lists_the_features_of_a_request_that_succeeded(broker):
    answer = update(broker.bootstrap, ("group.version", 0, SAFE_DOWNGRADE), version=1)
    assert (answer.error_code, answer.error_message) == (ErrorCode.NONE, None)
    assert [(r.feature, r.error_code, r.error_message) for r in answer.results] == [
        ("group.version", ErrorCode.NONE, "NONE")
    ]
    refused = update(broker.bootstrap, ("group.version", 2, UPGRADE), version=1)
    assert (refused.error_code, refused.results) == (ErrorCode.INVALID_UPDATE_VERSION, [])


def test_v0_cannot_downgrade(broker):
    key = UpdateFeaturesRequest.FeatureUpdateKey
    with KafkaWire(broker.bootstrap) as wire:
        answer = wire.request(
            UpdateFeaturesRequest(
                version=0,
                timeout_ms=5000,
                feature_updates=[
                    key(feature="group.version", max_version_level=0, allow_downgrade=True)
                ],
            )
        )
    assert answer.error_code == ErrorCode.INVALID_UPDATE_VERSION


def test_an_empty_request_succeeds(broker):
    answer = update(broker.bootstrap, version=1)
    assert (answer.error_code, answer.results) == (ErrorCode.NONE, [])


def test_validate_only_changes_nothing(broker):
    answer = update(broker.bootstrap, ("group.version", 0, SAFE_DOWNGRADE), validate_only=True)
    assert answer.error_code == ErrorCode.NONE
    assert finalized(broker.bootstrap) == (0, DEFAULT_LEVELS)
