"""AlterShareGroupOffsets (key 91), v0: set the start offset of share-partitions of an empty
share group (``kafka-share-groups --reset-offsets``); each starts over there with nothing in
flight, and the state is persisted at once.

A group id no group has becomes an Empty share group first, as Kafka's
``getOrMaybeCreatePersistedShareGroup``: consumers that join it later start at the offsets
set. An id a group of another type has is GROUP_ID_NOT_FOUND ("Group X is not a share
group."), an empty one INVALID_GROUP_ID; a share group with members is NON_EMPTY_GROUP. Authorization: READ on the group
(GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED on its
partitions).

Served by the group's coordinator: each share-partition's new state goes to its share
coordinator (InitializeShareGroupState in a cluster, at the next state epoch, so that a
partition leader still holding the old state is fenced from writing it; Kafka's
``GroupCoordinatorService.alterShareGroupOffsets``); the partitions are reset together.
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.share.manager import ZERO_UUID
from wireserver.share.requests import empty_group_response

API_KEY = 91


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    return empty_group_response(ctx, checks.read_group, lambda: _reset(ctx), create=True)


@defer.inlineCallbacks
def _reset(ctx: RequestContext):
    body = ctx.body
    services = ctx.services
    topic_class = ctx.request.spec.response_class.AlterShareGroupOffsetsResponseTopic
    partition_class = topic_class.AlterShareGroupOffsetsResponsePartition
    responses = []
    for topic in body.topics:
        info = services.logs.topics.get(topic.topic_name)
        denied = checks.fetch_topic(ctx, topic.topic_name)
        resets = []
        for p in topic.partitions:
            if denied:
                resets.append(defer.succeed(denied))
            elif services.metadata.partition_view(topic.topic_name, p.partition_index) is None:
                resets.append(defer.succeed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                resets.append(
                    services.share.reset(
                        body.group_id, topic.topic_name, p.partition_index, p.start_offset
                    )
                )
        failures = yield defer.gatherResults(resets)
        rows = [
            partition_class(
                partition_index=p.partition_index, error_code=failure, error_message=None
            )
            for p, failure in zip(topic.partitions, failures)
        ]
        responses.append(
            topic_class(
                topic_name=topic.topic_name,
                topic_id=info.topic_id if info is not None else ZERO_UUID,
                partitions=rows,
            )
        )
    return responses
