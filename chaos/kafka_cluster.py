"""The same campaign against a real Apache Kafka (KRaft), for a side-by-side table: three
brokers (``process.roles=broker``, ids 1..3) in namespaces ``b1..b3``, each with its log dir on a
small tmpfs of its own, and one dedicated controller (``process.roles=controller``, id 100) in
namespace ``ctl``. The controller quorum plays ZooKeeper's part: pausing, killing or cutting off
"the coordination service" hits it.

The JVMs come from the compat launcher (:class:`compat_tests.reference.launcher.KafkaCluster`,
the reference Kafka's jars); the settings are wireserver's (:mod:`chaos.cluster`) with Kafka's
own names for failure detection. Kafka halts when its only log dir fails (a full disk): that is
its behaviour, and healing the fault starts it again.
"""

from __future__ import annotations

import os
import shutil

from chaos.cluster import PORT, NamespaceBrokers, durability_settings
from chaos.faults import resume
from chaos.netns import Network
from compat_tests.reference.launcher import KafkaCluster, Placement
from wireserver.testing.cluster import FAST_FAILOVER

CONTROLLER_ID = 100


def kafka_settings(unclean: bool) -> dict[str, str]:
    """:func:`chaos.cluster.durability_settings`, and failure detection in seconds under
    KRaft's names: a broker's session with the controller stands for its ZooKeeper session."""
    return {
        **durability_settings(unclean),
        "broker.session.timeout.ms": FAST_FAILOVER["zookeeper.session.timeout.ms"],
        "broker.heartbeat.interval.ms": "1000",
        **{k: v for k, v in FAST_FAILOVER.items() if k.startswith("replica.")},
    }


class KafkaKRaftCluster(NamespaceBrokers):
    name = "kafka"
    coordination = "the KRaft controller"

    def __init__(
        self, network: Network, brokers: int = 3, unclean: bool = False, disk_mb: int = 256
    ):
        super().__init__(network, "ctl", brokers, disk_mb)
        placements = {
            broker_id: Placement(node.ip, tuple(network.prefix(node)), self.log_dir(broker_id))
            for broker_id, node in self.broker_nodes.items()
        }
        placements[CONTROLLER_ID] = Placement(
            self.coordination_node.ip, tuple(network.prefix(self.coordination_node))
        )
        self.kafka = KafkaCluster(
            brokers,
            node_ids=list(self.broker_nodes),
            dedicated_controller=CONTROLLER_ID,
            placements=placements,
            port=PORT,
            broker_props=kafka_settings(unclean),
            workdir=os.path.join(self._root, "kafka"),
            startup_timeout=180,
        )

    # -- processes ---------------------------------------------------------------------------

    def start(self) -> KafkaKRaftCluster:
        self.kafka.start()
        return self

    def _node(self, node_id: int):
        return self.kafka.nodes[self.kafka.index(node_id)]

    def _pid(self, node_id: int) -> int | None:
        node = self._node(node_id)
        return node.process.pid if node.running() else None

    def broker_pid(self, broker_id: int) -> int | None:
        return self._pid(broker_id)

    def broker_running(self, broker_id: int) -> bool:
        return self._node(broker_id).running()

    def kill_broker(self, broker_id: int) -> None:
        self.kafka.kill(self.kafka.index(broker_id))

    def _start(self, node_id: int) -> None:
        """Starts a node again and returns once its process accepts connections, as the
        wireserver target's brokers and ZooKeeper do (the campaign then times how long the
        cluster takes to serve again); one that exits or never listens is left to the
        campaign to report."""
        index = self.kafka.index(node_id)
        self.kafka.start_node(index, wait=False)
        self.kafka.wait_listening(index)

    def start_broker(self, broker_id: int) -> None:
        """After a kill, or a halt on a failed log dir."""
        self._start(broker_id)

    def coordination_pids(self) -> list[int]:
        pid = self._pid(CONTROLLER_ID)
        return [pid] if pid is not None else []

    def kill_coordination(self) -> None:
        self.kafka.kill(self.kafka.index(CONTROLLER_ID))

    def start_coordination(self) -> None:
        self._start(CONTROLLER_ID)

    def data_dir(self, broker_id: int) -> str:
        return str(self._node(broker_id).data_dir)

    def save_logs(self, directory: str) -> None:
        """Copy every broker's server.log and the controller's into ``directory`` (they go
        with close)."""
        os.makedirs(directory, exist_ok=True)
        for node in self.kafka.nodes:
            name = f"broker-{node.node_id}" if node.is_broker else "controller"
            if node.server_log.exists():
                shutil.copy(node.server_log, os.path.join(directory, f"{name}.log"))

    def close(self) -> None:
        """Kills every JVM (a paused one is resumed first, so that it can die), unmounts the
        disks and removes the files."""
        for index, node in enumerate(self.kafka.nodes):
            if node.running():
                resume(node.process.pid)
            self.kafka.kill(index)
        self.kafka.stop(timeout=5)
        self._remove_files()
