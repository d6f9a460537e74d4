"""The Streams group protocol (KIP-1071) over real sockets: StreamsGroupHeartbeat's state
machine (joins, the internal topics the broker creates, tasks handed over only once revoked,
epochs, fencing, leaving, statuses), StreamsGroupDescribe, StreamsGroupTopologyDescription-
Update, and the streams group in ListGroups, OffsetCommit and DeleteGroups."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.admin.groups import DeleteGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer.group import OffsetCommitRequest

from wireserver.protocol.messages_streams import (
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
)
from wireserver.testing import EmbeddedBroker, KafkaWire

H = StreamsGroupHeartbeatRequest
NONE, UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION, INVALID_REQUEST = 0, 25, 35, 42
GROUP_ID_NOT_FOUND, FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH, NON_EMPTY_GROUP = 69, 110, 113, 68
MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS = 1, 3
PARTITIONS = 4


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker() as instance:
        yield instance


@pytest.fixture
def wire(broker):
    with KafkaWire(broker.bootstrap_servers) as connection:
        yield connection


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def topology(app: str, source: str, epoch: int = 0):
    """Word count's: subtopology 0 reads ``source`` into a repartition topic, subtopology 1
    counts it in a store with a changelog."""
    t = H.Topology
    s = t.Subtopology
    info = s.TopicInfo
    repartition = f"{app}-counts-repartition"
    return t(
        epoch=epoch,
        subtopologies=[
            s(
                subtopology_id="0",
                source_topics=[source],
                source_topic_regex=[],
                state_changelog_topics=[],
                repartition_sink_topics=[repartition],
                repartition_source_topics=[],
                copartition_groups=[],
            ),
            s(
                subtopology_id="1",
                source_topics=[],
                source_topic_regex=[],
                state_changelog_topics=[
                    info(
                        name=f"{app}-counts-changelog",
                        partitions=0,
                        replication_factor=0,
                        topic_configs=[info.KeyValue(key="cleanup.policy", value="compact")],
                    )
                ],
                repartition_sink_topics=[],
                repartition_source_topics=[
                    info(
                        name=repartition,
                        partitions=0,
                        replication_factor=0,
                        topic_configs=[  # what Kafka Streams 4.4 asks for
                            info.KeyValue(key=k, value=v)
                            for k, v in (
                                ("cleanup.policy", "delete"),
                                ("segment.bytes", "52428800"),
                                ("retention.ms", "-1"),
                                ("message.timestamp.type", "CreateTime"),
                            )
                        ],
                    )
                ],
                copartition_groups=[],
            ),
        ],
    )


def streams_heartbeat(v: int, group: str, member: str, epoch: int, **extra: Any) -> Any:
    fields: dict[str, Any] = dict(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        endpoint_information_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30000 if epoch == 0 else -1,
        topology=None,
        active_tasks=None,
        standby_tasks=None,
        warmup_tasks=None,
        process_id="compat-raw-process" if epoch == 0 else None,
        user_endpoint=None,
        client_tags=None,
        task_offsets=None,
        task_end_offsets=None,
        shutdown_application=False,
    )
    fields.update(extra)
    return H(version=v, **fields)


class Member:
    """A well-behaved Streams client: owns what it is given, gives up what it is not."""

    def __init__(self, wire: KafkaWire, group: str, source: str, process: str | None = None):
        self.wire = wire
        self.group = group
        self.source = source
        self.member_id = str(uuid.uuid4())
        self.process = process or str(uuid.uuid4())
        self.epoch = 0
        self.active: dict[str, list[int]] = {}
        self.last = None

    def heartbeat(self, epoch: int | None = None, **extra):
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == 0
        t = H.TaskIds
        fields = dict(
            topology=topology(self.group, self.source) if joining else None,
            active_tasks=None
            if joining
            else [t(subtopology_id=s, partitions=ps) for s, ps in sorted(self.active.items())],
            standby_tasks=None if joining else [],
            warmup_tasks=None if joining else [],
            process_id=self.process if joining else None,
        )
        fields.update(extra)
        request = streams_heartbeat(1, self.group, self.member_id, epoch, **fields)
        response = self.wire.request(request)
        self.last = response
        if response.error_code == NONE and response.member_epoch >= 0:
            self.epoch = response.member_epoch
            if response.active_tasks is not None:
                self.active = {
                    t.subtopology_id: sorted(t.partitions) for t in response.active_tasks
                }
        return response

    def tasks(self) -> set[tuple[str, int]]:
        return {(s, p) for s, ps in self.active.items() for p in ps}


def statuses(response) -> list[int]:
    return [s.status_code for s in response.status or []]


def describe(wire: KafkaWire, *groups: str, version: int = 1, description: bool = False):
    return wire.request(
        StreamsGroupDescribeRequest(
            version=version,
            group_ids=list(groups),
            include_authorized_operations=False,
            **({"include_topology_description": description} if version >= 1 else {}),
        )
    ).groups


ALL_TASKS = {(s, p) for s in "01" for p in range(PARTITIONS)}


def test_first_member_gets_every_task_and_the_broker_creates_the_internal_topics(wire):
    group, source = _unique("app"), _unique("words")
    wire.create_topic(source, PARTITIONS)
    member = Member(wire, group, source)
    first = member.heartbeat()
    assert (first.error_code, first.member_id, first.member_epoch) == (NONE, member.member_id, 1)
    assert first.heartbeat_interval_ms == 5000
    assert first.acceptable_recovery_lag == 10000
    # The broker creates the repartition and changelog topics; this answer still says so.
    assert statuses(first) == [MISSING_INTERNAL_TOPICS]
    assert member.tasks() == set()
    topics = wire.topics()
    assert {f"{group}-counts-repartition", f"{group}-counts-changelog"} <= set(topics)
    [described] = describe(wire, group)
    assert (described.error_code, described.group_state) == (NONE, "NotReady")
    second = member.heartbeat()
    assert (statuses(second), second.member_epoch) == ([], 2)
    assert member.tasks() == ALL_TASKS
    [described] = describe(wire, group)
    assert (described.group_state, described.group_epoch, described.assignment_epoch) == (
        "Stable",
        2,
        2,
    )
    [m] = described.members
    assert (m.member_id, m.member_epoch, m.process_id, m.is_classic) == (
        member.member_id,
        2,
        member.process,
        False,
    )
    assert {(t.subtopology_id, p) for t in m.assignment.active_tasks for p in t.partitions} == (
        ALL_TASKS
    )
    [_, counting] = described.topology.subtopologies
    [changelog] = counting.state_changelog_topics
    assert (changelog.name, changelog.partitions) == (f"{group}-counts-changelog", PARTITIONS)
    assert described.assignor_name == "sticky"


def test_a_missing_source_topic_leaves_the_group_not_ready(wire):
    group = _unique("app")
    member = Member(wire, group, _unique("absent"))
    response = member.heartbeat()
    assert response.error_code == NONE
    assert statuses(response) == [MISSING_SOURCE_TOPICS]
    assert member.tasks() == set()
    [described] = describe(wire, group)
    assert described.group_state == "NotReady"
    wire.create_topic(member.source, 2)
    assert statuses(member.heartbeat()) == [MISSING_INTERNAL_TOPICS]
    assert statuses(member.heartbeat()) == []
    assert member.tasks() == {(s, p) for s in "01" for p in range(2)}


def test_tasks_move_to_a_new_member_only_once_revoked_and_back_when_it_leaves(wire):
    group, source = _unique("app"), _unique("words")
    wire.create_topic(source, PARTITIONS)
    a = Member(wire, group, source)
    a.heartbeat()
    a.heartbeat()
    assert (a.epoch, a.tasks()) == (2, ALL_TASKS)
    b = Member(wire, group, source)
    joined = b.heartbeat()
    assert joined.member_epoch == 3
    assert b.tasks() == set()  # every task is still a's
    a_revoking = a.heartbeat()
    assert a_revoking.member_epoch == 2  # revokes first, keeps its epoch
    assert len(a.tasks()) == 4
    a_done = a.heartbeat()  # reports the revoked tasks gone
    assert a_done.member_epoch == 3
    b.heartbeat()
    assert b.tasks() == ALL_TASKS - a.tasks()
    assert len(b.tasks()) == 4
    [described] = describe(wire, group)
    assert described.group_state == "Stable"
    left = b.heartbeat(epoch=-1)
    assert (left.error_code, left.member_epoch) == (NONE, -1)
    a.heartbeat()
    assert a.tasks() == ALL_TASKS
    assert a.epoch == 4


def test_fencing_and_invalid_requests(wire):
    group, source = _unique("app"), _unique("words")
    wire.create_topic(source, 1)
    member = Member(wire, group, source)
    member.heartbeat()
    assert member.heartbeat(epoch=5).error_code == FENCED_MEMBER_EPOCH
    stranger = Member(wire, group, source)
    assert stranger.heartbeat(epoch=1).error_code == UNKNOWN_MEMBER_ID
    assert Member(wire, _unique("none"), source).heartbeat(epoch=1).error_code == (
        GROUP_ID_NOT_FOUND
    )
    empty_id = Member(wire, group, source)
    empty_id.member_id = ""
    assert empty_id.heartbeat().error_code == INVALID_REQUEST
    no_topology = Member(wire, group, source).heartbeat(topology=None)
    assert (no_topology.error_code, no_topology.error_message) == (
        INVALID_REQUEST,
        "Topology must be non-null when (re-)joining.",
    )
    late_topology = member.heartbeat(topology=topology(group, source))
    assert late_topology.error_code == INVALID_REQUEST


def test_describe_list_commit_and_delete(wire):
    group, source = _unique("app"), _unique("words")
    wire.create_topic(source, 1)
    [missing] = describe(wire, group)
    assert (missing.error_code, missing.error_message) == (
        GROUP_ID_NOT_FOUND,
        f"Group {group} not found.",
    )
    member = Member(wire, group, source)
    member.heartbeat()
    listed = wire.request(ListGroupsRequest(version=5, states_filter=[], types_filter=["streams"]))
    mine = [g for g in listed.groups if g.group_id == group]
    assert [(g.protocol_type, g.group_type) for g in mine] == [("streams", "streams")]

    def commit(epoch: int) -> int:
        t = OffsetCommitRequest.OffsetCommitRequestTopic
        p = t.OffsetCommitRequestPartition
        response = wire.request(
            OffsetCommitRequest(
                version=9,
                group_id=group,
                generation_id_or_member_epoch=epoch,
                member_id=member.member_id,
                group_instance_id=None,
                topics=[
                    t(
                        name=source,
                        partitions=[
                            p(
                                partition_index=0,
                                committed_offset=0,
                                committed_leader_epoch=-1,
                                committed_metadata="",
                            )
                        ],
                    )
                ],
            )
        )
        return response.topics[0].partitions[0].error_code

    assert commit(member.epoch + 1) == STALE_MEMBER_EPOCH
    assert commit(member.epoch) == NONE
    deleted = wire.request(DeleteGroupsRequest(version=2, groups_names=[group]))
    assert deleted.results[0].error_code == NON_EMPTY_GROUP
    member.heartbeat(epoch=-1)
    [described] = describe(wire, group)
    assert (described.group_state, described.members) == ("Empty", [])
    deleted = wire.request(DeleteGroupsRequest(version=2, groups_names=[group]))
    assert deleted.results[0].error_code == NONE
    [gone] = describe(wire, group)
    assert gone.error_code == GROUP_ID_NOT_FOUND


def test_without_a_description_plugin_no_topology_description_is_taken_or_shown(wire):
    group, source = _unique("app"), _unique("words")
    wire.create_topic(source, 1)
    member = Member(wire, group, source)
    member.heartbeat()
    assert member.last.topology_description_required is False
    u = StreamsGroupTopologyDescriptionUpdateRequest
    d = u.TopologyDescription
    response = wire.request(
        u(
            version=0,
            group_id=group,
            member_id=member.member_id,
            topology_epoch=0,
            topology_description=d(subtopologies=[], global_stores=[]),
        )
    )
    assert (response.error_code, response.error_message) == (
        UNSUPPORTED_VERSION,
        "The broker has no streams group topology description plugin configured.",
    )
    [asked] = describe(wire, group, description=True)
    assert (asked.topology_description, asked.topology_description_status) == (None, 1)
    [not_asked] = describe(wire, group)
    assert not_asked.topology_description_status == 0
    [missing] = describe(wire, _unique("absent"), description=True)
    assert missing.topology_description_status == 0
    [plain] = describe(wire, group, version=0)
    assert (plain.group_id, plain.group_state) == (group, "NotReady")


def test_the_group_and_its_offsets_survive_a_restart(tmp_path):
    source = _unique("words")
    with EmbeddedBroker(data_dir=tmp_path) as broker, KafkaWire(broker.bootstrap_servers) as w:
        w.create_topic(source, 1)
        member = Member(w, "app", source)
        member.heartbeat()
        member.heartbeat()
        assert member.epoch == 2
    with EmbeddedBroker(data_dir=tmp_path) as broker, KafkaWire(broker.bootstrap_servers) as w:
        [described] = describe(w, "app")
        assert (described.group_state, described.group_epoch, described.members) == (
            "Empty",
            2,
            [],
        )
        listed = w.request(ListGroupsRequest(version=5, states_filter=[], types_filter=[]))
        assert [(g.group_id, g.group_type) for g in listed.groups if g.group_id == "app"] == [
            ("app", "streams")
        ]
        member.wire = w
        assert member.heartbeat().error_code == UNKNOWN_MEMBER_ID
        member.epoch = 0
        assert member.heartbeat().member_epoch == 3


def test_a_broker_without_the_streams_protocol_refuses_the_heartbeat():
    overrides = {"group.coordinator.rebalance.protocols": "classic,consumer"}
    with EmbeddedBroker(overrides=overrides) as broker, KafkaWire(broker.bootstrap_servers) as w:
        assert Member(w, "app", "words").heartbeat().error_code == UNSUPPORTED_VERSION


def test_the_heartbeat_is_refused_once_streams_version_is_disabled():
    """As Kafka's ``isStreamsGroupProtocolEnabled``: the protocol needs ``streams.version`` 1+
    finalized too; ``kafka-features disable --feature streams.version`` turns it off."""
    from tests.features.requests import SAFE_DOWNGRADE, update

    with EmbeddedBroker() as broker, KafkaWire(broker.bootstrap_servers) as w:
        assert Member(w, "app", "words").heartbeat().error_code != UNSUPPORTED_VERSION
        answer = update(broker.bootstrap_servers, ("streams.version", 0, SAFE_DOWNGRADE))
        assert answer.error_code == 0
        assert Member(w, "app2", "words").heartbeat().error_code == UNSUPPORTED_VERSION


def test_standby_replicas_go_to_the_other_process():
    overrides = {"group.streams.num.standby.replicas": "1"}
    with EmbeddedBroker(overrides=overrides) as broker, KafkaWire(broker.bootstrap_servers) as w:
        source = _unique("words")
        w.create_topic(source, 2)
        a, b = Member(w, "app", source), Member(w, "app", source)
        for member in (a, a, b, a, a, b, b):
            member.heartbeat()
        [described] = describe(w, "app")
        assert described.group_state == "Stable"
        tasks = {(s, p) for s in "01" for p in range(2)}
        for m in described.members:
            active = {
                (t.subtopology_id, p) for t in m.assignment.active_tasks for p in t.partitions
            }
            standby = {
                (t.subtopology_id, p) for t in m.assignment.standby_tasks for p in t.partitions
            }
            assert len(active) == 2 and standby == tasks - active


def test_a_static_member_back_under_a_new_id_keeps_its_tasks(wire):
    group, source = _unique("app"), _unique("words")
    wire.create_topic(source, 2)
    member = Member(wire, group, source)
    member.heartbeat(instance_id="i-1")
    member.heartbeat()
    assert (member.epoch, len(member.tasks())) == (2, 4)
    left = member.heartbeat(epoch=-2, instance_id="i-1")
    assert (left.error_code, left.member_epoch) == (NONE, -2)
    other = Member(wire, group, source, process=member.process)  # the same instance, restarted
    taken = other.heartbeat(instance_id="i-1")
    assert (taken.error_code, taken.member_epoch, other.tasks()) == (NONE, 2, member.tasks())
    [described] = describe(wire, group)
    assert [m.member_id for m in described.members] == [other.member_id]
    assert described.group_epoch == 2
    in_use = Member(wire, group, source).heartbeat(instance_id="i-1")
    assert in_use.error_code == 111  # UNRELEASED_INSTANCE_ID
