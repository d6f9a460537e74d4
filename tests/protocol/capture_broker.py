"""A tiny threaded Kafka broker that only captures what producers send.

It answers just enough for a producer to deliver: ApiVersions, Metadata (one broker = itself,
every requested topic with ``partitions`` partitions led by node 0), InitProducerId (for
idempotent producers) and Produce (the raw ``records`` bytes are kept, each partition gets
running base offsets from 0, error 0). Fetch and FindCoordinator are advertised but never served:
librdkafka turns on message format v2 and zstd only for brokers that list Fetch v4+ / v10+,
and lz4 only for brokers that list FindCoordinator (without it, it silently sends lz4
batches uncompressed). Messages are encoded
and decoded with kafka-python's schema-driven classes; the request header is parsed here.

Also here: ``kafka_python_codecs()``, which lets kafka-python compress with snappy, lz4 and
zstd when the optional python-snappy / lz4 / zstandard packages are missing (the project depends
on cramjam instead): it points kafka-python's codec hooks at cramjam. kafka-python's own framing
code (xerial snappy blocks, batch layout) still runs.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from dataclasses import dataclass

import cramjam
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

API_PRODUCE = 0
API_FETCH = 1
API_METADATA = 3
API_FIND_COORDINATOR = 10
API_API_VERSIONS = 18
API_INIT_PRODUCER_ID = 22

#: What the capture broker advertises: api key -> (min, max).
ADVERTISED = {
    API_PRODUCE: (3, 9),
    API_FETCH: (4, 12),
    API_METADATA: (1, 9),
    API_FIND_COORDINATOR: (0, 3),
    API_API_VERSIONS: (0, 3),
    API_INIT_PRODUCER_ID: (0, 4),
}

_REQUEST_CLASSES = {
    API_PRODUCE: ProduceRequest,
    API_METADATA: MetadataRequest,
    API_INIT_PRODUCER_ID: InitProducerIdRequest,
}

UNSUPPORTED_VERSION = 35


@dataclass
class Captured:
    """One partition's records from one Produce request."""

    topic: str
    partition: int
    records: bytes
    api_version: int
    client_id: str | None
    acks: int


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = 0
    value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class CaptureBroker:
    """Use as a context manager; ``bootstrap`` is ``host:port``; ``captured`` fills up."""

    def __init__(self, partitions: int = 1):
        self.partitions = partitions
        self.captured: list[Captured] = []
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._next_offset: dict[tuple[str, int], int] = {}
        self._next_producer_id = 1000
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.host, self.port = self._server.getsockname()[:2]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def __enter__(self) -> CaptureBroker:
        t = threading.Thread(target=self._accept_loop, name="capture-accept", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                c.close()
        self._server.close()
        for t in self._threads:
            t.join(timeout=5)

    def records_for(self, topic: str) -> list[Captured]:
        with self._lock:
            return [c for c in self.captured if c.topic == topic]

    # -- serving -------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            with self._lock:
                self._conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), name="capture-conn", daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: socket.socket) -> None:
        try:
            while not self._stop.is_set():
                size_bytes = _recv_exact(conn, 4)
                if size_bytes is None:
                    return
                (size,) = struct.unpack(">i", size_bytes)
                frame = _recv_exact(conn, size)
                if frame is None:
                    return
                response = self._handle(frame)
                if response is not None:
                    conn.sendall(struct.pack(">i", len(response)) + response)
        except OSError:
            return
        except Exception as e:  # surfaced by the tests
            self.errors.append(e)
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def _handle(self, frame: bytes) -> bytes | None:
        api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame, 0)
        pos = 8
        (client_id_len,) = struct.unpack_from(">h", frame, pos)
        pos += 2
        client_id = None
        if client_id_len >= 0:
            client_id = frame[pos : pos + client_id_len].decode("utf-8")
            pos += client_id_len

        if api_key == API_API_VERSIONS:
            # Body not needed. Header v0 always; an unknown version gets a v0 error answer.
            version = api_version
            error = 0
            if api_version > ApiVersionsResponse.max_version:
                version, error = 0, UNSUPPORTED_VERSION
            body = ApiVersionsResponse(
                version=version,
                error_code=error,
                api_keys=[
                    ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                    for k, (lo, hi) in sorted(ADVERTISED.items())
                ],
                throttle_time_ms=0,
            ).encode()
            return struct.pack(">i", correlation_id) + body

        request_class = _REQUEST_CLASSES.get(api_key)
        lo, hi = ADVERTISED.get(api_key, (0, -1))
        if request_class is None or not lo <= api_version <= hi:
            raise RuntimeError(f"capture broker got api_key={api_key} v{api_version}")
        flexible = request_class.flexible_version_q(api_version)
        if flexible:  # request header v2: tagged fields
            count, pos = _read_uvarint(frame, pos)
            for _ in range(count):
                _tag, pos = _read_uvarint(frame, pos)
                n, pos = _read_uvarint(frame, pos)
                pos += n
        request = request_class.decode(memoryview(frame)[pos:], version=api_version)

        if api_key == API_METADATA:
            response = self._metadata(request, api_version)
        elif api_key == API_INIT_PRODUCER_ID:
            with self._lock:
                pid = self._next_producer_id
                self._next_producer_id += 1
            response = InitProducerIdResponse(
                version=api_version,
                throttle_time_ms=0,
                error_code=0,
                producer_id=pid,
                producer_epoch=0,
            )
        else:
            response = self._produce(request, api_version, client_id)
            if response is None:
                return None
        header = struct.pack(">i", correlation_id) + (b"\x00" if flexible else b"")
        return header + response.encode()

    def _metadata(self, request, version: int):
        names = [t.name for t in request.topics] if request.topics else []
        partition_cls = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
        topics = [
            MetadataResponse.MetadataResponseTopic(
                error_code=0,
                name=name,
                is_internal=False,
                partitions=[
                    partition_cls(
                        error_code=0,
                        partition_index=p,
                        leader_id=0,
                        leader_epoch=0,
                        replica_nodes=[0],
                        isr_nodes=[0],
                        offline_replicas=[],
                    )
                    for p in range(self.partitions)
                ],
            )
            for name in names
        ]
        return MetadataResponse(
            version=version,
            throttle_time_ms=0,
            brokers=[
                MetadataResponse.MetadataResponseBroker(
                    node_id=0, host=self.host, port=self.port, rack=None
                )
            ],
            cluster_id="capture-cluster",
            controller_id=0,
            topics=topics,
        )

    def _produce(self, request, version: int, client_id: str | None):
        topic_responses = []
        for topic in request.topic_data:
            partition_responses = []
            for pdata in topic.partition_data:
                records = bytes(pdata.records or b"")
                with self._lock:
                    self.captured.append(
                        Captured(topic.name, pdata.index, records, version, client_id, request.acks)
                    )
                    key = (topic.name, pdata.index)
                    base = self._next_offset.get(key, 0)
                    self._next_offset[key] = base + _count_offsets(records)
                partition_responses.append(
                    ProduceResponse.TopicProduceResponse.PartitionProduceResponse(
                        index=pdata.index,
                        error_code=0,
                        base_offset=base,
                        log_append_time_ms=-1,
                        log_start_offset=0,
                        record_errors=[],
                        error_message=None,
                    )
                )
            topic_responses.append(
                ProduceResponse.TopicProduceResponse(
                    name=topic.name, partition_responses=partition_responses
                )
            )
        if request.acks == 0:
            return None
        return ProduceResponse(version=version, responses=topic_responses, throttle_time_ms=0)


def _count_offsets(records: bytes) -> int:
    """Offsets used by concatenated v2 batches, from their headers alone (independently of
    protocol.records, which is what the tests check)."""
    pos = 0
    total = 0
    while pos + 61 <= len(records):
        (length,) = struct.unpack_from(">i", records, pos + 8)
        (last_delta,) = struct.unpack_from(">i", records, pos + 23)
        total += last_delta + 1
        pos += 12 + length
    return total


# -- kafka-python codecs through cramjam -------------------------------------------------------


class _CramjamSnappy:
    """Stands in for the python-snappy module in kafka.codec (raw snappy blocks)."""

    @staticmethod
    def compress(data) -> bytes:
        return bytes(cramjam.snappy.compress_raw(bytes(data)))

    @staticmethod
    def decompress(data) -> bytes:
        return bytes(cramjam.snappy.decompress_raw(bytes(data)))


def _lz4_frame_independent(data) -> bytes:
    c = cramjam.lz4.Compressor(block_linked=False)
    c.compress(bytes(data))
    return bytes(c.finish())


@contextlib.contextmanager
def kafka_python_codecs():
    """Let kafka-python use snappy, lz4 and zstd through cramjam while the block runs."""
    import kafka.codec as kc
    import kafka.record.default_records as dr

    saved_codec = {name: getattr(kc, name) for name in ("snappy", "lz4", "zstd")}
    saved_dr = {
        name: getattr(dr, name)
        for name in (
            "snappy_encode",
            "snappy_decode",
            "lz4_encode",
            "lz4_decode",
            "zstd_encode",
            "zstd_decode",
        )
    }
    try:
        if kc.snappy is None:
            kc.snappy = _CramjamSnappy
        if kc.lz4 is None:
            kc.lz4 = object()  # only checked for presence by has_lz4()
            dr.lz4_encode = _lz4_frame_independent
            dr.lz4_decode = lambda data: bytes(cramjam.lz4.decompress(bytes(data)))
        if kc.zstd is None:
            kc.zstd = object()  # only checked for presence by has_zstd()
            dr.zstd_encode = lambda data: bytes(cramjam.zstd.compress(bytes(data)))
            dr.zstd_decode = lambda data: bytes(cramjam.zstd.decompress(bytes(data)))
        yield
    finally:
        for name, value in saved_codec.items():
            setattr(kc, name, value)
        for name, value in saved_dr.items():
            setattr(dr, name, value)
