"""ApiVersions and UpdateFeatures as a test sends them: ApiVersions on a fresh connection, decoded
at the request's version; UpdateFeatures through kafka-python's request class, with the upgrade
types a feature change names."""

from __future__ import annotations

from kafka.protocol.admin.cluster import UpdateFeaturesRequest
from kafka.protocol.api_message import ApiMessage

from wireserver.protocol.messages_features import ApiVersionsRequest, ApiVersionsResponse
from wireserver.testing import KafkaWire


def api_versions(bootstrap: str, version: int, **fields) -> ApiVersionsResponse:
    """One ApiVersions request on a fresh connection, its response decoded at the request's
    version even when it carries an error (as Kafka 4.4's client does from v3; kafka-python's
    decoder would read an error answer as v0)."""
    request = ApiVersionsRequest(
        version=version, client_software_name="tests", client_software_version="1", **fields
    )
    with KafkaWire(bootstrap, negotiate=False) as wire:
        wire.send(request)
        body = wire.read_frame()[4:]  # response header v0: the correlation id
    return ApiMessage.decode.__func__(ApiVersionsResponse, body, version=version)


UPGRADE, SAFE_DOWNGRADE = 1, 2


def update(bootstrap: str, *changes: tuple[str, int, int], version=2, validate_only=False):
    key = UpdateFeaturesRequest.FeatureUpdateKey
    with KafkaWire(bootstrap) as wire:
        return wire.request(
            UpdateFeaturesRequest(
                version=version,
                timeout_ms=5000,
                feature_updates=[
                    key(feature=name, max_version_level=level, upgrade_type=kind)
                    for name, level, kind in changes
                ],
                validate_only=validate_only,
            )
        )
