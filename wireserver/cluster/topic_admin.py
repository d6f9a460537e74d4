"""Topic changes written to ZooKeeper by whichever broker receives the admin request, as
Kafka's ZooKeeper-era ``AdminZkClient`` wrote them: nobody changes a topic directly; every
broker (and the controller) acts on the znodes through its watches.

- DeleteTopics: ``/admin/delete_topics/<t>``; the controller deletes the topic's znodes
  (``wireserver.cluster.topic_deletion``) and every broker drops its logs when the assignment
  disappears.
- CreatePartitions: the assignment in ``/brokers/topics/<t>`` gains the new partitions, placed
  as Kafka's ``AdminZkClient.createNewPartitionsAssignment`` places them; the controller creates
  their state and every broker opens their logs.
- Topic configs: ``/config/topics/<t>`` then a sequential ``/config/changes/config_change_``
  notification (``wireserver.cluster.config_changes`` applies it on every broker).

Calls are synchronous ZooKeeper round trips on the reactor, like the rest of the cluster code:
admin requests are rare.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from wireserver.cluster import zkdata as zd
from wireserver.cluster.config_changes import write_entity_config
from wireserver.cluster.placement import PlacementError, assign_replicas
from wireserver.metadata import TopicError
from wireserver.protocol.errors import ErrorCode


class ZkHolder(Protocol):
    """What these functions use of the ``ClusterNode`` their callers pass: its ZooKeeper
    client. Typed so, this module does not import the node that calls it."""

    zk: Any


def mark_for_deletion(node: ZkHolder, topic: str) -> None:
    """Ask the controller to delete ``topic``. Asking twice is not an error: Kafka's
    ``ZkAdminManager`` swallows TopicAlreadyMarkedForDeletion and waits like the first caller."""
    from kazoo.exceptions import NodeExistsError

    try:
        node.zk.create(zd.delete_topic_path(topic), b"", makepath=True)
    except NodeExistsError:
        pass


def read_assignment(node: ZkHolder, topic: str) -> tuple[zd.TopicAssignment | None, int]:
    """The topic's assignment as ZooKeeper has it now, and the znode version (None, -1 when
    the topic does not exist)."""
    from kazoo.exceptions import NoNodeError

    try:
        data, stat = node.zk.get(zd.topic_path(topic))
    except NoNodeError:
        return None, -1
    return zd.TopicAssignment.decode(topic, data), stat.version


def first_partition_replicas(existing: zd.TopicAssignment) -> list[int]:
    """Partition 0's replicas: its length is the topic's replication factor, its first the
    start of the placement of added partitions (as in Kafka)."""
    return existing.replicas.get(0) or next(iter(existing.replicas.values()))


def new_partitions_assignment(
    brokers: Mapping[int, str | None], existing: zd.TopicAssignment, count: int
) -> dict[int, list[int]]:
    """Kafka's placement of added partitions (``AdminZkClient.createNewPartitionsAssignment``)
    on ``brokers`` (live broker id -> rack): round robin with the topic's replication factor,
    starting at the broker of partition 0's first replica and at partition number
    ``len(existing)`` (so the pattern continues where creation left it)."""
    first = first_partition_replicas(existing)
    ids = sorted(brokers)
    start_index = next((i for i, b in enumerate(ids) if b >= first[0]), 0)
    try:
        return assign_replicas(
            count - len(existing.replicas),
            len(first),
            brokers,
            start_index=start_index,
            first_partition=len(existing.replicas),
        )
    except PlacementError as exc:
        raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None


def add_partitions(
    node: ZkHolder, existing: zd.TopicAssignment, zk_version: int, added: Mapping[int, list[int]]
) -> None:
    """Write the assignment extended by ``added`` (partition -> replicas), conditional on the
    version ``existing`` was read at: a concurrent change fails the request rather than losing
    one of the two (Kafka overwrote unconditionally)."""
    from kazoo.exceptions import BadVersionError, NoNodeError

    replicas = dict(existing.replicas)
    replicas.update({p: list(r) for p, r in added.items()})
    assignment = zd.TopicAssignment(existing.name, existing.topic_id, replicas)
    try:
        node.zk.set(zd.topic_path(existing.name), assignment.encode(), version=zk_version)
    except NoNodeError:
        raise TopicError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{existing.name}' does not exist."
        ) from None
    except BadVersionError:
        raise TopicError(
            ErrorCode.INVALID_PARTITIONS,
            f"The partitions of topic '{existing.name}' changed concurrently.",
        ) from None


def read_topic_config(node: ZkHolder, topic: str) -> dict[str, str]:
    """The topic's overrides as ZooKeeper has them (the source of truth for incremental
    changes, which a broker may not have applied yet)."""
    return zd.read_entity_config(node.zk, zd.topic_config_path(topic))


def write_topic_config(node: ZkHolder, topic: str, overrides: Mapping[str, str]) -> None:
    """Kafka's ``AdminZkClient.changeTopicConfig``: the whole override set, then a change
    notification that every broker (this one included) follows."""
    write_entity_config(node.zk, zd.topic_config_path(topic), overrides, f"topics/{topic}")
