"""DescribeCluster (key 60), v0-2.

This broker as the only broker and as the "controller" (Kafka's brokers also answer with a
broker id there, since clients cannot reach KRaft controllers), the cluster id, and the
cluster's authorized operations when asked: those Kafka supports on CLUSTER that the principal is
allowed, none at all without DESCRIBE on the cluster (``AuthHelper.computeDescribeClusterResponse``:
the request itself needs no ACL). ``endpoint_type`` (v1+): 1 (brokers) is served; 2 (controllers) fails with
MISMATCHED_ENDPOINT_TYPE and anything else with UNSUPPORTED_ENDPOINT_TYPE, as in Kafka's
``AuthHelper.computeDescribeClusterResponse`` (INVALID_REQUEST at v0). v2 reports ``is_fenced``
false; ``include_fenced_brokers`` changes nothing since a single node is never fenced.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 60
BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    services, body, version = ctx.services, ctx.body, ctx.version
    endpoint_type = body.endpoint_type if version >= 1 else BROKER_ENDPOINT
    if endpoint_type != BROKER_ENDPOINT:
        if endpoint_type == CONTROLLER_ENDPOINT:
            code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
            message = (
                "The request was sent to an endpoint of type BROKER, but we wanted an "
                "endpoint of type CONTROLLER"
            )
        else:
            code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            message = f"Unsupported endpoint type {endpoint_type}"
        return ctx.response(
            throttle_time_ms=0,
            error_code=code if version >= 1 else ErrorCode.INVALID_REQUEST,
            error_message=message,
            endpoint_type=BROKER_ENDPOINT,
            cluster_id=services.cluster_id,
            controller_id=-1,
            brokers=[],
            authorized_operations=None,
        )
    broker_class = ctx.request.spec.response_class.DescribeClusterBroker
    operations = (
        checks.cluster_operations(ctx) if body.include_cluster_authorized_operations else None
    )
    metadata = services.metadata
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=BROKER_ENDPOINT,
        cluster_id=services.cluster_id,
        controller_id=metadata.controller_id(),
        brokers=[
            broker_class(
                broker_id=e.node_id, host=e.host, port=e.port, rack=e.rack, is_fenced=False
            )
            for e in metadata.broker_endpoints(ctx.listener_name)
        ],
        authorized_operations=operations,
    )
