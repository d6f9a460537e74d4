"""ShareGroupHeartbeat (key 76), v1: a share group's (KIP-932) members join (epoch 0),
heartbeat and leave (-1); the server assigns partitions with the ``simple`` share assignor,
members sharing them. The logic is in ``wireserver.groups.share_coordinator``.

Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED), and DESCRIBE on every name in
``SubscribedTopicNames`` (TOPIC_AUTHORIZATION_FAILED), as Kafka's ``KafkaApis``. In cluster
mode the group coordinator (the leader of its ``__consumer_offsets`` partition) answers,
NOT_COORDINATOR elsewhere, as for consumer groups.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups.api import client_host, heartbeat_response
from wireserver.groups.consumer_coordinator import HeartbeatResult
from wireserver.groups.share_coordinator import ShareHeartbeat
from wireserver.security import checks
from wireserver.share import refused

API_KEY = 76


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body = ctx.body
    coordinator = ctx.services.groups
    error = (
        refused(ctx)
        or coordinator.ensure_ready(body.group_id)
        or checks.read_group(ctx, body.group_id)
        or checks.describe_topics(ctx, body.subscribed_topic_names)
    )
    if error is not None:
        return heartbeat_response(ctx, HeartbeatResult(error))
    result = coordinator.share.heartbeat(
        ShareHeartbeat(
            group_id=body.group_id,
            member_id=body.member_id,
            member_epoch=body.member_epoch,
            rack_id=body.rack_id,
            subscribed_topic_names=body.subscribed_topic_names,
            client_id=ctx.client_id or "",
            client_host=client_host(ctx),
        )
    )
    return heartbeat_response(ctx, result)
