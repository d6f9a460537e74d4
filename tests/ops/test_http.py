"""The operations listener (``metrics.listeners``) of a real broker, over real sockets: off
by default, a free port on loopback, its endpoints, methods and paths, HTTPS with the
listener's keys, basic authentication, and bad input answered with a 4xx and logged while
Kafka clients are served as before."""

from __future__ import annotations

import logging
import ssl
import threading
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.ops.conftest import connect, get, get_json, raw, read_until_closed, status_of
from wireserver.config import BrokerConfig, ConfigValueError
from wireserver.ops.http import REQUEST_TIMEOUT_S
from wireserver.security.certs import write_test_pki
from wireserver.testing import EmbeddedBroker

pytestmark = pytest.mark.integration

OPS = {"metrics.listeners": "HTTP://:0"}


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(overrides=OPS) as instance:
        yield instance


# -- configuration -------------------------------------------------------------------------


def test_the_listener_is_off_by_default():
    with EmbeddedBroker() as plain:
        assert plain.broker.ops.bound == []
        with pytest.raises(RuntimeError, match="no operations listener"):
            plain.ops_url  # noqa: B018 - the property raises


def test_metrics_listeners_are_http_or_https_each_once():
    with pytest.raises(ConfigValueError, match="HTTP or HTTPS, not PLAINTEXT"):
        BrokerConfig({"metrics.listeners": "PLAINTEXT://:9404"})
    with pytest.raises(ConfigValueError, match="HTTP appears twice"):
        BrokerConfig({"metrics.listeners": "HTTP://:1,HTTP://:2"})
    with pytest.raises(ConfigValueError, match="user:password") as refused:
        BrokerConfig({"metrics.basic.auth.users": "alice:secret,bob"})
    assert "secret" not in str(refused.value)  # a password is never shown
    config = BrokerConfig({"metrics.basic.auth.users": "alice:pa:ss, bob:pw"})
    assert config.metrics_users == {"alice": "pa:ss", "bob": "pw"}


def test_port_zero_binds_a_free_port_on_loopback_when_no_host_is_given(broker):
    (listener,) = broker.broker.ops.bound
    assert listener.host == "127.0.0.1"
    assert listener.port > 0
    assert broker.ops_url == f"http://127.0.0.1:{listener.port}"
    assert get(broker.ops_url, "/").status == 200


def test_a_subprocess_broker_names_its_listener_before_the_ready_line():
    with EmbeddedBroker("subprocess", overrides=OPS) as process:
        assert process.ops_url.startswith("http://127.0.0.1:")
        assert get(process.ops_url, "/metrics").status == 200
        assert f"operations listener at {process.ops_url}" in process.log_text()


# -- endpoints -----------------------------------------------------------------------------


def test_metrics_answers_prometheus_text(broker):
    from prometheus_client.parser import text_string_to_metric_families

    from wireserver.ops.prometheus import CONTENT_TYPE

    reply = get(broker.ops_url, "/metrics")
    assert reply.status == 200
    assert reply.headers["content-type"] == CONTENT_TYPE
    # Whatever it holds parses as the text format (the parser raises on anything else).
    list(text_string_to_metric_families(reply.body.decode("utf-8")))


def test_the_status_page_is_one_self_contained_html_page(broker):
    reply = get(broker.ops_url, "/")
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/html; charset=utf-8"
    page = reply.body.decode()
    assert "<script>" in page and "<style>" in page
    assert "src=" not in page and "<link" not in page, "nothing loaded from elsewhere"
    assert "connect-src 'self'" in reply.headers["content-security-policy"]
    assert reply.headers["x-content-type-options"] == "nosniff"


def test_api_lists_its_endpoints_and_answers_json(broker):
    index = get_json(broker.ops_url, "/api/")
    assert index["endpoints"] == [
        "/api/cluster",
        "/api/topics",
        "/api/groups",
        "/api/transactions",
    ]
    for path in index["endpoints"]:
        assert get_json(broker.ops_url, path)["node_id"] == 0
    redirect = get(broker.ops_url, "/api")
    assert redirect.status == 302 and redirect.headers["location"].endswith("/api/")


@pytest.mark.parametrize("path", ["/nope", "/api/nope", "/metrics/x", "/api/topics/x", "/x/y"])
def test_unknown_paths_are_404(broker, path):
    assert get(broker.ops_url, path).status == 404


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS"])
def test_other_methods_than_get_and_head_are_405(broker, method):
    reply = get(broker.ops_url, "/metrics", method)
    assert reply.status == 405
    assert set(reply.headers["allow"].replace(" ", "").split(",")) == {"GET", "HEAD"}


def test_head_answers_the_headers_without_a_body(broker):
    reply = get(broker.ops_url, "/api/cluster", "HEAD")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.body == b""


# -- HTTPS and basic authentication --------------------------------------------------------


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """HTTPS with the keys given for listener name METRICS only (the Kafka listener stays
    PLAINTEXT), and two users."""
    pki = write_test_pki(str(tmp_path_factory.mktemp("pki")))
    overrides = {
        "metrics.listeners": "HTTPS://:0",
        "listener.name.metrics.ssl.keystore.type": "PEM",
        "listener.name.metrics.ssl.keystore.location": pki.server,
        "metrics.basic.auth.users": "alice:wonder:land,bob:builder",
    }
    with EmbeddedBroker(overrides=overrides) as instance:
        context = ssl.create_default_context(cafile=pki.ca)
        yield instance, context


def test_https_serves_with_the_metrics_listener_keys(secured):
    broker, context = secured
    assert broker.ops_url.startswith("https://127.0.0.1:")
    reply = get(broker.ops_url, "/api/cluster", auth=("bob", "builder"), context=context)
    assert reply.status == 200
    assert reply.json()["node_id"] == 0


def test_https_refuses_plain_http(secured):
    broker, _ = secured
    answer = raw(broker.ops_url, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert not answer.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize(
    "auth",
    [None, ("alice", "wonder"), ("alice", "land"), ("carol", "builder"), ("bob", "")],
    ids=["none", "wrong-password", "password-after-colon", "unknown-user", "empty"],
)
def test_without_valid_credentials_every_path_is_401_with_a_challenge(secured, auth, caplog):
    broker, context = secured
    with caplog.at_level(logging.WARNING, logger="wireserver.ops"):
        for path in ("/", "/metrics", "/api/topics", "/nope"):
            reply = get(broker.ops_url, path, auth=auth, context=context)
            assert reply.status == 401
            assert reply.headers["www-authenticate"] == 'Basic realm="wireserver", charset="UTF-8"'
            assert b"topics" not in reply.body
    assert any("401" in r.getMessage() and "127.0.0.1" in r.getMessage() for r in caplog.records)


def test_a_password_may_hold_a_colon(secured):
    broker, context = secured
    reply = get(broker.ops_url, "/metrics", auth=("alice", "wonder:land"), context=context)
    assert reply.status == 200


def test_a_malformed_authorization_header_is_401(secured):
    broker, context = secured
    for header in ("Basic !!!", "Basic dXNlcg==", "Bearer abc", "Basic"):
        reply = get(broker.ops_url, "/", headers={"Authorization": header}, context=context)
        assert reply.status == 401, header


# -- bad input ---------------------------------------------------------------------------


def logged(caplog, code: int) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "wireserver.ops" and r.getMessage().startswith(f"ops listener: {code} ")
    ]


BAD_REQUESTS = {
    "not-http": (b"GARBAGE\r\n\r\n", 400),
    "header-without-colon": (b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400),
    "bad-content-length": (b"GET / HTTP/1.1\r\nContent-Length: ten\r\n\r\n", 400),
    "long-uri": (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", 414),
    "long-uri-unfinished": (b"GET /" + b"a" * 20000, 414),
    "long-header-line": (b"GET / HTTP/1.1\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n", 431),
    "big-header-section": (
        b"GET / HTTP/1.1\r\n"
        + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 400) for i in range(30))
        + b"\r\n",
        431,
    ),
    "many-headers": (
        b"GET / HTTP/1.1\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(100)) + b"\r\n",
        431,
    ),
    "body-on-get": (b"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 413),
    "huge-body-announced": (b"POST / HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n", 413),
    "chunked-body": (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", 413),
}


@pytest.mark.parametrize("name", BAD_REQUESTS)
def test_bad_input_gets_a_4xx_is_logged_and_closed(broker, caplog, name):
    data, code = BAD_REQUESTS[name]
    with caplog.at_level(logging.WARNING, logger="wireserver.ops"):
        answer = raw(broker.ops_url, data)
    assert status_of(answer) == code
    assert b"Connection: close" in answer
    (line,) = logged(caplog, code)
    assert "from 127.0.0.1:" in line
    # The listener still serves everyone else.
    assert get(broker.ops_url, "/api/cluster").status == 200


def test_a_small_body_on_a_refused_method_is_405(broker):
    assert get(broker.ops_url, "/metrics", "POST", body=b"x" * 100).status == 405


def test_a_keep_alive_connection_serves_several_requests(broker):
    with connect(broker.ops_url) as sock:
        request = b"GET /api/cluster HTTP/1.1\r\nHost: x\r\n\r\n"
        sock.sendall(request + request + request[:-2] + b"Connection: close\r\n\r\n")
        answer = read_until_closed(sock)
    assert answer.count(b"HTTP/1.1 200 OK") == 3


def round_trip(bootstrap: str, topic: str) -> list[bytes]:
    """Produce three records with kafka-python and read them back."""
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for value in (b"a", b"b", b"c"):
        producer.send(topic, value).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=10_000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    values = []
    for message in consumer:
        values.append(message.value)
        if len(values) == 3:
            break
    consumer.close()
    return values


def test_slow_and_huge_clients_are_dropped_without_holding_up_kafka_clients(broker, caplog):
    """A client trickling a request a byte at a time (each byte would reset twisted.web's
    idle timeout) gets 408 once REQUEST_TIMEOUT_S has passed; a client streaming headers
    without end gets 431. Meanwhile, with both connected, a Kafka produce and consume round
    trip completes. An idle kept-alive connection is closed then too, without a warning."""
    topic = f"ops-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic)
    slow = connect(broker.ops_url)
    slow.sendall(b"GET / HTTP/1.1\r\n")
    stop = threading.Event()
    slow_answer: list[bytes] = []

    def trickle() -> None:
        try:
            for byte in b"X-Slow: " + b"s" * 1000:
                if stop.wait(0.5):
                    return
                slow.send(bytes([byte]))
        except OSError:
            return  # closed by the broker: what we wait for

    def read_slow() -> None:
        slow_answer.append(read_until_closed(slow))

    huge = connect(broker.ops_url)
    huge.sendall(b"GET / HTTP/1.1\r\n")
    huge_answer: list[bytes] = []

    def flood() -> None:
        try:
            for i in range(10_000):
                huge.sendall(b"X-Flood-%d: %s\r\n" % (i, b"f" * 100))
        except OSError:
            pass
        huge_answer.append(read_until_closed(huge))

    # A kept-alive connection, quiet since its answer: closed as well, but not a warning.
    idle = connect(broker.ops_url)
    idle.sendall(b"GET /api/cluster HTTP/1.1\r\nHost: x\r\n\r\n")
    idle_port = idle.getsockname()[1]
    idle_answer: list[bytes] = []

    def read_idle() -> None:
        idle_answer.append(read_until_closed(idle))

    threads = [
        threading.Thread(target=f, daemon=True) for f in (trickle, read_slow, flood, read_idle)
    ]
    with caplog.at_level(logging.WARNING, logger="wireserver.ops"):
        for thread in threads:
            thread.start()
        try:
            assert round_trip(broker.bootstrap_servers, topic) == [b"a", b"b", b"c"]
            threads[1].join(REQUEST_TIMEOUT_S + 30)
            threads[2].join(30)
            threads[3].join(30)
        finally:
            stop.set()
            slow.close()
            huge.close()
            idle.close()
    assert slow_answer and status_of(slow_answer[0]) == 408
    assert huge_answer and status_of(huge_answer[0]) == 431
    (warned,) = logged(caplog, 408)  # the slow one, not the idle one
    assert f":{idle_port}" not in warned
    assert logged(caplog, 431)
    assert idle_answer and status_of(idle_answer[0]) == 200
    assert idle_answer[0].endswith(
        b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )


def test_stopping_the_broker_closes_the_listener_and_its_connections():
    instance = EmbeddedBroker(overrides=OPS).start()
    try:
        url = instance.ops_url
        idle = connect(url)
        instance.stop()
        assert read_until_closed(idle) == b""  # dropped
        idle.close()
        with pytest.raises(ConnectionRefusedError):
            connect(url)
    finally:
        instance.close()
