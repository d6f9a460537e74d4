"""Message classes of share groups (KIP-932), which kafka-python lacks.

Transcribed field by field from Kafka 4.4.0's message definitions, as
``protocol.messages_extra`` does for KIP-848 (and with its helpers); Kafka's ``commonStructs``
are written out in place (``_InlineSchema`` does not resolve them); what is the same as
ConsumerGroupHeartbeat's and ConsumerGroupDescribe's comes from their helpers. Version 0 of each was
Kafka 4.0's early access and is gone since 4.1; v1 is the first stable version.

- ShareGroupHeartbeat (key 76) v1.
- ShareGroupDescribe (key 77) v1.
- ShareFetch (key 78) v1-2. v2 (KIP-1206, KIP-1222) adds ``ShareAcquireMode`` and
  ``IsRenewAck`` to the request.
- ShareAcknowledge (key 79) v1-2. v2 adds ``IsRenewAck`` to the request and
  ``AcquisitionLockTimeoutMs`` to the response.
- DescribeShareGroupOffsets (key 90) v0-1. v1 adds each partition's ``Lag``.
- AlterShareGroupOffsets (key 91) v0 and DeleteShareGroupOffsets (key 92) v0.
"""

from __future__ import annotations

from wireserver.protocol.messages_extra import (
    _assignment,
    _define,
    _describe_request_fields,
    _described_groups,
    _field,
    _heartbeat_response_fields,
    _message,
    _nullable_string,
    _subscribed_topic_names,
)


def _error_fields() -> list[dict]:
    return [_field("ErrorCode", "int16"), _nullable_string("ErrorMessage")]


def _top_level_error(*fields: dict) -> list[dict]:
    """ThrottleTimeMs and the request's error, then ``fields``."""
    return [_field("ThrottleTimeMs", "int32"), *_error_fields(), *fields]


def _topic_id_partitions(name: str, type_: str) -> dict:
    return _field(name, type_, fields=[_field("TopicId", "uuid"), _field("Partitions", "[]int32")])


def _by_topic_id(name: str, topic_type: str, partition_type: str, partition_fields: list) -> dict:
    """The topics of a share fetch or acknowledgement, by topic id, then partition."""
    return _field(
        name,
        topic_type,
        fields=[
            _field("TopicId", "uuid", mapKey=True),
            _field("Partitions", partition_type, fields=partition_fields),
        ],
    )


def _acknowledgement_batches() -> dict:
    return _field(
        "AcknowledgementBatches",
        "[]AcknowledgementBatch",
        fields=[
            _field("FirstOffset", "int64"),
            _field("LastOffset", "int64"),
            _field("AcknowledgeTypes", "[]int8"),
        ],
    )


def _current_leader() -> dict:
    return _field(
        "CurrentLeader",
        "LeaderIdAndEpoch",
        fields=[_field("LeaderId", "int32"), _field("LeaderEpoch", "int32")],
    )


def _node_endpoints() -> dict:
    return _field(
        "NodeEndpoints",
        "[]NodeEndpoint",
        fields=[
            _field("NodeId", "int32", mapKey=True, entityType="brokerId"),
            _field("Host", "string"),
            _field("Port", "int32"),
            _nullable_string("Rack"),
        ],
    )


def _session_fields() -> list[dict]:
    """GroupId, MemberId and ShareSessionEpoch: how ShareFetch and ShareAcknowledge begin."""
    return [
        _field("GroupId", "string", nullableVersions="0+", default="null", entityType="groupId"),
        _field("MemberId", "string", nullableVersions="0+"),
        _field("ShareSessionEpoch", "int32"),
    ]


SHARE_GROUP_HEARTBEAT_REQUEST = _message(
    76,
    "request",
    "ShareGroupHeartbeat",
    "1",
    [
        _field("GroupId", "string", entityType="groupId"),
        _field("MemberId", "string"),
        _field("MemberEpoch", "int32"),
        _nullable_string("RackId"),
        _subscribed_topic_names(),
    ],
)

SHARE_GROUP_HEARTBEAT_RESPONSE = _message(
    76, "response", "ShareGroupHeartbeat", "1", _heartbeat_response_fields()
)

SHARE_GROUP_DESCRIBE_REQUEST = _message(
    77, "request", "ShareGroupDescribe", "1", _describe_request_fields()
)

SHARE_GROUP_DESCRIBE_RESPONSE = _message(
    77,
    "response",
    "ShareGroupDescribe",
    "1",
    [
        _field("ThrottleTimeMs", "int32"),
        _described_groups(
            [
                _field("MemberId", "string"),
                _nullable_string("RackId"),
                _field("MemberEpoch", "int32"),
                _field("ClientId", "string"),
                _field("ClientHost", "string"),
                _field("SubscribedTopicNames", "[]string", entityType="topicName"),
                _assignment("Assignment"),
            ]
        ),
    ],
)

SHARE_FETCH_REQUEST = _message(
    78,
    "request",
    "ShareFetch",
    "1-2",
    [
        *_session_fields(),
        _field("MaxWaitMs", "int32"),
        _field("MinBytes", "int32"),
        _field("MaxBytes", "int32", default="0x7fffffff"),
        _field("MaxRecords", "int32", "1+"),
        _field("BatchSize", "int32", "1+"),
        _field("ShareAcquireMode", "int8", "2+", default="0", ignorable=True),
        _field("IsRenewAck", "bool", "2+", default="false"),
        _by_topic_id(
            "Topics",
            "[]FetchTopic",
            "[]FetchPartition",
            [
                _field("PartitionIndex", "int32", mapKey=True),
                _field("PartitionMaxBytes", "int32", "0"),
                _acknowledgement_batches(),
            ],
        ),
        _topic_id_partitions("ForgottenTopicsData", "[]ForgottenTopic"),
    ],
)

SHARE_FETCH_RESPONSE = _message(
    78,
    "response",
    "ShareFetch",
    "1-2",
    _top_level_error(
        _field("AcquisitionLockTimeoutMs", "int32", "1+"),
        _by_topic_id(
            "Responses",
            "[]ShareFetchableTopicResponse",
            "[]PartitionData",
            [
                _field("PartitionIndex", "int32"),
                *_error_fields(),
                _field("AcknowledgeErrorCode", "int16"),
                _nullable_string("AcknowledgeErrorMessage"),
                _current_leader(),
                _field("Records", "records", nullableVersions="0"),
                _field(
                    "AcquiredRecords",
                    "[]AcquiredRecords",
                    fields=[
                        _field("FirstOffset", "int64"),
                        _field("LastOffset", "int64"),
                        _field("DeliveryCount", "int16"),
                    ],
                ),
            ],
        ),
        _node_endpoints(),
    ),
)

SHARE_ACKNOWLEDGE_REQUEST = _message(
    79,
    "request",
    "ShareAcknowledge",
    "1-2",
    [
        *_session_fields(),
        _field("IsRenewAck", "bool", "2+", default="false"),
        _by_topic_id(
            "Topics",
            "[]AcknowledgeTopic",
            "[]AcknowledgePartition",
            [_field("PartitionIndex", "int32", mapKey=True), _acknowledgement_batches()],
        ),
    ],
)

SHARE_ACKNOWLEDGE_RESPONSE = _message(
    79,
    "response",
    "ShareAcknowledge",
    "1-2",
    _top_level_error(
        _field("AcquisitionLockTimeoutMs", "int32", "2+", ignorable=True),
        _by_topic_id(
            "Responses",
            "[]ShareAcknowledgeTopicResponse",
            "[]PartitionData",
            [_field("PartitionIndex", "int32"), *_error_fields(), _current_leader()],
        ),
        _node_endpoints(),
    ),
)

DESCRIBE_SHARE_GROUP_OFFSETS_REQUEST = _message(
    90,
    "request",
    "DescribeShareGroupOffsets",
    "0-1",
    [
        _field(
            "Groups",
            "[]DescribeShareGroupOffsetsRequestGroup",
            fields=[
                _field("GroupId", "string", entityType="groupId"),
                _field(
                    "Topics",
                    "[]DescribeShareGroupOffsetsRequestTopic",
                    nullableVersions="0+",
                    fields=[
                        _field("TopicName", "string", entityType="topicName"),
                        _field("Partitions", "[]int32"),
                    ],
                ),
            ],
        )
    ],
)

DESCRIBE_SHARE_GROUP_OFFSETS_RESPONSE = _message(
    90,
    "response",
    "DescribeShareGroupOffsets",
    "0-1",
    [
        _field("ThrottleTimeMs", "int32"),
        _field(
            "Groups",
            "[]DescribeShareGroupOffsetsResponseGroup",
            fields=[
                _field("GroupId", "string", entityType="groupId"),
                _field(
                    "Topics",
                    "[]DescribeShareGroupOffsetsResponseTopic",
                    fields=[
                        _field("TopicName", "string", entityType="topicName"),
                        _field("TopicId", "uuid"),
                        _field(
                            "Partitions",
                            "[]DescribeShareGroupOffsetsResponsePartition",
                            fields=[
                                _field("PartitionIndex", "int32"),
                                _field("StartOffset", "int64"),
                                _field("LeaderEpoch", "int32"),
                                _field("Lag", "int64", "1+", ignorable=True, default=-1),
                                *_error_fields(),
                            ],
                        ),
                    ],
                ),
                *_error_fields(),
            ],
        ),
    ],
)

ALTER_SHARE_GROUP_OFFSETS_REQUEST = _message(
    91,
    "request",
    "AlterShareGroupOffsets",
    "0",
    [
        _field("GroupId", "string", entityType="groupId"),
        _field(
            "Topics",
            "[]AlterShareGroupOffsetsRequestTopic",
            fields=[
                _field("TopicName", "string", entityType="topicName", mapKey=True),
                _field(
                    "Partitions",
                    "[]AlterShareGroupOffsetsRequestPartition",
                    fields=[_field("PartitionIndex", "int32"), _field("StartOffset", "int64")],
                ),
            ],
        ),
    ],
)

ALTER_SHARE_GROUP_OFFSETS_RESPONSE = _message(
    91,
    "response",
    "AlterShareGroupOffsets",
    "0",
    _top_level_error(
        _field(
            "Responses",
            "[]AlterShareGroupOffsetsResponseTopic",
            fields=[
                _field("TopicName", "string", entityType="topicName", mapKey=True),
                _field("TopicId", "uuid"),
                _field(
                    "Partitions",
                    "[]AlterShareGroupOffsetsResponsePartition",
                    fields=[_field("PartitionIndex", "int32"), *_error_fields()],
                ),
            ],
        ),
    ),
)

DELETE_SHARE_GROUP_OFFSETS_REQUEST = _message(
    92,
    "request",
    "DeleteShareGroupOffsets",
    "0",
    [
        _field("GroupId", "string", entityType="groupId"),
        _field(
            "Topics",
            "[]DeleteShareGroupOffsetsRequestTopic",
            fields=[_field("TopicName", "string", entityType="topicName")],
        ),
    ],
)

DELETE_SHARE_GROUP_OFFSETS_RESPONSE = _message(
    92,
    "response",
    "DeleteShareGroupOffsets",
    "0",
    _top_level_error(
        _field(
            "Responses",
            "[]DeleteShareGroupOffsetsResponseTopic",
            fields=[
                _field("TopicName", "string", entityType="topicName"),
                _field("TopicId", "uuid"),
                *_error_fields(),
            ],
        ),
    ),
)

ShareGroupHeartbeatRequest = _define(SHARE_GROUP_HEARTBEAT_REQUEST)
ShareGroupHeartbeatResponse = _define(SHARE_GROUP_HEARTBEAT_RESPONSE)
ShareGroupDescribeRequest = _define(SHARE_GROUP_DESCRIBE_REQUEST)
ShareGroupDescribeResponse = _define(SHARE_GROUP_DESCRIBE_RESPONSE)
ShareFetchRequest = _define(SHARE_FETCH_REQUEST)
ShareFetchResponse = _define(SHARE_FETCH_RESPONSE)
ShareAcknowledgeRequest = _define(SHARE_ACKNOWLEDGE_REQUEST)
ShareAcknowledgeResponse = _define(SHARE_ACKNOWLEDGE_RESPONSE)
DescribeShareGroupOffsetsRequest = _define(DESCRIBE_SHARE_GROUP_OFFSETS_REQUEST)
DescribeShareGroupOffsetsResponse = _define(DESCRIBE_SHARE_GROUP_OFFSETS_RESPONSE)
AlterShareGroupOffsetsRequest = _define(ALTER_SHARE_GROUP_OFFSETS_REQUEST)
AlterShareGroupOffsetsResponse = _define(ALTER_SHARE_GROUP_OFFSETS_RESPONSE)
DeleteShareGroupOffsetsRequest = _define(DELETE_SHARE_GROUP_OFFSETS_REQUEST)
DeleteShareGroupOffsetsResponse = _define(DELETE_SHARE_GROUP_OFFSETS_RESPONSE)


# -- the share coordinator's RPCs (keys 83-87), between brokers ---------------------------------
#
# A partition leader reads and writes its share-partitions' state through the share
# coordinator of each (the leader of its ``__share_group_state`` partition). Kafka 4.4:
# InitializeShareGroupState, ReadShareGroupState and DeleteShareGroupState v0,
# WriteShareGroupState and ReadShareGroupStateSummary v0-1 (v1 adds DeliveryCompleteCount).


def _state_request(
    key: int, name: str, valid: str, data: str, partition_fields: list[dict]
) -> dict:
    """GroupId, then Topics (``data``: TopicId, Partitions (Partition, ``partition_fields``))."""
    return _message(
        key,
        "request",
        name,
        valid,
        [
            _field("GroupId", "string", entityType="groupId"),
            _field(
                "Topics",
                f"[]{data}",
                fields=[
                    _field("TopicId", "uuid"),
                    _field(
                        "Partitions",
                        "[]PartitionData",
                        fields=[_field("Partition", "int32"), *partition_fields],
                    ),
                ],
            ),
        ],
    )


def _state_response(
    key: int, name: str, valid: str, result: str, partition_fields: list[dict]
) -> dict:
    """Results (``result``: TopicId, Partitions (Partition, ErrorCode, ErrorMessage,
    ``partition_fields``))."""
    return _message(
        key,
        "response",
        name,
        valid,
        [
            _field(
                "Results",
                f"[]{result}",
                fields=[
                    _field("TopicId", "uuid"),
                    _field(
                        "Partitions",
                        "[]PartitionResult",
                        fields=[
                            _field("Partition", "int32"),
                            *_error_fields(),
                            *partition_fields,
                        ],
                    ),
                ],
            ),
        ],
    )


def _state_batches() -> dict:
    return _field(
        "StateBatches",
        "[]StateBatch",
        fields=[
            _field("FirstOffset", "int64"),
            _field("LastOffset", "int64"),
            _field("DeliveryState", "int8"),
            _field("DeliveryCount", "int16"),
        ],
    )


def _delivery_complete_count() -> dict:
    return _field("DeliveryCompleteCount", "int32", "1+", ignorable=True, default="-1")


_STATE_EPOCH = _field("StateEpoch", "int32")
_LEADER_EPOCH = _field("LeaderEpoch", "int32")
_START_OFFSET = _field("StartOffset", "int64")

INITIALIZE_SHARE_GROUP_STATE_REQUEST = _state_request(
    83, "InitializeShareGroupState", "0", "InitializeStateData", [_STATE_EPOCH, _START_OFFSET]
)
INITIALIZE_SHARE_GROUP_STATE_RESPONSE = _state_response(
    83, "InitializeShareGroupState", "0", "InitializeStateResult", []
)
READ_SHARE_GROUP_STATE_REQUEST = _state_request(
    84, "ReadShareGroupState", "0", "ReadStateData", [_LEADER_EPOCH]
)
READ_SHARE_GROUP_STATE_RESPONSE = _state_response(
    84,
    "ReadShareGroupState",
    "0",
    "ReadStateResult",
    [_STATE_EPOCH, _START_OFFSET, _state_batches()],
)
WRITE_SHARE_GROUP_STATE_REQUEST = _state_request(
    85,
    "WriteShareGroupState",
    "0-1",
    "WriteStateData",
    [_STATE_EPOCH, _LEADER_EPOCH, _START_OFFSET, _delivery_complete_count(), _state_batches()],
)
WRITE_SHARE_GROUP_STATE_RESPONSE = _state_response(
    85, "WriteShareGroupState", "0-1", "WriteStateResult", []
)
DELETE_SHARE_GROUP_STATE_REQUEST = _state_request(
    86, "DeleteShareGroupState", "0", "DeleteStateData", []
)
DELETE_SHARE_GROUP_STATE_RESPONSE = _state_response(
    86, "DeleteShareGroupState", "0", "DeleteStateResult", []
)
READ_SHARE_GROUP_STATE_SUMMARY_REQUEST = _state_request(
    87, "ReadShareGroupStateSummary", "0-1", "ReadStateSummaryData", [_LEADER_EPOCH]
)
READ_SHARE_GROUP_STATE_SUMMARY_RESPONSE = _state_response(
    87,
    "ReadShareGroupStateSummary",
    "0-1",
    "ReadStateSummaryResult",
    [_STATE_EPOCH, _LEADER_EPOCH, _START_OFFSET, _delivery_complete_count()],
)

InitializeShareGroupStateRequest = _define(INITIALIZE_SHARE_GROUP_STATE_REQUEST)
InitializeShareGroupStateResponse = _define(INITIALIZE_SHARE_GROUP_STATE_RESPONSE)
ReadShareGroupStateRequest = _define(READ_SHARE_GROUP_STATE_REQUEST)
ReadShareGroupStateResponse = _define(READ_SHARE_GROUP_STATE_RESPONSE)
WriteShareGroupStateRequest = _define(WRITE_SHARE_GROUP_STATE_REQUEST)
WriteShareGroupStateResponse = _define(WRITE_SHARE_GROUP_STATE_RESPONSE)
DeleteShareGroupStateRequest = _define(DELETE_SHARE_GROUP_STATE_REQUEST)
DeleteShareGroupStateResponse = _define(DELETE_SHARE_GROUP_STATE_RESPONSE)
ReadShareGroupStateSummaryRequest = _define(READ_SHARE_GROUP_STATE_SUMMARY_REQUEST)
ReadShareGroupStateSummaryResponse = _define(READ_SHARE_GROUP_STATE_SUMMARY_RESPONSE)
