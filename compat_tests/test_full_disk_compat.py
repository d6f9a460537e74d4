"""A full disk under the only log dir, on Apache Kafka 4.4.0 and on wireserver (issue #17):
each broker gets its log dir on a tmpfs of its own (the test runs as root), a topic gets a
record, the disk is filled, and one more Produce (acks=-1, 64 KiB) is sent. Observed: that
Produce's answer, the broker's exit code, whether it logged "Shutdown broker because all log
dirs in <dir> have failed", and, after space is freed and the broker started again, the
records read back. Kafka's KRaft metadata log is kept off the tmpfs (``metadata.log.dir``):
wireserver has none, and the question is the data log dir.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from compat_tests.raw_protocol import batch, decode_records
from compat_tests.reference import must_not_skip
from compat_tests.reference.launcher import KafkaCluster
from compat_tests.reference.resolve import ResolutionError
from tests.integration import raw
from tests.small_fs import fill, small_filesystem
from wireserver.protocol.errors import ErrorCode
from wireserver.testing import EmbeddedBroker, KafkaWire, KafkaWireError

pytestmark = pytest.mark.integration

TOPIC = "full-disk"
HALTED = "Shutdown broker because all log dirs in {} have failed"


@dataclass
class Side:
    """One broker under test, as the observation needs it."""

    bootstrap: str
    data_dir: str
    wait_exit: Callable[[float], int | None]
    log_text: Callable[[], str]
    start_again: Callable[[], None]


def _produce(wire: KafkaWire, values: list[bytes]) -> tuple[str, str | None, int]:
    """(error name, error message, base offset) of one Produce v9, acks=-1."""
    response = wire.request(raw.produce(TOPIC, {0: batch(values)}, acks=-1))
    (partition,) = response.responses[0].partition_responses
    return ErrorCode(partition.error_code).name, partition.error_message, partition.base_offset


def _read_back(bootstrap: str) -> list[tuple[int, bytes]]:
    deadline = time.monotonic() + 60
    while True:
        with KafkaWire(bootstrap) as wire:
            (partition,) = wire.request(raw.fetch(TOPIC, 0, 0)).responses[0].partitions
        if partition.error_code == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)  # the partition is still being loaded
    return [(r["offset"], r["value"]) for r in decode_records(bytes(partition.records or b""))]


def observe(side: Side, mount: str) -> dict:
    with KafkaWire(side.bootstrap) as wire:
        wire.create_topic(TOPIC)
        deadline = time.monotonic() + 30
        while (first := _produce(wire, [b"kept"]))[0] != "NONE":
            assert time.monotonic() < deadline, first
            time.sleep(0.2)  # the new partition's leader is not known everywhere yet
        filler = fill(mount)
        try:
            error, message, base_offset = _produce(wire, [b"x" * 65536])
            full: dict = {"error": error, "message": message, "base_offset": base_offset}
        except (ConnectionError, OSError) as exc:
            full = {"error": f"connection lost ({type(exc).__name__})"}
    exit_code = side.wait_exit(60)
    halted = HALTED.format(os.path.abspath(side.data_dir)) in side.log_text()
    os.unlink(filler)
    side.start_again()
    return {
        "first produce": first[0],
        "produce on the full disk": full,
        "exit code": exit_code,
        "logged the shutdown line": halted,
        "read back after restart": _read_back(side.bootstrap),
    }


def _kafka_side(mount: str, workdir: str) -> tuple[KafkaCluster, Side]:
    data_dir = os.path.join(mount, "data")
    cluster = KafkaCluster(
        1,
        broker_props={"log.dirs": data_dir, "metadata.log.dir": os.path.join(workdir, "meta")},
        workdir=os.path.join(workdir, "kafka"),
    )
    node = cluster.nodes[0]

    def wait_exit(timeout: float) -> int | None:
        assert node.process is not None
        try:
            return node.process.wait(timeout)
        except Exception:  # noqa: BLE001 - still running: observed as None
            return None

    side = Side(
        cluster.bootstrap_servers,
        data_dir,
        wait_exit,
        lambda: node.server_log.read_text(errors="replace"),
        lambda: cluster.start_node(0),
    )
    return cluster, side


def _wireserver_side(mount: str) -> tuple[EmbeddedBroker, Side]:
    broker = EmbeddedBroker("subprocess", data_dir=os.path.join(mount, "data"))

    def wait_exit(timeout: float) -> int | None:
        try:
            return broker.wait_exit(timeout)
        except TimeoutError:
            return None

    side = Side("", broker.data_dir, wait_exit, broker.log_text, lambda: broker.start())
    return broker, side


def on_both(tmp_path, observation: Callable[[Side, str], dict]) -> tuple[dict, dict]:
    """``observation(side, mount)`` on Kafka, then on wireserver, each on a fresh tmpfs."""
    with small_filesystem(tmp_path / "kafka-fs", "16m") as mount:
        cluster, side = _kafka_side(mount, str(tmp_path))
        try:
            try:
                cluster.start()
            except ResolutionError as exc:
                if must_not_skip():
                    pytest.fail(f"CI=true and no reference Kafka: {exc}")
                pytest.skip(str(exc))
            kafka = observation(side, mount)
        finally:
            cluster.stop()
    with small_filesystem(tmp_path / "wireserver-fs", "16m") as mount:
        broker, side = _wireserver_side(mount)
        with broker:
            side.bootstrap = broker.bootstrap_servers
            wire = observation(side, mount)
    print(f"Kafka: {kafka}\nwireserver: {wire}")
    return kafka, wire


def record(compat_record, scenario: str, kafka: dict, wire: dict, difference: str | None) -> None:
    compat_record(
        scenario=scenario,
        client="raw",
        kafka="ok",
        wireserver="ok",
        same=kafka == wire,
        known_difference=difference,
        kafka_observation=kafka,
        wireserver_observation=wire,
    )


def test_a_full_log_dir_is_answered_as_kafka_answers_it(tmp_path, compat_record):
    kafka, wire = on_both(tmp_path, observe)
    record(compat_record, "full-disk", kafka, wire, None)
    assert kafka["produce on the full disk"]["error"] != "NONE", kafka
    assert kafka == wire


def observe_creation(side: Side, mount: str) -> dict:
    with KafkaWire(side.bootstrap) as wire:
        filler = fill(mount)
        try:
            wire.create_topic(TOPIC)
            created = "NONE"
        except KafkaWireError as exc:
            created = ErrorCode(exc.error_code).name
    exit_code = side.wait_exit(60)
    halted = HALTED.format(os.path.abspath(side.data_dir)) in side.log_text()
    os.unlink(filler)
    side.start_again()
    with KafkaWire(side.bootstrap) as wire:
        listed = TOPIC in wire.topics()
    return {
        "create topics": created,
        "exit code": exit_code,
        "logged the shutdown line": halted,
        "topic listed after restart": listed,
    }


#: docs/compatibility.md, "Storage".
CREATION_DIFFERENCE = (
    "CreateTopics on one node with a full disk: Kafka's controller accepts the topic and the "
    "broker halts creating its log; wireserver answers KAFKA_STORAGE_ERROR, removes what it "
    "made and halts"
)


def test_creating_a_topic_on_a_full_disk(tmp_path, compat_record):
    kafka, wire = on_both(tmp_path, observe_creation)
    record(compat_record, "full-disk-create-topic", kafka, wire, CREATION_DIFFERENCE)
    assert kafka["exit code"] == wire["exit code"] == 1
    assert kafka["logged the shutdown line"] and wire["logged the shutdown line"]
    # The known difference, asserted to still differ:
    assert (kafka["create topics"], kafka["topic listed after restart"]) == ("NONE", True)
    assert (wire["create topics"], wire["topic listed after restart"]) == (
        "KAFKA_STORAGE_ERROR",
        False,
    )
