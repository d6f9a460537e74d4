"""Message classes of the Streams group protocol (KIP-1071), which kafka-python lacks.

Transcribed field by field from Kafka 4.4.0's message definitions, as
``protocol.messages_extra`` does for KIP-848 (and with its helpers); Kafka's ``commonStructs``
are written out in place (``_InlineSchema`` does not resolve them).

- StreamsGroupHeartbeat (key 88) v0-1. v1 is the same request; its response adds
  ``AcceptableRecoveryLag`` (int64; v0 has the int32 ``AcceptableRecoveryLagLegacy``) and
  ``TopologyDescriptionRequired`` (KIP-1331).
- StreamsGroupDescribe (key 89) v0-1. v1 adds ``IncludeTopologyDescription`` to the request and
  ``TopologyDescription``, ``TopologyDescriptionStatus`` and ``AssignorName`` to each group.
- StreamsGroupTopologyDescriptionUpdate (key 93) v0 (KIP-1331): a member hands the broker its
  topology's description.
"""

from __future__ import annotations

from wireserver.protocol.messages_extra import (
    _define,
    _describe_request_fields,
    _described_group_header,
    _field,
    _nullable_string,
)


def _nullable(name: str, type_: str, versions: str = "0+", **extra: object) -> dict:
    return _field(name, type_, versions, nullableVersions=versions, default="null", **extra)


def _key_values(name: str, **extra: object) -> dict:
    return _field(
        name, "[]KeyValue", fields=[_field("Key", "string"), _field("Value", "string")], **extra
    )


def _topic_infos(name: str) -> dict:
    return _field(
        name,
        "[]TopicInfo",
        fields=[
            _field("Name", "string", entityType="topicName"),
            _field("Partitions", "int32"),
            _field("ReplicationFactor", "int16"),
            _key_values("TopicConfigs"),
        ],
    )


def _endpoint(name: str, nullable: bool) -> dict:
    fields = [_field("Host", "string"), _field("Port", "uint16")]
    if nullable:
        return _nullable(name, "Endpoint", fields=fields)
    return _field(name, "Endpoint", fields=fields)


def _task_ids(name: str, nullable: bool) -> dict:
    fields = [_field("SubtopologyId", "string"), _field("Partitions", "[]int32")]
    if nullable:
        return _nullable(name, "[]TaskIds", fields=fields)
    return _field(name, "[]TaskIds", fields=fields)


def _task_offsets(name: str, nullable: bool) -> dict:
    fields = [
        _field("SubtopologyId", "string"),
        _field("Partition", "int32"),
        _field("Offset", "int64"),
    ]
    if nullable:
        return _nullable(name, "[]TaskOffset", fields=fields)
    return _field(name, "[]TaskOffset", fields=fields)


def _description_node(name: str, versions: str, type_: str = "TopologyDescriptionNode") -> dict:
    return _field(
        name,
        type_,
        versions,
        fields=[
            _field("Name", "string", versions),
            _field("NodeType", "int8", versions),
            _field("SourceTopics", "[]string", versions, entityType="topicName"),
            _nullable("SinkTopic", "string", versions, entityType="topicName"),
            _field("Stores", "[]string", versions),
            _field("Successors", "[]string", versions),
        ],
    )


def _topology_description_fields(versions: str) -> list[dict]:
    return [
        _field(
            "Subtopologies",
            "[]TopologyDescriptionSubtopology",
            versions,
            fields=[
                _field("SubtopologyId", "string", versions),
                _description_node("Nodes", versions, "[]TopologyDescriptionNode"),
            ],
        ),
        _field(
            "GlobalStores",
            "[]TopologyDescriptionGlobalStore",
            versions,
            fields=[
                _description_node("Source", versions),
                _description_node("Processor", versions),
            ],
        ),
    ]


STREAMS_GROUP_HEARTBEAT_REQUEST = {
    "apiKey": 88,
    "type": "request",
    "name": "StreamsGroupHeartbeatRequest",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        _field("GroupId", "string", entityType="groupId"),
        _field("MemberId", "string"),
        _field("MemberEpoch", "int32"),
        _field("EndpointInformationEpoch", "int32"),
        _nullable_string("InstanceId"),
        _nullable_string("RackId"),
        _field("RebalanceTimeoutMs", "int32", default=-1),
        _nullable(
            "Topology",
            "Topology",
            fields=[
                _field("Epoch", "int32"),
                _field(
                    "Subtopologies",
                    "[]Subtopology",
                    fields=[
                        _field("SubtopologyId", "string"),
                        _field("SourceTopics", "[]string", entityType="topicName"),
                        _field("SourceTopicRegex", "[]string"),
                        _topic_infos("StateChangelogTopics"),
                        _field("RepartitionSinkTopics", "[]string", entityType="topicName"),
                        _topic_infos("RepartitionSourceTopics"),
                        _field(
                            "CopartitionGroups",
                            "[]CopartitionGroup",
                            fields=[
                                _field("SourceTopics", "[]int16"),
                                _field("SourceTopicRegex", "[]int16"),
                                _field("RepartitionSourceTopics", "[]int16"),
                            ],
                        ),
                    ],
                ),
            ],
        ),
        _task_ids("ActiveTasks", nullable=True),
        _task_ids("StandbyTasks", nullable=True),
        _task_ids("WarmupTasks", nullable=True),
        _nullable_string("ProcessId"),
        _endpoint("UserEndpoint", nullable=True),
        _key_values("ClientTags", nullableVersions="0+", default="null"),
        _task_offsets("TaskOffsets", nullable=True),
        _task_offsets("TaskEndOffsets", nullable=True),
        _field("ShutdownApplication", "bool", default=False),
    ],
}

_TOPIC_PARTITIONS = [
    _field("Topic", "string", entityType="topicName"),
    _field("Partitions", "[]int32"),
]

STREAMS_GROUP_HEARTBEAT_RESPONSE = {
    "apiKey": 88,
    "type": "response",
    "name": "StreamsGroupHeartbeatResponse",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _field("ErrorCode", "int16"),
        _nullable_string("ErrorMessage"),
        _field("MemberId", "string"),
        _field("MemberEpoch", "int32"),
        _field("HeartbeatIntervalMs", "int32"),
        _field("AcceptableRecoveryLagLegacy", "int32", "0"),
        _field("TaskOffsetIntervalMs", "int32"),
        _field("AcceptableRecoveryLag", "int64", "1+", default="-1", ignorable=True),
        _nullable(
            "Status",
            "[]Status",
            fields=[_field("StatusCode", "int8"), _field("StatusDetail", "string")],
        ),
        _task_ids("ActiveTasks", nullable=True),
        _task_ids("StandbyTasks", nullable=True),
        _task_ids("WarmupTasks", nullable=True),
        _field("TopologyDescriptionRequired", "bool", "1+", default="false"),
        _field("EndpointInformationEpoch", "int32"),
        _nullable(
            "PartitionsByUserEndpoint",
            "[]EndpointToPartitions",
            fields=[
                _endpoint("UserEndpoint", nullable=False),
                _field("ActivePartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
                _field("StandbyPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
            ],
        ),
    ],
}

STREAMS_GROUP_DESCRIBE_REQUEST = {
    "apiKey": 89,
    "type": "request",
    "name": "StreamsGroupDescribeRequest",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        *_describe_request_fields(),
        _field("IncludeTopologyDescription", "bool", "1+", default="false"),
    ],
}


def _assignment(name: str) -> dict:
    return _field(
        name,
        "Assignment",
        fields=[
            _task_ids("ActiveTasks", nullable=False),
            _task_ids("StandbyTasks", nullable=False),
            _task_ids("WarmupTasks", nullable=False),
        ],
    )


STREAMS_GROUP_DESCRIBE_RESPONSE = {
    "apiKey": 89,
    "type": "response",
    "name": "StreamsGroupDescribeResponse",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _field(
            "Groups",
            "[]DescribedGroup",
            fields=[
                *_described_group_header(),
                _nullable(
                    "Topology",
                    "Topology",
                    fields=[
                        _field("Epoch", "int32"),
                        _nullable(
                            "Subtopologies",
                            "[]Subtopology",
                            fields=[
                                _field("SubtopologyId", "string"),
                                _field("SourceTopics", "[]string", entityType="topicName"),
                                _field("RepartitionSinkTopics", "[]string", entityType="topicName"),
                                _topic_infos("StateChangelogTopics"),
                                _topic_infos("RepartitionSourceTopics"),
                            ],
                        ),
                    ],
                ),
                _field(
                    "Members",
                    "[]Member",
                    fields=[
                        _field("MemberId", "string"),
                        _field("MemberEpoch", "int32"),
                        _nullable_string("InstanceId"),
                        _nullable_string("RackId"),
                        _field("ClientId", "string"),
                        _field("ClientHost", "string"),
                        _field("TopologyEpoch", "int32"),
                        _field("ProcessId", "string"),
                        _endpoint("UserEndpoint", nullable=True),
                        _key_values("ClientTags"),
                        _task_offsets("TaskOffsets", nullable=False),
                        _task_offsets("TaskEndOffsets", nullable=False),
                        _assignment("Assignment"),
                        _assignment("TargetAssignment"),
                        _field("IsClassic", "bool"),
                    ],
                ),
                _field("AuthorizedOperations", "int32", default="-2147483648"),
                _nullable(
                    "TopologyDescription",
                    "TopologyDescription",
                    "1+",
                    fields=_topology_description_fields("1+"),
                ),
                _field("TopologyDescriptionStatus", "int8", "1+", default="0"),
                _nullable("AssignorName", "string", "1+", ignorable=True),
            ],
        ),
    ],
}

STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_REQUEST = {
    "apiKey": 93,
    "type": "request",
    "name": "StreamsGroupTopologyDescriptionUpdateRequest",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        _field("GroupId", "string", entityType="groupId"),
        _field("MemberId", "string"),
        _field("TopologyEpoch", "int32"),
        _field(
            "TopologyDescription",
            "TopologyDescription",
            fields=_topology_description_fields("0+"),
        ),
    ],
}

STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_RESPONSE = {
    "apiKey": 93,
    "type": "response",
    "name": "StreamsGroupTopologyDescriptionUpdateResponse",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _field("ErrorCode", "int16"),
        _nullable_string("ErrorMessage"),
    ],
}

StreamsGroupHeartbeatRequest = _define(STREAMS_GROUP_HEARTBEAT_REQUEST)
StreamsGroupHeartbeatResponse = _define(STREAMS_GROUP_HEARTBEAT_RESPONSE)
StreamsGroupDescribeRequest = _define(STREAMS_GROUP_DESCRIBE_REQUEST)
StreamsGroupDescribeResponse = _define(STREAMS_GROUP_DESCRIBE_RESPONSE)
StreamsGroupTopologyDescriptionUpdateRequest = _define(
    STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_REQUEST
)
StreamsGroupTopologyDescriptionUpdateResponse = _define(
    STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_RESPONSE
)
