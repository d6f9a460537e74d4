"""``KafkaWire``: one blocking connection that speaks Kafka's protocol with kafka-python's
message classes, for admin chores and for tests that send hand-made requests; and ``wait_for``,
how tests wait for a broker to get somewhere."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def fetch_request(
    topic: str,
    offset: int,
    *,
    version: int = 12,
    replica_id: int = -1,
    isolation_level: int = 0,
    session: tuple[int, int] = (0, -1),
    rack_id: str = "",
) -> Any:
    """A Fetch (v4-12, topics by name) of partition 0 of ``topic`` at ``offset`` that answers
    at once (``max_wait_ms`` 0), up to 1 MiB: a consumer's (``replica_id`` -1) or a follower's.
    ``session`` is (id, epoch); the default asks for no fetch session."""
    from kafka.protocol.consumer.fetch import FetchRequest

    topic_class = FetchRequest.FetchTopic
    return FetchRequest(
        version=version,
        replica_id=replica_id,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=isolation_level,
        session_id=session[0],
        session_epoch=session[1],
        forgotten_topics_data=[],
        rack_id=rack_id,
        topics=[
            topic_class(
                topic=topic,
                partitions=[
                    topic_class.FetchPartition(
                        partition=0,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )


class KafkaWireError(RuntimeError):
    """A request to the broker failed with a Kafka error code."""

    def __init__(self, message: str, error_code: int = -1):
        super().__init__(message)
        self.error_code = error_code


def _host_port(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 30.0,
    interval: float = 0.1,
    what: str = "condition",
) -> Any:
    """Poll ``predicate`` until it returns something true (returned), or fail after
    ``timeout`` seconds with an AssertionError naming ``what``: how tests wait for a broker
    to get somewhere, never with a fixed sleep."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


class KafkaWire:
    """One blocking connection speaking Kafka's protocol with kafka-python's message classes.

    Versions are negotiated with ApiVersions on connect. Used for topic chores here; tests use
    it to send hand-made requests (``send_raw`` / ``read_response``)."""

    def __init__(
        self,
        bootstrap: str,
        timeout: float = 10.0,
        client_id: str = "wireserver-testing",
        negotiate: bool = True,
        *,
        ssl_context: Any = None,
        sasl: tuple[str, str, str] | None = None,
    ):
        self.address = _host_port(bootstrap)
        self.timeout = timeout
        self.client_id = client_id
        self.sock = socket.create_connection(self.address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl_context is not None:
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname=self.address[0])
        self._correlation = 0
        self.versions: dict[int, tuple[int, int]] = {}
        if negotiate or sasl:
            from kafka.protocol.metadata.api_versions import ApiVersionsRequest

            response = self.request(ApiVersionsRequest(version=0))
            self.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        if sasl is not None:
            self.authenticate(*sasl)

    def authenticate(
        self, mechanism: str, username: str, password: str, token: bool = False
    ) -> None:
        """SaslHandshake v1 + SaslAuthenticate with PLAIN or SCRAM-SHA-256/512 (``token``: with
        a delegation token, its id as ``username`` and its base64 HMAC as ``password``)."""
        from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

        handshake = self.request(SaslHandshakeRequest(version=1, mechanism=mechanism))
        if handshake.error_code:
            raise KafkaWireError(
                f"SaslHandshake {mechanism}: error {handshake.error_code}", handshake.error_code
            )

        def step(token: bytes) -> bytes:
            response = self.request(SaslAuthenticateRequest(version=1, auth_bytes=token))
            if response.error_code:
                raise KafkaWireError(
                    f"SaslAuthenticate: {response.error_message}", response.error_code
                )
            return bytes(response.auth_bytes)

        from wireserver.security.sasl import client_mechanism

        try:
            client = client_mechanism(mechanism, username, password, token)
        except ValueError:
            raise ValueError(f"KafkaWire cannot authenticate with {mechanism}") from None
        token = client.initial()
        while token is not None:
            token = client.respond(step(token))

    def __enter__(self) -> KafkaWire:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def version(self, request_class: Any, highest: int | None = None) -> int:
        """The highest version of ``request_class`` both sides speak (at most ``highest``)."""
        served = self.versions.get(request_class.API_KEY)
        if served is None:
            raise KafkaWireError(f"the broker does not serve {request_class.name}", 35)
        low, high = (int(v) for v in request_class.json["validVersions"].split("-"))
        version = min(high, served[1], highest if highest is not None else high)
        if version < max(low, served[0]):
            raise KafkaWireError(
                f"no common version of {request_class.name}: we speak "
                f"{low}-{high}, the broker {served[0]}-{served[1]}",
                35,
            )
        return version

    def send(self, request: Any) -> int:
        """Send one request object; returns its correlation id."""
        self._correlation += 1
        request.with_header(correlation_id=self._correlation, client_id=self.client_id)
        self.sock.sendall(request.encode(header=True, framed=True))
        return self._correlation

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        """One response frame (without its size prefix). Raises ``ConnectionError`` on EOF."""
        (size,) = struct.unpack(">i", self._read_exact(4))
        return self._read_exact(size)

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def read_response(self, request: Any) -> Any:
        """Read the response to ``request`` (sent with ``send``) and decode it."""
        frame = self.read_frame()
        response_class = request.header.get_response_class()
        response = response_class.decode(frame, header=True)
        if response.header.correlation_id != request.header.correlation_id:
            raise KafkaWireError(
                f"correlation id {response.header.correlation_id} in reply to "
                f"{request.header.correlation_id}"
            )
        return response

    def request(self, request: Any) -> Any:
        self.send(request)
        return self.read_response(request)

    # -- topic chores ----------------------------------------------------------------------

    def topics(self, include_internal: bool = False) -> list[str]:
        from kafka.protocol.metadata.metadata import MetadataRequest

        version = self.version(MetadataRequest, 12)
        kwargs: dict[str, Any] = {"topics": None if version >= 1 else []}
        if version >= 4:
            kwargs["allow_auto_topic_creation"] = False
        response = self.request(MetadataRequest(version=version, **kwargs))
        names = []
        for topic in response.topics:
            internal = getattr(topic, "is_internal", False) or topic.name.startswith("__")
            if include_internal or not internal:
                names.append(topic.name)
        return sorted(names)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: Mapping[str, Any] | None = None,
        timeout_ms: int = 30000,
    ) -> None:
        from kafka.protocol.admin.topics import CreateTopicsRequest

        topic_class = CreateTopicsRequest.CreatableTopic
        config_class = topic_class.CreatableTopicConfig
        topic = topic_class(
            name=name,
            num_partitions=partitions,
            replication_factor=replication_factor,
            assignments=[],
            configs=[
                config_class(name=k, value=None if v is None else str(v))
                for k, v in (configs or {}).items()
            ],
        )
        version = self.version(CreateTopicsRequest, 7)
        kwargs: dict[str, Any] = {"topics": [topic], "timeout_ms": timeout_ms}
        if version >= 1:
            kwargs["validate_only"] = False
        response = self.request(CreateTopicsRequest(version=version, **kwargs))
        for result in response.topics:
            if result.error_code:
                message = getattr(result, "error_message", None) or ""
                raise KafkaWireError(
                    f"CreateTopics {result.name}: error {result.error_code} {message}".rstrip(),
                    result.error_code,
                )

    def delete_topics(
        self, names: Iterable[str], timeout_ms: int = 30000, ignore_unknown: bool = True
    ) -> None:
        from kafka.protocol.admin.topics import DeleteTopicsRequest

        names = list(names)
        version = self.version(DeleteTopicsRequest, 6)
        if version >= 6:
            state = DeleteTopicsRequest.DeleteTopicState
            request = DeleteTopicsRequest(
                version=version, topics=[state(name=n) for n in names], timeout_ms=timeout_ms
            )
        else:
            request = DeleteTopicsRequest(version=version, topic_names=names, timeout_ms=timeout_ms)
        response = self.request(request)
        for result in response.responses:
            if result.error_code == 3 and ignore_unknown:  # UNKNOWN_TOPIC_OR_PARTITION
                continue
            if result.error_code:
                raise KafkaWireError(
                    f"DeleteTopics {result.name}: error {result.error_code}", result.error_code
                )
