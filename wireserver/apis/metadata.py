"""Metadata (key 3), v0-13.

One node: this broker leads every partition, with itself as the only replica and ISR, leader
epoch 0. Unknown topics are created when the request and ``auto.create.topics.enable`` allow it
(v0-3 always allow it, as in Kafka); since creation here is synchronous the new topic is
returned at once (Kafka's KRaft brokers answer LEADER_NOT_AVAILABLE first and create it
asynchronously). Topics can be named by id from v10 on (v12+ sends a null name).

Cluster mode: brokers, controller, leaders, leader epochs, replicas and ISRs come from the
ZooKeeper view (``wireserver.cluster.metadata``); a partition without a live leader answers
LEADER_NOT_AVAILABLE with leader -1 and its dead replicas as offline; an auto-created topic
answers LEADER_NOT_AVAILABLE until its creation has gone through ZooKeeper (as Kafka's
ZooKeeper-era brokers did).

Authorized operations, when asked (v8+), as Kafka's ``handleTopicMetadataRequest``: each topic
the principal may describe gets the topic operations it is allowed, known or not (an unknown
name it may describe too); topics answered TOPIC_AUTHORIZATION_FAILED or UNKNOWN_TOPIC_ID keep
"not requested" (INT32_MIN). The cluster's operations are answered at v8-10 only (later
versions dropped the field in favour of DescribeCluster): none without DESCRIBE on the cluster.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.metadata import NO_LEADER
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.metadata_response import PartitionEntries
from wireserver.security import checks
from wireserver.topics import INTERNAL_TOPICS, TopicError, auto_create, check_name

API_KEY = 3
ZERO_UUID = uuid.UUID(int=0)


def broker_entries(ctx, broker_class) -> list:
    """The live brokers as the listener the request arrived on advertises them."""
    return [
        broker_class(node_id=e.node_id, host=e.host, port=e.port, rack=e.rack)
        for e in ctx.services.metadata.broker_endpoints(ctx.listener_name)
    ]


def leader_hints(ctx, moved: list, leader_class, endpoint_class) -> list:
    """KIP-951 leader discovery, as Kafka's ``getCurrentLeader``: each (topic, partition,
    response entry) in ``moved`` answered an error telling the client that the leader is
    elsewhere; its ``current_leader`` becomes the leader and leader epoch this broker knows
    (-1, -1 when none), so the client can go there without a Metadata round trip. Returns the
    endpoints of those leaders on the request's listener, for the response's
    ``node_endpoints``."""
    leaders = set()
    for topic, partition, entry in moved:
        view = ctx.services.metadata.partition_view(topic, partition)
        leader, epoch = (view.leader, view.leader_epoch) if view is not None else (NO_LEADER, -1)
        entry.current_leader = leader_class(leader_id=leader, leader_epoch=epoch)
        leaders.add(leader)
    return [entry for entry in broker_entries(ctx, endpoint_class) if entry.node_id in leaders]


#: (response partition class, topic name) → (the views answered, their response entries).
#: One node makes a topic's views once (``LocalMetadata.partition_views``), so while they are
#: the same object the entries made from them are too: building the entries of thousands of
#: partitions was most of an all-topics Metadata answer. Entries are only read once made.
_ENTRIES: dict[tuple[type, str], tuple[Sequence, list]] = {}


def partition_entries(ctx, topic_class, info) -> list:
    """A partition without a live leader answers LEADER_NOT_AVAILABLE (leader -1)."""
    partition_class = topic_class.MetadataResponsePartition
    views = ctx.services.metadata.partition_views(info)
    key = (partition_class, info.name)
    cached = _ENTRIES.get(key)
    if cached is not None and cached[0] is views:
        return cached[1]
    entries = [
        partition_class(
            error_code=ErrorCode.NONE
            if view.leader != NO_LEADER
            else ErrorCode.LEADER_NOT_AVAILABLE,
            partition_index=view.partition,
            leader_id=view.leader,
            leader_epoch=view.leader_epoch,
            replica_nodes=view.replicas,
            isr_nodes=view.isr,
            offline_replicas=view.offline_replicas,
        )
        for view in views
    ]
    if isinstance(views, tuple):  # made once per topic (one node), not per request
        entries = PartitionEntries(entries)  # so is their encoding (protocol.metadata_response)
        _ENTRIES[key] = (views, entries)
    return entries


def topic_entry(ctx, topic_class, info):
    return topic_class(
        error_code=ErrorCode.NONE,
        name=info.name,
        topic_id=info.topic_id,
        is_internal=info.name in INTERNAL_TOPICS,
        partitions=partition_entries(ctx, topic_class, info),
        authorized_operations=None,
    )


def error_entry(topic_class, code: ErrorCode, name: str | None, topic_id=None):
    return topic_class(
        error_code=code,
        name=name,
        topic_id=topic_id or ZERO_UUID,
        is_internal=False,
        partitions=[],
        authorized_operations=None,
    )


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    response_class = ctx.request.spec.response_class
    topic_class = response_class.MetadataResponseTopic
    logs = ctx.services.logs
    metadata = ctx.services.metadata
    # v0: an empty list means every topic; v1+: null means every topic.
    all_topics = body.topics is None or (version == 0 and not body.topics)
    allow_auto_create = body.allow_auto_topic_creation if version >= 4 else True
    topics = []
    if all_topics:
        topics = [
            topic_entry(ctx, topic_class, info)
            for info in logs.topics.values()
            if metadata.is_reported(info) and not checks.describe_topic(ctx, info.name)
        ]
        # (unauthorized topics are hidden, as Kafka hides them)
    else:
        by_id = logs.topic_names_by_id
        for requested in body.topics:
            name = requested.name
            if name is None:
                known = by_id.get(requested.topic_id)
                info = None if known is None else logs.topics.get(known)
                if (
                    info is None
                    or not metadata.is_reported(info)
                    or checks.describe_topic(ctx, info.name)
                ):
                    topics.append(
                        error_entry(
                            topic_class, ErrorCode.UNKNOWN_TOPIC_ID, None, requested.topic_id
                        )
                    )
                else:
                    topics.append(topic_entry(ctx, topic_class, info))
                continue
            info = logs.topics.get(name)
            if not metadata.is_reported(info):
                info = None
            denied = checks.describe_topic(ctx, name) or (
                info is None and allow_auto_create and checks.create_topic(ctx, name)
            )
            if denied:
                topics.append(error_entry(topic_class, denied, name))
                continue
            if info is None:
                try:
                    check_name(name)
                    info = auto_create(ctx.services, name) if allow_auto_create else None
                except TopicError as exc:
                    code = exc.code
                    if code == ErrorCode.TOPIC_ALREADY_EXISTS:  # (in a cluster) being created
                        code = ErrorCode.LEADER_NOT_AVAILABLE
                    topics.append(error_entry(topic_class, code, name))
                    continue
                if info is not None and not metadata.is_reported(logs.topics.get(name)):
                    topics.append(error_entry(topic_class, ErrorCode.LEADER_NOT_AVAILABLE, name))
                    continue
            if info is None:
                topics.append(error_entry(topic_class, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name))
            else:
                topics.append(topic_entry(ctx, topic_class, info))
    if version >= 8 and body.include_topic_authorized_operations:
        for entry in topics:
            if entry.error_code not in (
                ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                ErrorCode.UNKNOWN_TOPIC_ID,
            ):
                entry.authorized_operations = checks.topic_operations(ctx, entry.name)
    return ctx.response(
        throttle_time_ms=0,
        brokers=broker_entries(ctx, response_class.MetadataResponseBroker),
        cluster_id=ctx.services.cluster_id,
        controller_id=metadata.controller_id(),
        topics=topics,
        authorized_operations=(
            checks.cluster_operations(ctx)
            if 8 <= version <= 10 and body.include_cluster_authorized_operations
            else None
        ),
        error_code=ErrorCode.NONE,
    )
