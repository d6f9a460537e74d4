"""``/controls`` over HTTP on a subprocess broker: the Python API through it (the same answers
as in thread mode), the raw JSON answers and status codes, every bad command a 400 naming
what was wrong with the list unchanged, 405 and 404, loopback only (403), and no path at all
with controls off."""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import pytest

from tests.controls.requests import BAD_COMMANDS, partition_error, produce_request
from tests.ops.conftest import get
from wireserver.controls.http import is_loopback
from wireserver.testing import ControlError, EmbeddedBroker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kafka():
    with EmbeddedBroker("subprocess") as broker:
        yield broker


@pytest.fixture
def url(kafka):
    yield kafka.ops_url
    kafka.controls.reset()


def post(url: str, command) -> tuple[int, dict]:
    body = command if isinstance(command, bytes) else json.dumps(command).encode()
    reply = get(url, "/controls", "POST", body=body, headers={"content-type": "application/json"})
    assert reply.headers["content-type"] == "application/json"
    return reply.status, reply.json()


def listing(url: str) -> dict:
    reply = get(url, "/controls")
    assert reply.status == 200
    return reply.json()


def test_a_subprocess_broker_gets_an_operations_listener_for_its_controls(kafka):
    assert kafka.ops_urls and kafka.ops_urls[0].startswith("http://127.0.0.1:")


def test_post_list_and_delete_in_json(url):
    status, applied = post(url, {"control": "latency", "ms": 5, "api": 3})
    assert status == 201
    assert applied == {
        "id": applied["id"],
        "control": "latency",
        "ms": 5,
        "api": "Metadata",
        "client_id": None,
        "count": None,
        "remaining": None,
    }
    answer = listing(url)
    assert answer["controls"] == [applied]
    assert answer["clock_offset_ms"] == 0
    assert abs(answer["now_ms"] - time.time() * 1000) < 60_000  # the broker's wall time
    reply = get(url, f"/controls/{applied['id']}", "DELETE")
    assert (reply.status, reply.json()) == (200, applied)
    reply = get(url, f"/controls/{applied['id']}", "DELETE")
    assert reply.status == 404
    assert reply.json() == {"error": f"no active control {applied['id']}"}
    assert listing(url)["controls"] == []


def test_delete_all_answers_the_ids_undone(url):
    first = post(url, {"control": "clock", "advance_ms": 1000})[1]
    second = post(url, {"control": "refuse_connections", "count": 3})[1]
    assert listing(url)["clock_offset_ms"] == 1000
    reply = get(url, "/controls", "DELETE")
    assert (reply.status, reply.json()) == (200, {"undone": [first["id"], second["id"]]})
    assert listing(url)["controls"] == []
    assert listing(url)["clock_offset_ms"] == 0


def test_the_python_api_over_http(kafka, url):
    controls = kafka.controls
    kafka.create_topic("over-http", partitions=1)
    with controls.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=1) as control:
        assert control.remaining() == 1
        with kafka.wire() as wire:
            assert partition_error(wire.request(produce_request("over-http"))) == 6
            assert control.remaining() == 0  # used up and gone
            assert partition_error(wire.request(produce_request("over-http"))) == 0
    before = controls.now_ms()
    controls.advance_clock(120_000)
    assert controls.now_ms() >= before + 120_000
    controls.down()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", kafka.port), timeout=5)
    controls.up()
    assert kafka.topics() == ["over-http"]
    with pytest.raises(ControlError, match="unknown API 'Prodce'"):
        controls.inject_error("Prodce", 6)


@pytest.mark.parametrize(("command", "message"), BAD_COMMANDS)
def test_a_bad_command_is_400_and_changes_nothing(url, command, message):
    kept = post(url, {"control": "latency", "ms": 0, "api": "ApiVersions"})[1]
    status, answer = post(url, command)
    assert status == 400
    assert message in answer["error"]
    assert listing(url)["controls"] == [kept]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "the body is not JSON"),
        (b"\xff\xfe", "the body is not JSON"),
        (b"", "the body is not JSON"),
        (b'["error"]', "must be an object, not list"),
        (b"42", "must be an object, not int"),
    ],
)
def test_a_body_that_is_no_command_is_400(url, body, message):
    status, answer = post(url, body)
    assert status == 400
    assert message in answer["error"]
    assert listing(url)["controls"] == []


def test_other_methods_are_405_and_other_paths_404(url):
    reply = get(url, "/controls", "PUT", body=b"{}")
    assert reply.status == 405
    assert reply.headers["allow"] == "GET, POST, DELETE"
    assert "PUT" in reply.json()["error"]
    reply = get(url, "/controls/1", "GET")
    assert reply.status == 405
    assert reply.headers["allow"] == "DELETE"
    assert get(url, "/controls/abc", "DELETE").status == 404
    assert get(url, "/controls/1/2", "DELETE").status == 404


def test_with_controls_off_there_is_no_controls_path():
    overrides = {"controls.enable": "false", "metrics.listeners": "HTTP://127.0.0.1:0"}
    with EmbeddedBroker(overrides=overrides) as plain:
        assert plain.broker.controls is None
        reply = get(plain.ops_url, "/controls")
        assert reply.status == 404
        assert get(plain.ops_url, "/controls", "POST", body=b"{}").status == 404
        assert get(plain.ops_url, "/metrics").status == 200


def non_loopback_address() -> str | None:
    """This machine's address on its default route (no packet is sent), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if is_loopback(address) else address


def test_peers_off_loopback_are_403():
    address = non_loopback_address()
    assert address is not None, "this test needs an address other than loopback"
    with EmbeddedBroker(overrides={"metrics.listeners": "HTTP://0.0.0.0:0"}) as kafka:
        port = urlsplit(kafka.ops_url).port
        reply = get(f"http://{address}:{port}", "/controls")
        assert reply.status == 403
        assert reply.json() == {"error": f"controls answer loopback peers only, not {address}"}
        status = get(f"http://{address}:{port}", "/controls", "POST", body=b'{"control":"down"}')
        assert status.status == 403
        assert kafka.controls.active() == []
        assert get(kafka.ops_url, "/controls").status == 200  # loopback is answered


def test_loopback_addresses():
    assert is_loopback("127.0.0.1")
    assert is_loopback("127.8.9.10")
    assert is_loopback("::1")
    assert is_loopback("::ffff:127.0.0.1")
    assert not is_loopback("192.0.2.7")
    assert not is_loopback("::ffff:192.0.2.7")
    assert not is_loopback("localhost")  # a peer address is never a name
