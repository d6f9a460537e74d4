"""ApiVersions v0-5 (key 18), which kafka-python lacks past v4.

v5 (KIP-1242) adds the ``ClusterId`` and ``NodeId`` the client believes it is talking to, so a
broker can answer REBOOTSTRAP_REQUIRED when they are not its own; the response is unchanged. The
response's tagged fields carry the feature levels (KIP-584): what this broker supports
(``SupportedFeatures``) and what the cluster finalized (``FinalizedFeatures``, with its epoch).
Transcribed from Apache Kafka 4.4's definitions with protocol.messages_extra's helpers.
"""

from __future__ import annotations

from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.metadata.api_versions import (
    ApiVersionsResponse as KafkaPythonApiVersionsResponse,
)

from wireserver.protocol.messages_extra import (
    DEFINED_HERE,
    _define,
    _field,
    _InlineSchema,
    _nullable_string,
)

API_VERSIONS_REQUEST = {
    "apiKey": 18,
    "type": "request",
    "name": "ApiVersionsRequest",
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        _field("ClientSoftwareName", "string", "3+", ignorable=True),
        _field("ClientSoftwareVersion", "string", "3+", ignorable=True),
        _nullable_string("ClusterId", "5+"),
        _field("NodeId", "int32", "5+", default=-1, ignorable=True),
    ],
}


def _features(name: str, struct: str, levels: tuple[str, str], tag: int) -> dict:
    """A tagged list of (feature name, two int16 levels)."""
    fields = [_field("Name", "string", "3+", mapKey=True)]
    fields += [_field(level, "int16", "3+") for level in levels]
    return _field(
        name, f"[]{struct}", "3+", tag=tag, taggedVersions="3+", ignorable=True, fields=fields
    )


API_VERSIONS_RESPONSE = {
    "apiKey": 18,
    "type": "response",
    "name": "ApiVersionsResponse",
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        _field("ErrorCode", "int16"),
        _field(
            "ApiKeys",
            "[]ApiVersion",
            fields=[
                _field("ApiKey", "int16", mapKey=True),
                _field("MinVersion", "int16"),
                _field("MaxVersion", "int16"),
            ],
        ),
        _field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        _features("SupportedFeatures", "SupportedFeatureKey", ("MinVersion", "MaxVersion"), 0),
        _field("FinalizedFeaturesEpoch", "int64", "3+", tag=1, taggedVersions="3+", default="-1"),
        _features(
            "FinalizedFeatures", "FinalizedFeatureKey", ("MaxVersionLevel", "MinVersionLevel"), 2
        ),
        _field("ZkMigrationReady", "bool", "3+", tag=3, taggedVersions="3+", default="false"),
    ],
}

ApiVersionsRequest = _define(API_VERSIONS_REQUEST)
# kafka-python's class keeps the response header v0 and decodes an error answer as v0.
ApiVersionsResponse = _InlineSchema(
    "ApiVersionsResponse",
    (KafkaPythonApiVersionsResponse,),
    {"SCHEMA": API_VERSIONS_RESPONSE, "__module__": __name__},
)
DEFINED_HERE.append(ApiVersionsResponse)

# Defining a response class makes it kafka-python's decoder for its API key in this process;
# clients running beside the broker (tests, the test kit) keep kafka-python's own class.
ResponseClassRegistry.register_response_class(KafkaPythonApiVersionsResponse)
