"""StreamsGroupDescribe (key 89), v0-1: a Streams group's state, epochs, topology (as the
broker configured it: changelog topics with their task counts, repartition topics with
their partitions) and members, each with its process, endpoint, client tags, task offsets and
its current and target tasks. v1 adds the assignor's name and, when asked for, the topology
description: with no topology description plugin (Kafka 4.4's default) there is none, and a
group answered without an error says so with status 1 (NOT_STORED), as Kafka's
``StreamsGroupTopologyDescriptionManager`` does; 0 (NOT_REQUESTED) when not asked.

A group that does not exist, or is of another type, is GROUP_ID_NOT_FOUND ("Group X is not a
streams group." for the latter). Each group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED).
Authorized operations, when asked, are those of each group answered without an error.
"""

from __future__ import annotations

from typing import Any

from wireserver.apis import HandlerResult, handles
from wireserver.apis.streams_group_heartbeat import task_ids
from wireserver.context import RequestContext
from wireserver.groups.api import NOT_REQUESTED, authorized_operations, not_found_message
from wireserver.groups.streams_group import StreamsGroup, TopicInfo
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 89
DESCRIPTION_NOT_REQUESTED, DESCRIPTION_NOT_STORED = 0, 1


def _topology(cls: Any, group: StreamsGroup) -> Any:
    if group.topology is None:
        return None
    s_cls = cls.Subtopology
    partitions = group.configured.partitions

    def infos(topics: list[TopicInfo], tasks: int | None) -> list[Any]:
        return [
            s_cls.TopicInfo(
                name=t.name,
                partitions=tasks if tasks is not None else t.partitions,
                replication_factor=t.replication_factor,
                topic_configs=[
                    s_cls.TopicInfo.KeyValue(key=k, value=v) for k, v in sorted(t.configs.items())
                ],
            )
            for t in topics
        ]

    return cls(
        epoch=group.topology.epoch,
        subtopologies=[
            s_cls(
                subtopology_id=s.subtopology_id,
                source_topics=s.source_topics,
                repartition_sink_topics=s.repartition_sink_topics,
                state_changelog_topics=infos(
                    s.state_changelog_topics, partitions.get(s.subtopology_id, 0)
                ),
                repartition_source_topics=infos(s.repartition_source_topics, None),
            )
            for s in group.topology.subtopologies
        ],
    )


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    coordinator = ctx.services.groups
    group_class = ctx.request.spec.response_class.DescribedGroup
    member_class = group_class.Member
    a_cls = member_class.Assignment
    ready_error = coordinator.ensure_ready()
    with_description = version >= 1 and body.include_topology_description

    def assignment(active, standby, warmup) -> Any:
        return a_cls(
            active_tasks=task_ids(a_cls.TaskIds, active),
            standby_tasks=task_ids(a_cls.TaskIds, standby),
            warmup_tasks=task_ids(a_cls.TaskIds, warmup),
        )

    def offsets(cls: Any, found: list[tuple[str, int, int]]) -> list[Any]:
        return [cls(subtopology_id=s, partition=p, offset=o) for s, p, o in found]

    def described(group_id: str, error: ErrorCode | None, message: str | None, **fields) -> Any:
        base: dict[str, Any] = dict(
            error_code=error or ErrorCode.NONE,
            error_message=message,
            group_id=group_id,
            group_state="",
            group_epoch=0,
            assignment_epoch=0,
            topology=None,
            members=[],
            authorized_operations=NOT_REQUESTED,
            topology_description=None,
            topology_description_status=DESCRIPTION_NOT_REQUESTED,
            assignor_name=None,
        )
        base.update(fields)
        return group_class(**base)

    out = []
    for group_id in body.group_ids:
        group = coordinator.streams.groups.get(group_id)
        error = (
            ready_error
            or coordinator.ensure_ready(group_id)
            or checks.describe_group(ctx, group_id)
        )
        if error is not None:
            out.append(described(group_id, error, None))
            continue
        if group is None:
            message = not_found_message(coordinator, group_id, "streams")
            out.append(described(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message))
            continue
        members = []
        for m in group.members.values():
            target = group.target.get(m.member_id)
            endpoint = m.user_endpoint
            members.append(
                member_class(
                    **m.described(),
                    topology_epoch=m.topology_epoch,
                    process_id=m.process_id,
                    user_endpoint=member_class.Endpoint(host=endpoint[0], port=endpoint[1])
                    if endpoint is not None
                    else None,
                    client_tags=[
                        member_class.KeyValue(key=k, value=v)
                        for k, v in sorted(m.client_tags.items())
                    ],
                    task_offsets=offsets(member_class.TaskOffset, m.task_offsets),
                    task_end_offsets=offsets(member_class.TaskOffset, m.task_end_offsets),
                    assignment=assignment(*m.assignment()),
                    target_assignment=assignment(target.active, target.standby, target.warmup)
                    if target is not None
                    else assignment({}, {}, {}),
                    is_classic=False,
                )
            )
        out.append(
            described(
                group_id,
                None,
                None,
                **group.described(),
                topology=_topology(group_class.Topology, group),
                members=members,
                authorized_operations=authorized_operations(ctx, group_id),
                topology_description_status=DESCRIPTION_NOT_STORED
                if with_description
                else DESCRIPTION_NOT_REQUESTED,
                assignor_name="sticky",
            )
        )
    return ctx.response(throttle_time_ms=0, groups=out)
