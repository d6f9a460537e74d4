"""``error_response`` and ``request_targets`` for every API and version wireserver serves.

Each request is built from its schema with two topics of two partitions, two groups and two
transactional ids where the schema has room for them, encoded as a client sends it and decoded
by ``decode_request`` (so it is what the server sees). Its error response is encoded as the
server writes it and read back with the response class; every error field must carry the code,
every message field the message, and every item the request names must be answered."""

from __future__ import annotations

import socket
import struct
import uuid

import kafka.errors as kafka_errors
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.cluster import ClusterMetadata
from kafka.protocol.parser import KafkaProtocol

from tests.integration import raw
from tests.protocol.message_strategies import message_strategy
from wireserver.controls.error_responses import (
    REFUSED,
    ErrorInjectionUnsupported,
    error_response,
    request_targets,
)
from wireserver.protocol.framing import FrameDecoder
from wireserver.protocol.messages import decode_request, encode_response_chunks
from wireserver.protocol.served import SERVED
from wireserver.testing import EmbeddedBroker

NOT_LEADER_OR_FOLLOWER = 6
COORDINATOR_NOT_AVAILABLE = 15
TOPIC_AUTHORIZATION_FAILED = 29
TOPICS = ("orders", "payments")
TOPIC_IDS = {name: uuid.uuid5(uuid.NAMESPACE_DNS, name) for name in TOPICS}
TOPIC_OF_ID = {topic_id: name for name, topic_id in TOPIC_IDS.items()}
GROUPS = ("group-a", "group-b")
TXNS = ("txn-a", "txn-b")
BROKERS = [(0, "127.0.0.1", 9092, None)]

VERSIONS = [
    (spec, version)
    for spec in SERVED
    if spec.name not in REFUSED
    for version in range(spec.min_version, spec.max_version + 1)
]
IDS = [f"{spec.name}-v{version}" for spec, version in VERSIONS]

#: What each API answers item by item (the rest answer with their top-level error alone).
PER_PARTITION = {
    "AlterReplicaLogDirs",
    "Produce",
    "Fetch",
    "ListOffsets",
    "OffsetCommit",
    "OffsetFetch",
    "OffsetForLeaderEpoch",
    "DeleteRecords",
    "AddPartitionsToTxn",
    "WriteTxnMarkers",
    "TxnOffsetCommit",
    "ElectLeaders",
    "AlterPartitionReassignments",
    "OffsetDelete",
    "DescribeProducers",
    "DescribeQuorum",
}
PER_TOPIC = {
    "Metadata",
    "CreateTopics",
    "DeleteTopics",
    "CreatePartitions",
    "DescribeTopicPartitions",
}
PER_GROUP = {
    "DescribeGroups",
    "DeleteGroups",
    "ConsumerGroupDescribe",
    "StreamsGroupDescribe",
    "ShareGroupDescribe",
    "DescribeShareGroupOffsets",
}
PER_RESOURCE = {"DescribeConfigs", "AlterConfigs", "IncrementalAlterConfigs"}


# -- requests built from their schema ---------------------------------------------------------


def _string(field, index: int) -> str:
    entity = field._entity_type
    if entity == "topicName":
        return TOPICS[index]
    if entity == "groupId" or field.name in ("key", "coordinator_keys"):
        return GROUPS[index]
    if entity == "transactionalId":
        return TXNS[index]
    return f"{field.name}-{index}"


def _sample_value(field, version: int, index: int, topic: str):
    if field.is_struct_array():
        return [_sample_struct(field, version, i) for i in range(2)]
    if field.is_struct():
        if field.nullable_for_version_q(version):
            return None
        return _sample_struct(field, version, index)
    kind = field.array_of.type_str if field.is_array() else field.type_str
    if field.is_array():
        if kind == "string":
            return [_string(field, i) for i in range(2)]
        if kind == "uuid":
            return [TOPIC_IDS[name] for name in TOPICS]
        return [0, 1]
    if kind == "string":
        return _string(field, index)
    if kind == "uuid":
        return TOPIC_IDS[topic] if field.name == "topic_id" else uuid.UUID(int=index + 1)
    if kind in ("bytes", "records"):
        return b""
    if field.name == "acks":
        return -1
    if field.name in ("partition", "partition_index", "index"):
        return index
    return field.default


def _sample_struct(struct, version: int, index: int):
    """An element ``index`` of a request array: its topic is ``TOPICS[index]``."""
    values = {
        field.name: _sample_value(field, version, index, TOPICS[index])
        for field in struct.untagged_fields(version)
    }
    return struct.data_class(version=version, **values)


def sample_request(spec, version: int):
    """The request as the server decodes it, from bytes a client would send."""
    cls = spec.request_class
    values = {
        field.name: _sample_value(field, version, 0, TOPICS[0])
        for field in cls._struct.untagged_fields(version)
    }
    sent = cls(version=version, **values)
    sent.with_header(correlation_id=7, client_id="sample")
    (frame,) = FrameDecoder().feed(sent.encode(header=True, framed=True))
    return decode_request(frame, SERVED)


def written(request, response) -> bytes:
    """The response bytes as the server writes them."""
    return b"".join(
        encode_response_chunks(
            request.spec, response.version, request.header.correlation_id, response
        )
    )


def read_back(spec, data: bytes, version: int):
    decoded = spec.response_class.decode(data, version=version, header=True, framed=True)
    assert decoded.header.correlation_id == 7
    return decoded


# -- what a response carries ------------------------------------------------------------------

_TOPIC_KEYS = ("name", "topic", "topic_name")
_PARTITION_KEYS = ("partition_index", "partition", "index", "partition_id")
_GROUP_KEYS = ("group_id", "key", "transactional_id")
_OTHER_KEYS = ("user", "feature", "member_id")


def error_fields(message, version, around=None):
    """(keys of the elements around it, field name, value) of every untagged error-code and
    error-message field in a decoded message; keys: "topic" (ids read back as names),
    "partition", "group" (group id, coordinator key or transactional id), "resource"."""
    keys = dict(around or {})
    fields = message._struct.untagged_fields(version)
    for field in fields:
        value = getattr(message, field.name)
        if field.name in _TOPIC_KEYS and field._entity_type == "topicName":
            keys["topic"] = value
        elif field.name == "topic_id" and value in TOPIC_OF_ID:
            keys["topic"] = TOPIC_OF_ID[value]
        elif field.name in _PARTITION_KEYS and isinstance(value, int):
            keys["partition"] = value
        elif field.name in _GROUP_KEYS:
            keys["group"] = value
        elif field.name == "resource_name":
            keys["resource"] = value
        elif field.name in _OTHER_KEYS:
            keys["other"] = value
    found = []
    for field in fields:
        value = getattr(message, field.name)
        if field.name.endswith(("error_code", "error_message")):
            found.append((keys, field.name, value))
        elif field.is_struct_array():
            for element in value or ():
                found.extend(error_fields(element, version, keys))
        elif field.is_struct() and value is not None:
            found.extend(error_fields(value, version, keys))
    return found


def answered(found, kind):
    return {
        tuple(keys.get(k) for k in kind)
        for keys, name, value in found
        if name.endswith("error_code")
    }


# -- error_response ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec,version", VERSIONS, ids=IDS)
@pytest.mark.parametrize("code", [NOT_LEADER_OR_FOLLOWER, COORDINATOR_NOT_AVAILABLE])
def test_every_item_answered_with_the_error(spec, version, code):
    request = sample_request(spec, version)
    message = f"injected {code}"
    response = error_response(request, code, message, brokers=BROKERS)
    decoded = read_back(spec, written(request, response), response.version)

    found = error_fields(decoded, response.version)
    codes = [value for _, name, value in found if name.endswith("error_code")]
    messages = [value for _, name, value in found if name.endswith("error_message")]
    assert codes, "no error field carries the code"
    assert set(codes) == {code}
    assert set(messages) <= {message}

    name = spec.name
    if name in PER_PARTITION:
        expected = {(topic, partition) for topic in TOPICS for partition in (0, 1)}
        assert expected <= answered(found, ("topic", "partition"))
    if name in PER_TOPIC:
        assert set(TOPICS) <= {topic for (topic,) in answered(found, ("topic",))}
    if name in PER_GROUP or (name == "FindCoordinator" and version >= 4):
        assert set(GROUPS) <= {group for (group,) in answered(found, ("group",))}
    if name in PER_RESOURCE:
        resources = {resource for (resource,) in answered(found, ("resource",))}
        assert {"resource_name-0", "resource_name-1"} <= resources
    if name == "OffsetFetch" and version >= 8:
        assert set(GROUPS) <= {group for (group,) in answered(found, ("group",))}
    if (name == "AddPartitionsToTxn" and version >= 4) or name == "DescribeTransactions":
        assert set(TXNS) <= {txn for (txn,) in answered(found, ("group",))}
    others = {other for (other,) in answered(found, ("other",))}
    if name in ("DescribeUserScramCredentials", "AlterUserScramCredentials"):
        assert {"name-0", "name-1"} <= others
    if name == "UpdateFeatures" and version < 2:  # v2 answers with its top-level error alone
        assert {"feature-0", "feature-1"} <= others
    if name == "LeaveGroup" and version >= 3:  # v3 batches members
        assert {"member_id-0", "member_id-1"} <= others
    if name in ("CreateAcls", "DeleteAcls"):  # one result per creation or filter, in order
        assert len(codes) == 2
    # nothing answered that the request did not name
    for keys, _, _ in found:
        assert keys.get("topic") in (None, *TOPICS)
        assert keys.get("group") in (None, "", *GROUPS, *TXNS)


@pytest.mark.parametrize("spec,version", VERSIONS, ids=IDS)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_request_gets_an_answer_clients_read(spec, version, data):
    """Whatever a request holds (null arrays, empty ones, odd names), its error answer
    encodes, reads back, and carries the code in every error field and nothing else."""
    sent = data.draw(message_strategy(spec.request_class, version))
    sent.with_header(correlation_id=7, client_id="any")
    (frame,) = FrameDecoder().feed(sent.encode(header=True, framed=True))
    request = decode_request(frame, SERVED)
    response = error_response(request, COORDINATOR_NOT_AVAILABLE, "busy", brokers=BROKERS)
    decoded = read_back(spec, written(request, response), response.version)
    for _, name, value in error_fields(decoded, response.version):
        assert value == (COORDINATOR_NOT_AVAILABLE if name.endswith("error_code") else "busy")
    request_targets(request, TOPIC_OF_ID.get)  # reads any request without failing


def test_top_level_error_carries_the_code():
    """A response with only a top-level error code (JoinGroup here) carries it, with the
    "no data" defaults a client expects beside it."""
    request = sample_request(SERVED.get(11), 9)
    response = error_response(request, COORDINATOR_NOT_AVAILABLE)
    decoded = read_back(request.spec, written(request, response), 9)
    assert decoded.error_code == COORDINATOR_NOT_AVAILABLE
    assert decoded.generation_id == -1
    assert decoded.member_id == ""  # nothing of the request echoed at the top level
    assert decoded.protocol_name is None
    assert decoded.members == []


def test_no_data_defaults_of_a_produce_answer():
    request = sample_request(SERVED.get(0), 13)
    response = error_response(request, NOT_LEADER_OR_FOLLOWER, "moved")
    decoded = read_back(request.spec, written(request, response), 13)
    assert [topic.topic_id for topic in decoded.responses] == [TOPIC_IDS[t] for t in TOPICS]
    for topic in decoded.responses:
        for partition in topic.partition_responses:
            assert partition.error_code == NOT_LEADER_OR_FOLLOWER
            assert partition.error_message == "moved"
            assert partition.base_offset == -1
            assert partition.log_start_offset == -1
            assert partition.record_errors == []


def test_find_coordinator_answer_points_nowhere():
    request = sample_request(SERVED.get(10), 3)
    decoded = read_back(
        request.spec, written(request, error_response(request, COORDINATOR_NOT_AVAILABLE)), 3
    )
    assert (decoded.error_code, decoded.node_id, decoded.host, decoded.port) == (15, -1, "", -1)
    assert decoded.error_message is None


def test_metadata_lists_the_brokers_given():
    request = sample_request(SERVED.get(3), 12)
    response = error_response(request, 5, brokers=[(1, "h1", 9093, "r1"), (2, "h2", 9094, None)])
    decoded = read_back(request.spec, written(request, response), 12)
    assert [(b.node_id, b.host, b.port, b.rack) for b in decoded.brokers] == [
        (1, "h1", 9093, "r1"),
        (2, "h2", 9094, None),
    ]
    assert [(t.name, t.error_code, t.partitions) for t in decoded.topics] == [
        ("orders", 5, []),
        ("payments", 5, []),
    ]
    assert decoded.controller_id == -1


def test_metadata_without_brokers_is_refused():
    request = sample_request(SERVED.get(3), 12)
    with pytest.raises(ValueError, match="brokers"):
        error_response(request, 5)


@pytest.mark.parametrize("version", [1, 9, 13])
def test_metadata_of_every_topic_is_answered_with_no_topics(version):
    spec = SERVED.get(3)
    sent = spec.request_class(version=version, topics=None)
    sent.with_header(correlation_id=7, client_id="sample")
    (frame,) = FrameDecoder().feed(sent.encode(header=True, framed=True))
    request = decode_request(frame, SERVED)
    decoded = read_back(
        spec, written(request, error_response(request, 5, brokers=BROKERS)), version
    )
    assert decoded.topics == []
    assert len(decoded.brokers) == 1
    if version >= 13:
        assert decoded.error_code == 5


def test_api_versions_error_is_v0_whatever_the_version():
    """kafka-python reads an ApiVersions error as v0 (as Java falls back to): so it is one."""
    request = sample_request(SERVED.get(18), 4)
    response = error_response(request, 35)
    assert response.version == 0
    decoded = read_back(request.spec, written(request, response), 4)
    assert decoded.error_code == 35
    assert decoded.api_keys == []


def test_code_zero_is_refused():
    request = sample_request(SERVED.get(12), 4)
    with pytest.raises(ValueError, match="non-zero"):
        error_response(request, 0)


def test_api_versions_at_a_version_not_served_is_answered_at_v0():
    spec = SERVED.get(18)
    sent = spec.request_class(version=spec.max_version)
    sent.with_header(correlation_id=7, client_id="sample")
    data = bytearray(sent.encode(header=True, framed=True))
    data[6:8] = (spec.max_version + 1).to_bytes(2, "big")  # a version from the future
    (frame,) = FrameDecoder().feed(bytes(data))
    request = decode_request(frame, SERVED)
    assert request.body is None
    response = error_response(request, COORDINATOR_NOT_AVAILABLE)
    decoded = read_back(spec, written(request, response), spec.max_version + 1)
    assert (decoded.error_code, decoded.api_keys) == (COORDINATOR_NOT_AVAILABLE, [])
    assert dict(request_targets(request).topics) == {}


def test_a_refused_api_raises_naming_it(monkeypatch):
    monkeypatch.setitem(REFUSED, "Heartbeat", "a reason")
    with pytest.raises(ErrorInjectionUnsupported, match="Heartbeat: .*a reason"):
        error_response(sample_request(SERVED.get(12), 4), COORDINATOR_NOT_AVAILABLE)


# -- request_targets ---------------------------------------------------------------------------

#: API name → what its sample request names: "partitions" (both topics, partitions 0 and 1),
#: "topics" (both topics, no partitions: a ConsumerGroupHeartbeat subscribes to every partition
#: of the topics it owns partitions of), and the group keys it names.
TARGETS = {
    "Produce": ("partitions", TXNS[:1]),
    "Fetch": ("partitions", ()),
    "ListOffsets": ("partitions", ()),
    "Metadata": ("topics", ()),
    "OffsetCommit": ("partitions", GROUPS[:1]),
    "OffsetFetch": ("partitions", GROUPS[:1]),
    "FindCoordinator": (None, GROUPS[:1]),
    "JoinGroup": (None, GROUPS[:1]),
    "Heartbeat": (None, GROUPS[:1]),
    "LeaveGroup": (None, GROUPS[:1]),
    "SyncGroup": (None, GROUPS[:1]),
    "DescribeGroups": (None, GROUPS),
    "ListGroups": (None, ()),
    "SaslHandshake": (None, ()),
    "ApiVersions": (None, ()),
    "CreateTopics": ("assignments", ()),
    "DeleteTopics": ("topics", ()),
    "DeleteRecords": ("partitions", ()),
    "InitProducerId": (None, TXNS[:1]),
    "OffsetForLeaderEpoch": ("partitions", ()),
    "AddPartitionsToTxn": ("partitions", TXNS[:1]),
    "AddOffsetsToTxn": (None, (GROUPS[0], TXNS[0])),
    "EndTxn": (None, TXNS[:1]),
    "WriteTxnMarkers": ("partitions", ()),
    "TxnOffsetCommit": ("partitions", (GROUPS[0], TXNS[0])),
    "DescribeAcls": (None, ()),
    "CreateAcls": (None, ()),
    "DeleteAcls": (None, ()),
    "DescribeConfigs": (None, ()),
    "AlterConfigs": (None, ()),
    "AlterReplicaLogDirs": ("partitions", ()),
    "DescribeLogDirs": ("partitions", ()),
    "SaslAuthenticate": (None, ()),
    "CreatePartitions": ("topics", ()),
    "CreateDelegationToken": (None, ()),
    "RenewDelegationToken": (None, ()),
    "ExpireDelegationToken": (None, ()),
    "DescribeDelegationToken": (None, ()),
    "DeleteGroups": (None, GROUPS),
    "ElectLeaders": ("partitions", ()),
    "IncrementalAlterConfigs": (None, ()),
    "AlterPartitionReassignments": ("partitions", ()),
    "ListPartitionReassignments": ("partitions", ()),
    "OffsetDelete": ("partitions", GROUPS[:1]),
    "DescribeUserScramCredentials": (None, ()),
    "AlterUserScramCredentials": (None, ()),
    "DescribeClientQuotas": (None, ()),
    "AlterClientQuotas": (None, ()),
    "DescribeQuorum": ("partitions", ()),
    "UpdateFeatures": (None, ()),
    "DescribeCluster": (None, ()),
    "DescribeProducers": ("partitions", ()),
    "UnregisterBroker": (None, ()),
    "DescribeTransactions": (None, TXNS),
    "ListTransactions": (None, ()),
    "ConsumerGroupHeartbeat": ("subscribed", GROUPS[:1]),
    "ConsumerGroupDescribe": (None, GROUPS),
    "ListConfigResources": (None, ()),
    "DescribeTopicPartitions": ("topics", ()),
    "AddRaftVoter": (None, ()),
    "RemoveRaftVoter": (None, ()),
    "StreamsGroupHeartbeat": (None, GROUPS[:1]),
    "StreamsGroupDescribe": (None, GROUPS),
    "StreamsGroupTopologyDescriptionUpdate": ("topics", GROUPS[:1]),
    "ShareGroupHeartbeat": ("subscribed", GROUPS[:1]),
    "ShareGroupDescribe": (None, GROUPS),
    "ShareFetch": ("partitions", GROUPS[:1]),
    "ShareAcknowledge": ("partitions", GROUPS[:1]),
    "DescribeShareGroupOffsets": ("partitions", GROUPS),
    "AlterShareGroupOffsets": ("partitions", GROUPS[:1]),
    "DeleteShareGroupOffsets": ("topics", GROUPS[:1]),
    "InitializeShareGroupState": ("partitions", GROUPS[:1]),
    "ReadShareGroupState": ("partitions", GROUPS[:1]),
    "WriteShareGroupState": ("partitions", GROUPS[:1]),
    "DeleteShareGroupState": ("partitions", GROUPS[:1]),
    "ReadShareGroupStateSummary": ("partitions", GROUPS[:1]),
    "UnregisterController": (None, ()),
}


def expected_targets(spec, version):
    kind, groups = TARGETS[spec.name]
    if spec.name == "OffsetFetch" and version >= 8:
        groups = GROUPS
    if spec.name == "FindCoordinator" and version >= 4:
        groups = GROUPS
    if spec.name == "AddPartitionsToTxn" and version >= 4:
        groups = TXNS
    if kind in ("partitions", "assignments"):
        topics = {name: frozenset({0, 1}) for name in TOPICS}
    elif kind in ("topics", "subscribed"):
        topics = dict.fromkeys(TOPICS)
    else:
        topics = {}
    if spec.name == "CreateTopics":
        topics = {name: frozenset({0, 1}) for name in TOPICS}
    return topics, frozenset(groups)


@pytest.mark.parametrize("spec,version", VERSIONS, ids=IDS)
def test_request_targets(spec, version):
    request = sample_request(spec, version)
    targets = request_targets(request, TOPIC_OF_ID.get)
    topics, groups = expected_targets(spec, version)
    assert dict(targets.topics) == topics
    assert targets.groups == groups
    assert targets.all_topics is False


def test_unknown_topic_ids_are_left_out():
    request = sample_request(SERVED.get(1), 13)
    assert dict(request_targets(request).topics) == {}
    only_orders = request_targets(request, {TOPIC_IDS["orders"]: "orders"}.get)
    assert dict(only_orders.topics) == {"orders": frozenset({0, 1})}


@pytest.mark.parametrize(
    "key,version,fields",
    [
        (3, 0, {"topics": []}),
        (3, 4, {"topics": None}),
        (9, 7, {"group_id": "g", "topics": None}),
        (35, 1, {"topics": None}),
        (43, 1, {"election_type": 0, "topic_partitions": None}),
    ],
    ids=["Metadata-v0", "Metadata-v4", "OffsetFetch-v7", "DescribeLogDirs", "ElectLeaders"],
)
def test_requests_for_every_topic(key, version, fields):
    spec = SERVED.get(key)
    sent = spec.request_class(version=version, **fields)
    sent.with_header(correlation_id=7, client_id="sample")
    (frame,) = FrameDecoder().feed(sent.encode(header=True, framed=True))
    targets = request_targets(decode_request(frame, SERVED))
    assert targets.all_topics is True
    assert dict(targets.topics) == {}


# -- a real broker and kafka-python's client code ---------------------------------------------


class ClientConnection:
    """kafka-python's own request/response path (``KafkaProtocol``: correlation ids, header
    versions, response classes) over a socket to a real broker."""

    def __init__(self, broker):
        self.protocol = KafkaProtocol(client_id="error-responses")
        self.sock = socket.create_connection((broker.host, broker.port), timeout=10)

    def close(self):
        self.sock.close()

    def real_answer(self, request):
        self.protocol.send_request(request)
        self.sock.sendall(self.protocol.send_bytes())
        data = b""
        while True:
            data += self.sock.recv(1 << 16)
            if len(data) >= 4 and len(data) >= 4 + struct.unpack(">i", data[:4])[0]:
                break
        ((_, response),) = self.protocol.receive_bytes(data)
        return response

    def error_answer(self, request, code, **kwargs):
        """What the client reads when the same request is answered by ``error_response``
        instead of the broker (the request's bytes are decoded as the server decodes them)."""
        self.protocol.send_request(request)
        (frame,) = FrameDecoder().feed(self.protocol.send_bytes())
        decoded = decode_request(frame, SERVED)
        response = error_response(decoded, code, **kwargs)
        chunks = encode_response_chunks(
            decoded.spec, response.version, decoded.header.correlation_id, response
        )
        ((_, read),) = self.protocol.receive_bytes(b"".join(chunks))
        return read


def partitions_of(response, topics_field, partitions_field, topic_key, partition_key):
    return {
        (getattr(topic, topic_key), getattr(partition, partition_key)): partition.error_code
        for topic in getattr(response, topics_field)
        for partition in getattr(topic, partitions_field)
    }


@pytest.mark.integration
def test_kafka_python_reads_error_answers_like_real_ones():
    with EmbeddedBroker() as broker:
        broker.create_topic("orders", partitions=2)
        client = ClientConnection(broker)
        try:
            real = client.real_answer(raw.metadata(["orders"], auto_create=False))
            cluster = ClusterMetadata(bootstrap_servers=broker.bootstrap_servers)
            cluster.set_topics(["orders"])
            cluster.update_metadata(real)
            assert cluster.partitions_for_topic("orders") == {0, 1}

            brokers = [(b.node_id, b.host, b.port, b.rack) for b in real.brokers]
            denied = client.error_answer(
                raw.metadata(["orders"], auto_create=False),
                TOPIC_AUTHORIZATION_FAILED,
                brokers=brokers,
            )
            cluster.update_metadata(denied)
            assert cluster.unauthorized_topics == {"orders"}
            assert cluster.partitions_for_topic("orders") is None
            assert [b.node_id for b in cluster.brokers()] == [b.node_id for b in real.brokers]

            def produce():
                batch = raw.v2_batch([b"x"])
                return raw.produce("orders", {0: batch, 1: batch}, acks=-1)

            real = client.real_answer(produce())
            refused = client.error_answer(produce(), NOT_LEADER_OR_FOLLOWER, message="moved")
            keys = ("responses", "partition_responses", "name", "index")
            assert partitions_of(real, *keys) == {("orders", 0): 0, ("orders", 1): 0}
            assert partitions_of(refused, *keys) == {
                ("orders", 0): NOT_LEADER_OR_FOLLOWER,
                ("orders", 1): NOT_LEADER_OR_FOLLOWER,
            }
            for topic in refused.responses:
                for partition in topic.partition_responses:
                    error = kafka_errors.for_code(partition.error_code)
                    assert error is kafka_errors.NotLeaderForPartitionError
                    assert error.retriable
                    assert partition.error_message == "moved"
        finally:
            client.close()


def test_a_heartbeat_without_subscriptions_is_not_for_every_topic():
    """A ConsumerGroupHeartbeat's null topic lists mean "unchanged", not "every topic"."""
    spec = SERVED.get(68)
    sent = spec.request_class(
        version=1, group_id="g", member_id="m", member_epoch=3, subscribed_topic_names=None
    )
    sent.with_header(correlation_id=7, client_id="sample")
    (frame,) = FrameDecoder().feed(sent.encode(header=True, framed=True))
    targets = request_targets(decode_request(frame, SERVED))
    assert (targets.all_topics, dict(targets.topics), targets.groups) == (
        False,
        {},
        frozenset({"g"}),
    )
