"""ApiVersions as a test sends it: on a fresh connection, decoded at the request's version."""

from __future__ import annotations

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
