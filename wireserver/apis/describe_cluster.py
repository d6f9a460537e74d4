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
    broker, body, version = ctx.broker, ctx.body, ctx.version
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
            cluster_id=broker.cluster_id,
            controller_id=-1,
            brokers=[],
            authorized_operations=None,
        )
    broker_class = ctx.request.spec.response_class.DescribeClusterBroker
    listener = broker.advertised_listener(ctx.listener_name)
    operations = (
        checks.cluster_operations(ctx) if body.include_cluster_authorized_operations else None
    )
    cluster = broker.cluster
    if cluster is not None:
        brokers = []
        for node_id, info in sorted(cluster.brokers.items()):
            host, port = cluster.endpoint_for(info, ctx.listener_name)
            brokers.append(
                broker_class(
                    broker_id=node_id, host=host, port=port, rack=info.rack, is_fenced=False
                )
            )
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            error_message=None,
            endpoint_type=BROKER_ENDPOINT,
            cluster_id=broker.cluster_id,
            controller_id=cluster.controller_id,
            brokers=brokers,
            authorized_operations=operations,
        )
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=BROKER_ENDPOINT,
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        brokers=[
            broker_class(
                broker_id=broker.node_id,
                host=listener.host,
                port=listener.port,
                rack=broker.config.get("broker.rack"),
                is_fenced=False,
            )
        ],
        authorized_operations=operations,
    )
