"""Broker processes of one ZooKeeper-coordinated cluster on 127.0.0.1: what the cluster
tests, the cluster compatibility suite, the replication benchmark and ``wireserver cluster``
all start, written once.

    with ZooKeeperServer() as zk:
        cluster = LocalCluster(zk.connect + "/demo", 3, FAST_FAILOVER).start()
        cluster.bootstrap            # "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3" (running ones)
        cluster.brokers[2].kill()    # an EmbeddedBroker in subprocess mode
        cluster.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from wireserver.testing.embedded import EmbeddedBroker
from wireserver.testing.wire import KafkaWire, wait_for

#: Failure detection in seconds rather than Kafka's production defaults (18 s ZooKeeper
#: session, 30 s replica lag), so that tests and benchmarks see a dead broker quickly.
FAST_FAILOVER = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    # Closing a cluster stops its brokers one by one; the last one's controlled shutdown finds
    # no other replica to hand its partitions to and retries: keep those pauses short.
    "controlled.shutdown.retry.backoff.ms": "300",
}


class LocalCluster:
    """``count`` brokers with ids 1..count, each an :class:`EmbeddedBroker` with its own data
    dir, all on the ZooKeeper at ``zookeeper_connect`` (a chroot is allowed): subprocesses, or
    with ``mode="thread"`` brokers on this process's reactor thread (started in a fraction of
    the time, but none can be killed, and they share one thread and the test's CPU)."""

    def __init__(
        self,
        zookeeper_connect: str,
        count: int,
        overrides: Mapping[str, object] | None = None,
        log_level: str = "INFO",
        data_dirs: Mapping[int, str] | None = None,
        mode: str = "subprocess",
        **broker_options,
    ):
        """``broker_options`` go to every ``EmbeddedBroker`` (``sasl=``, ``users=``, ...);
        ``data_dirs`` gives some brokers (by id) their data dir (a small filesystem, say),
        the others get a temporary one."""
        self.zk_connect = zookeeper_connect
        self.mode = mode
        self.brokers: dict[int, EmbeddedBroker] = {}
        for broker_id in range(1, count + 1):
            settings = dict(overrides or {})
            settings.update({"broker.id": str(broker_id), "zookeeper.connect": zookeeper_connect})
            self.brokers[broker_id] = EmbeddedBroker(
                mode,
                overrides=settings,
                log_level=log_level,
                data_dir=(data_dirs or {}).get(broker_id),
                **broker_options,
            )

    def start(self, timeout: float = 60.0, *, together: bool = False) -> LocalCluster:
        """Start every broker and return once all are ready: one after the other (broker 1
        first, so it is the first controller), or ``together``, each subprocess from its own
        thread, which takes about one broker's start instead of ``count`` (most of a start is
        the new process importing its modules); then any broker may win the controller
        election. Thread-mode brokers start one after the other: each takes milliseconds."""
        if together and self.mode == "subprocess":
            with ThreadPoolExecutor(len(self.brokers)) as starting:
                for started in [starting.submit(b.start) for b in self.brokers.values()]:
                    started.result()
        else:
            for broker in self.brokers.values():
                broker.start()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until every running broker's Metadata lists every running broker: a broker
        listens before its ZooKeeper watches have shown it the others, and a CreateTopics
        it answers meanwhile sees too few brokers for the replication factor."""
        live = sorted(i for i, b in self.brokers.items() if b.running)

        def listed(broker: EmbeddedBroker) -> list[int]:
            try:
                with broker.wire() as wire:  # authenticated when the brokers want it
                    return broker_metadata(wire)[1]
            except ConnectionError:  # a listener the test wire cannot log in to (client
                return live  # certificates): nothing to wait for there

        wait_for(
            lambda: all(listed(self.brokers[i]) == live for i in live),
            timeout,
            what=f"every broker to list {live}",
        )

    @property
    def bootstrap(self) -> str:
        """The addresses of the brokers that are running now."""
        return ",".join(b.bootstrap_servers for b in self.brokers.values() if b.running)

    def delete_all_topics(self, timeout: float = 30.0) -> list[str]:
        """Delete every non-internal topic (DeleteTopics to one running broker) and wait
        until no running broker lists any in its Metadata (each learns of the deletion from
        ZooKeeper in its own time). Returns the names deleted."""
        live = [broker for broker in self.brokers.values() if broker.running]
        deleted = live[0].delete_all_topics(timeout)
        if deleted:
            wait_for(
                lambda: not any(broker.topics() for broker in live),
                timeout,
                what=f"every broker to forget the deleted topics {deleted}",
            )
        return deleted

    def close(self) -> None:
        for broker in self.brokers.values():
            broker.close()


def cluster_metadata(bootstrap_server: str, topic: str | None = None, **wire_options):
    """One Metadata v12 request to one broker (any Kafka-compatible one):
    ``(controller id, sorted broker ids, {partition: (leader, leader epoch, replicas, isr)})``
    (no partitions without a ``topic``); ``wire_options`` (``sasl=``, ``ssl_context=``) go to
    the ``KafkaWire``."""

    with KafkaWire(bootstrap_server, **wire_options) as wire:
        return broker_metadata(wire, topic)


def metadata_response(wire, topic: str | None = None):
    """The Metadata v12 response of one broker (``KafkaWire``) for ``topic`` (or none)."""
    from kafka.protocol.metadata.metadata import MetadataRequest

    return wire.request(
        MetadataRequest(
            version=12,
            topics=[MetadataRequest.MetadataRequestTopic(name=topic, topic_id=None)]
            if topic
            else [],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )


def broker_metadata(wire, topic: str | None = None):
    """:func:`cluster_metadata` over a connection already open (``KafkaWire``)."""
    response = metadata_response(wire, topic)
    partitions = {}
    for entry in response.topics:
        for p in entry.partitions:
            partitions[p.partition_index] = (
                p.leader_id,
                p.leader_epoch,
                list(p.replica_nodes),
                list(p.isr_nodes),
            )
    return response.controller_id, sorted(b.node_id for b in response.brokers), partitions
