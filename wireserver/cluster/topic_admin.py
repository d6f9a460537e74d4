"""Topic changes written to ZooKeeper by whichever broker receives the admin request, as
Kafka's ZooKeeper-era ``AdminZkClient`` wrote them: nobody changes a topic directly; every
broker (and the controller) acts on the znodes through its watches.

- DeleteTopics: ``/admin/delete_topics/<t>``; the controller deletes the topic's znodes
  (``wireserver.cluster.topic_deletion``) and every broker drops its logs when the assignment
  disappears.
- CreatePartitions: the assignment in ``/brokers/topics/<t>`` gains the new partitions, placed
  as Kafka's ``AdminZkClient.createNewPartitionsAssignment`` places them; the controller creates
  their state and their replicas open their logs.
- AlterPartitionReassignments: the partition's replicas in ``/brokers/topics/<t>`` become
  RS = TRS + ORS with ``adding_replicas``/``removing_replicas`` (Kafka's
  ``ReplicaAssignment.reassignTo``); the controller sees the change and completes the move
  (``wireserver.cluster.controller``). A cancel (no target) reassigns to ORS. A change that
  drops replicas (a cancel of a move that added some, a new move replacing one whose added
  replicas it does not keep) writes the partition's state in the same ZooKeeper transaction:
  the dropped replicas out of the ISR, a new leader if the leader was one of them, the leader
  epoch bumped once, as Kafka 4.4's controller writes a cancel
  (``wireserver.cluster.partition_change``).
- Topic configs: ``/config/topics/<t>`` then a sequential ``/config/changes/config_change_``
  notification (``wireserver.cluster.config_changes`` applies it on every broker).

Calls are synchronous ZooKeeper round trips on the reactor, like the rest of the cluster code:
admin requests are rare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from wireserver.cluster import zkdata as zd
from wireserver.cluster.config_changes import write_entity_config
from wireserver.cluster.partition_change import replica_change_state, transaction_failed
from wireserver.cluster.placement import PlacementError, assign_replicas
from wireserver.metadata import TopicError
from wireserver.protocol.errors import ErrorCode


class ZkHolder(Protocol):
    """What these functions use of the ``ClusterNode`` their callers pass: its ZooKeeper
    client. Typed so, this module does not import the node that calls it."""

    zk: Any


class ReassignHost(ZkHolder, Protocol):
    """What ``reassign`` uses besides: the live brokers whose replica is not in a failed log
    dir (who may lead when the leader is a replica a cancel drops)."""

    brokers: dict[int, zd.BrokerInfo]

    def live_for(self, tp: tuple[str, int]) -> set[int]: ...

    def unclean_election_allowed(self, topic: str) -> bool: ...


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
    assignment = replace(existing, replicas=replicas)  # a reassignment in progress stays
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


def reassign(node: ReassignHost, topic: str, partition: int, target: list[int] | None) -> bool:
    """Start (or replace, or with ``target`` None cancel) the reassignment of one partition,
    as Kafka's controller's ``maybeBuildReassignment`` and ``updateCurrentReassignment`` do:
    False when a cancel finds no reassignment in progress. A target equal to the current
    replicas with none in progress writes nothing (Kafka completes it at once). Retried on
    a concurrent change of the topic znode (or the partition's state) so that neither change
    is lost."""
    while True:
        existing, version = read_assignment(node, topic)
        if existing is None or partition not in existing.replicas:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"Unable to find partition {topic}:{partition}.",
            )
        if not existing.reassigning(partition):
            if target is None:
                return False
            if list(target) == existing.replicas[partition]:
                return True
        if target is None:
            _check_revert(node, existing, partition)
        updated = existing.reassign_to(
            partition, existing.origin(partition) if target is None else list(target)
        )
        if _write_reassignment(node, existing, updated, partition, version):
            return True


def _check_revert(node: ReassignHost, existing: zd.TopicAssignment, partition: int) -> None:
    """A cancel keeps the ISR's original replicas; when none of them is left in it (only
    replicas the move was adding caught up), reverting needs an unclean election, which Kafka
    4.4's controller refuses unless the topic allows one (``cancelPartitionReassignment``)."""
    from kazoo.exceptions import NoNodeError

    try:
        data, stat = node.zk.get(zd.state_path(existing.name, partition))
    except NoNodeError:
        return
    state = zd.PartitionState.decode(data, stat.version, existing.replicas[partition])
    adding = existing.adding.get(partition, [])
    if any(r not in adding for r in state.isr):
        return
    if not node.unclean_election_allowed(existing.name):
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
            f"Unable to revert partition assignment for {existing.name}:{partition} "
            "because it would require an unclean leader election.",
        )


def _write_reassignment(
    node: ReassignHost,
    existing: zd.TopicAssignment,
    updated: zd.TopicAssignment,
    partition: int,
    version: int,
) -> bool:
    """Write ``updated`` over ``existing`` (read at ``version``), with the partition's state
    in the same transaction when replicas are dropped; False on a concurrent change."""
    from kazoo.exceptions import BadVersionError, NoNodeError

    path = zd.topic_path(existing.name)
    before, after = existing.replicas[partition], updated.replicas[partition]
    new = state = None
    if any(r not in after for r in before):
        try:
            data, stat = node.zk.get(zd.state_path(existing.name, partition))
        except NoNodeError:
            pass  # no state yet: the controller creates it for the new replicas
        else:
            state = zd.PartitionState.decode(data, stat.version, before)
            # None: no replica left to lead; the controller elects when one can
            new = replica_change_state(
                state, before, after, node.live_for((existing.name, partition))
            )
    if new is None or new is state:
        try:
            node.zk.set(path, updated.encode(), version=version)
        except BadVersionError:
            return False
        return True
    transaction = node.zk.transaction()
    transaction.set_data(path, updated.encode(), version=version)
    transaction.set_data(
        zd.state_path(existing.name, partition), new.encode(), version=state.zk_version
    )
    return not transaction_failed(transaction.commit())


def reassignments(node: ZkHolder, topics: list[str] | None) -> dict[str, zd.TopicAssignment]:
    """The assignments, as ZooKeeper has them now, of ``topics`` (None: every topic) that
    have a reassignment in progress."""
    from kazoo.exceptions import NoNodeError

    if topics is None:
        try:
            topics = sorted(node.zk.get_children(zd.TOPICS))
        except NoNodeError:
            return {}
    found = {}
    for topic in topics:
        assignment, _ = read_assignment(node, topic)
        if assignment is not None and (assignment.adding or assignment.removing):
            found[topic] = assignment
    return found
