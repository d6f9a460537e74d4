"""DeleteShareGroupOffsets (key 92), v0: forget the share-partition state of whole topics for
an empty share group (``kafka-share-groups --delete-offsets``); a later fetch starts them
again as ``share.auto.offset.reset`` says.

The group must be a share group (GROUP_ID_NOT_FOUND) with no members (NON_EMPTY_GROUP).
Authorization: DELETE on the group (GROUP_AUTHORIZATION_FAILED), READ on each topic
(TOPIC_AUTHORIZATION_FAILED).

Served by the group's coordinator: the state of each of the topic's share-partitions is
deleted at its share coordinator (DeleteShareGroupState in a cluster), as Kafka's
``GroupCoordinatorService.deleteShareGroupOffsets``.
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.share.manager import ZERO_UUID
from wireserver.share.requests import empty_group_response

API_KEY = 92


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    return empty_group_response(ctx, checks.delete_group, lambda: _delete(ctx))


@defer.inlineCallbacks
def _delete(ctx: RequestContext):
    body = ctx.body
    services = ctx.services
    topic_class = ctx.request.spec.response_class.DeleteShareGroupOffsetsResponseTopic
    responses = []
    for topic in body.topics:
        info = services.logs.topics.get(topic.topic_name)
        failure = checks.fetch_topic(ctx, topic.topic_name) or (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if info is None else ErrorCode.NONE
        )
        if failure == ErrorCode.NONE and info is not None:
            failure = yield services.share.delete_topic_state(
                body.group_id, topic.topic_name, info.num_partitions
            )
        responses.append(
            topic_class(
                topic_name=topic.topic_name,
                topic_id=info.topic_id if info is not None else ZERO_UUID,
                error_code=failure,
                error_message=None,
            )
        )
    return responses
