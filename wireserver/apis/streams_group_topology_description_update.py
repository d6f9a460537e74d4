"""StreamsGroupTopologyDescriptionUpdate (key 93), v0 (KIP-1331): a member would hand the
broker the description of its topology, which Kafka 4.4 passes to the plugin named by
``group.streams.topology.description.plugin.class``. With no plugin (Kafka's default, and the
only setting wireserver has) Kafka refuses every update with UNSUPPORTED_VERSION, "The broker
has no streams group topology description plugin configured.", and never asks a member for
one (``TopologyDescriptionRequired`` is false); so does wireserver. READ on the group comes
first (GROUP_AUTHORIZATION_FAILED), as in Kafka's ``KafkaApis``.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 93
NO_PLUGIN = "The broker has no streams group topology description plugin configured."


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    group_id = ctx.body.group_id
    error = ctx.services.groups.ensure_ready(group_id) or checks.read_group(ctx, group_id)
    if error is not None:
        return ctx.response(throttle_time_ms=0, error_code=error, error_message=None)
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=NO_PLUGIN
    )
