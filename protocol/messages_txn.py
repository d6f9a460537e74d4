"""TxnOffsetCommit v0-6 (key 28), which kafka-python lacks past v5.

v3+ name the generation ``GenerationIdOrMemberEpoch`` (same bytes: the member epoch when the
group uses the consumer protocol, KIP-1319); v5 is transaction protocol v2's (the request also
adds the group's offsets partition to the transaction, KIP-890); v6 names topics by
``TopicId`` instead of ``Name`` (KIP-1319). Transcribed from Apache Kafka 4.4's definitions
with protocol.messages_extra's helpers.
"""

from __future__ import annotations

from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.producer.transaction import (
    TxnOffsetCommitResponse as KafkaPythonTxnOffsetCommitResponse,
)

from wireserver.protocol.messages_extra import _define, _field, _nullable_string


def _topics(struct: str, partitions: dict) -> dict:
    """Topics by name (v0-5) or by id (v6+)."""
    return _field(
        "Topics",
        f"[]{struct}",
        fields=[
            _field("Name", "string", "0-5", entityType="topicName", ignorable=True),
            _field("TopicId", "uuid", "6+", ignorable=True),
            partitions,
        ],
    )


TXN_OFFSET_COMMIT_REQUEST = {
    "apiKey": 28,
    "type": "request",
    "name": "TxnOffsetCommitRequest",
    "validVersions": "0-6",
    "flexibleVersions": "3+",
    "fields": [
        _field("TransactionalId", "string", entityType="transactionalId"),
        _field("GroupId", "string", entityType="groupId"),
        _field("ProducerId", "int64", entityType="producerId"),
        _field("ProducerEpoch", "int16"),
        _field("GenerationIdOrMemberEpoch", "int32", "3+", default="-1"),
        _field("MemberId", "string", "3+", default=""),
        _nullable_string("GroupInstanceId", "3+"),
        _topics(
            "TxnOffsetCommitRequestTopic",
            _field(
                "Partitions",
                "[]TxnOffsetCommitRequestPartition",
                fields=[
                    _field("PartitionIndex", "int32"),
                    _field("CommittedOffset", "int64"),
                    _field("CommittedLeaderEpoch", "int32", "2+", default="-1", ignorable=True),
                    _field("CommittedMetadata", "string", nullableVersions="0+"),
                ],
            ),
        ),
    ],
}

TXN_OFFSET_COMMIT_RESPONSE = {
    "apiKey": 28,
    "type": "response",
    "name": "TxnOffsetCommitResponse",
    "validVersions": "0-6",
    "flexibleVersions": "3+",
    "fields": [
        _field("ThrottleTimeMs", "int32"),
        _topics(
            "TxnOffsetCommitResponseTopic",
            _field(
                "Partitions",
                "[]TxnOffsetCommitResponsePartition",
                fields=[_field("PartitionIndex", "int32"), _field("ErrorCode", "int16")],
            ),
        ),
    ],
}

TxnOffsetCommitRequest = _define(TXN_OFFSET_COMMIT_REQUEST)
TxnOffsetCommitResponse = _define(TXN_OFFSET_COMMIT_RESPONSE)

# Defining a response class makes it kafka-python's decoder for its API key in this process;
# clients running beside the broker (tests, the test kit) keep kafka-python's own class.
ResponseClassRegistry.register_response_class(KafkaPythonTxnOffsetCommitResponse)
