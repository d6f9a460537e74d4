"""What the status page and ``/api/`` show: plain functions of an ``OpsHost`` returning dicts
of JSON types (the field names are documented in docs/operations.md and are kept stable).

Every broker answers from its own view. The brokers, the controller and each partition's
leader, replicas and ISR come from ``host.metadata`` (ZooKeeper's view in a cluster, so any
live broker tells the same story); offsets and sizes are facts of the local logs, given for
the replicas this broker hosts and ``null`` for the others; groups and transactions are those
this broker coordinates. Nothing here reads a record's key, value or headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wireserver.coordinator_runtime import INTERNAL_TOPICS
from wireserver.txn.state import TxnState

if TYPE_CHECKING:
    from wireserver.ops.host import OpsHost

#: Transaction states in which a transaction is open (begun, not yet completed).
OPEN_TXN_STATES = frozenset(
    {
        TxnState.ONGOING,
        TxnState.PREPARE_COMMIT,
        TxnState.PREPARE_ABORT,
        TxnState.PREPARE_EPOCH_FENCE,
    }
)


@dataclass(frozen=True)
class LocalOffsets:
    """A partition's log as this broker holds it."""

    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    size_bytes: int


@dataclass(frozen=True)
class GroupPartitionOffsets:
    """One group's committed offset of one partition, and how far behind the partition's end
    it is: ``lag`` = high watermark - committed offset, None when this broker hosts no replica
    of the partition (its end is not known here)."""

    group_id: str
    topic: str
    partition: int
    committed_offset: int
    end_offset: int | None
    lag: int | None


def local_offsets(host: OpsHost, topic: str, partition: int) -> LocalOffsets | None:
    """The partition's offsets and size here, or None when this broker holds no replica of it
    (a cluster broker keeps logs for its replicas only)."""
    if not host.metadata.hosts_replica(topic, partition):
        return None
    log = host.logs.get_log(topic, partition)
    if log is None:
        return None
    return LocalOffsets(
        log.high_watermark, log.log_start_offset, log.log_end_offset, log.size_bytes
    )


def _broker_listener(host: OpsHost) -> str:
    return host.config.inter_broker_listener.name


def cluster_status(host: OpsHost) -> dict[str, Any]:
    """``/api/cluster``: this broker, the controller, every broker known (live ones from the
    registrations; a replica's broker that is not registered is listed as not alive) and the
    counts of partitions in trouble."""
    metadata = host.metadata
    brokers: dict[int, dict[str, Any]] = {}
    for endpoint in metadata.broker_endpoints(_broker_listener(host)):
        brokers[endpoint.node_id] = {
            "id": endpoint.node_id,
            "host": endpoint.host,
            "port": endpoint.port,
            "rack": endpoint.rack,
            "alive": True,
        }
    topics = topics_status(host)["topics"]
    for topic in topics:
        for partition in topic["partitions"]:
            for replica in partition["replicas"]:
                if replica not in brokers:
                    brokers[replica] = {
                        "id": replica,
                        "host": None,
                        "port": None,
                        "rack": None,
                        "alive": False,
                    }
    partitions = [p for topic in topics for p in topic["partitions"]]
    return {
        "cluster_id": host.cluster_id,
        "node_id": host.node_id,
        "controller_id": metadata.controller_id(),
        "clustered": host.cluster is not None,
        "brokers": [brokers[node_id] for node_id in sorted(brokers)],
        "listeners": [str(listener) for listener in host.bound],
        "summary": {
            "topics": len(topics),
            "partitions": len(partitions),
            "under_replicated": sum(p["under_replicated"] for p in partitions),
            "under_min_isr": sum(p["under_min_isr"] for p in partitions),
            "offline": sum(p["offline"] for p in partitions),
        },
    }


def topics_status(host: OpsHost) -> dict[str, Any]:
    """``/api/topics``: every topic this broker reports to clients (internal ones included),
    each partition's placement and state, and its local offsets where this broker hosts it."""
    metadata = host.metadata
    topics = []
    for info in sorted(host.logs.topics.values(), key=lambda info: info.name):
        if not metadata.is_reported(info):
            continue
        min_isr = info.config.min_insync_replicas
        partitions = []
        for view in metadata.partition_views(info):
            local = local_offsets(host, info.name, view.partition)
            partitions.append(
                {
                    "partition": view.partition,
                    "leader": view.leader,
                    "leader_epoch": view.leader_epoch,
                    "replicas": list(view.replicas),
                    "isr": list(view.isr),
                    "offline_replicas": list(view.offline_replicas),
                    "under_replicated": len(view.isr) < len(view.replicas),
                    "under_min_isr": len(view.isr) < min_isr,
                    "offline": view.leader < 0,
                    "hosted_here": local is not None,
                    "high_watermark": local.high_watermark if local else None,
                    "log_start_offset": local.log_start_offset if local else None,
                    "log_end_offset": local.log_end_offset if local else None,
                    "size_bytes": local.size_bytes if local else None,
                }
            )
        topics.append(
            {
                "name": info.name,
                "topic_id": str(info.topic_id),
                "internal": info.name in INTERNAL_TOPICS,
                "min_insync_replicas": min_isr,
                "partitions": partitions,
            }
        )
    return {"node_id": host.node_id, "topics": topics}


def all_groups(host: OpsHost) -> list[tuple[str, Any]]:
    """(type, group) for every group this broker coordinates: classic, consumer, streams."""
    coordinator = host.groups
    found: list[tuple[str, Any]] = [("classic", g) for g in coordinator.list_groups()]
    found += [("consumer", g) for g in coordinator.consumer.groups.values()]
    found += [("streams", g) for g in coordinator.streams.groups.values()]
    return sorted(found, key=lambda pair: pair[1].group_id)


def _offsets_of(host: OpsHost, group: Any) -> list[GroupPartitionOffsets]:
    result = []
    for (topic, partition), committed in sorted(group.offsets.items()):
        local = local_offsets(host, topic, partition)
        end = local.high_watermark if local is not None else None
        result.append(
            GroupPartitionOffsets(
                group.group_id,
                topic,
                partition,
                committed.offset,
                end,
                None if end is None else end - committed.offset,
            )
        )
    return result


def group_offsets(host: OpsHost) -> list[GroupPartitionOffsets]:
    """Every committed offset of every group this broker coordinates, with its lag (Kafka's
    ``kafka-consumer-groups --describe``: lag = the partition's high watermark - the committed
    offset), by group, topic and partition."""
    return [offsets for _, group in all_groups(host) for offsets in _offsets_of(host, group)]


def _members(host: OpsHost, kind: str, group: Any) -> list[dict[str, Any]]:
    names = host.metadata.topic_names()
    members = []
    for member in group.members.values():
        entry: dict[str, Any] = {
            "member_id": member.member_id,
            "client_id": member.client_id,
            "client_host": member.client_host,
        }
        if kind == "classic":
            entry["group_instance_id"] = member.group_instance_id
        else:
            entry["group_instance_id"] = member.instance_id
            entry["member_epoch"] = member.member_epoch
        if kind == "consumer":
            entry["assigned"] = sorted(
                [names.get(topic_id, str(topic_id)), partition]
                for topic_id, partitions in member.assigned.items()
                for partition in partitions
            )
        members.append(entry)
    return sorted(members, key=lambda m: m["member_id"])


def groups_status(host: OpsHost) -> dict[str, Any]:
    """``/api/groups``: the groups this broker coordinates with their state, protocol, members
    and per-partition committed offset, end offset and lag."""
    groups = []
    for kind, group in all_groups(host):
        offsets = _offsets_of(host, group)
        known = [o.lag for o in offsets if o.lag is not None]
        if kind == "classic":
            protocol_type, protocol = group.protocol_type, group.protocol_name
            epoch = group.generation_id
        else:
            protocol_type, protocol, epoch = kind, None, group.group_epoch
        groups.append(
            {
                "group_id": group.group_id,
                "type": kind,
                "state": str(group.state),
                "protocol_type": protocol_type or "",
                "protocol": protocol,
                "generation": epoch,
                "coordinator": host.node_id,
                "members": _members(host, kind, group),
                "total_lag": sum(known) if known else None,
                "offsets": [
                    {
                        "topic": o.topic,
                        "partition": o.partition,
                        "committed_offset": o.committed_offset,
                        "end_offset": o.end_offset,
                        "lag": o.lag,
                    }
                    for o in offsets
                ],
            }
        )
    return {"node_id": host.node_id, "groups": groups}


def transactions_status(host: OpsHost) -> dict[str, Any]:
    """``/api/transactions``: the open transactions this broker coordinates."""
    open_txns = [
        txn
        for txn in sorted(host.txn.txns.values(), key=lambda txn: txn.transactional_id)
        if txn.state in OPEN_TXN_STATES
    ]
    return {
        "node_id": host.node_id,
        "transactions": [
            {
                "transactional_id": txn.transactional_id,
                "producer_id": txn.producer_id,
                "producer_epoch": txn.producer_epoch,
                "state": txn.state.display,
                "timeout_ms": txn.txn_timeout_ms,
                "start_time_ms": txn.txn_start_timestamp,
                "partitions": sorted([topic, partition] for topic, partition in txn.partitions),
            }
            for txn in open_txns
        ],
    }
