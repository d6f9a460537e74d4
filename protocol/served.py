"""What wireserver serves: every API key with the version range of a Kafka 4.4 broker
(its ApiVersions answer), limited to the APIs that have a handler.

Add an API here in the same change that adds its handler in ``wireserver/apis/``; the server
refuses to start when the two disagree, and ApiVersions is built from this table alone. Each
line names the API's key, its message classes' name and module (imported when first needed,
see ``protocol.registry.ApiSpec``) and the versions served.
"""

from __future__ import annotations

from wireserver.protocol.registry import ApiRegistry

SERVED = ApiRegistry()

# Produce: Kafka 4 still advertises v0 but refuses v0-2 (KIP-896, KAFKA-18659).
SERVED.register(0, "Produce", "kafka.protocol.producer.produce", 3, 13, advertised_min=0)
SERVED.register(1, "Fetch", "kafka.protocol.consumer.fetch", 4, 18)
SERVED.register(2, "ListOffsets", "kafka.protocol.consumer.offsets", 1, 11)
SERVED.register(3, "Metadata", "kafka.protocol.metadata.metadata", 0, 13)
SERVED.register(18, "ApiVersions", "wireserver.protocol.messages_features", 0, 5)
SERVED.register(19, "CreateTopics", "kafka.protocol.admin.topics", 2, 7)
SERVED.register(20, "DeleteTopics", "kafka.protocol.admin.topics", 1, 6)
SERVED.register(21, "DeleteRecords", "kafka.protocol.admin.topics", 0, 2)
SERVED.register(23, "OffsetForLeaderEpoch", "kafka.protocol.consumer.offsets", 2, 4)
SERVED.register(32, "DescribeConfigs", "kafka.protocol.admin.configs", 1, 4)
SERVED.register(33, "AlterConfigs", "kafka.protocol.admin.configs", 0, 2)
SERVED.register(34, "AlterReplicaLogDirs", "kafka.protocol.admin.cluster", 1, 2)
SERVED.register(35, "DescribeLogDirs", "kafka.protocol.admin.cluster", 1, 5)
SERVED.register(37, "CreatePartitions", "kafka.protocol.admin.topics", 0, 3)
SERVED.register(44, "IncrementalAlterConfigs", "kafka.protocol.admin.configs", 0, 1)
SERVED.register(60, "DescribeCluster", "kafka.protocol.admin.cluster", 0, 2)
SERVED.register(75, "DescribeTopicPartitions", "kafka.protocol.admin.topics", 0, 0)
SERVED.register(74, "ListConfigResources", "kafka.protocol.admin.configs", 0, 1)
SERVED.register(43, "ElectLeaders", "kafka.protocol.admin.topics", 0, 2)
SERVED.register(45, "AlterPartitionReassignments", "kafka.protocol.admin.topics", 0, 1)
SERVED.register(46, "ListPartitionReassignments", "kafka.protocol.admin.topics", 0, 0)
# Feature levels (wireserver.features); DescribeFeatures is ApiVersions.
SERVED.register(57, "UpdateFeatures", "kafka.protocol.admin.cluster", 0, 2)
# Idempotent producer.
SERVED.register(22, "InitProducerId", "kafka.protocol.producer.transaction", 0, 5)
# Group coordinator (classic protocol) and committed offsets.
SERVED.register(8, "OffsetCommit", "kafka.protocol.consumer.group", 2, 10)
SERVED.register(9, "OffsetFetch", "kafka.protocol.consumer.group", 1, 10)
SERVED.register(10, "FindCoordinator", "kafka.protocol.metadata.find_coordinator", 0, 6)
SERVED.register(11, "JoinGroup", "kafka.protocol.consumer.group", 0, 9)
SERVED.register(12, "Heartbeat", "kafka.protocol.consumer.group", 0, 4)
SERVED.register(13, "LeaveGroup", "kafka.protocol.consumer.group", 0, 5)
SERVED.register(14, "SyncGroup", "kafka.protocol.consumer.group", 0, 5)
SERVED.register(15, "DescribeGroups", "kafka.protocol.admin.groups", 0, 6)
SERVED.register(16, "ListGroups", "kafka.protocol.admin.groups", 0, 5)
# DeleteGroups v3 (Kafka 4.4) is past kafka-python: its classes are in protocol.messages_extra.
SERVED.register(42, "DeleteGroups", "wireserver.protocol.messages_extra", 0, 3)
SERVED.register(47, "OffsetDelete", "kafka.protocol.consumer.group", 0, 0)
# Consumer group protocol (KIP-848); message classes from protocol.messages_extra.
SERVED.register(68, "ConsumerGroupHeartbeat", "wireserver.protocol.messages_extra", 0, 1)
SERVED.register(69, "ConsumerGroupDescribe", "wireserver.protocol.messages_extra", 0, 1)
# Streams group protocol (KIP-1071); message classes from protocol.messages_streams.
SERVED.register(88, "StreamsGroupHeartbeat", "wireserver.protocol.messages_streams", 0, 1)
SERVED.register(89, "StreamsGroupDescribe", "wireserver.protocol.messages_streams", 0, 1)
SERVED.register(
    93, "StreamsGroupTopologyDescriptionUpdate", "wireserver.protocol.messages_streams", 0, 0
)
# Share groups (KIP-932); message classes from protocol.messages_share. v0 was Kafka 4.0's
# early access, gone since 4.1.
SERVED.register(76, "ShareGroupHeartbeat", "wireserver.protocol.messages_share", 1, 1)
SERVED.register(77, "ShareGroupDescribe", "wireserver.protocol.messages_share", 1, 1)
SERVED.register(78, "ShareFetch", "wireserver.protocol.messages_share", 1, 2)
SERVED.register(79, "ShareAcknowledge", "wireserver.protocol.messages_share", 1, 2)
SERVED.register(90, "DescribeShareGroupOffsets", "wireserver.protocol.messages_share", 0, 1)
SERVED.register(91, "AlterShareGroupOffsets", "wireserver.protocol.messages_share", 0, 0)
SERVED.register(92, "DeleteShareGroupOffsets", "wireserver.protocol.messages_share", 0, 0)
# The share coordinator's state RPCs, between brokers (a partition leader and the leader of its
# share-partition's __share_group_state partition).
SERVED.register(83, "InitializeShareGroupState", "wireserver.protocol.messages_share", 0, 0)
SERVED.register(84, "ReadShareGroupState", "wireserver.protocol.messages_share", 0, 0)
SERVED.register(85, "WriteShareGroupState", "wireserver.protocol.messages_share", 0, 1)
SERVED.register(86, "DeleteShareGroupState", "wireserver.protocol.messages_share", 0, 0)
SERVED.register(87, "ReadShareGroupStateSummary", "wireserver.protocol.messages_share", 0, 1)
# Transactions (protocol v1 and v2: EndTxn 5 and TxnOffsetCommit 5, KIP-890 part 2).
SERVED.register(24, "AddPartitionsToTxn", "kafka.protocol.producer.transaction", 0, 5)
SERVED.register(25, "AddOffsetsToTxn", "kafka.protocol.producer.transaction", 0, 4)
SERVED.register(26, "EndTxn", "kafka.protocol.producer.transaction", 0, 5)
SERVED.register(27, "WriteTxnMarkers", "kafka.protocol.producer.transaction", 1, 2)
SERVED.register(28, "TxnOffsetCommit", "wireserver.protocol.messages_txn", 0, 6)
SERVED.register(61, "DescribeProducers", "kafka.protocol.admin.transactions", 0, 0)
SERVED.register(65, "DescribeTransactions", "kafka.protocol.admin.transactions", 0, 0)
SERVED.register(66, "ListTransactions", "kafka.protocol.admin.transactions", 0, 2)
# Security: SASL, ACLs, SCRAM credentials (wireserver.security).
SERVED.register(17, "SaslHandshake", "kafka.protocol.sasl", 0, 1)
SERVED.register(36, "SaslAuthenticate", "kafka.protocol.sasl", 0, 2)
SERVED.register(29, "DescribeAcls", "kafka.protocol.admin.acl", 1, 3)
SERVED.register(30, "CreateAcls", "kafka.protocol.admin.acl", 1, 3)
SERVED.register(31, "DeleteAcls", "kafka.protocol.admin.acl", 1, 3)
SERVED.register(50, "DescribeUserScramCredentials", "kafka.protocol.admin.users", 0, 0)
SERVED.register(51, "AlterUserScramCredentials", "kafka.protocol.admin.users", 0, 0)
# Client quotas (wireserver.quotas).
SERVED.register(48, "DescribeClientQuotas", "kafka.protocol.admin.client_quotas", 0, 1)
SERVED.register(49, "AlterClientQuotas", "kafka.protocol.admin.client_quotas", 0, 1)
# Delegation tokens (KIP-48); message classes from protocol.messages_tokens.
SERVED.register(38, "CreateDelegationToken", "wireserver.protocol.messages_tokens", 1, 3)
SERVED.register(39, "RenewDelegationToken", "wireserver.protocol.messages_tokens", 1, 2)
SERVED.register(40, "ExpireDelegationToken", "wireserver.protocol.messages_tokens", 1, 2)
SERVED.register(41, "DescribeDelegationToken", "wireserver.protocol.messages_tokens", 1, 3)
# KRaft controller APIs Kafka's brokers forward to their quorum: answered that there is none
# (wireserver.kraft); message classes from protocol.messages_kraft, DescribeQuorum kafka-python's.
SERVED.register(55, "DescribeQuorum", "kafka.protocol.admin.cluster", 0, 2)
SERVED.register(64, "UnregisterBroker", "wireserver.protocol.messages_kraft", 0, 0)
SERVED.register(80, "AddRaftVoter", "wireserver.protocol.messages_kraft", 0, 1)
SERVED.register(81, "RemoveRaftVoter", "wireserver.protocol.messages_kraft", 0, 0)
SERVED.register(94, "UnregisterController", "wireserver.protocol.messages_kraft", 0, 0)
