"""ApiVersions (key 18), v0-4.

Built from ``protocol.served.SERVED`` alone. A request at a version above ours is answered with
a v0 body carrying UNSUPPORTED_VERSION and our full list, so the client can pick a version we
share (KIP-511); the server layer encodes it at v0 with response header v0.

From v3 the client's software name and version must match Kafka's pattern, else the answer is
INVALID_REQUEST with an empty list, as Kafka's. (Clients read an ApiVersions response carrying
an error as v0, so such an answer is only meaningful to a client that knows this.)

Skipped: feature flags (supported/finalized features) — we finalize none, so the tagged fields
stay absent; clients treat that as "no features".
"""

from __future__ import annotations

import re

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode

API_KEY = 18
# Kafka's ApiVersionsRequest.isValid pattern for client_software_name / _version (v3+).
SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def supported_versions(ctx, response_class) -> list:
    entry = response_class.ApiVersion
    return [
        entry(api_key=spec.key, min_version=spec.advertised_min, max_version=spec.max_version)
        for spec in ctx.services.registry
    ]


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    response_class = ctx.request.spec.response_class
    if ctx.request.body is None:
        return response_class(
            version=0,
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            api_keys=supported_versions(ctx, response_class),
        )
    if ctx.version >= 3:
        body = ctx.body
        for value in (body.client_software_name, body.client_software_version):
            if value is None or not SOFTWARE_PATTERN.fullmatch(value):
                # Kafka answers INVALID_REQUEST with no API list (KafkaApis, isValid).
                return ctx.response(
                    error_code=ErrorCode.INVALID_REQUEST, api_keys=[], throttle_time_ms=0
                )
    return ctx.response(
        error_code=ErrorCode.NONE,
        api_keys=supported_versions(ctx, response_class),
        throttle_time_ms=0,
    )
