"""Message classes of share groups (KIP-932), which kafka-python lacks.

Transcribed field by field from Kafka 4.4.0's message definitions, as
``protocol.messages_extra`` does for KIP-848 (and with its helpers); Kafka's ``commonStructs``
are written out in place (``_InlineSchema`` does not resolve them). Version 0 of each was
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

from wireserver.protocol.messages_extra import _define, _field, _nullable_string

SHARE_GROUP_HEARTBEAT_REQUEST = {
    "apiKey": 76,
    "type": "request",
    "name": "ShareGroupHeartbeatRequest",
    "validVersions": "1",
    "flexibleVersions": "0+",
    "fields": [
        _field("GroupId", "string", entityType="groupId"),
        _field("MemberId", "string"),
        _field("MemberEpoch", "int32"),
        _nullable_string("RackId"),
        _field(
            "SubscribedTopicNames",
            "[]string",
            nullableVersions="0+",
            default="null",
            entityType="topicName",
        ),
    ],
}

SHARE_GROUP_HEARTBEAT_RESPONSE = {
    "apiKey": 76,
    "type": "response",
    "name": "ShareGroupHeartbeatResponse",
    "validVersions": "1",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _field("ErrorCode", "int16"),
        _nullable_string("ErrorMessage"),
        _nullable_string("MemberId"),
        _field("MemberEpoch", "int32"),
        _field("HeartbeatIntervalMs", "int32"),
        _field(
            "Assignment",
            "Assignment",
            nullableVersions="0+",
            default="null",
            fields=[
                _field(
                    "TopicPartitions",
                    "[]TopicPartitions",
                    fields=[_field("TopicId", "uuid"), _field("Partitions", "[]int32")],
                )
            ],
        ),
    ],
}

SHARE_GROUP_DESCRIBE_REQUEST = {
    "apiKey": 77,
    "type": "request",
    "name": "ShareGroupDescribeRequest",
    "validVersions": "1",
    "flexibleVersions": "0+",
    "fields": [
        _field("GroupIds", "[]string", entityType="groupId"),
        _field("IncludeAuthorizedOperations", "bool"),
    ],
}

SHARE_GROUP_DESCRIBE_RESPONSE = {
    "apiKey": 77,
    "type": "response",
    "name": "ShareGroupDescribeResponse",
    "validVersions": "1",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _field(
            "Groups",
            "[]DescribedGroup",
            fields=[
                _field("ErrorCode", "int16"),
                _nullable_string("ErrorMessage"),
                _field("GroupId", "string", entityType="groupId"),
                _field("GroupState", "string"),
                _field("GroupEpoch", "int32"),
                _field("AssignmentEpoch", "int32"),
                _field("AssignorName", "string"),
                _field(
                    "Members",
                    "[]Member",
                    fields=[
                        _field("MemberId", "string"),
                        _nullable_string("RackId"),
                        _field("MemberEpoch", "int32"),
                        _field("ClientId", "string"),
                        _field("ClientHost", "string"),
                        _field("SubscribedTopicNames", "[]string", entityType="topicName"),
                        _field(
                            "Assignment",
                            "Assignment",
                            fields=[
                                _field(
                                    "TopicPartitions",
                                    "[]TopicPartitions",
                                    fields=[
                                        _field("TopicId", "uuid"),
                                        _field("TopicName", "string", entityType="topicName"),
                                        _field("Partitions", "[]int32"),
                                    ],
                                )
                            ],
                        ),
                    ],
                ),
                _field("AuthorizedOperations", "int32", default="-2147483648"),
            ],
        ),
    ],
}


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


SHARE_FETCH_REQUEST = {
    "apiKey": 78,
    "type": "request",
    "name": "ShareFetchRequest",
    "validVersions": "1-2",
    "flexibleVersions": "0+",
    "fields": [
        _field("GroupId", "string", nullableVersions="0+", default="null", entityType="groupId"),
        _field("MemberId", "string", nullableVersions="0+"),
        _field("ShareSessionEpoch", "int32"),
        _field("MaxWaitMs", "int32"),
        _field("MinBytes", "int32"),
        _field("MaxBytes", "int32", default="0x7fffffff"),
        _field("MaxRecords", "int32", "1+"),
        _field("BatchSize", "int32", "1+"),
        _field("ShareAcquireMode", "int8", "2+", default="0", ignorable=True),
        _field("IsRenewAck", "bool", "2+", default="false"),
        _field(
            "Topics",
            "[]FetchTopic",
            fields=[
                _field("TopicId", "uuid", mapKey=True),
                _field(
                    "Partitions",
                    "[]FetchPartition",
                    fields=[
                        _field("PartitionIndex", "int32", mapKey=True),
                        _field("PartitionMaxBytes", "int32", "0"),
                        _acknowledgement_batches(),
                    ],
                ),
            ],
        ),
        _field(
            "ForgottenTopicsData",
            "[]ForgottenTopic",
            fields=[_field("TopicId", "uuid"), _field("Partitions", "[]int32")],
        ),
    ],
}

SHARE_FETCH_RESPONSE = {
    "apiKey": 78,
    "type": "response",
    "name": "ShareFetchResponse",
    "validVersions": "1-2",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _field("ErrorCode", "int16"),
        _nullable_string("ErrorMessage"),
        _field("AcquisitionLockTimeoutMs", "int32", "1+"),
        _field(
            "Responses",
            "[]ShareFetchableTopicResponse",
            fields=[
                _field("TopicId", "uuid", mapKey=True),
                _field(
                    "Partitions",
                    "[]PartitionData",
                    fields=[
                        _field("PartitionIndex", "int32"),
                        _field("ErrorCode", "int16"),
                        _nullable_string("ErrorMessage"),
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
            ],
        ),
        _node_endpoints(),
    ],
}

SHARE_ACKNOWLEDGE_REQUEST = {
    "apiKey": 79,
    "type": "request",
    "name": "ShareAcknowledgeRequest",
    "validVersions": "1-2",
    "flexibleVersions": "0+",
    "fields": [
        _field("GroupId", "string", nullableVersions="0+", default="null", entityType="groupId"),
        _field("MemberId", "string", nullableVersions="0+"),
        _field("ShareSessionEpoch", "int32"),
        _field("IsRenewAck", "bool", "2+", default="false"),
        _field(
            "Topics",
            "[]AcknowledgeTopic",
            fields=[
                _field("TopicId", "uuid", mapKey=True),
                _field(
                    "Partitions",
                    "[]AcknowledgePartition",
                    fields=[
                        _field("PartitionIndex", "int32", mapKey=True),
                        _acknowledgement_batches(),
                    ],
                ),
            ],
        ),
    ],
}

SHARE_ACKNOWLEDGE_RESPONSE = {
    "apiKey": 79,
    "type": "response",
    "name": "ShareAcknowledgeResponse",
    "validVersions": "1-2",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _field("ErrorCode", "int16"),
        _nullable_string("ErrorMessage"),
        _field("AcquisitionLockTimeoutMs", "int32", "2+", ignorable=True),
        _field(
            "Responses",
            "[]ShareAcknowledgeTopicResponse",
            fields=[
                _field("TopicId", "uuid", mapKey=True),
                _field(
                    "Partitions",
                    "[]PartitionData",
                    fields=[
                        _field("PartitionIndex", "int32"),
                        _field("ErrorCode", "int16"),
                        _nullable_string("ErrorMessage"),
                        _current_leader(),
                    ],
                ),
            ],
        ),
        _node_endpoints(),
    ],
}

DESCRIBE_SHARE_GROUP_OFFSETS_REQUEST = {
    "apiKey": 90,
    "type": "request",
    "name": "DescribeShareGroupOffsetsRequest",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
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
}

DESCRIBE_SHARE_GROUP_OFFSETS_RESPONSE = {
    "apiKey": 90,
    "type": "response",
    "name": "DescribeShareGroupOffsetsResponse",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
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
                                _field("ErrorCode", "int16"),
                                _nullable_string("ErrorMessage"),
                            ],
                        ),
                    ],
                ),
                _field("ErrorCode", "int16"),
                _nullable_string("ErrorMessage"),
            ],
        ),
    ],
}


def _error_fields() -> list[dict]:
    return [_field("ErrorCode", "int16"), _nullable_string("ErrorMessage")]


ALTER_SHARE_GROUP_OFFSETS_REQUEST = {
    "apiKey": 91,
    "type": "request",
    "name": "AlterShareGroupOffsetsRequest",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
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
}

ALTER_SHARE_GROUP_OFFSETS_RESPONSE = {
    "apiKey": 91,
    "type": "response",
    "name": "AlterShareGroupOffsetsResponse",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        *_error_fields(),
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
    ],
}

DELETE_SHARE_GROUP_OFFSETS_REQUEST = {
    "apiKey": 92,
    "type": "request",
    "name": "DeleteShareGroupOffsetsRequest",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        _field("GroupId", "string", entityType="groupId"),
        _field(
            "Topics",
            "[]DeleteShareGroupOffsetsRequestTopic",
            fields=[_field("TopicName", "string", entityType="topicName")],
        ),
    ],
}

DELETE_SHARE_GROUP_OFFSETS_RESPONSE = {
    "apiKey": 92,
    "type": "response",
    "name": "DeleteShareGroupOffsetsResponse",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        *_error_fields(),
        _field(
            "Responses",
            "[]DeleteShareGroupOffsetsResponseTopic",
            fields=[
                _field("TopicName", "string", entityType="topicName"),
                _field("TopicId", "uuid"),
                *_error_fields(),
            ],
        ),
    ],
}

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
