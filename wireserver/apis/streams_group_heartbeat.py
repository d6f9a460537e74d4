"""StreamsGroupHeartbeat (key 88), v0-1: the Streams group protocol (KIP-1071). Joins (member
epoch 0, with the topology), heartbeats, leaves (-1) and static members' temporary leaves (-2);
the broker configures the topology against the topics, creates the missing repartition and
changelog topics, computes the task assignment and hands each member its active, standby and
warm-up tasks once their previous owners revoked them. The logic is in
``wireserver.groups.streams_coordinator``.

v0 answers ``AcceptableRecoveryLagLegacy`` (int32), v1 ``AcceptableRecoveryLag`` (int64) and
``TopologyDescriptionRequired`` (always false: no topology description plugin is configured,
as on a Kafka broker by default).

UNSUPPORTED_VERSION when ``group.coordinator.rebalance.protocols`` lacks ``streams`` or the
``streams.version`` feature is not finalized at 1 or above (``kafka-features disable``), as in
Kafka's ``isStreamsGroupProtocolEnabled``. Authorization as Kafka's
``handleStreamsGroupHeartbeat``: READ on the group
(GROUP_AUTHORIZATION_FAILED); with a topology, DESCRIBE on its source and internal topics
(TOPIC_AUTHORIZATION_FAILED). The internal topics are created with the requester's rights: one
it may not CREATE (on the cluster or the topic) stays missing and the status says so.
"""

from __future__ import annotations

import logging
from typing import Any

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.groups.api import client_host, heartbeat_fields
from wireserver.groups.streams_coordinator import StreamsHeartbeat, StreamsHeartbeatResult
from wireserver.groups.streams_group import (
    MISSING_INTERNAL_TOPICS,
    StreamsTopology,
    Subtopology,
    Tasks,
    TopicInfo,
    topology_topics,
)
from wireserver.metadata import TopicError
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.topics import create_topic

log = logging.getLogger(__name__)

API_KEY = 88
#: Kafka 4.4's defaults of ``group.streams.acceptable.recovery.lag`` and
#: ``group.streams.task.offset.interval.ms`` (keys wireserver does not take).
ACCEPTABLE_RECOVERY_LAG = 10000
TASK_OFFSET_INTERVAL_MS = 60000


def tasks_of(task_ids: list[Any] | None) -> Tasks | None:
    if task_ids is None:
        return None
    out: Tasks = {}
    for t in task_ids:
        out.setdefault(t.subtopology_id, set()).update(t.partitions)
    return out


def task_ids(cls: Any, tasks: Tasks) -> list[Any]:
    return [cls(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _topic_infos(infos: list[Any]) -> list[TopicInfo]:
    return [
        TopicInfo(
            i.name, i.partitions, i.replication_factor, {c.key: c.value for c in i.topic_configs}
        )
        for i in infos
    ]


def _topology(topology: Any) -> StreamsTopology | None:
    if topology is None:
        return None
    return StreamsTopology(
        topology.epoch,
        [
            Subtopology(
                s.subtopology_id,
                list(s.source_topics),
                list(s.source_topic_regex),
                _topic_infos(s.state_changelog_topics),
                list(s.repartition_sink_topics),
                _topic_infos(s.repartition_source_topics),
                [
                    (
                        list(c.source_topics),
                        list(c.source_topic_regex),
                        list(c.repartition_source_topics),
                    )
                    for c in s.copartition_groups
                ],
            )
            for s in topology.subtopologies
        ],
    )


def _create_internal_topics(ctx: RequestContext, result: StreamsHeartbeatResult) -> None:
    """Create what the group lacks (Kafka's ``autoTopicCreationManager``). The answer still
    reports them missing, as Kafka's does (it creates them after answering); the next
    heartbeat finds them. Topics the requester may not CREATE are named in the status."""
    unauthorized = []
    for name, info in sorted(result.to_create.items()):
        if checks.create_topic(ctx, name) is not None:
            unauthorized.append(name)
            continue
        try:
            create_topic(
                ctx.services, name, info.partitions, info.replication_factor or -1, info.configs
            )
        except TopicError as exc:
            log.warning("streams group internal topic %s not created: %s", name, exc)
    if unauthorized:
        result.statuses = [s for s in result.statuses or [] if s[0] != MISSING_INTERNAL_TOPICS]
        result.statuses.append(
            (
                MISSING_INTERNAL_TOPICS,
                f"Unauthorized to CREATE on topics {', '.join(unauthorized)}.",
            )
        )


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    response_class = ctx.request.spec.response_class
    topology = _topology(body.topology)
    enabled = "streams" in coordinator.config[
        "group.coordinator.rebalance.protocols"
    ] and ctx.services.features.at_least("streams.version", 1)
    error = (
        (None if enabled else ErrorCode.UNSUPPORTED_VERSION)
        or coordinator.ensure_ready(body.group_id)
        or checks.read_group(ctx, body.group_id)
        or (checks.describe_topics(ctx, topology_topics(topology)) if topology else None)
    )
    if error is not None:
        result = StreamsHeartbeatResult(error, checks.message(error))
    else:
        endpoint = body.user_endpoint
        request = StreamsHeartbeat(
            group_id=body.group_id,
            member_id=body.member_id,
            member_epoch=body.member_epoch,
            endpoint_information_epoch=body.endpoint_information_epoch,
            instance_id=body.instance_id,
            rack_id=body.rack_id,
            rebalance_timeout_ms=body.rebalance_timeout_ms,
            topology=topology,
            active=tasks_of(body.active_tasks),
            standby=tasks_of(body.standby_tasks),
            warmup=tasks_of(body.warmup_tasks),
            process_id=body.process_id,
            user_endpoint=(endpoint.host, endpoint.port) if endpoint is not None else None,
            client_tags=(
                {kv.key: kv.value for kv in body.client_tags}
                if body.client_tags is not None
                else None
            ),
            task_offsets=_offsets(body.task_offsets),
            task_end_offsets=_offsets(body.task_end_offsets),
            shutdown_application=body.shutdown_application,
            client_id=ctx.client_id or "",
            client_host=client_host(ctx),
        )
        result = coordinator.streams.heartbeat(request)
        if result.error == ErrorCode.NONE:
            _create_internal_topics(ctx, result)
    return _response(ctx, response_class, version, result)


def _offsets(offsets: list[Any] | None) -> list[tuple[str, int, int]] | None:
    if offsets is None:
        return None
    return [(o.subtopology_id, o.partition, o.offset) for o in offsets]


def _response(
    ctx: RequestContext, cls: Any, version: int, result: StreamsHeartbeatResult
) -> HandlerResult:
    ok = result.error == ErrorCode.NONE and not result.left
    lag = ACCEPTABLE_RECOVERY_LAG if ok else 0
    assignment = result.assignment
    endpoints = None
    if result.endpoints is not None:
        e_cls = cls.EndpointToPartitions

        def topic_partitions(by_topic: dict[str, set[int]]) -> list[Any]:
            return [
                e_cls.TopicPartition(topic=t, partitions=sorted(ps))
                for t, ps in sorted(by_topic.items())
            ]

        endpoints = [
            e_cls(
                user_endpoint=e_cls.Endpoint(host=host, port=port),
                active_partitions=topic_partitions(active),
                standby_partitions=topic_partitions(standby),
            )
            for (host, port), active, standby in result.endpoints
        ]
    return ctx.response(
        **heartbeat_fields(result),
        acceptable_recovery_lag_legacy=min(lag, 2**31 - 1),
        task_offset_interval_ms=TASK_OFFSET_INTERVAL_MS if ok else 0,
        acceptable_recovery_lag=lag if ok else -1,
        status=[cls.Status(status_code=c, status_detail=d) for c, d in result.statuses or []],
        active_tasks=task_ids(cls.TaskIds, assignment[0]) if assignment else None,
        standby_tasks=task_ids(cls.TaskIds, assignment[1]) if assignment else None,
        warmup_tasks=task_ids(cls.TaskIds, assignment[2]) if assignment else None,
        topology_description_required=False,
        endpoint_information_epoch=result.endpoint_epoch,
        partitions_by_user_endpoint=endpoints,
    )
