"""The KRaft controller APIs a Kafka 4.4 broker forwards to its controller quorum (DescribeQuorum,
UnregisterBroker, AddRaftVoter, RemoveRaftVoter, UnregisterController): wireserver has no
quorum, and Kafka's own tools say so, promptly, in the words each tool has for an unsupported
API, naming what wireserver does not do."""

from __future__ import annotations

import base64
import uuid

import pytest
from kafka.protocol.admin.cluster import DescribeQuorumRequest

from compat_tests.reference import run_tool
from wireserver.protocol.messages_kraft import UnregisterBrokerRequest
from wireserver.testing import EmbeddedBroker, KafkaWire

NO_QUORUM = "wireserver has no KRaft controller quorum (its brokers coordinate through ZooKeeper)"
UNSUPPORTED = f"org.apache.kafka.common.errors.UnsupportedVersionException: {NO_QUORUM}"


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker() as broker:
        yield broker


def tool(broker, name, *args):
    return run_tool(name, list(args), bootstrap=broker.bootstrap_servers, timeout=120)


@pytest.mark.parametrize("view", ["--status", "--replication"])
def test_metadata_quorum_describe_says_there_is_no_quorum(broker, view):
    done = tool(broker, "kafka-metadata-quorum", "describe", view)
    assert done.returncode == 1
    # The tool prints the message, then the stack trace it prints for every failed call.
    assert done.stderr.splitlines()[0] == (
        f"{UNSUPPORTED}: there is no metadata quorum to describe (DescribeCluster lists the "
        f"brokers and the controller)"
    )


def test_metadata_quorum_remove_controller_says_there_is_no_quorum(broker):
    directory = "AAAAAAAAAAAAAAAAAAAAAQ"
    done = tool(
        broker,
        "kafka-metadata-quorum",
        "remove-controller",
        "--controller-id",
        "3000",
        "--controller-directory-id",
        directory,
    )
    assert done.returncode == 1
    first = done.stderr.splitlines()[0]  # then the stack trace it prints for a failed call
    assert first == f"{UNSUPPORTED}: controller 3000 cannot be removed from it"


def test_metadata_quorum_add_controller_says_there_is_no_quorum(broker, tmp_path):
    directory = tmp_path / "metadata"
    directory.mkdir()
    (directory / "meta.properties").write_text(
        "version=1\ncluster.id=wireserver-test\nnode.id=3000\n"
        f"directory.id={base64.urlsafe_b64encode(uuid.uuid4().bytes).decode()[:22]}\n"
    )
    config = tmp_path / "controller.properties"
    config.write_text(
        "process.roles=controller\nnode.id=3000\n"
        f"metadata.log.dir={directory}\n"
        "controller.listener.names=CONTROLLER\n"
        "listeners=CONTROLLER://127.0.0.1:39093\n"
    )
    done = tool(broker, "kafka-metadata-quorum", "--command-config", str(config), "add-controller")
    assert done.returncode == 1
    assert f"{UNSUPPORTED}: controller 3000 cannot be added to it" in done.stderr


@pytest.mark.parametrize(
    "command,what", [("unregister", "broker"), ("unregister-controller", "controller")]
)
def test_cluster_tool_unregister_says_the_cluster_does_not_support_it(broker, command, what):
    done = tool(broker, "kafka-cluster", command, "--id", "7")
    assert done.returncode == 0
    # The admin client logs the broker's message; no stack trace.
    assert f"failed: {NO_QUORUM}: " in done.stderr and "\tat " not in done.stderr
    assert (
        done.stdout.strip() == f"The target cluster does not support the {what} unregistration API."
    )


def test_acls_come_first():
    with EmbeddedBroker(sasl="PLAIN", users={"alice": "a"}, authorizer=True) as broker:
        with KafkaWire(broker.bootstrap_servers, sasl=("PLAIN", "alice", "a")) as alice:
            described = alice.request(DescribeQuorumRequest(version=2, topics=[]))
            assert (described.error_code, described.error_message) == (31, None)
            unregistered = alice.request(UnregisterBrokerRequest(version=0, broker_id=1))
            assert unregistered.error_code == 31
        with broker.wire() as admin:  # a super user
            described = admin.request(DescribeQuorumRequest(version=2, topics=[]))
            assert described.error_code == 35 and NO_QUORUM in described.error_message
