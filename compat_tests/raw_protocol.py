"""Raw-protocol differential: the same requests to Kafka and wireserver, responses diffed.

Requests are built with kafka-python's message classes (the client side, independent of the
broker's own code) and sent over one plain socket per target
(:class:`wireserver.testing.KafkaWire`). For every API that has a builder here and that both
servers advertise, every version in the common range is sent: valid requests and edge cases
(unknown topic or partition, bad offsets, invalid names and configs, a corrupt batch). The
decoded responses are turned into dicts and normalized (node ids, cluster id, topic ids,
throttle times, broker timestamps, host/port, session ids, log dir paths, free-text error
messages), then compared.

Both targets get the same topic names, so the answers can be compared field by field; the
auto-create-off brokers are used, so that a request never creates a topic as a side effect.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
)
from kafka.protocol.admin.groups import DescribeGroupsRequest
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeTopicPartitionsRequest,
)
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import JoinGroupRequest, OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from compat_tests.neutral import BASE_TS
from wireserver.protocol.messages_extra import DeleteGroupsRequest
from wireserver.protocol.messages_streams import (
    StreamsGroupDescribeRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
)
from wireserver.protocol.messages_tokens import (
    CreateDelegationTokenRequest,
    DescribeDelegationTokenRequest,
    ExpireDelegationTokenRequest,
    RenewDelegationTokenRequest,
)
from wireserver.testing import KafkaWire

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
GROUP_RESOURCE = 32


@dataclass
class Context:
    """Per target: the shared topic (same name on both) and this target's ids."""

    topic: str
    topic_id: Any
    node_id: int
    run: str
    compacted: str  # a topic with cleanup.policy=compact
    compacted_id: Any
    extra: dict = field(default_factory=dict)
    bootstrap: str = ""


# ------------------------------------------------------------------------------ normalizing

VOLATILE = {
    "throttle_time_ms": 0,
    "cluster_id": "<cluster>",
    "controller_id": "<node>",
    "node_id": "<node>",
    "leader_id": "<node>",
    "broker_id": "<node>",
    "replica_nodes": "<nodes>",
    "isr_nodes": "<nodes>",
    "offline_replicas": "<nodes>",
    "host": "<host>",
    "port": "<port>",
    "topic_id": "<topic-id>",
    "session_id": "<session>",
    "log_dir": "<dir>",
    "total_bytes": "<bytes>",
    "usable_bytes": "<bytes>",
    "error_message": "<message>",
    "status_detail": "<detail>",
    "rack": None,
    "leader_epoch_start_offset": None,
    "member_id": "<member>",
    "leader": "<member>",
}


#: APIs whose error messages are compared as they are: DeleteGroups v3's per-group message is
#: null unless a deletion failed (Kafka 4.4), so its presence is the observation.
MESSAGES_COMPARED = {DeleteGroupsRequest.API_KEY}


def normalize(value: Any, key: str | None = None, messages: bool = False) -> Any:
    if key in VOLATILE:
        if key == "error_message":
            # free text: only its presence could be compared, and not even that
            return value if messages else None
        if key in ("replica_nodes", "isr_nodes", "offline_replicas"):
            return len(value) if isinstance(value, list) else value
        return VOLATILE[key]
    if key == "records" and isinstance(value, (bytes, bytearray, memoryview)):
        return decode_records(bytes(value))
    if key in ("log_append_time_ms", "timestamp") and isinstance(value, int) and value > 10**12:
        # A timestamp a request sent (BASE_TS onwards) stays comparable; the broker's own
        # clock (LogAppendTime, "now") is volatile.
        if BASE_TS <= value < BASE_TS + 600_000:
            return f"BASE_TS+{value - BASE_TS}"
        return "<broker-time>" if value > BASE_TS else value
    if isinstance(value, dict):
        return {
            k: normalize(v, k, messages)
            for k, v in value.items()
            if k not in ("unknown_tags", "tags", "_tagged_fields")
        }
    if isinstance(value, (list, tuple)):
        return [normalize(v, key, messages) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return "<uuid>"
    return value if isinstance(value, (int, str, float, bool, type(None))) else repr(value)


def diff_paths(a: Any, b: Any, path: str = "", limit: int = 12) -> list[str]:
    """Where two normalized responses differ: ``path: kafka=... wireserver=...`` lines.
    Lists of named entries (topics, configs, partitions) are matched by name/index."""
    out: list[str] = []

    def key_of(item: Any) -> Any:
        if isinstance(item, dict):
            for k in (
                "name",
                "partition_index",
                "partition",
                "api_key",
                "resource_name",
                "topic",
                "index",
            ):
                if k in item:
                    return item[k]
        return None

    def walk(x: Any, y: Any, p: str) -> None:
        if len(out) >= limit or x == y:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                if k not in x or k not in y:
                    out.append(
                        f"{p}.{k}: kafka={_brief(x.get(k, '<absent>'))} "
                        f"wireserver={_brief(y.get(k, '<absent>'))}"
                    )
                else:
                    walk(x[k], y[k], f"{p}.{k}")
            return
        if isinstance(x, list) and isinstance(y, list):
            kx, ky = [key_of(i) for i in x], [key_of(i) for i in y]
            if None not in kx and None not in ky and len(set(kx)) == len(kx):
                mx, my = dict(zip(kx, x)), dict(zip(ky, y))
                for k in list(dict.fromkeys(kx + ky)):
                    if k not in mx or k not in my:
                        out.append(f"{p}[{k}]: only in {'kafka' if k in mx else 'wireserver'}")
                    else:
                        walk(mx[k], my[k], f"{p}[{k}]")
                    if len(out) >= limit:
                        return
                return
            if len(x) == len(y):
                for i, (xi, yi) in enumerate(zip(x, y)):
                    walk(xi, yi, f"{p}[{i}]")
                return
        out.append(f"{p}: kafka={_brief(x)} wireserver={_brief(y)}")

    walk(a, b, path)
    return out


_ENTRY_KEYS = ("name", "partition_index", "partition", "api_key", "resource_name", "topic", "index")


def sort_keyed_lists(value: Any) -> Any:
    """Lists of named entries (topics, partitions, configs, resources) sorted by name: Kafka
    builds responses from hash maps, so their order is not part of the contract."""
    if isinstance(value, dict):
        return {k: sort_keyed_lists(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [sort_keyed_lists(v) for v in value]
        if items and all(isinstance(i, dict) for i in items):
            for k in _ENTRY_KEYS:
                if all(k in i for i in items):
                    return sorted(items, key=lambda i: str(i[k]))
        return items
    return value


def _brief(value: Any) -> str:
    import json

    text = json.dumps(value, sort_keys=True, default=repr)
    return text if len(text) <= 160 else text[:160] + "…"


def decode_records(data: bytes) -> list:
    out = []
    records = MemoryRecords(data)
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        for r in batch:
            out.append(
                {
                    "offset": r.offset,
                    "key": r.key,
                    "value": r.value,
                    "timestamp": r.timestamp,
                    "headers": list(r.headers),
                }
            )
    return normalize(out)


def to_dict(message: Any) -> dict:
    return message.to_dict() if hasattr(message, "to_dict") else dict(message)


# ------------------------------------------------------------------------------ requests


def batch(values: list[bytes], base_ts: int = BASE_TS, keys: list | None = None) -> bytes:
    """One batch; record i has key ``keys[i]`` (None: no key), by default b"k<i>"."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i, v in enumerate(values):
        key = b"k%d" % i if keys is None else keys[i]
        builder.append(i, timestamp=base_ts + i, key=key, value=v, headers=[("h", b"x")])
    return bytes(builder.build())


def corrupt(data: bytes) -> bytes:
    out = bytearray(data)
    out[-1] ^= 0xFF
    return bytes(out)


Builder = Callable[[int, Context], Iterator[tuple[str, Any]]]
BUILDERS: dict[int, tuple[Any, Builder]] = {}


def builder(request_class):
    def register(fn):
        BUILDERS[request_class.API_KEY] = (request_class, fn)
        return fn

    return register


def _missing(ctx: Context) -> str:
    return f"compat-raw-missing-{ctx.run}"


@builder(ApiVersionsRequest)
def _api_versions(v, ctx):
    kwargs = (
        {"client_software_name": "compat-raw", "client_software_version": "1.0"} if v >= 3 else {}
    )
    yield "plain", ApiVersionsRequest(version=v, **kwargs)
    if v >= 3:
        yield (
            "bad-software-name",
            ApiVersionsRequest(
                version=v, client_software_name="bad name!", client_software_version="1.0"
            ),
        )


@builder(MetadataRequest)
def _metadata(v, ctx):
    t = MetadataRequest.MetadataRequestTopic
    kwargs = {"allow_auto_topic_creation": False} if v >= 4 else {}
    yield (
        "topic+missing",
        MetadataRequest(version=v, topics=[t(name=ctx.topic), t(name=_missing(ctx))], **kwargs),
    )
    if v >= 1:
        yield "no-topics", MetadataRequest(version=v, topics=[], **kwargs)
    if v >= 8:  # KIP-430; the cluster's operations only up to v10
        yield (
            "authorized-operations",
            MetadataRequest(
                version=v,
                topics=[t(name=ctx.topic), t(name=_missing(ctx))],
                **kwargs,
                include_topic_authorized_operations=True,
                **({"include_cluster_authorized_operations": True} if v <= 10 else {}),
            ),
        )


@builder(ProduceRequest)
def _produce(v, ctx):
    td = ProduceRequest.TopicProduceData
    pd = td.PartitionProduceData

    def req(partitions, name=ctx.topic, acks=1):
        ids = {ctx.topic: ctx.topic_id, ctx.compacted: ctx.compacted_id}
        ident = {"topic_id": ids.get(name, uuid.UUID(int=12345))} if v >= 13 else {"name": name}
        return ProduceRequest(
            version=v,
            transactional_id=None,
            acks=acks,
            timeout_ms=5000,
            topic_data=[
                td(**ident, partition_data=[pd(index=p, records=r) for p, r in partitions.items()])
            ],
        )

    yield "two-records", req({0: batch([b"v%d-a" % v, b"v%d-b" % v])})
    yield "unknown-partition", req({7: batch([b"x"])})
    yield "corrupt-crc", req({0: corrupt(batch([b"bad"]))})
    yield "unknown-topic", req({0: batch([b"x"])}, name=_missing(ctx))
    yield (
        "keyless-on-compacted",
        req({0: batch([b"a", b"b", b"c"], keys=[b"a", None, None])}, name=ctx.compacted),
    )


@builder(FetchRequest)
def _fetch(v, ctx):
    ft = FetchRequest.FetchTopic
    fp = ft.FetchPartition

    def req(partition, offset, name=ctx.topic):
        ident = {"topic_id": ctx.topic_id} if v >= 13 else {"topic": name}
        if v >= 13 and name != ctx.topic:
            ident = {"topic_id": uuid.UUID(int=12345)}
        return FetchRequest(
            version=v,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                ft(
                    **ident,
                    partitions=[
                        fp(
                            partition=partition,
                            current_leader_epoch=-1,
                            fetch_offset=offset,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=1 << 20,
                        )
                    ],
                )
            ],
        )

    yield "from-0", req(0, 0)
    yield "out-of-range", req(0, 100000)
    yield "unknown-partition", req(7, 0)
    yield "unknown-topic", req(0, 0, name=_missing(ctx))


@builder(ListOffsetsRequest)
def _list_offsets(v, ctx):
    lt = ListOffsetsRequest.ListOffsetsTopic
    lp = lt.ListOffsetsPartition

    def req(pairs, name=ctx.topic):
        return ListOffsetsRequest(
            version=v,
            replica_id=-1,
            isolation_level=0,
            topics=[
                lt(
                    name=name,
                    partitions=[
                        lp(partition_index=p, current_leader_epoch=-1, timestamp=ts)
                        for p, ts in pairs
                    ],
                )
            ],
        )

    yield "latest+earliest", req([(0, -1), (1, -2)])
    yield "by-time", req([(0, BASE_TS)])
    if v >= 7:
        yield "max-timestamp", req([(0, -3)])
    yield "unknown-partition", req([(7, -1)])
    yield "unknown-topic", req([(0, -1)], name=_missing(ctx))
    # -6 earliest pending upload (KIP-1023, v11+): on a topic without remote storage
    yield "earliest-pending-upload", req([(0, -6), (1, -5)])


def _group(ctx: Context, what: str, v: int) -> str:
    return f"compat-raw-{what}-{ctx.run}-v{v}"


def offset_commit(v: int, group: str, topics: list[tuple[str, Any, list[int]]]):
    """A simple commit (no generation, no member): offset 10 + partition to each partition of
    each (name, topic id, partitions); v10 sends the ids, older versions the names."""
    t = OffsetCommitRequest.OffsetCommitRequestTopic
    p = t.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        version=v,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        retention_time_ms=-1,
        topics=[
            t(
                name=name,
                topic_id=topic_id,
                partitions=[
                    p(partition_index=i, committed_offset=10 + i, committed_metadata="m")
                    for i in parts
                ],
            )
            for name, topic_id, parts in topics
        ],
    )


@builder(OffsetCommitRequest)
def _offset_commit_builder(v, ctx):
    group = _group(ctx, "commit", v)
    yield "commit", offset_commit(v, group, [(ctx.topic, ctx.topic_id, [0, 1])])
    yield "unknown-partition", offset_commit(v, group, [(ctx.topic, ctx.topic_id, [7])])
    # v10 names topics by id: an id no topic has; before it, a name no topic has
    yield "unknown-topic", offset_commit(v, group, [(_missing(ctx), uuid.uuid4(), [0, 1])])


@builder(OffsetFetchRequest)
def _offset_fetch(v, ctx):
    """Offsets committed (OffsetCommit v9, by name) are fetched by name, by id at v10, or all
    of them (null topics, v2+); unknown topics (ids at v10) and groups."""
    t = OffsetFetchRequest.OffsetFetchRequestTopic
    gt = OffsetFetchRequest.OffsetFetchRequestGroup
    group = _group(ctx, "fetch", v)
    yield "commit", offset_commit(9, group, [(ctx.topic, None, [0])])

    def req(group, name, topic_id, parts):
        """Partitions ``parts`` of the topic (None: every offset of the group)."""
        if v < 8:
            topics = None if parts is None else [t(name=name, partition_indexes=parts)]
            return OffsetFetchRequest(version=v, group_id=group, topics=topics)
        topics = None
        if parts is not None:
            topics = [
                gt.OffsetFetchRequestTopics(name=name, topic_id=topic_id, partition_indexes=parts)
            ]
        return OffsetFetchRequest(version=v, groups=[gt(group_id=group, topics=topics)])

    yield "fetch", req(group, ctx.topic, ctx.topic_id, [0, 1])
    if v >= 2:
        yield "all", req(group, None, None, None)
    yield "unknown-topic", req(group, _missing(ctx), uuid.uuid4(), [0])
    yield "unknown-group", req(_group(ctx, "never", v), ctx.topic, ctx.topic_id, [0])


def join_group(group: str, session_timeout_ms: int) -> JoinGroupRequest:
    """A classic JoinGroup v3 of a new member: the group has it as a member (awaiting its
    SyncGroup) until its session times out."""
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    return JoinGroupRequest(
        version=3,
        group_id=group,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=session_timeout_ms,
        member_id="",
        protocol_type="consumer",
        protocols=[protocol],
    )


@builder(DeleteGroupsRequest)
def _delete_groups(v, ctx):
    """An unknown group, a group with a member (a classic JoinGroup v3: the member stays until
    its session times out), and an empty group that has offsets."""
    yield "unknown-group", DeleteGroupsRequest(version=v, groups_names=[_group(ctx, "none", v)])
    busy = _group(ctx, "busy", v)
    yield "join", join_group(busy, session_timeout_ms=10000)
    yield "non-empty-group", DeleteGroupsRequest(version=v, groups_names=[busy])
    empty = _group(ctx, "empty", v)
    yield "commit", offset_commit(9, empty, [(ctx.topic, None, [0])])
    yield "empty-group", DeleteGroupsRequest(version=v, groups_names=[empty])


@builder(CreateTopicsRequest)
def _create_topics(v, ctx):
    ct = CreateTopicsRequest.CreatableTopic
    cc = ct.CreatableTopicConfig

    def topic(name, partitions=2, configs=()):
        return ct(
            name=name,
            num_partitions=partitions,
            replication_factor=1,
            assignments=[],
            configs=[cc(name=k, value=val) for k, val in configs],
        )

    yield (
        "validate-only",
        CreateTopicsRequest(
            version=v,
            timeout_ms=10000,
            validate_only=True,
            topics=[topic(f"compat-raw-new-{ctx.run}-{v}", 2, [("retention.ms", "1000")])],
        ),
    )
    yield (
        "existing+invalid",
        CreateTopicsRequest(
            version=v,
            timeout_ms=10000,
            validate_only=True,
            topics=[
                topic(ctx.topic),
                topic("bad name"),
                topic(f"compat-raw-cfg-{ctx.run}", 1, [("retention.ms", "soon")]),
                topic(f"compat-raw-zero-{ctx.run}", 0),
            ],
        ),
    )
    yield (
        "segment-bytes-minimum",
        CreateTopicsRequest(  # at least 1 MiB (Kafka 4.1)
            version=v,
            timeout_ms=10000,
            validate_only=True,
            topics=[topic(f"compat-raw-small-{ctx.run}", 1, [("segment.bytes", "1048575")])],
        ),
    )


@builder(DeleteTopicsRequest)
def _delete_topics(v, ctx):
    if v >= 6:
        yield (
            "unknown",
            DeleteTopicsRequest(
                version=v,
                timeout_ms=10000,
                topics=[DeleteTopicsRequest.DeleteTopicState(name=_missing(ctx))],
            ),
        )
    else:
        yield (
            "unknown",
            DeleteTopicsRequest(version=v, timeout_ms=10000, topic_names=[_missing(ctx)]),
        )


@builder(DeleteRecordsRequest)
def _delete_records(v, ctx):
    dt = DeleteRecordsRequest.DeleteRecordsTopic
    dp = dt.DeleteRecordsPartition
    yield (
        "noop+bad",
        DeleteRecordsRequest(
            version=v,
            timeout_ms=10000,
            topics=[
                dt(
                    name=ctx.topic,
                    partitions=[
                        dp(partition_index=0, offset=0),
                        dp(partition_index=1, offset=1000),
                        dp(partition_index=7, offset=0),
                    ],
                ),
                dt(name=_missing(ctx), partitions=[dp(partition_index=0, offset=0)]),
            ],
        ),
    )


@builder(OffsetForLeaderEpochRequest)
def _offset_for_leader_epoch(v, ctx):
    ot = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    op = ot.OffsetForLeaderPartition
    kwargs = {"replica_id": -1} if v >= 3 else {}
    yield (
        "epoch-0+bad",
        OffsetForLeaderEpochRequest(
            version=v,
            **kwargs,
            topics=[
                ot(
                    topic=ctx.topic,
                    partitions=[
                        op(partition=0, current_leader_epoch=-1, leader_epoch=0),
                        op(partition=1, current_leader_epoch=-1, leader_epoch=5),
                        op(partition=7, current_leader_epoch=-1, leader_epoch=0),
                    ],
                )
            ],
        ),
    )


@builder(DescribeConfigsRequest)
def _describe_configs(v, ctx):
    r = DescribeConfigsRequest.DescribeConfigsResource
    yield (
        "topic-keys",
        DescribeConfigsRequest(
            version=v,
            include_synonyms=True,
            resources=[
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=ctx.topic,
                    configuration_keys=[
                        "retention.ms",
                        "cleanup.policy",
                        "max.message.bytes",
                        "segment.bytes",
                        "no.such.key",
                    ],
                )
            ],
        ),
    )
    yield (
        "broker-keys",
        DescribeConfigsRequest(
            version=v,
            include_synonyms=False,
            resources=[
                r(
                    resource_type=BROKER_RESOURCE,
                    resource_name=str(ctx.node_id),
                    configuration_keys=[
                        "num.partitions",
                        "auto.create.topics.enable",
                        "message.max.bytes",
                        "log.retention.hours",
                    ],
                )
            ],
        ),
    )
    yield (
        "unknown-topic",
        DescribeConfigsRequest(
            version=v,
            resources=[
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=_missing(ctx),
                    configuration_keys=None,
                )
            ],
        ),
    )
    kafka_keys = [
        "sasl.kerberos.min.time.before.relogin",
        "background.threads",
        "sasl.kerberos.kinit.cmd",
        "delegation.token.secret.key",
        "log.cleaner.io.max.bytes.per.second",
        "group.share.enable",
    ]
    yield (
        "broker-kafka-keys",
        DescribeConfigsRequest(
            version=v,
            include_synonyms=True,
            resources=[
                r(
                    resource_type=BROKER_RESOURCE,
                    resource_name=str(ctx.node_id),
                    configuration_keys=kafka_keys,
                )
            ],
        ),
    )
    yield (
        "group",
        DescribeConfigsRequest(
            version=v,
            include_synonyms=True,
            resources=[
                r(
                    resource_type=GROUP_RESOURCE,
                    resource_name=f"compat-raw-group-{ctx.run}",
                    configuration_keys=None,
                ),
                r(resource_type=GROUP_RESOURCE, resource_name="", configuration_keys=None),
            ],
        ),
    )


@builder(AlterConfigsRequest)
def _alter_configs(v, ctx):
    r = AlterConfigsRequest.AlterConfigsResource
    c = r.AlterableConfig
    yield (
        "validate",
        AlterConfigsRequest(
            version=v,
            validate_only=True,
            resources=[
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=ctx.topic,
                    configs=[c(name="retention.ms", value="1000")],
                )
            ],
        ),
    )
    yield (
        "invalid+unknown",
        AlterConfigsRequest(
            version=v,
            validate_only=True,
            resources=[
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=ctx.topic,
                    configs=[c(name="cleanup.policy", value="sometimes")],
                ),
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=_missing(ctx),
                    configs=[c(name="retention.ms", value="1000")],
                ),
            ],
        ),
    )
    yield (
        "segment-bytes-minimum",
        AlterConfigsRequest(
            version=v,
            validate_only=True,
            resources=[
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=ctx.topic,
                    configs=[c(name="segment.bytes", value="1048575")],
                )
            ],
        ),
    )
    # The legacy form replaces the whole cluster default: keep Kafka's min.insync.replicas
    # there (its controller refuses to remove it, see compat_tests.scenarios.MIN_ISR_SOURCE).
    yield from _broker_alters(
        AlterConfigsRequest,
        v,
        ctx,
        lambda name, value: c(name=name, value=value),
        [("min.insync.replicas", "1")],
    )
    yield from _group_alters(
        AlterConfigsRequest, v, ctx, lambda name, value: c(name=name, value=value)
    )


def _broker_alters(request_class, v, ctx, config, default_extra=()):
    """Validate-only broker changes: a Kafka key we do not use (per broker, so refused as the
    cluster default), a read-only key, a TLS store key without a listener prefix, a bad
    value."""
    r = request_class.AlterConfigsResource
    node = str(ctx.node_id)
    key = "sasl.kerberos.min.time.before.relogin"
    for label, name, changes in (
        ("broker-kafka-key", node, [(key, "70000")]),
        ("broker-default-per-broker-key", "", [(key, "70000"), *default_extra]),
        ("broker-default-cluster-wide-key", "", [("background.threads", "5"), *default_extra]),
        ("broker-read-only", node, [("process.roles", "broker")]),
        ("broker-tls-store", node, [("ssl.keystore.location", "/tmp/ks")]),
        ("broker-bad-value", node, [(key, "soon")]),
    ):
        yield (
            label,
            request_class(
                version=v,
                validate_only=True,
                resources=[
                    r(
                        resource_type=BROKER_RESOURCE,
                        resource_name=name,
                        configs=[config(k, value) for k, value in changes],
                    )
                ],
            ),
        )


def _group_alters(request_class, v, ctx, config):
    """Validate-only group config changes: a valid one, a value below the broker's minimum,
    an unknown key, a bad value, and the empty (default) group."""
    r = request_class.AlterConfigsResource
    group = f"compat-raw-group-{ctx.run}"
    for label, name, changes in (
        (
            "group-valid",
            group,
            [("consumer.session.timeout.ms", "50000"), ("consumer.heartbeat.interval.ms", "6000")],
        ),
        ("group-below-min", group, [("consumer.session.timeout.ms", "5000")]),
        ("group-unknown-key", group, [("no.such.key", "1")]),
        ("group-bad-value", group, [("share.isolation.level", "sometimes")]),
        ("group-default", "", [("consumer.session.timeout.ms", "50000")]),
    ):
        yield (
            label,
            request_class(
                version=v,
                validate_only=True,
                resources=[
                    r(
                        resource_type=GROUP_RESOURCE,
                        resource_name=name,
                        configs=[config(k, value) for k, value in changes],
                    )
                ],
            ),
        )


@builder(IncrementalAlterConfigsRequest)
def _incremental_alter_configs(v, ctx):
    r = IncrementalAlterConfigsRequest.AlterConfigsResource
    c = r.AlterableConfig
    yield (
        "validate",
        IncrementalAlterConfigsRequest(
            version=v,
            validate_only=True,
            resources=[
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=ctx.topic,
                    configs=[
                        c(name="retention.ms", config_operation=0, value="1000"),
                        c(name="cleanup.policy", config_operation=1, value=None),
                    ],
                )
            ],
        ),
    )
    yield (
        "invalid+unknown",
        IncrementalAlterConfigsRequest(
            version=v,
            validate_only=True,
            resources=[
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=ctx.topic,
                    configs=[c(name="max.message.bytes", config_operation=0, value="-5")],
                ),
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=_missing(ctx),
                    configs=[c(name="retention.ms", config_operation=0, value="1")],
                ),
            ],
        ),
    )
    yield (
        "segment-bytes-minimum",
        IncrementalAlterConfigsRequest(
            version=v,
            validate_only=True,
            resources=[
                r(
                    resource_type=TOPIC_RESOURCE,
                    resource_name=ctx.topic,
                    configs=[c(name="segment.bytes", config_operation=0, value="1048575")],
                ),
                r(
                    resource_type=BROKER_RESOURCE,
                    resource_name="",
                    configs=[c(name="log.segment.bytes", config_operation=0, value="1048575")],
                ),
            ],
        ),
    )
    yield from _broker_alters(
        IncrementalAlterConfigsRequest,
        v,
        ctx,
        lambda name, value: c(name=name, config_operation=0, value=value),
    )
    yield from _group_alters(
        IncrementalAlterConfigsRequest,
        v,
        ctx,
        lambda name, value: c(name=name, config_operation=0, value=value),
    )
    yield (
        "group-append",
        IncrementalAlterConfigsRequest(
            version=v,
            validate_only=True,
            resources=[
                r(
                    resource_type=GROUP_RESOURCE,
                    resource_name=f"compat-raw-group-{ctx.run}",
                    configs=[c(name="consumer.session.timeout.ms", config_operation=2, value="1")],
                )
            ],
        ),
    )


@builder(ListConfigResourcesRequest)
def _list_config_resources(v, ctx):
    """Groups with configs (none here), brokers, client metrics and an unsupported type
    (topics are left out: Kafka's list has its internal topics)."""
    if v == 0:
        yield "client-metrics", ListConfigResourcesRequest(version=0)
        return
    for label, types in (
        ("groups", [GROUP_RESOURCE]),
        ("brokers", [BROKER_RESOURCE, 8]),
        ("client-metrics", [16]),
        ("unsupported", [1]),
    ):
        yield label, ListConfigResourcesRequest(version=v, resource_types=types)


@builder(CreatePartitionsRequest)
def _create_partitions(v, ctx):
    t = CreatePartitionsRequest.CreatePartitionsTopic
    yield (
        "validate+bad",
        CreatePartitionsRequest(
            version=v,
            timeout_ms=10000,
            validate_only=True,
            topics=[
                t(name=ctx.topic, count=5, assignments=None),
                t(name=_missing(ctx), count=2, assignments=None),
            ],
        ),
    )
    yield (
        "shrink",
        CreatePartitionsRequest(
            version=v,
            timeout_ms=10000,
            validate_only=True,
            topics=[t(name=ctx.topic, count=1, assignments=None)],
        ),
    )


@builder(DescribeLogDirsRequest)
def _describe_log_dirs(v, ctx):
    t = DescribeLogDirsRequest.DescribableLogDirTopic
    yield (
        "topic",
        DescribeLogDirsRequest(version=v, topics=[t(topic=ctx.topic, partitions=[0, 1, 7])]),
    )


@builder(DescribeClusterRequest)
def _describe_cluster(v, ctx):
    yield "plain", DescribeClusterRequest(version=v)


@builder(DescribeTopicPartitionsRequest)
def _describe_topic_partitions(v, ctx):
    t = DescribeTopicPartitionsRequest.TopicRequest
    yield (
        "topic+missing",
        DescribeTopicPartitionsRequest(
            version=v, topics=[t(name=ctx.topic), t(name=_missing(ctx))]
        ),
    )


# The compat brokers' listener is PLAINTEXT: every token request is refused there
# (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, with Kafka's -1 timestamps and principals).


@builder(CreateDelegationTokenRequest)
def _create_delegation_token(v, ctx):
    renewer = CreateDelegationTokenRequest.CreatableRenewers
    owner = {"owner_principal_type": "User", "owner_principal_name": "bob"} if v >= 3 else {}
    yield (
        "on-plaintext",
        CreateDelegationTokenRequest(
            version=v,
            renewers=[renewer(principal_type="User", principal_name="carol")],
            max_lifetime_ms=-1,
            **owner,
        ),
    )


def wait_for_group_coordinator(bootstrap: str, groups: list[str], timeout: float = 60.0) -> None:
    """Until each group's coordinator answers group requests: Kafka creates
    ``__consumer_offsets`` on the first FindCoordinator and loads its partitions after that,
    answering NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS meanwhile (wireserver creates and
    loads it on any group request), so group APIs are compared once DescribeGroups gets a
    real answer from both."""
    not_yet = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
    deadline = time.monotonic() + timeout
    with KafkaWire(bootstrap, client_id="compat-raw") as wire:
        for group in groups:
            wire.request(FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=[group]))
            while True:
                request = DescribeGroupsRequest(
                    version=5, groups=[group], include_authorized_operations=False
                )
                if wire.request(request).groups[0].error_code not in not_yet:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no coordinator for group {group}")
                time.sleep(0.2)


@builder(StreamsGroupDescribeRequest)
def _streams_group_describe(v, ctx):
    extra = {"include_topology_description": True} if v >= 1 else {}
    wait_for_group_coordinator(ctx.bootstrap, [f"compat-raw-streams-absent-{ctx.run}"])
    yield (
        "missing+classic",
        StreamsGroupDescribeRequest(
            version=v,
            group_ids=[f"compat-raw-streams-absent-{ctx.run}"],
            include_authorized_operations=False,
            **extra,
        ),
    )


@builder(RenewDelegationTokenRequest)
def _renew_delegation_token(v, ctx):
    yield "on-plaintext", RenewDelegationTokenRequest(version=v, hmac=b"x", renew_period_ms=-1)


@builder(ExpireDelegationTokenRequest)
def _expire_delegation_token(v, ctx):
    yield (
        "on-plaintext",
        ExpireDelegationTokenRequest(version=v, hmac=b"x", expiry_time_period_ms=-1),
    )


@builder(DescribeDelegationTokenRequest)
def _describe_delegation_token(v, ctx):
    yield "on-plaintext", DescribeDelegationTokenRequest(version=v, owners=None)


@builder(StreamsGroupTopologyDescriptionUpdateRequest)
def _streams_group_topology_description_update(v, ctx):
    d = StreamsGroupTopologyDescriptionUpdateRequest.TopologyDescription
    wait_for_group_coordinator(ctx.bootstrap, [f"compat-raw-streams-absent-{ctx.run}"])
    yield (
        "unknown-group",
        StreamsGroupTopologyDescriptionUpdateRequest(
            version=v,
            group_id=f"compat-raw-streams-absent-{ctx.run}",
            member_id="compat-raw-member",
            topology_epoch=0,
            topology_description=d(subtopologies=[], global_stores=[]),
        ),
    )


# ------------------------------------------------------------------------------ driving


def init_producer_id(wire: KafkaWire, transactional_id: str) -> Any:
    """InitProducerId v5 for ``transactional_id`` (a new producer: no id or epoch yet)."""
    from kafka.protocol.producer.transaction import InitProducerIdRequest

    return wire.request(
        InitProducerIdRequest(
            version=5,
            transactional_id=transactional_id,
            transaction_timeout_ms=60000,
            producer_id=-1,
            producer_epoch=-1,
        )
    )


def transactional_produce(
    wire: KafkaWire,
    transactional_id: str,
    topic: str,
    producer: tuple[int, int],
    sequence: int,
    value: bytes,
    version: int = 12,
    partition: int = 0,
) -> int:
    """One transactional batch of one record (producer id, epoch, base sequence) in a Produce
    request at ``version`` (v12+: transaction protocol v2, no AddPartitionsToTxn needed);
    the partition's error code."""
    from wireserver.protocol.records import RecordBatchBuilder

    builder = RecordBatchBuilder(
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=sequence,
        is_transactional=True,
    )
    builder.append(int(time.time() * 1000), None, value)
    data = ProduceRequest.TopicProduceData
    records = bytes(builder.build())
    answer = wire.request(
        ProduceRequest(
            version=version,
            transactional_id=transactional_id,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                data(
                    name=topic,
                    partition_data=[data.PartitionProduceData(index=partition, records=records)],
                )
            ],
        )
    )
    return answer.responses[0].partition_responses[0].error_code


def api_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    with KafkaWire(bootstrap, client_id="compat-raw") as wire:
        return dict(wire.versions)


def _strip_api_keys(response: dict) -> dict:
    """ApiVersions: the key list is compared on its own (test_api_versions)."""
    if "api_keys" in response:
        response = dict(response, api_keys="<compared separately>")
    return response


def exchange(bootstrap: str, request: Any) -> Any:
    """Send one request on a fresh connection; the normalized response dict, or
    "connection closed" when the server hangs up (as both do for versions they refuse)."""
    wire = KafkaWire(bootstrap, client_id="compat-raw", negotiate=False, timeout=15)
    try:
        try:
            response = wire.request(request)
        except (ConnectionError, struct.error, OSError) as exc:
            return f"connection closed ({type(exc).__name__})"
        messages = request.API_KEY in MESSAGES_COMPARED
        result = sort_keyed_lists(normalize(to_dict(response), messages=messages))
        return _strip_api_keys(result) if request.API_KEY == 18 else result
    finally:
        wire.close()


def topic_ids(bootstrap: str, *topics: str) -> tuple[int, dict]:
    """(the first broker's node id, {topic: topic id}) from one Metadata v12 request."""
    with KafkaWire(bootstrap, client_id="compat-raw") as wire:
        response = wire.request(
            MetadataRequest(
                version=12,
                topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                allow_auto_topic_creation=False,
            )
        )
    return response.brokers[0].node_id, {t.name: t.topic_id for t in response.topics}


def context(bootstrap: str, topic: str, compacted: str, run: str) -> Context:
    node_id, ids = topic_ids(bootstrap, topic, compacted)
    return Context(topic, ids[topic], node_id, run, compacted, ids[compacted], bootstrap=bootstrap)
