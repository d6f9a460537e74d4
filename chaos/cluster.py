"""The system under test: three wireserver brokers and a ZooKeeper, each in a namespace of its
own on a :class:`chaos.netns.Network`, every broker's log dir on a small tmpfs of its own (so a
full disk can be one broker's alone).

The campaign talks to a target through this class's methods only (start and stop processes,
their pids, who leads what); :mod:`chaos.kafka_cluster` offers the same for a real Kafka.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from chaos.faults import DiskFiller, resume
from chaos.netns import Network, Node
from wireserver.cluster.zookeeper import ZooKeeperServer
from wireserver.testing import KafkaWire
from wireserver.testing.cluster import FAST_FAILOVER, broker_metadata
from wireserver.testing.embedded import EmbeddedBroker

PORT = 9092
ZK_PORT = 2181


def durability_settings(unclean: bool) -> dict[str, str]:
    """Kafka's settings for durability (RF 3, min.insync.replicas 2), on every internal topic
    too: the same for every target."""
    return {
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
        "offsets.topic.replication.factor": "3",
        "offsets.topic.num.partitions": "6",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "transaction.state.log.num.partitions": "6",
        "unclean.leader.election.enable": "true" if unclean else "false",
        "group.initial.rebalance.delay.ms": "0",
    }


def broker_settings(unclean: bool) -> dict[str, str]:
    """:func:`durability_settings` and failure detection in seconds (:data:`FAST_FAILOVER`)."""
    return {**FAST_FAILOVER, **durability_settings(unclean)}


class NamespaceBrokers:
    """What every target has: a namespace for its coordination service, brokers 1..``brokers``
    in namespaces ``b1..`` (port :data:`PORT`), each with a disk of its own for its log dir
    (``DATA`` in it); and what a campaign asks the brokers over the wire, from the root
    namespace."""

    name: str
    #: What pausing or killing "the coordination service" means for this target.
    coordination: str

    def __init__(self, network: Network, coordination_node: str, brokers: int, disk_mb: int):
        self.network = network
        self._root = tempfile.mkdtemp(prefix=f"{self.name}-chaos-")
        self.coordination_node = network.add(coordination_node)
        self.broker_nodes: dict[int, Node] = {
            i: network.add(f"b{i}") for i in range(1, brokers + 1)
        }
        self.disks = {
            i: DiskFiller(os.path.join(self._root, f"disk-{i}"), disk_mb) for i in self.broker_nodes
        }

    def log_dir(self, broker_id: int) -> str:
        return os.path.join(self.disks[broker_id].path, "data")

    def coordination_nodes(self) -> list[Node]:
        return [self.coordination_node]

    def _remove_files(self) -> None:
        for disk in self.disks.values():
            disk.close()
        shutil.rmtree(self._root, ignore_errors=True)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{node.ip}:{PORT}" for node in self.broker_nodes.values())

    def metadata(self, topic: str | None = None):
        """(controller, live brokers, {partition: (leader, epoch, replicas, isr)}) from the
        first broker that answers, or None."""
        for node in self.broker_nodes.values():
            try:
                with KafkaWire(f"{node.ip}:{PORT}", timeout=3) as wire:
                    return broker_metadata(wire, topic)
            except (OSError, ConnectionError, TimeoutError, RuntimeError):
                continue
        return None

    def answers(self, broker_id: int) -> bool:
        """Whether the broker answers a Metadata request right now."""
        try:
            with KafkaWire(f"{self.broker_nodes[broker_id].ip}:{PORT}", timeout=3) as wire:
                broker_metadata(wire)
            return True
        except (OSError, ConnectionError, TimeoutError, RuntimeError):
            return False

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        with KafkaWire(f"{self.broker_nodes[1].ip}:{PORT}", timeout=30) as wire:
            wire.create_topic(name, partitions, 3, configs)


class WireserverCluster(NamespaceBrokers):
    name = "wireserver"
    coordination = "ZooKeeper"

    def __init__(
        self, network: Network, brokers: int = 3, unclean: bool = False, disk_mb: int = 256
    ):
        super().__init__(network, "zk", brokers, disk_mb)
        zk_node = self.coordination_node
        self.zookeeper = ZooKeeperServer(
            port=ZK_PORT,
            host=zk_node.ip,
            command_prefix=network.prefix(zk_node),
            data_dir=os.path.join(self._root, "zk"),
        )
        self.brokers: dict[int, EmbeddedBroker] = {}
        settings = broker_settings(unclean)
        for broker_id, node in self.broker_nodes.items():
            self.brokers[broker_id] = EmbeddedBroker(
                "subprocess",
                host=node.ip,
                port=PORT,
                data_dir=self.log_dir(broker_id),
                command_prefix=network.prefix(node),
                overrides={
                    **settings,
                    "broker.id": str(broker_id),
                    "zookeeper.connect": f"{zk_node.ip}:{ZK_PORT}",
                },
            )

    # -- processes ---------------------------------------------------------------------------

    def start(self) -> WireserverCluster:
        self.zookeeper.start()
        for broker in self.brokers.values():
            broker.start()
        return self

    def broker_pid(self, broker_id: int) -> int | None:
        broker = self.brokers[broker_id]
        return broker.pid if broker.running else None

    def broker_running(self, broker_id: int) -> bool:
        return self.brokers[broker_id].running

    def kill_broker(self, broker_id: int) -> None:
        self.brokers[broker_id].kill()

    def start_broker(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if broker.process is not None and broker.process.poll() is not None:
            broker.kill()  # exited by itself (a halt): reap it first
        broker.start()

    def coordination_pids(self) -> list[int]:
        process = self.zookeeper.process
        return [process.pid] if process is not None and process.poll() is None else []

    def kill_coordination(self) -> None:
        process = self.zookeeper.process
        if process is not None:
            process.kill()
            process.wait()
            self.zookeeper.process = None

    def start_coordination(self) -> None:
        if self.zookeeper.process is None:
            self.zookeeper.start()

    def data_dir(self, broker_id: int) -> str:
        return self.brokers[broker_id].data_dir

    def save_logs(self, directory: str) -> None:
        """Copy every broker's log and ZooKeeper's into ``directory`` (they go with close)."""
        os.makedirs(directory, exist_ok=True)
        for broker_id, broker in self.brokers.items():
            if os.path.exists(broker.log_path):
                shutil.copy(broker.log_path, os.path.join(directory, f"broker-{broker_id}.log"))
        if os.path.exists(self.zookeeper.log_path):
            shutil.copy(self.zookeeper.log_path, os.path.join(directory, "zookeeper.log"))

    def close(self) -> None:
        for broker in self.brokers.values():
            if broker.running:
                resume(broker.pid)  # a paused broker cannot stop
            broker.kill()
            broker.close()
        for pid in self.coordination_pids():
            resume(pid)
        self.zookeeper.close()
        self._remove_files()
