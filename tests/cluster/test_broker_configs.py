"""Dynamic broker configs live in ZooKeeper in cluster mode, where Kafka's ZooKeeper-era
brokers kept them: ``kafka-configs`` bootstrapped from broker 1 sets the cluster default
(``/config/brokers/<default>``) and broker 2's own value (``/config/brokers/2``), each with a
change notification; broker 2 applies both, keeps them across a restart, and forgets its own
once it is deleted. ``message.max.bytes`` is the key a producer observes: a record over it is
refused with MSG_SIZE_TOO_LARGE by the partition's leader, broker 2."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.reference import require_tools, run_tool
from tests.apis.broker_configs import KEY, limit_in_force
from tests.cluster.conftest import Cluster, wait_for, zk_client

pytestmark = pytest.mark.integration

CHROOT = "/wireserver-broker-configs"
DEFAULT_LIMIT, BROKER_LIMIT = 20000, 5000


@pytest.fixture(scope="module")
def cluster(zookeeper):
    nodes = Cluster(zookeeper, 2, CHROOT).start()
    yield nodes
    nodes.close()


@pytest.fixture
def zk(zookeeper):
    yield from zk_client(zookeeper, CHROOT)


def kafka_configs(bootstrap: str, *args: str) -> str:
    done = run_tool(
        "kafka-configs",
        ["--entity-type", "brokers", "--alter", *args],
        bootstrap=bootstrap,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def znode(zk, path: str) -> dict:
    return json.loads(zk.get(path)[0])


def notified(zk, entity_path: str) -> bool:
    children = zk.get_children("/config/changes")
    return any(
        json.loads(zk.get(f"/config/changes/{child}")[0])["entity_path"] == entity_path
        for child in children
    )


def restart_without_notifications(zk, broker) -> None:
    """Restart ``broker`` as it would come back long after the change notifications expired
    (15 minutes): what it applies can come from the config znodes alone."""
    for child in zk.get_children("/config/changes"):
        zk.delete(f"/config/changes/{child}")
    broker.restart()


def test_default_and_per_broker_configs_reach_the_broker_and_survive_its_restart(cluster, zk):
    require_tools()
    first, second = cluster.brokers[1], cluster.brokers[2]
    admin = AdminClient({"bootstrap.servers": first.bootstrap_servers})
    admin.create_topics([NewTopic("led-by-2", 1, replica_assignment=[[2]])])["led-by-2"].result(30)

    # the cluster default, through broker 1, reaches broker 2 through ZooKeeper
    kafka_configs(
        first.bootstrap_servers, "--entity-default", "--add-config", f"{KEY}={DEFAULT_LIMIT}"
    )
    assert znode(zk, "/config/brokers/<default>") == {
        "version": 1,
        "config": {KEY: str(DEFAULT_LIMIT)},
    }
    assert notified(zk, "brokers/<default>")
    wait_for(
        lambda: limit_in_force(second, "led-by-2", DEFAULT_LIMIT),
        what="broker 2 to apply the cluster default set through broker 1",
    )

    # broker 2's own value (the Java admin client sends it to broker 2) overrides it
    kafka_configs(
        first.bootstrap_servers,
        "--entity-name",
        "2",
        "--add-config",
        f"{KEY}={BROKER_LIMIT}",
    )
    assert znode(zk, "/config/brokers/2") == {"version": 1, "config": {KEY: str(BROKER_LIMIT)}}
    assert notified(zk, "brokers/2")
    assert limit_in_force(second, "led-by-2", BROKER_LIMIT)

    # read back from ZooKeeper at start
    restart_without_notifications(zk, second)
    wait_for(
        lambda: limit_in_force(second, "led-by-2", BROKER_LIMIT),
        what="the restarted broker 2 to lead with its own limit",
    )

    # deleted from ZooKeeper too: the default is in force again, after a restart as well
    kafka_configs(first.bootstrap_servers, "--entity-name", "2", "--delete-config", KEY)
    assert znode(zk, "/config/brokers/2") == {"version": 1, "config": {}}
    assert limit_in_force(second, "led-by-2", DEFAULT_LIMIT)
    restart_without_notifications(zk, second)
    wait_for(
        lambda: limit_in_force(second, "led-by-2", DEFAULT_LIMIT),
        what="the restarted broker 2 to lead with the cluster default",
    )
