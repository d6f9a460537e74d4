"""What wireserver serves: every API key with the version range of a Kafka 4.1 broker
(see ../shared/docs/api-matrix.md), limited to the APIs that have a handler.

Add an API here in the same change that adds its handler in ``wireserver/apis/``; the server
refuses to start when the two disagree, and ApiVersions is built from this table alone.
"""

from __future__ import annotations

from kafka.protocol.admin.cluster import (DescribeClusterRequest, DescribeClusterResponse,
                                          DescribeLogDirsRequest, DescribeLogDirsResponse)
from kafka.protocol.admin.configs import (AlterConfigsRequest, AlterConfigsResponse,
                                          DescribeConfigsRequest, DescribeConfigsResponse,
                                          IncrementalAlterConfigsRequest,
                                          IncrementalAlterConfigsResponse)
from kafka.protocol.admin.topics import (CreatePartitionsRequest, CreatePartitionsResponse,
                                         CreateTopicsRequest, CreateTopicsResponse,
                                         DeleteRecordsRequest, DeleteRecordsResponse,
                                         DeleteTopicsRequest, DeleteTopicsResponse,
                                         ElectLeadersRequest, ElectLeadersResponse,
                                         DescribeTopicPartitionsRequest,
                                         DescribeTopicPartitionsResponse)
from kafka.protocol.admin.groups import (DeleteGroupsRequest, DeleteGroupsResponse,
                                         DescribeGroupsRequest, DescribeGroupsResponse,
                                         ListGroupsRequest, ListGroupsResponse)
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse,
                                          JoinGroupRequest, JoinGroupResponse,
                                          LeaveGroupRequest, LeaveGroupResponse,
                                          OffsetCommitRequest, OffsetCommitResponse,
                                          OffsetDeleteRequest, OffsetDeleteResponse,
                                          OffsetFetchRequest, OffsetFetchResponse,
                                          SyncGroupRequest, SyncGroupResponse)
from kafka.protocol.consumer.offsets import (ListOffsetsRequest, ListOffsetsResponse,
                                             OffsetForLeaderEpochRequest,
                                             OffsetForLeaderEpochResponse)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import (FindCoordinatorRequest,
                                                     FindCoordinatorResponse)
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.admin.transactions import (DescribeProducersRequest,
                                               DescribeProducersResponse,
                                               DescribeTransactionsRequest,
                                               DescribeTransactionsResponse,
                                               ListTransactionsRequest, ListTransactionsResponse)
from kafka.protocol.producer.transaction import (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse,
                                                 AddPartitionsToTxnRequest,
                                                 AddPartitionsToTxnResponse, EndTxnRequest,
                                                 EndTxnResponse, InitProducerIdRequest,
                                                 InitProducerIdResponse, TxnOffsetCommitRequest,
                                                 TxnOffsetCommitResponse, WriteTxnMarkersRequest,
                                                 WriteTxnMarkersResponse)
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse,
                                 SaslHandshakeRequest, SaslHandshakeResponse)
from kafka.protocol.admin.acl import (CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest,
                                      DeleteAclsResponse, DescribeAclsRequest,
                                      DescribeAclsResponse)
from kafka.protocol.admin.users import (AlterUserScramCredentialsRequest,
                                        AlterUserScramCredentialsResponse,
                                        DescribeUserScramCredentialsRequest,
                                        DescribeUserScramCredentialsResponse)

from protocol.messages_extra import (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
                                     ConsumerGroupHeartbeatRequest,
                                     ConsumerGroupHeartbeatResponse)
from protocol.registry import ApiRegistry

SERVED = ApiRegistry()

# Produce: Kafka 4 still advertises v0 but refuses v0-2 (KIP-896, KAFKA-18659).
SERVED.register(ProduceRequest, ProduceResponse, 3, 13, advertised_min=0)
SERVED.register(FetchRequest, FetchResponse, 4, 18)
SERVED.register(ListOffsetsRequest, ListOffsetsResponse, 1, 10)
SERVED.register(MetadataRequest, MetadataResponse, 0, 13)
SERVED.register(ApiVersionsRequest, ApiVersionsResponse, 0, 4)
SERVED.register(CreateTopicsRequest, CreateTopicsResponse, 2, 7)
SERVED.register(DeleteTopicsRequest, DeleteTopicsResponse, 1, 6)
SERVED.register(DeleteRecordsRequest, DeleteRecordsResponse, 0, 2)
SERVED.register(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, 2, 4)
SERVED.register(DescribeConfigsRequest, DescribeConfigsResponse, 1, 4)
SERVED.register(AlterConfigsRequest, AlterConfigsResponse, 0, 2)
SERVED.register(DescribeLogDirsRequest, DescribeLogDirsResponse, 1, 4)
SERVED.register(CreatePartitionsRequest, CreatePartitionsResponse, 0, 3)
SERVED.register(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, 0, 1)
SERVED.register(DescribeClusterRequest, DescribeClusterResponse, 0, 2)
SERVED.register(DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, 0, 0)
SERVED.register(ElectLeadersRequest, ElectLeadersResponse, 0, 2)
# Idempotent producer.
SERVED.register(InitProducerIdRequest, InitProducerIdResponse, 0, 5)
# Group coordinator (classic protocol) and committed offsets.
SERVED.register(OffsetCommitRequest, OffsetCommitResponse, 2, 9)
SERVED.register(OffsetFetchRequest, OffsetFetchResponse, 1, 9)
SERVED.register(FindCoordinatorRequest, FindCoordinatorResponse, 0, 6)
SERVED.register(JoinGroupRequest, JoinGroupResponse, 0, 9)
SERVED.register(HeartbeatRequest, HeartbeatResponse, 0, 4)
SERVED.register(LeaveGroupRequest, LeaveGroupResponse, 0, 5)
SERVED.register(SyncGroupRequest, SyncGroupResponse, 0, 5)
SERVED.register(DescribeGroupsRequest, DescribeGroupsResponse, 0, 6)
SERVED.register(ListGroupsRequest, ListGroupsResponse, 0, 5)
SERVED.register(DeleteGroupsRequest, DeleteGroupsResponse, 0, 2)
SERVED.register(OffsetDeleteRequest, OffsetDeleteResponse, 0, 0)
# Consumer group protocol (KIP-848); message classes from protocol.messages_extra.
SERVED.register(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, 0, 1)
SERVED.register(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, 0, 1)
# Transactions (protocol v1; EndTxn 5 and TxnOffsetCommit 5 belong to KIP-890 v2, not served).
SERVED.register(AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, 0, 5)
SERVED.register(AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, 0, 4)
SERVED.register(EndTxnRequest, EndTxnResponse, 0, 4)
SERVED.register(WriteTxnMarkersRequest, WriteTxnMarkersResponse, 1, 1)
SERVED.register(TxnOffsetCommitRequest, TxnOffsetCommitResponse, 0, 4)
SERVED.register(DescribeProducersRequest, DescribeProducersResponse, 0, 0)
SERVED.register(DescribeTransactionsRequest, DescribeTransactionsResponse, 0, 0)
SERVED.register(ListTransactionsRequest, ListTransactionsResponse, 0, 2)
# Security: SASL, ACLs, SCRAM credentials (wireserver.security).
SERVED.register(SaslHandshakeRequest, SaslHandshakeResponse, 0, 1)
SERVED.register(SaslAuthenticateRequest, SaslAuthenticateResponse, 0, 2)
SERVED.register(DescribeAclsRequest, DescribeAclsResponse, 1, 3)
SERVED.register(CreateAclsRequest, CreateAclsResponse, 1, 3)
SERVED.register(DeleteAclsRequest, DeleteAclsResponse, 1, 3)
SERVED.register(DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, 0, 0)
SERVED.register(AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, 0, 0)
