"""Each control of a thread-mode test broker, observed by a client over real sockets: kafka-python
for what a user sees, KafkaWire for exact fields (the error code, throttle_time_ms, the
connection closed or refused); every bad command refused with a message naming what was wrong
and the active list unchanged; counts used up, undo and the context manager."""

from __future__ import annotations

import re
import socket
import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import NotLeaderForPartitionError
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.controls.requests import BAD_COMMANDS, partition_error, produce_request
from wireserver.protocol.errors import ErrorCode
from wireserver.testing import Control, ControlError, EmbeddedBroker, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kafka():
    with EmbeddedBroker() as broker:
        yield broker


@pytest.fixture
def controls(kafka):
    controls = kafka.controls
    yield controls
    controls.reset()


@pytest.fixture
def topic(kafka):
    name = f"controls-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(name, partitions=2)
    return name


def end_offset(kafka, topic: str, partition: int = 0) -> int:
    with kafka.wire() as wire:
        request = ListOffsetsRequest(
            version=wire.version(ListOffsetsRequest, 7),
            replica_id=-1,
            isolation_level=0,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                            partition_index=partition, timestamp=-1
                        )
                    ],
                )
            ],
        )
        (answer,) = wire.request(request).topics
        (offset,) = answer.partitions
        assert offset.error_code == 0
        return offset.offset


def values_of(kafka, topic: str, partition: int = 0) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=2000,
    )
    try:
        consumer.assign([TopicPartition(topic, partition)])
        return [record.value for record in consumer]
    finally:
        consumer.close()


# -- error --------------------------------------------------------------------------------


def test_an_injected_produce_error_is_answered_without_appending(kafka, controls, topic):
    control = controls.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
    assert control.fields["api"] == "Produce"
    assert control.fields["error"] == "NOT_LEADER_OR_FOLLOWER"
    assert control.remaining() == 2
    with kafka.wire() as wire:
        assert partition_error(wire.request(produce_request(topic))) == 6
        assert control.remaining() == 1
        assert partition_error(wire.request(produce_request(topic))) == 6
        # Used up: it leaves the list and the next produce is handled.
        assert controls.active() == []
        assert control.remaining() == 0
        assert partition_error(wire.request(produce_request(topic, b"kept"))) == 0
    assert values_of(kafka, topic) == [b"kept"]


def test_kafka_python_sees_the_injected_error(kafka, controls, topic):
    """A producer that does not retry reports the error; nothing was written."""
    controls.inject_error("Produce", ErrorCode.NOT_LEADER_OR_FOLLOWER.value)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, retries=0)
    try:
        with pytest.raises(NotLeaderForPartitionError):
            producer.send(topic, b"lost", partition=0).get(timeout=20)
        producer.send(topic, b"second", partition=0).get(timeout=20)
    finally:
        producer.close()
    assert values_of(kafka, topic) == [b"second"]


def test_an_error_filtered_by_topic_and_partition_spares_the_others(kafka, controls, topic):
    other = f"{topic}-other"
    kafka.create_topic(other, partitions=1)
    control = controls.inject_error(
        "Produce", "NOT_ENOUGH_REPLICAS", topic=topic, partition=1, count=None
    )
    with kafka.wire() as wire:
        assert partition_error(wire.request(produce_request(other))) == 0
        assert partition_error(wire.request(produce_request(topic, partition=0))) == 0
        assert partition_error(wire.request(produce_request(topic, partition=1))) == 19
        assert partition_error(wire.request(produce_request(topic, partition=1))) == 19
    assert control.remaining() is None  # no count: until undone
    control.undo()
    with kafka.wire() as wire:
        assert partition_error(wire.request(produce_request(topic, partition=1))) == 0


def test_an_error_filtered_by_group_matches_its_coordinator_lookups(kafka, controls):
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

    controls.inject_error("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", group="g1", count=None)
    with kafka.wire() as wire:
        version = wire.version(FindCoordinatorRequest, 3)

        def find(key):
            return wire.request(FindCoordinatorRequest(version=version, key=key, key_type=0))

        assert find("g1").error_code == 15
        assert find("g2").error_code == 0


def test_the_context_manager_undoes_on_exit(kafka, controls, topic):
    with controls.inject_error("Produce", "REQUEST_TIMED_OUT", count=None) as control:
        assert isinstance(control, Control)
        assert [active["id"] for active in controls.active()] == [control.id]
        with kafka.wire() as wire:
            assert partition_error(wire.request(produce_request(topic))) == 7
    assert controls.active() == []
    control.undo()  # idempotent
    with kafka.wire() as wire:
        assert partition_error(wire.request(produce_request(topic))) == 0


# -- latency ------------------------------------------------------------------------------


def test_latency_holds_a_response_and_keeps_the_order(kafka, controls):
    controls.add_latency(400, api="Metadata")
    with kafka.wire() as wire:
        metadata = MetadataRequest(version=wire.version(MetadataRequest, 9), topics=[])
        versions = ApiVersionsRequest(version=0)
        started = time.monotonic()
        wire.send(metadata)
        wire.send(versions)
        # The ApiVersions response is ready at once, but leaves after the held Metadata one.
        assert wire.read_response(metadata).header.correlation_id == metadata.header.correlation_id
        assert time.monotonic() - started >= 0.4  # a lower bound: the hold itself
        assert wire.read_response(versions).error_code == 0


def test_latency_filters_by_client_id(kafka, controls):
    from wireserver.testing import KafkaWire

    controls.add_latency(500, client_id="slow-client")
    with KafkaWire(kafka.bootstrap_servers, client_id="slow-client", negotiate=False) as wire:
        started = time.monotonic()
        assert wire.request(ApiVersionsRequest(version=0)).error_code == 0
        assert time.monotonic() - started >= 0.5
    controls.reset()
    controls.add_latency(60_000, client_id="slow-client")
    # Another client id is answered at once (a held answer would outlast the 10 s timeout).
    with KafkaWire(kafka.bootstrap_servers, client_id="quick-client", timeout=10) as wire:
        assert wire.topics() is not None


# -- disconnect ---------------------------------------------------------------------------


def test_disconnect_after_handling_loses_the_ack_not_the_record(kafka, controls, topic):
    control = controls.disconnect(api="Produce")
    with kafka.wire() as wire:
        with pytest.raises(ConnectionError):
            wire.request(produce_request(topic, b"appended"))
    assert control.remaining() == 0
    assert values_of(kafka, topic) == [b"appended"]


def test_disconnect_without_handling_writes_nothing(kafka, controls, topic):
    controls.disconnect(api="Produce", handle=False, count=1)
    with kafka.wire() as wire:
        with pytest.raises(ConnectionError):
            wire.request(produce_request(topic, b"dropped"))
    assert end_offset(kafka, topic) == 0


# -- refuse_connections -------------------------------------------------------------------


def test_refused_connections_are_closed_until_the_count_is_used(kafka, controls):
    controls.refuse_connections(count=2)
    for _ in range(2):
        with pytest.raises(ConnectionError):
            kafka.wire(timeout=5)  # ApiVersions on connect: closed without an answer
    assert controls.active() == []
    with kafka.wire() as wire:
        assert wire.topics() is not None


def test_refusal_until_undone(kafka, controls):
    control = controls.refuse_connections()
    with pytest.raises(ConnectionError):
        kafka.wire(timeout=5)
    assert control.remaining() is None
    control.undo()
    with kafka.wire() as wire:
        assert wire.topics() is not None


# -- throttle -----------------------------------------------------------------------------


def test_throttle_sets_throttle_time_then_mutes_the_connection(kafka, controls, topic):
    controls.throttle("Produce", 500, count=1)
    with kafka.wire() as wire:
        response = wire.request(produce_request(topic, version=9))
        answered = time.monotonic()
        assert response.throttle_time_ms == 500
        assert partition_error(response) == 0
        # Muted: the next request on this connection is read only once the 500 ms are over.
        assert wire.topics() is not None
        assert time.monotonic() - answered >= 0.45
    assert end_offset(kafka, topic) == 1


def test_throttle_of_an_old_produce_version_holds_the_response(kafka, controls, topic):
    """Produce v5 predates client-side throttling (KIP-219): the broker delays the answer."""
    controls.throttle("Produce", 400, count=1)
    with kafka.wire() as wire:
        started = time.monotonic()
        response = wire.request(produce_request(topic, version=5))
        assert time.monotonic() - started >= 0.4
        assert response.throttle_time_ms == 400


def test_kafka_python_reports_the_throttle_time(kafka, controls, topic):
    controls.throttle("Produce", 300)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    try:
        producer.send(topic, b"v", partition=0).get(timeout=20)
        metrics = producer.metrics()["producer-metrics"]
        assert metrics["throttle-time-max"] == 300
    finally:
        producer.close()


# -- clock --------------------------------------------------------------------------------


def test_advancing_the_clock_moves_the_broker_time_and_undo_moves_it_back(kafka, controls):
    before = controls.now_ms()
    control = controls.advance_clock(3_600_000)
    assert control.fields["advance_ms"] == 3_600_000
    assert controls.now_ms() >= before + 3_600_000
    listing = kafka.controls._transport.listing()
    assert listing["clock_offset_ms"] == 3_600_000
    control.undo()
    assert controls.now_ms() < before + 3_600_000
    assert kafka.controls._transport.listing()["clock_offset_ms"] == 0


# -- down and up --------------------------------------------------------------------------


def test_down_closes_everything_and_up_serves_the_same_data(kafka, controls, topic):
    with kafka.wire() as wire:
        assert partition_error(wire.request(produce_request(topic, b"before"))) == 0
    open_connection = kafka.wire()
    port = kafka.port
    controls.down()
    try:
        # The open connection is closed, new ones are refused; the ops side is untouched.
        with pytest.raises(ConnectionError):
            open_connection.topics()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5)
        assert [active["control"] for active in controls.active()] == ["down"]
        with pytest.raises(ControlError, match="down already"):
            controls.down()
    finally:
        open_connection.close()
        controls.up()
    assert kafka.port == port
    assert values_of(kafka, topic) == [b"before"]
    assert controls.active() == []
    with pytest.raises(ControlError, match="not down"):
        controls.up()


def test_up_while_another_process_holds_the_port_is_refused_and_stays_down(kafka, controls):
    down = controls.down()
    squatter = socket.socket()
    try:
        # (past the TIME_WAIT of the broker's closed connections, as the broker binds)
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", kafka.port))
        squatter.listen()
        with pytest.raises(ControlError, match="cannot listen again"):
            controls.up()
        assert [active["id"] for active in controls.active()] == [down.id]
    finally:
        squatter.close()
    controls.up()
    assert kafka.topics() is not None


def test_reset_undoes_everything(kafka, controls):
    controls.inject_error("Metadata", "UNKNOWN_SERVER_ERROR", count=None)
    controls.advance_clock(10_000)
    controls.down()
    controls.reset()
    assert controls.active() == []
    assert kafka.controls._transport.listing()["clock_offset_ms"] == 0
    wait_for(lambda: kafka.topics() is not None, timeout=10)


# -- bad commands -------------------------------------------------------------------------

#: Each bad command and a piece of the message that must name what was wrong.


@pytest.mark.parametrize(("command", "message"), BAD_COMMANDS)
def test_a_bad_command_is_refused_and_changes_nothing(kafka, controls, command, message):
    kept = controls.add_latency(0, api="ApiVersions")
    before = controls.active()
    with pytest.raises(ControlError, match=re.escape(message)):
        controls.apply(command)
    assert controls.active() == before == [kept.fields]


def test_a_command_must_be_an_object(kafka, controls):
    with pytest.raises(ControlError, match="must be an object, not list"):
        controls.apply(["error"])
    with pytest.raises(ControlError, match="not JSON"):
        controls.apply({"control": "latency", "ms": object()})
    assert controls.active() == []


def test_undo_of_an_unknown_id_is_an_error_that_names_it(kafka, controls):
    from wireserver.controls import UnknownControl

    with pytest.raises(UnknownControl, match="no active control 424242"):
        kafka.controls._transport.undo(424242)


def test_controls_off_means_no_rules_at_all():
    with EmbeddedBroker(overrides={"controls.enable": "false"}) as plain:
        assert plain.broker.controls is None
        assert plain.broker.reactor is plain.broker.wall_reactor  # no clock proxy
        with pytest.raises(RuntimeError, match="controls are off"):
            plain.controls  # noqa: B018 - the property raises
        assert plain.topics() == []
