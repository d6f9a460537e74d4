"""ApiVersions (key 18), v0-5.

Built from ``protocol.served.SERVED`` alone. A request at a version above ours is answered with
a v0 body carrying UNSUPPORTED_VERSION and our full list, so the client can pick a version we
share (KIP-511); the server layer encodes it at v0 with response header v0.

From v3 the client's software name and version must match Kafka's pattern, else the answer is
INVALID_REQUEST with an empty list, as Kafka's. (Clients read an ApiVersions response carrying
an error as v0, so such an answer is only meaningful to a client that knows this.)

v5 (KIP-1242) carries the cluster id and node id the client means to reach: one without the
other is INVALID_REQUEST, and a cluster id (with a node id) that is not this broker's is
REBOOTSTRAP_REQUIRED, so a client whose bootstrap address now leads elsewhere starts over, as
Kafka 4.4's KafkaApis answers.

From v3 the response's tagged fields carry the feature levels (``wireserver.features``): the
supported ranges (before v4, without features whose minimum is 0: KAFKA-17011; all of ours
start at 0), the finalized levels and their epoch.
"""

from __future__ import annotations

import re

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode

API_KEY = 18
# Kafka's ApiVersionsRequest.isValid pattern for client_software_name / _version (v3+).
SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


#: response class → (the registry listed, its entries): the list is the same for every
#: connection (about 90 entries, 0.5 ms to make), and entries are only read once made.
_SUPPORTED: dict[type, tuple[object, list]] = {}


def supported_versions(ctx, response_class) -> list:
    registry = ctx.services.registry
    cached = _SUPPORTED.get(response_class)
    if cached is not None and cached[0] is registry:
        return cached[1]
    entry = response_class.ApiVersion
    entries = [
        entry(api_key=spec.key, min_version=spec.advertised_min, max_version=spec.max_version)
        for spec in registry
    ]
    _SUPPORTED[response_class] = (registry, entries)
    return entries


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    response_class = ctx.request.spec.response_class
    if ctx.request.body is None:
        return response_class(
            version=0,
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            api_keys=supported_versions(ctx, response_class),
        )
    error = request_error(ctx)
    if error:
        # Kafka answers with no API list (ApiVersionsRequest.getErrorResponse).
        return ctx.response(error_code=error, api_keys=[], throttle_time_ms=0)
    if ctx.version < 3:
        return ctx.response(
            error_code=ErrorCode.NONE,
            api_keys=supported_versions(ctx, response_class),
            throttle_time_ms=0,
        )
    features = ctx.services.features
    return ctx.response(
        error_code=ErrorCode.NONE,
        api_keys=supported_versions(ctx, response_class),
        throttle_time_ms=0,
        supported_features=[
            response_class.SupportedFeatureKey(name=name, min_version=0, max_version=level)
            for name, level in features.supported.items()
            if ctx.version >= 4
        ],
        finalized_features_epoch=features.epoch,
        finalized_features=[
            response_class.FinalizedFeatureKey(
                name=name, max_version_level=level, min_version_level=level
            )
            for name, level in features.levels.items()
        ],
        zk_migration_ready=False,
    )


def request_error(ctx: RequestContext) -> ErrorCode:
    """Kafka's ApiVersionsRequest.isValid, then KafkaApis' cluster and node id check (v5)."""
    body = ctx.body
    if ctx.version >= 5 and (body.cluster_id is None) != (body.node_id == -1):
        return ErrorCode.INVALID_REQUEST
    if ctx.version >= 3:
        for value in (body.client_software_name, body.client_software_version):
            if value is None or not SOFTWARE_PATTERN.fullmatch(value):
                return ErrorCode.INVALID_REQUEST
    if ctx.version >= 5 and body.cluster_id is not None:
        services = ctx.services
        if body.cluster_id != services.cluster_id or body.node_id != services.node_id:
            return ErrorCode.REBOOTSTRAP_REQUIRED
    return ErrorCode.NONE
