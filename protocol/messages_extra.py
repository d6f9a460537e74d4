"""Message classes kafka-python does not ship, built the way it builds its own.

kafka-python generates each ``ApiMessage`` class from a JSON schema that its metaclass loads by
class name from a resources package. The schemas here are Python data this project writes,
transcribed field by field from Apache Kafka's message definitions (the version each field
appears in, its type, nullability and default); ``_InlineSchema`` hands such a dict to the same
machinery instead of reading a file, so the classes decode, encode and compile exactly like
kafka-python's own.

- ConsumerGroupHeartbeat (key 68) v0-1. v1 adds ``SubscribedTopicRegex`` and makes the member
  id the client's own (KIP-848, KIP-1082; a wire-level no-op for the member id).
- ConsumerGroupDescribe (key 69) v0-1. v1 adds the member's ``MemberType`` (KIP-1099: -1
  unknown, 0 classic, 1 consumer); the request is unchanged.
- DeleteGroups (key 42) v0-3. kafka-python stops at v2; v3 adds each group's nullable
  ``ErrorMessage`` to the response (Kafka 4.4); the request is unchanged.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.api_data import JsonSchemaData
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas import StructField

#: Marks the classes defined here, for tests that compare against kafka-python's copies.
DEFINED_HERE: list[type[ApiMessage]] = []


class _InlineSchema(type(ApiMessage)):
    """kafka-python's message metaclass, fed a ``SCHEMA`` dict instead of a JSON file."""

    def __new__(metacls, name, bases, attrs, **kw):
        if not kw.get("init", True):
            return super().__new__(metacls, name, bases, attrs, **kw)
        schema = attrs.pop("SCHEMA")
        attrs["_json"] = schema
        attrs["_struct"] = StructField(schema)
        # Skip the file loader (JsonSchemaData.__new__); everything after it runs unchanged.
        return super(JsonSchemaData, metacls).__new__(metacls, name, bases, attrs, **kw)


def _field(name: str, type_: str, versions: str = "0+", **extra: Any) -> dict:
    return {"name": name, "type": type_, "versions": versions, **extra}


def _message(
    key: int, kind: str, name: str, valid: str, fields: list[dict], flexible: str = "0+"
) -> dict:
    """A message definition: ``name`` without its ``Request``/``Response``, which ``kind``
    adds; ``flexible``: the flexible versions (from v0 for the APIs added since KIP-482)."""
    return {
        "apiKey": key,
        "type": kind,
        "name": f"{name}{kind.capitalize()}",
        "validVersions": valid,
        "flexibleVersions": flexible,
        "fields": fields,
    }


def _nullable_string(name: str, versions: str = "0+") -> dict:
    return _field(name, "string", versions, nullableVersions=versions, default="null")


def _topic_partitions(*, with_name: bool, **extra: Any) -> dict:
    fields = [_field("TopicId", "uuid")]
    if with_name:
        fields.append(_field("TopicName", "string", entityType="topicName"))
    fields.append(_field("Partitions", "[]int32"))
    return _field("TopicPartitions", "[]TopicPartitions", fields=fields, **extra)


def _subscribed_topic_names() -> dict:
    """A consumer's or share member's heartbeat subscription: null when unchanged."""
    return _field(
        "SubscribedTopicNames",
        "[]string",
        nullableVersions="0+",
        default="null",
        entityType="topicName",
    )


CONSUMER_GROUP_HEARTBEAT_REQUEST = {
    "apiKey": 68,
    "type": "request",
    "name": "ConsumerGroupHeartbeatRequest",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        _field("GroupId", "string", entityType="groupId"),
        _field("MemberId", "string"),
        _field("MemberEpoch", "int32"),
        _nullable_string("InstanceId"),
        _nullable_string("RackId"),
        _field("RebalanceTimeoutMs", "int32", default=-1),
        _subscribed_topic_names(),
        _nullable_string("SubscribedTopicRegex", "1+"),
        _nullable_string("ServerAssignor"),
        _topic_partitions(with_name=False, nullableVersions="0+", default="null"),
    ],
}


def _heartbeat_response_fields() -> list[dict]:
    """The response of a consumer's and a share group's heartbeat (the same fields in Kafka's
    two definitions)."""
    return [
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
            fields=[_topic_partitions(with_name=False)],
        ),
    ]


CONSUMER_GROUP_HEARTBEAT_RESPONSE = {
    "apiKey": 68,
    "type": "response",
    "name": "ConsumerGroupHeartbeatResponse",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": _heartbeat_response_fields(),
}


def _describe_request_fields() -> list[dict]:
    """What Consumer-, Share- and StreamsGroupDescribe ask (streams adds a field at v1)."""
    return [
        _field("GroupIds", "[]string", entityType="groupId"),
        _field("IncludeAuthorizedOperations", "bool"),
    ]


CONSUMER_GROUP_DESCRIBE_REQUEST = {
    "apiKey": 69,
    "type": "request",
    "name": "ConsumerGroupDescribeRequest",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": _describe_request_fields(),
}


def _assignment(name: str) -> dict:
    return _field(name, "Assignment", fields=[_topic_partitions(with_name=True)])


def _described_group_header() -> list[dict]:
    """How a Consumer-, Share- or StreamsGroupDescribe response's group begins."""
    return [
        _field("ErrorCode", "int16"),
        _nullable_string("ErrorMessage"),
        _field("GroupId", "string", entityType="groupId"),
        _field("GroupState", "string"),
        _field("GroupEpoch", "int32"),
        _field("AssignmentEpoch", "int32"),
    ]


def _described_groups(member_fields: list[dict]) -> dict:
    """The ``Groups`` of a Consumer- or ShareGroupDescribe response; ``member_fields``: each
    member's (the two differ only there)."""
    return _field(
        "Groups",
        "[]DescribedGroup",
        fields=[
            *_described_group_header(),
            _field("AssignorName", "string"),
            _field("Members", "[]Member", fields=member_fields),
            _field("AuthorizedOperations", "int32", default="-2147483648"),
        ],
    )


CONSUMER_GROUP_DESCRIBE_RESPONSE = {
    "apiKey": 69,
    "type": "response",
    "name": "ConsumerGroupDescribeResponse",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _described_groups(
            [
                _field("MemberId", "string"),
                _nullable_string("InstanceId"),
                _nullable_string("RackId"),
                _field("MemberEpoch", "int32"),
                _field("ClientId", "string"),
                _field("ClientHost", "string"),
                _field("SubscribedTopicNames", "[]string", entityType="topicName"),
                _nullable_string("SubscribedTopicRegex"),
                _assignment("Assignment"),
                _assignment("TargetAssignment"),
                _field("MemberType", "int8", "1+", default=-1),
            ]
        ),
    ],
}


DELETE_GROUPS_REQUEST = {
    "apiKey": 42,
    "type": "request",
    "name": "DeleteGroupsRequest",
    "validVersions": "0-3",
    "flexibleVersions": "2+",
    "fields": [_field("GroupsNames", "[]string", entityType="groupId")],
}

DELETE_GROUPS_RESPONSE = {
    "apiKey": 42,
    "type": "response",
    "name": "DeleteGroupsResponse",
    "validVersions": "0-3",
    "flexibleVersions": "2+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _field(
            "Results",
            "[]DeletableGroupResult",
            fields=[
                _field("GroupId", "string", mapKey=True, entityType="groupId"),
                _field("ErrorCode", "int16"),
                _nullable_string("ErrorMessage", "3+"),
            ],
        ),
    ],
}


def _define(schema: dict) -> type[ApiMessage]:
    cls = _InlineSchema(schema["name"], (ApiMessage,), {"SCHEMA": schema, "__module__": __name__})
    DEFINED_HERE.append(cls)
    return cls


ConsumerGroupHeartbeatRequest = _define(CONSUMER_GROUP_HEARTBEAT_REQUEST)
ConsumerGroupHeartbeatResponse = _define(CONSUMER_GROUP_HEARTBEAT_RESPONSE)
ConsumerGroupDescribeRequest = _define(CONSUMER_GROUP_DESCRIBE_REQUEST)
ConsumerGroupDescribeResponse = _define(CONSUMER_GROUP_DESCRIBE_RESPONSE)
DeleteGroupsRequest = _define(DELETE_GROUPS_REQUEST)
DeleteGroupsResponse = _define(DELETE_GROUPS_RESPONSE)
