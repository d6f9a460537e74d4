"""Every served API checks the ACLs Kafka's ``KafkaApis`` / ``ControllerApis`` check.

Each case runs the same raw request as ``User:alice`` twice: first with only the case's ``pre``
ACLs (the answer must carry Kafka's authorization error), then with its ``acls`` added too (the
answer must carry no authorization error at all; any other error is the API's business).
``test_every_served_api_is_listed`` keeps the table honest: a new API must say what it needs.
"""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.admin.acl import CreateAclsRequest, DeleteAclsRequest
from kafka.protocol.admin.cluster import (
    AlterReplicaLogDirsRequest,
    DescribeClusterRequest,
    DescribeLogDirsRequest,
    UpdateFeaturesRequest,
)
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
)
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
)
from kafka.protocol.admin.topics import (
    AlterPartitionReassignmentsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeTopicPartitionsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
)
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    SyncGroupRequest,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)

from tests.security.share_requests import share_acknowledge, share_fetch, share_group_heartbeat
from wireserver.protocol.messages_extra import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
)
from wireserver.protocol.messages_share import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareGroupDescribeRequest,
)
from wireserver.protocol.messages_streams import (
    StreamsGroupDescribeRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
)
from wireserver.protocol.served import SERVED
from wireserver.security.acls import CLUSTER_NAME, Operation, PatternType, Permission
from wireserver.security.acls import ResourceType as R
from wireserver.testing import EmbeddedBroker, KafkaWire

USERS = {"alice": "alice-secret"}
ALICE = "User:alice"
TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED = 29, 30, 31, 53
AUTH_ERRORS = {TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED}
Op = Operation
CLUSTER = (R.CLUSTER, CLUSTER_NAME)

#: What each served API key requires (Kafka 4.1); "none" for the APIs anyone may call. The
#: keys marked (*) are covered by the older tests in test_acls_tls.py / test_sasl.py.
REQUIRED = {
    0: "WRITE topic; WRITE transactional id for transactional batches (*)",
    1: "READ topic; CLUSTER_ACTION cluster for followers (*)",
    2: "DESCRIBE topic",
    3: "DESCRIBE topic (unauthorized hidden); CREATE cluster/topic to auto-create (*)",
    8: "READ group, READ topic (*)",
    9: "DESCRIBE group, DESCRIBE topic (*)",
    10: "DESCRIBE group / transactional id (*)",
    11: "READ group (*)",
    12: "READ group",
    13: "READ group",
    14: "READ group",
    15: "DESCRIBE group",
    16: "DESCRIBE cluster (all groups) or DESCRIBE group (filter)",
    17: "none",
    18: "none",
    19: "CREATE cluster or topic; DESCRIBE_CONFIGS topic for returned configs",
    20: "DELETE cluster or topic; DESCRIBE topic (existence hidden)",
    21: "DELETE topic",
    22: "WRITE transactional id or IDEMPOTENT_WRITE cluster (*)",
    23: "CLUSTER_ACTION cluster or DESCRIBE topic",
    24: "WRITE transactional id + WRITE topic (v0-3); CLUSTER_ACTION cluster (v4+)",
    25: "WRITE transactional id + READ group",
    26: "WRITE transactional id",
    27: "ALTER or CLUSTER_ACTION cluster",
    28: "WRITE transactional id + READ group + READ topic",
    29: "DESCRIBE cluster (*)",
    30: "ALTER cluster (*)",
    31: "ALTER cluster (*)",
    32: "DESCRIBE_CONFIGS topic / group / cluster (broker resources)",
    33: "ALTER_CONFIGS topic / group / cluster (broker resources)",
    34: "ALTER cluster",
    35: "DESCRIBE cluster",
    36: "none",
    37: "ALTER topic",
    38: "CREATE_TOKENS user for another owner (*: tests/security/test_delegation_tokens.py)",
    39: "owner or renewer of the token (*)",
    40: "owner or renewer of the token (*)",
    41: "owner or renewer, or DESCRIBE token / DESCRIBE_TOKENS user (*)",
    42: "DELETE group",
    43: "ALTER cluster",
    45: "ALTER cluster",
    46: "DESCRIBE cluster",
    57: "ALTER cluster",
    44: "ALTER_CONFIGS topic / group / cluster (broker and broker-logger resources)",
    47: "DELETE group + READ topic",
    50: "DESCRIBE cluster (*)",
    48: "DESCRIBE_CONFIGS cluster",
    49: "ALTER_CONFIGS cluster",
    51: "ALTER cluster (*)",
    55: "DESCRIBE cluster (*: tests/apis/test_kraft_apis.py)",
    60: "none (authorized operations need DESCRIBE cluster)",
    64: "ALTER cluster (*)",
    61: "READ topic",
    65: "DESCRIBE transactional id (+ DESCRIBE topic to see its partitions)",
    66: "DESCRIBE transactional id (filter)",
    68: "READ group + DESCRIBE subscribed topics",
    69: "DESCRIBE group (+ DESCRIBE assigned topics)",
    88: "READ group + DESCRIBE topology topics (CREATE for internal ones: test_streams_protocol)",
    89: "DESCRIBE group",
    76: "READ group + DESCRIBE subscribed topics",
    77: "DESCRIBE group",
    78: "READ group + READ topic (topic: tests/share/test_share_groups.py)",
    79: "READ group + READ topic",
    90: "DESCRIBE group + DESCRIBE topic",
    91: "READ group + READ topic",
    92: "DELETE group + READ topic",
    83: "CLUSTER_ACTION cluster",
    84: "CLUSTER_ACTION cluster",
    85: "CLUSTER_ACTION cluster",
    86: "CLUSTER_ACTION cluster",
    87: "CLUSTER_ACTION cluster",
    93: "READ group",
    74: "DESCRIBE_CONFIGS cluster",
    75: "DESCRIBE topic (unauthorized hidden)",
    80: "ALTER cluster (*)",
    81: "ALTER cluster (*)",
    94: "ALTER cluster (*)",
}


def test_every_served_api_is_listed():
    served = {spec.key for spec in SERVED}
    assert served - REQUIRED.keys() == set(), "a served API says nothing about its ACLs"
    assert REQUIRED.keys() - served == set()


# ---- the broker and ACL chores ------------------------------------------------------------


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(sasl="PLAIN", users=USERS, authorizer=True) as broker:
        for topic in ("t", "doomed"):
            broker.create_topic(topic)
        with broker.wire() as wire:  # the admin (a super user) makes group g-listed exist
            topic = OffsetCommitRequest.OffsetCommitRequestTopic
            part = topic.OffsetCommitRequestPartition
            response = wire.request(
                OffsetCommitRequest(
                    version=7,
                    group_id="g-listed",
                    generation_id_or_member_epoch=-1,
                    member_id="",
                    group_instance_id=None,
                    topics=[
                        topic(
                            name="t",
                            partitions=[
                                part(
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
            assert response.topics[0].partitions[0].error_code == 0
            response = wire.request(
                InitProducerIdRequest(
                    version=4,
                    transactional_id="x-listed",
                    transaction_timeout_ms=60000,
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
            assert response.error_code == 0
        yield broker


def set_acls(broker, acls):
    """Make alice's ACLs exactly ``acls`` ((resource type, name, operation) triples)."""
    with broker.wire() as wire:
        filter_class = DeleteAclsRequest.DeleteAclsFilter
        wire.request(
            DeleteAclsRequest(
                version=3,
                filters=[
                    filter_class(
                        resource_type_filter=R.ANY,
                        resource_name_filter=None,
                        pattern_type_filter=PatternType.ANY,
                        principal_filter=ALICE,
                        host_filter=None,
                        operation=Op.ANY,
                        permission_type=Permission.ANY,
                    )
                ],
            )
        )
        if acls:
            response = wire.request(
                CreateAclsRequest(
                    version=3,
                    creations=[
                        CreateAclsRequest.AclCreation(
                            resource_type=kind,
                            resource_name=name,
                            resource_pattern_type=PatternType.LITERAL,
                            principal=ALICE,
                            host="*",
                            operation=operation,
                            permission_type=Permission.ALLOW,
                        )
                        for kind, name, operation in acls
                    ],
                )
            )
            assert [r.error_code for r in response.results] == [0] * len(acls)


def as_alice(broker, request):
    with KafkaWire(broker.bootstrap_servers, sasl=("PLAIN", "alice", USERS["alice"])) as wire:
        return wire.request(request)


# ---- the requests -------------------------------------------------------------------------


def topic_acl(operation, name="t"):
    return (R.TOPIC, name, operation)


def group_acl(operation, name="g"):
    return (R.GROUP, name, operation)


def txn_acl(operation, name="x"):
    return (R.TRANSACTIONAL_ID, name, operation)


def list_offsets():
    t = ListOffsetsRequest.ListOffsetsTopic
    return ListOffsetsRequest(
        version=7,
        topics=[t(name="t", partitions=[t.ListOffsetsPartition(partition_index=0, timestamp=-1)])],
    )


def create_topics(name="made"):
    t = CreateTopicsRequest.CreatableTopic
    return CreateTopicsRequest(
        version=7,
        timeout_ms=5000,
        validate_only=True,
        topics=[t(name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
    )


def delete_topics(name):
    return DeleteTopicsRequest(
        version=6, timeout_ms=5000, topics=[DeleteTopicsRequest.DeleteTopicState(name=name)]
    )


def delete_records():
    t = DeleteRecordsRequest.DeleteRecordsTopic
    return DeleteRecordsRequest(
        version=2,
        timeout_ms=5000,
        topics=[t(name="t", partitions=[t.DeleteRecordsPartition(partition_index=0, offset=-1)])],
    )


def offset_for_leader_epoch():
    t = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    return OffsetForLeaderEpochRequest(
        version=4,
        topics=[
            t(
                topic="t",
                partitions=[
                    t.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0)
                ],
            )
        ],
    )


def describe_configs(kind, name):
    r = DescribeConfigsRequest.DescribeConfigsResource
    return DescribeConfigsRequest(
        version=4, resources=[r(resource_type=kind, resource_name=name, configuration_keys=None)]
    )


def alter_configs(kind, name):
    r = AlterConfigsRequest.AlterConfigsResource
    return AlterConfigsRequest(
        version=2,
        validate_only=True,
        resources=[r(resource_type=kind, resource_name=name, configs=[])],
    )


def incremental_alter_configs(kind, name):
    r = IncrementalAlterConfigsRequest.AlterConfigsResource
    key, value = {2: ("retention.ms", "1000000"), 32: ("consumer.session.timeout.ms", "50000")}.get(
        kind, ("log.retention.ms", "1000000")
    )
    return IncrementalAlterConfigsRequest(
        version=1,
        validate_only=True,
        resources=[
            r(
                resource_type=kind,
                resource_name=name,
                configs=[r.AlterableConfig(name=key, config_operation=0, value=value)],
            )
        ],
    )


def create_partitions():
    t = CreatePartitionsRequest.CreatePartitionsTopic
    return CreatePartitionsRequest(
        version=3,
        timeout_ms=5000,
        validate_only=True,
        topics=[t(name="t", count=2, assignments=None)],
    )


def describe_topic_partitions():
    t = DescribeTopicPartitionsRequest.TopicRequest
    return DescribeTopicPartitionsRequest(
        version=0, topics=[t(name="t")], response_partition_limit=100, cursor=None
    )


def offset_delete(group):
    t = OffsetDeleteRequest.OffsetDeleteRequestTopic
    return OffsetDeleteRequest(
        version=0,
        group_id=group,
        topics=[t(name="t", partitions=[t.OffsetDeleteRequestPartition(partition_index=0)])],
    )


def consumer_group_heartbeat(group):
    return ConsumerGroupHeartbeatRequest(
        version=0,
        group_id=group,
        member_id="",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        server_assignor=None,
        topic_partitions=[],
    )


def add_partitions_to_txn(version=3):
    if version <= 3:
        t = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
        return AddPartitionsToTxnRequest(
            version=version,
            v3_and_below_transactional_id="x",
            v3_and_below_producer_id=1,
            v3_and_below_producer_epoch=0,
            v3_and_below_topics=[t(name="t", partitions=[0])],
        )
    txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    return AddPartitionsToTxnRequest(
        version=version,
        transactions=[
            txn(
                transactional_id="x",
                producer_id=1,
                producer_epoch=0,
                verify_only=True,
                topics=[txn.AddPartitionsToTxnTopic(name="t", partitions=[0])],
            )
        ],
    )


def txn_offset_commit():
    t = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    return TxnOffsetCommitRequest(
        version=3,
        transactional_id="x",
        group_id="g",
        producer_id=1,
        producer_epoch=0,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            t(
                name="t",
                partitions=[
                    t.TxnOffsetCommitRequestPartition(
                        partition_index=0,
                        committed_offset=0,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                ],
            )
        ],
    )


def write_txn_markers():
    m = WriteTxnMarkersRequest.WritableTxnMarker
    return WriteTxnMarkersRequest(
        version=1,
        markers=[
            m(
                producer_id=12345,
                producer_epoch=0,
                transaction_result=False,
                coordinator_epoch=0,
                topics=[m.WritableTxnMarkerTopic(name="t", partition_indexes=[0])],
            )
        ],
    )


def share_state_request(api_key, **partition_fields):
    """One of the share coordinator's state RPCs (83-87) for one share-partition."""
    request_class = SERVED.get(api_key).request_class
    (data_name,) = [n for n in request_class.__dict__ if n.endswith("Data")]
    data = getattr(request_class, data_name)
    return request_class(
        version=0,
        group_id="sg",
        topics=[
            data(
                topic_id=uuid.uuid4(),
                partitions=[data.PartitionData(partition=0, **partition_fields)],
            )
        ],
    )


def share_state_error(response):
    return response.results[0].partitions[0].error_code


SHARE_STATE_REQUESTS = {
    83: lambda: share_state_request(83, state_epoch=0, start_offset=0),
    84: lambda: share_state_request(84, leader_epoch=0),
    85: lambda: share_state_request(
        85, state_epoch=0, leader_epoch=0, start_offset=0, state_batches=[]
    ),
    86: lambda: share_state_request(86),
    87: lambda: share_state_request(87, leader_epoch=0),
}


def describe_producers():
    t = DescribeProducersRequest.TopicRequest
    return DescribeProducersRequest(version=0, topics=[t(name="t", partition_indexes=[0])])


def first_partition(response):
    return response.topics[0].partitions[0].error_code


def top(response):
    return response.error_code


def alter_replica_log_dirs(path):
    entry = AlterReplicaLogDirsRequest.AlterReplicaLogDir
    topic = entry.AlterReplicaLogDirTopic(name="t", partitions=[0])
    return AlterReplicaLogDirsRequest(version=2, dirs=[entry(path=path, topics=[topic])])


# (api key, request, error of the response, ACLs in both runs, ACLs only in the second run,
#  the error without the latter)
CASES = [
    (2, list_offsets, first_partition, [], [topic_acl(Op.DESCRIBE)], TOPIC_DENIED),
    (
        19,
        create_topics,
        lambda r: r.topics[0].error_code,
        [],
        [topic_acl(Op.CREATE, "made")],
        TOPIC_DENIED,
    ),
    (
        19,
        create_topics,
        lambda r: r.topics[0].error_code,
        [],
        [(*CLUSTER, Op.CREATE)],
        TOPIC_DENIED,
    ),
    (
        20,
        lambda: delete_topics("doomed"),
        lambda r: r.responses[0].error_code,
        [],
        [topic_acl(Op.DELETE, "doomed")],
        TOPIC_DENIED,
    ),
    (21, delete_records, first_partition, [], [topic_acl(Op.DELETE)], TOPIC_DENIED),
    (23, offset_for_leader_epoch, first_partition, [], [topic_acl(Op.DESCRIBE)], TOPIC_DENIED),
    (
        23,
        offset_for_leader_epoch,
        first_partition,
        [],
        [(*CLUSTER, Op.CLUSTER_ACTION)],
        TOPIC_DENIED,
    ),
    (
        32,
        lambda: describe_configs(2, "t"),
        lambda r: r.results[0].error_code,
        [],
        [topic_acl(Op.DESCRIBE_CONFIGS)],
        TOPIC_DENIED,
    ),
    (
        32,
        lambda: describe_configs(4, "0"),
        lambda r: r.results[0].error_code,
        [],
        [(*CLUSTER, Op.DESCRIBE_CONFIGS)],
        CLUSTER_DENIED,
    ),
    (
        33,
        lambda: alter_configs(2, "t"),
        lambda r: r.responses[0].error_code,
        [],
        [topic_acl(Op.ALTER_CONFIGS)],
        TOPIC_DENIED,
    ),
    (
        33,
        lambda: alter_configs(4, ""),
        lambda r: r.responses[0].error_code,
        [],
        [(*CLUSTER, Op.ALTER_CONFIGS)],
        CLUSTER_DENIED,
    ),
    (
        44,
        lambda: incremental_alter_configs(2, "t"),
        lambda r: r.responses[0].error_code,
        [],
        [topic_acl(Op.ALTER_CONFIGS)],
        TOPIC_DENIED,
    ),
    (
        44,
        lambda: incremental_alter_configs(4, ""),
        lambda r: r.responses[0].error_code,
        [],
        [(*CLUSTER, Op.ALTER_CONFIGS)],
        CLUSTER_DENIED,
    ),
    (
        74,
        lambda: ListConfigResourcesRequest(version=1, resource_types=[32]),
        top,
        [],
        [(*CLUSTER, Op.DESCRIBE_CONFIGS)],
        CLUSTER_DENIED,
    ),
    (
        32,
        lambda: describe_configs(32, "g"),
        lambda r: r.results[0].error_code,
        [],
        [group_acl(Op.DESCRIBE_CONFIGS)],
        GROUP_DENIED,
    ),
    (
        33,
        lambda: alter_configs(32, "g"),
        lambda r: r.responses[0].error_code,
        [],
        [group_acl(Op.ALTER_CONFIGS)],
        GROUP_DENIED,
    ),
    (
        44,
        lambda: incremental_alter_configs(32, "g"),
        lambda r: r.responses[0].error_code,
        [],
        [group_acl(Op.ALTER_CONFIGS)],
        GROUP_DENIED,
    ),
    (
        34,
        lambda: alter_replica_log_dirs("/not-a-log-dir"),
        lambda r: r.results[0].partitions[0].error_code,
        [],
        [(*CLUSTER, Op.ALTER)],
        CLUSTER_DENIED,
    ),
    (
        35,
        lambda: DescribeLogDirsRequest(version=4, topics=None),
        top,
        [],
        [(*CLUSTER, Op.DESCRIBE)],
        CLUSTER_DENIED,
    ),
    (
        57,
        lambda: UpdateFeaturesRequest(
            version=2,
            timeout_ms=1000,
            feature_updates=[
                UpdateFeaturesRequest.FeatureUpdateKey(
                    feature="group.version", max_version_level=1, upgrade_type=1
                )
            ],
            validate_only=True,
        ),
        top,
        [],
        [(*CLUSTER, Op.ALTER)],
        CLUSTER_DENIED,
    ),
    (
        43,
        lambda: ElectLeadersRequest(
            version=2, election_type=0, topic_partitions=None, timeout_ms=1000
        ),
        top,
        [],
        [(*CLUSTER, Op.ALTER)],
        CLUSTER_DENIED,
    ),
    (
        45,
        lambda: AlterPartitionReassignmentsRequest(
            version=0,
            timeout_ms=1000,
            topics=[AlterPartitionReassignmentsRequest.ReassignableTopic(name="t", partitions=[])],
        ),
        top,
        [],
        [(*CLUSTER, Op.ALTER)],
        CLUSTER_DENIED,
    ),
    (
        46,
        lambda: ListPartitionReassignmentsRequest(version=0, timeout_ms=1000, topics=None),
        top,
        [],
        [(*CLUSTER, Op.DESCRIBE)],
        CLUSTER_DENIED,
    ),
    (
        37,
        create_partitions,
        lambda r: r.results[0].error_code,
        [],
        [topic_acl(Op.ALTER)],
        TOPIC_DENIED,
    ),
    (
        75,
        describe_topic_partitions,
        lambda r: r.topics[0].error_code,
        [],
        [topic_acl(Op.DESCRIBE)],
        TOPIC_DENIED,
    ),
    (
        14,
        lambda: SyncGroupRequest(
            version=5,
            group_id="g",
            generation_id=1,
            member_id="m",
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[],
        ),
        top,
        [],
        [group_acl(Op.READ)],
        GROUP_DENIED,
    ),
    (
        12,
        lambda: HeartbeatRequest(
            version=4, group_id="g", generation_id=1, member_id="m", group_instance_id=None
        ),
        top,
        [],
        [group_acl(Op.READ)],
        GROUP_DENIED,
    ),
    (
        13,
        lambda: LeaveGroupRequest(
            version=5,
            group_id="g",
            members=[
                LeaveGroupRequest.MemberIdentity(member_id="m", group_instance_id=None, reason=None)
            ],
        ),
        top,
        [],
        [group_acl(Op.READ)],
        GROUP_DENIED,
    ),
    (
        15,
        lambda: DescribeGroupsRequest(version=5, groups=["g"], include_authorized_operations=False),
        lambda r: r.groups[0].error_code,
        [],
        [group_acl(Op.DESCRIBE)],
        GROUP_DENIED,
    ),
    (
        89,
        lambda: StreamsGroupDescribeRequest(
            version=1,
            group_ids=["g"],
            include_authorized_operations=False,
            include_topology_description=False,
        ),
        lambda r: r.groups[0].error_code,
        [],
        [group_acl(Op.DESCRIBE)],
        GROUP_DENIED,
    ),
    (
        93,
        lambda: StreamsGroupTopologyDescriptionUpdateRequest(
            version=0,
            group_id="g",
            member_id="m",
            topology_epoch=0,
            topology_description=StreamsGroupTopologyDescriptionUpdateRequest.TopologyDescription(
                subtopologies=[], global_stores=[]
            ),
        ),
        lambda r: r.error_code,
        [],
        [group_acl(Op.READ)],
        GROUP_DENIED,
    ),
    (
        42,
        lambda: DeleteGroupsRequest(version=2, groups_names=["g"]),
        lambda r: r.results[0].error_code,
        [],
        [group_acl(Op.DELETE)],
        GROUP_DENIED,
    ),
    (
        47,
        lambda: offset_delete("g-listed"),
        top,
        [],
        [group_acl(Op.DELETE, "g-listed")],
        GROUP_DENIED,
    ),
    (
        47,
        lambda: offset_delete("g-listed"),
        first_partition,
        [group_acl(Op.DELETE, "g-listed")],
        [topic_acl(Op.READ)],
        TOPIC_DENIED,
    ),
    (
        68,
        lambda: consumer_group_heartbeat("cg"),
        top,
        [topic_acl(Op.DESCRIBE)],
        [group_acl(Op.READ, "cg")],
        GROUP_DENIED,
    ),
    (
        68,
        lambda: consumer_group_heartbeat("cg"),
        top,
        [group_acl(Op.READ, "cg")],
        [topic_acl(Op.DESCRIBE)],
        TOPIC_DENIED,
    ),
    (
        76,
        lambda: share_group_heartbeat("sg"),
        top,
        [topic_acl(Op.DESCRIBE)],
        [group_acl(Op.READ, "sg")],
        GROUP_DENIED,
    ),
    (
        76,
        lambda: share_group_heartbeat("sg"),
        top,
        [group_acl(Op.READ, "sg")],
        [topic_acl(Op.DESCRIBE)],
        TOPIC_DENIED,
    ),
    (
        77,
        lambda: ShareGroupDescribeRequest(
            version=1, group_ids=["sgd"], include_authorized_operations=False
        ),
        lambda r: r.groups[0].error_code,
        [],
        [group_acl(Op.DESCRIBE, "sgd")],
        GROUP_DENIED,
    ),
    (78, lambda: share_fetch("sf"), top, [], [group_acl(Op.READ, "sf")], GROUP_DENIED),
    (
        90,
        lambda: DescribeShareGroupOffsetsRequest(
            version=1,
            groups=[
                DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(
                    group_id="so", topics=None
                )
            ],
        ),
        lambda r: r.groups[0].error_code,
        [],
        [group_acl(Op.DESCRIBE, "so")],
        GROUP_DENIED,
    ),
    (79, lambda: share_acknowledge("sa"), top, [], [group_acl(Op.READ, "sa")], GROUP_DENIED),
    (
        91,
        lambda: AlterShareGroupOffsetsRequest(version=0, group_id="sr", topics=[]),
        top,
        [],
        [group_acl(Op.READ, "sr")],
        GROUP_DENIED,
    ),
    (
        92,
        lambda: DeleteShareGroupOffsetsRequest(version=0, group_id="sd", topics=[]),
        top,
        [],
        [group_acl(Op.DELETE, "sd")],
        GROUP_DENIED,
    ),
    (
        69,
        lambda: ConsumerGroupDescribeRequest(
            version=0, group_ids=["cgd"], include_authorized_operations=False
        ),
        lambda r: r.groups[0].error_code,
        [],
        [group_acl(Op.DESCRIBE, "cgd")],
        GROUP_DENIED,
    ),
    (
        24,
        add_partitions_to_txn,
        lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        [],
        [txn_acl(Op.WRITE), topic_acl(Op.WRITE)],
        TXN_DENIED,
    ),
    (
        24,
        add_partitions_to_txn,
        lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        [txn_acl(Op.WRITE)],
        [topic_acl(Op.WRITE)],
        TOPIC_DENIED,
    ),
    (
        24,
        lambda: add_partitions_to_txn(4),
        top,
        [],
        [(*CLUSTER, Op.CLUSTER_ACTION)],
        CLUSTER_DENIED,
    ),
    (
        25,
        lambda: AddOffsetsToTxnRequest(
            version=3, transactional_id="x", producer_id=1, producer_epoch=0, group_id="g"
        ),
        top,
        [group_acl(Op.READ)],
        [txn_acl(Op.WRITE)],
        TXN_DENIED,
    ),
    (
        25,
        lambda: AddOffsetsToTxnRequest(
            version=3, transactional_id="x", producer_id=1, producer_epoch=0, group_id="g"
        ),
        top,
        [txn_acl(Op.WRITE)],
        [group_acl(Op.READ)],
        GROUP_DENIED,
    ),
    (
        26,
        lambda: EndTxnRequest(
            version=3, transactional_id="x", producer_id=1, producer_epoch=0, committed=False
        ),
        top,
        [],
        [txn_acl(Op.WRITE)],
        TXN_DENIED,
    ),
    (
        28,
        txn_offset_commit,
        first_partition,
        [group_acl(Op.READ), topic_acl(Op.READ)],
        [txn_acl(Op.WRITE)],
        TXN_DENIED,
    ),
    (
        28,
        txn_offset_commit,
        first_partition,
        [txn_acl(Op.WRITE), topic_acl(Op.READ)],
        [group_acl(Op.READ)],
        GROUP_DENIED,
    ),
    (
        28,
        txn_offset_commit,
        first_partition,
        [txn_acl(Op.WRITE), group_acl(Op.READ)],
        [topic_acl(Op.READ)],
        TOPIC_DENIED,
    ),
    (
        27,
        write_txn_markers,
        lambda r: r.markers[0].topics[0].partitions[0].error_code,
        [],
        [(*CLUSTER, Op.CLUSTER_ACTION)],
        CLUSTER_DENIED,
    ),
    (
        27,
        write_txn_markers,
        lambda r: r.markers[0].topics[0].partitions[0].error_code,
        [],
        [(*CLUSTER, Op.ALTER)],
        CLUSTER_DENIED,
    ),
    (61, describe_producers, first_partition, [], [topic_acl(Op.READ)], TOPIC_DENIED),
    *(
        (key, factory, share_state_error, [], [(*CLUSTER, Op.CLUSTER_ACTION)], CLUSTER_DENIED)
        for key, factory in SHARE_STATE_REQUESTS.items()
    ),
    (
        65,
        lambda: DescribeTransactionsRequest(version=0, transactional_ids=["x"]),
        lambda r: r.transaction_states[0].error_code,
        [],
        [txn_acl(Op.DESCRIBE)],
        TXN_DENIED,
    ),
]


@pytest.mark.parametrize(
    "key, request_factory, error_of, pre, acls, denied",
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_api_needs_its_acl(broker, key, request_factory, error_of, pre, acls, denied):
    request = request_factory()
    assert request.API_KEY == key
    set_acls(broker, pre)
    assert error_of(as_alice(broker, request_factory())) == denied
    set_acls(broker, pre + acls)
    assert error_of(as_alice(broker, request_factory())) not in AUTH_ERRORS


# ---- filtering and hiding ----------------------------------------------------------------


def test_list_groups_shows_only_describable_groups(broker):
    def listed():
        return {g.group_id for g in as_alice(broker, ListGroupsRequest(version=4)).groups}

    set_acls(broker, [])
    assert "g-listed" not in listed()
    set_acls(broker, [group_acl(Op.DESCRIBE, "g-listed")])
    assert "g-listed" in listed()
    set_acls(broker, [(*CLUSTER, Op.DESCRIBE)])
    assert "g-listed" in listed()


def test_list_transactions_shows_only_describable_ids(broker):
    def listed():
        response = as_alice(
            broker, ListTransactionsRequest(version=0, state_filters=[], producer_id_filters=[])
        )
        return {t.transactional_id for t in response.transaction_states}

    set_acls(broker, [])
    assert listed() == set()
    set_acls(broker, [txn_acl(Op.DESCRIBE, "x-listed")])
    assert listed() == {"x-listed"}


def test_delete_topics_hides_existence(broker):
    set_acls(broker, [])
    response = as_alice(broker, delete_topics("ghost"))  # unknown and not describable
    assert response.responses[0].error_code == TOPIC_DENIED
    set_acls(broker, [topic_acl(Op.DESCRIBE, "ghost")])  # describable: unknown is said
    assert as_alice(broker, delete_topics("ghost")).responses[0].error_code == 3
    set_acls(broker, [topic_acl(Op.DESCRIBE)])  # describable, exists, no DELETE
    assert as_alice(broker, delete_topics("t")).responses[0].error_code == TOPIC_DENIED


def test_describe_topic_partitions_hides_like_metadata(broker):
    set_acls(broker, [])
    every = DescribeTopicPartitionsRequest(
        version=0, topics=[], response_partition_limit=100, cursor=None
    )
    assert as_alice(broker, every).topics == []
    set_acls(broker, [topic_acl(Op.READ)])
    [topic] = as_alice(broker, every).topics
    assert topic.name == "t" and topic.error_code == 0
    assert topic.topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_create_topics_hides_configs_without_describe_configs(broker):
    set_acls(broker, [topic_acl(Op.CREATE, "made")])
    result = as_alice(broker, create_topics()).topics[0]
    assert (result.error_code, result.topic_config_error_code) == (0, TOPIC_DENIED)
    assert result.configs == [] and result.num_partitions == -1
    set_acls(broker, [topic_acl(Op.CREATE, "made"), topic_acl(Op.DESCRIBE_CONFIGS, "made")])
    result = as_alice(broker, create_topics()).topics[0]
    assert (result.error_code, result.topic_config_error_code) == (0, 0)
    assert result.configs and result.num_partitions == 1


def test_describe_cluster_reports_authorized_operations(broker):
    request = DescribeClusterRequest(
        version=1, include_cluster_authorized_operations=True, endpoint_type=1
    )
    set_acls(broker, [])
    response = as_alice(broker, request)
    assert response.error_code == 0 and not response.authorized_operations
    set_acls(broker, [(*CLUSTER, Op.DESCRIBE), (*CLUSTER, Op.ALTER)])
    assert set(as_alice(broker, request).authorized_operations) == {Op.DESCRIBE, Op.ALTER}


def test_consumer_group_describe_hides_groups_with_undescribable_topics(broker):
    set_acls(broker, [group_acl(Op.READ, "cg2"), topic_acl(Op.DESCRIBE)])
    joined = as_alice(broker, consumer_group_heartbeat("cg2"))
    assert joined.error_code == 0
    describe = ConsumerGroupDescribeRequest(
        version=0, group_ids=["cg2"], include_authorized_operations=False
    )
    set_acls(broker, [group_acl(Op.DESCRIBE, "cg2")])
    group = as_alice(broker, describe).groups[0]
    assert group.error_code == TOPIC_DENIED and group.members == []
    set_acls(broker, [group_acl(Op.DESCRIBE, "cg2"), topic_acl(Op.DESCRIBE)])
    group = as_alice(broker, describe).groups[0]
    assert group.error_code == 0 and len(group.members) == 1


def test_apis_without_acls(broker):
    set_acls(broker, [])
    assert (
        as_alice(
            broker,
            ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1"),
        ).error_code
        == 0
    )
