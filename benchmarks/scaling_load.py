"""Two dimensions of ``benchmarks.scaling`` (issue #20) that load a broker with many clients
rather than much data: concurrent connections and consumer groups committing offsets.

Both speak the raw protocol from one asyncio loop in this process, so that a thousand
connections cost a thousand sockets and not a thousand client libraries: requests are
kafka-python's message classes (the ones ``wireserver.protocol`` decodes and encodes), record
batches are built with ``wireserver.protocol.records`` and responses are split with
``wireserver.protocol.framing``. The same bytes go to Kafka and to wireserver; versions are the
highest both this client and the broker speak, capped where a newer version would name topics
by id.

Latency is taken from the moment a request is written to the moment its response frame
arrives, before it is decoded, so the client's decoding is not counted. Requests are sent on a
fixed schedule (every connection or group once a second, spread evenly over the second) and not
after the previous answer, so a slow answer does not hide the ones it delays.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import resource
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from benchmarks.compare import tree_cpu_seconds, tree_rss_kib
from benchmarks.scaling_targets import Figure, Target, mean_of_rounds, median_of_rounds
from wireserver.protocol.framing import FrameDecoder
from wireserver.protocol.records import RecordBatchBuilder

CONN_TOPIC = "scale-conn"
CONN_PARTITIONS = 10
GROUP_TOPIC = "scale-groups"
GROUP_PARTITIONS = 4
VALUE = b"v" * 100
GROUPS_PER_CONNECTION = 50
#: Connections being opened at once: a burst of a thousand SYNs would overflow a listen backlog
#: (Kafka's is 50) and measure the kernel's retry timer instead of the broker.
OPENING_AT_ONCE = 50
#: Seconds an answer may take before it counts as missing.
ANSWER_TIMEOUT = 30.0
#: Versions above these name topics by id (Produce 13, OffsetCommit/OffsetFetch 10), which the
#: benchmark would have to look up; both brokers serve the versions below.
HIGHEST = {
    ApiVersionsRequest.API_KEY: 3,
    MetadataRequest.API_KEY: 12,
    ProduceRequest.API_KEY: 12,
    OffsetCommitRequest.API_KEY: 9,
    OffsetFetchRequest.API_KEY: 9,
    FindCoordinatorRequest.API_KEY: 4,
}
NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
RETRIABLE_PRODUCE_ERRORS = {UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER}
RETRIABLE_COORDINATOR_ERRORS = {
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR,
}


# ------------------------------------------------------------------------------ the wire


class BrokerError(RuntimeError):
    """A setup request (not a measured one) failed."""


class Connection(asyncio.Protocol):
    """One Kafka connection. ``send`` writes a request and returns a future for
    ``(latency_s, response)``; answers are matched by correlation id."""

    def __init__(self, client_id: str):
        self.client_id = client_id
        self.transport: asyncio.Transport | None = None
        self.decoder = FrameDecoder()
        self.correlation = 0
        self.pending: dict[int, tuple[Any, float, asyncio.Future]] = {}
        self.versions: dict[int, tuple[int, int]] = {}
        self.lost: Exception | None = None

    @classmethod
    async def open(cls, host: str, port: int, client_id: str) -> Connection:
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(lambda: cls(client_id), host, port)
        return connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        arrived = time.perf_counter()
        for frame in self.decoder.feed(data):
            (correlation,) = struct.unpack_from(">i", frame, 0)
            request, sent, future = self.pending.pop(correlation)
            if future.done():  # given up on (timed out)
                continue
            response = request.header.get_response_class().decode(bytes(frame), header=True)
            future.set_result((arrived - sent, response))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or ConnectionError("the broker closed the connection")
        for _, _, future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError(f"connection lost: {self.lost}"))
        self.pending.clear()

    def send(self, request: Any) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        if self.lost is not None or self.transport is None:
            future.set_exception(ConnectionError(f"connection lost: {self.lost}"))
            return future
        self.correlation += 1
        request.with_header(correlation_id=self.correlation, client_id=self.client_id)
        data = request.encode(header=True, framed=True)
        self.pending[self.correlation] = (request, time.perf_counter(), future)
        self.transport.write(bytes(data))
        return future

    async def request(self, request: Any) -> Any:
        _, response = await asyncio.wait_for(self.send(request), ANSWER_TIMEOUT)
        return response

    def version(self, request_class: Any) -> int:
        """The highest version of ``request_class`` both sides speak, within ``HIGHEST``."""
        key = request_class.API_KEY
        served = self.versions.get(key)
        low, high = (int(v) for v in request_class.json["validVersions"].split("-"))
        if served is None:
            raise BrokerError(f"the broker does not serve {request_class.__name__}")
        version = min(high, served[1], HIGHEST.get(key, high))
        if version < max(low, served[0]):
            raise BrokerError(f"no common version of {request_class.__name__}")
        return version

    async def handshake(self, topic: str) -> Any:
        """ApiVersions then Metadata for ``topic``, as a client starts; returns the Metadata."""
        versions = await self.request(
            ApiVersionsRequest(
                version=3, client_software_name="wireserver-bench", client_software_version="1"
            )
        )
        if versions.error_code != NONE:
            raise BrokerError(f"ApiVersions: error {versions.error_code}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        return await self.request(
            MetadataRequest(
                version=self.version(MetadataRequest),
                topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )

    async def close(self) -> None:
        if self.transport is not None and self.lost is None:
            self.transport.close()


def host_port(bootstrap: str) -> tuple[str, int]:
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


async def open_connections(bootstrap: str, count: int, topic: str) -> list[Connection]:
    """``count`` connections, each past ApiVersions and Metadata."""
    host, port = host_port(bootstrap)
    gate = asyncio.Semaphore(OPENING_AT_ONCE)

    async def one(index: int) -> Connection:
        async with gate:
            connection = await Connection.open(host, port, f"scale-{index}")
            await connection.handshake(topic)
            return connection

    results = await asyncio.gather(*(one(i) for i in range(count)), return_exceptions=True)
    connections = [c for c in results if isinstance(c, Connection)]
    failures = [r for r in results if not isinstance(r, Connection)]
    if failures:
        await close_all(connections)
        raise BrokerError(f"{len(failures)} of {count} connections failed: {failures[0]!r}")
    return connections


async def close_all(connections: list[Connection]) -> None:
    for connection in connections:
        await connection.close()
    await asyncio.sleep(0.2)  # let the closes reach the broker before anything is measured


async def wait_partitions(connection: Connection, topic: str, partitions: int) -> None:
    """Until Metadata shows every partition of ``topic`` with a leader: a topic just created
    may not have one yet, and the first requests would fail for that alone."""
    deadline = time.monotonic() + 60
    while True:
        metadata = await connection.handshake(topic)
        ready = [
            p
            for t in metadata.topics
            if t.name == topic and t.error_code == NONE
            for p in t.partitions
            if p.error_code == NONE and p.leader_id >= 0
        ]
        if len(ready) == partitions:
            return
        if time.monotonic() > deadline:
            raise BrokerError(f"{topic}: {len(ready)} of {partitions} partitions have a leader")
        await asyncio.sleep(0.1)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """Create ``name`` with confluent_kafka's AdminClient, as an operator would; an existing
    topic (a second call of a measure function) is kept."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})  # no info lines
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)], operation_timeout=30
    )
    try:
        futures[name].result(60)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def raise_open_files_limit() -> None:
    """A thousand sockets need more descriptors than the usual soft limit of 1024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ValueError, OSError):
        pass


# ------------------------------------------------------------------------------ the schedule


@dataclass
class Tally:
    """What the answers to one phase's requests said."""

    sent: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0  # answers with a non-zero error code (counted per request)
    error_codes: set[int] = field(default_factory=set)
    unanswered: int = 0  # lost connections and timeouts

    def note(self, what: str) -> str:
        text = f"{self.sent} {what}, {self.errors} errors, {self.unanswered} unanswered"
        if self.error_codes:
            text += f" (codes {sorted(self.error_codes)})"
        return text

    @property
    def clean(self) -> bool:
        return self.sent > 0 and self.errors == 0 and self.unanswered == 0

    @classmethod
    def together(cls, tallies: list[Tally]) -> Tally:
        """What the answers of several rounds said, in all."""
        return cls(
            sent=sum(t.sent for t in tallies),
            latencies=[latency for t in tallies for latency in t.latencies],
            errors=sum(t.errors for t in tallies),
            error_codes=set().union(*(t.error_codes for t in tallies)),
            unanswered=sum(t.unanswered for t in tallies),
        )


def percentile_ms(latencies: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile in milliseconds."""
    if not latencies:
        return None
    ordered = sorted(latencies)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return round(ordered[rank - 1] * 1000, 2)


def sends_per_slot(seconds: float) -> int:
    """How many times ``run_schedule`` calls ``send`` for each slot."""
    return max(1, round(seconds))


async def run_schedule(
    slots: int,
    seconds: float,
    send: Callable[[int, int], asyncio.Future],
    error_codes: Callable[[Any], list[int]],
    first_round: int = 0,
) -> Tally:
    """Call ``send(slot, round)`` for every slot once a second for ``seconds``, slot ``i`` at
    ``i / slots`` into each second, and tally the answers; ``round`` counts from
    ``first_round``. A send that falls behind goes out at once (the schedule catches up), so
    the offered rate stays what was asked."""
    loop = asyncio.get_running_loop()
    tally = Tally()
    outstanding: list[asyncio.Future] = []

    def answered(future: asyncio.Future) -> None:
        if future.cancelled() or future.exception() is not None:
            tally.unanswered += 1
            return
        latency, response = future.result()
        tally.latencies.append(latency)
        codes = [code for code in error_codes(response) if code != NONE]
        if codes:
            tally.errors += 1
            tally.error_codes.update(codes)

    start = loop.time() + 0.05
    for step in range(sends_per_slot(seconds) * slots):
        at = start + step / slots
        delay = at - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        future = send(step % slots, first_round + step // slots)
        future.add_done_callback(answered)
        outstanding.append(future)
        tally.sent += 1
    if outstanding:
        _, late = await asyncio.wait(outstanding, timeout=ANSWER_TIMEOUT)
        for future in late:
            future.cancel()
    return tally


class CpuMeter:
    """Broker CPU (the whole process tree) as a percentage of one core over an interval."""

    def __init__(self, pid: int):
        self.pid = pid
        self.cpu = tree_cpu_seconds(pid)
        self.wall = time.perf_counter()

    def percent(self) -> float:
        return 100 * (tree_cpu_seconds(self.pid) - self.cpu) / (time.perf_counter() - self.wall)


def mib(kib: int) -> float:
    return round(kib / 1024, 1)


def phase_seconds(quick: bool, seconds: float | None) -> float:
    if seconds is not None:
        return seconds
    return 4.0 if quick else 10.0


# ------------------------------------------------------------------------------ connections


def produce_request(version: int, partition: int) -> ProduceRequest:
    builder = RecordBatchBuilder()
    builder.append(int(time.time() * 1000), None, VALUE)
    data = ProduceRequest.TopicProduceData
    return ProduceRequest(
        version=version,
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[
            data(
                name=CONN_TOPIC,
                partition_data=[
                    data.PartitionProduceData(index=partition, records=bytes(builder.build()))
                ],
            )
        ],
    )


def produce_error_codes(response: Any) -> list[int]:
    return [p.error_code for t in response.responses for p in t.partition_responses]


async def first_produces(connection: Connection, version: int) -> None:
    """One record to every partition before anything is timed: a partition's first append
    opens its log segment (and on Kafka may meet a leader not yet known), a one-off that would
    otherwise be most of a small run's p99."""
    deadline = time.monotonic() + 60
    for partition in range(CONN_PARTITIONS):
        while True:
            response = await connection.request(produce_request(version, partition))
            codes = set(produce_error_codes(response)) - {NONE}
            if not codes:
                break
            if not codes <= RETRIABLE_PRODUCE_ERRORS or time.monotonic() > deadline:
                raise BrokerError(f"Produce to partition {partition}: error codes {codes}")
            await asyncio.sleep(0.1)


async def timed_rounds(
    pid: int,
    rounds: int,
    slots: int,
    seconds: float,
    send: Callable[[int, int], asyncio.Future],
    error_codes: Callable[[Any], list[int]],
) -> tuple[list[Tally], list[float]]:
    """``run_schedule`` ``rounds`` times in a row on the same clients, the schedule's round
    numbers going on from one to the next; each round's tally and broker CPU (% of a core)."""
    tallies, cpus = [], []
    for index in range(rounds):
        meter = CpuMeter(pid)
        first = index * sends_per_slot(seconds)
        tallies.append(await run_schedule(slots, seconds, send, error_codes, first))
        cpus.append(round(meter.percent(), 2))
    return tallies, cpus


def latency_figures(
    dimension: str, count: int, what: str, tallies: list[Tally], note: str
) -> list[Figure]:
    """``what`` p50 and p99 (ms): the median of the rounds' percentiles."""
    return [
        median_of_rounds(
            dimension,
            count,
            f"{what} {name} (ms)",
            [percentile_ms(t.latencies, fraction) for t in tallies],
            note,
        )
        for name, fraction in (("p50", 0.50), ("p99", 0.99))
    ]


async def connections_run(
    target: Target, count: int, seconds: float, rounds: int = 1
) -> list[Figure]:
    def figure(metric: str, value: float | None, note: str = "") -> Figure:
        return Figure("connections", count, metric, value, note)

    baseline_kib = tree_rss_kib(target.pid)
    opened = time.perf_counter()
    connections = await open_connections(target.bootstrap, count, CONN_TOPIC)
    opening_s = time.perf_counter() - opened
    try:
        await wait_partitions(connections[0], CONN_TOPIC, CONN_PARTITIONS)
        version = connections[0].version(ProduceRequest)
        await first_produces(connections[0], version)
        meter = CpuMeter(target.pid)
        await asyncio.sleep(seconds)
        idle_cpu = meter.percent()
        idle_kib = tree_rss_kib(target.pid)

        def send(slot: int, _round: int) -> asyncio.Future:
            partition = (slot + _round) % CONN_PARTITIONS
            return connections[slot].send(produce_request(version, partition))

        tallies, cpus = await timed_rounds(
            target.pid, rounds, count, seconds, send, produce_error_codes
        )
        producing_kib = tree_rss_kib(target.pid)
    finally:
        await close_all(connections)
    note = Tally.together(tallies).note(f"Produce v{version} acks=1")
    return [
        figure(
            "idle RSS (MiB)",
            mib(idle_kib),
            f"{mib(baseline_kib)} MiB before connecting; {count} opened in {opening_s:.2f} s",
        ),
        figure("idle CPU (% of a core)", round(idle_cpu, 2)),
        *latency_figures("connections", count, "produce", tallies, note),
        mean_of_rounds("connections", count, "produce CPU (% of a core)", cpus),
        figure("RSS while producing (MiB)", mib(producing_kib)),
    ]


CONNECTION_METRICS = (
    "idle RSS (MiB)",
    "idle CPU (% of a core)",
    "produce p50 (ms)",
    "produce p99 (ms)",
    "produce CPU (% of a core)",
    "RSS while producing (MiB)",
)


def measure_connections(
    target: Target,
    sizes: list[int],
    quick: bool,
    *,
    seconds: float | None = None,
    rounds: int = 1,
) -> list[Figure]:
    """For each size N: N connections idle (broker RSS and CPU), then each producing one
    100-byte record a second with acks=1 (latency, CPU, RSS) for ``rounds`` rounds on the same
    connections. ``seconds`` per phase and round (default 10, quick 4)."""
    raise_open_files_limit()
    create_topic(target.bootstrap, CONN_TOPIC, CONN_PARTITIONS)
    duration = phase_seconds(quick, seconds)
    figures: list[Figure] = []
    for count in sizes:
        try:
            figures += asyncio.run(connections_run(target, count, duration, rounds))
        except Exception as exc:  # noqa: BLE001 - one size failing leaves the others
            note = f"failed: {type(exc).__name__}: {exc}"
            figures += [Figure("connections", count, m, None, note) for m in CONNECTION_METRICS]
    return figures


# ------------------------------------------------------------------------------ groups


def group_id(index: int) -> str:
    return f"scale-g-{index}"


def commit_request(version: int, group: str, offset: int) -> OffsetCommitRequest:
    """A standalone commit, as a consumer with assign() makes: no generation, no member."""
    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    partition = topic.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        version=version,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[
            topic(
                name=GROUP_TOPIC,
                partitions=[
                    partition(partition_index=p, committed_offset=offset, committed_metadata="")
                    for p in range(GROUP_PARTITIONS)
                ],
            )
        ],
    )


def commit_error_codes(response: Any) -> list[int]:
    return [p.error_code for t in response.topics for p in t.partitions]


async def find_coordinators(connection: Connection, groups: list[str]) -> set[tuple[str, int]]:
    """The coordinators of ``groups`` (FindCoordinator v4 batches keys), retried while Kafka
    is still creating ``__consumer_offsets`` (its first group lookup creates it)."""
    version = connection.version(FindCoordinatorRequest)
    if version < 4:
        raise BrokerError(f"FindCoordinator v{version} takes one key per request")
    found: set[tuple[str, int]] = set()
    deadline = time.monotonic() + 120
    for first in range(0, len(groups), 100):
        keys = groups[first : first + 100]
        while True:
            response = await connection.request(
                FindCoordinatorRequest(version=version, key_type=0, coordinator_keys=keys)
            )
            codes = {c.error_code for c in response.coordinators}
            if codes == {NONE}:
                found.update((c.host, c.port) for c in response.coordinators)
                break
            if not codes <= RETRIABLE_COORDINATOR_ERRORS | {NONE} or time.monotonic() > deadline:
                raise BrokerError(f"FindCoordinator: error codes {sorted(codes)}")
            await asyncio.sleep(0.2)
    return found


async def first_commits(connections: list[Connection], groups: list[str], version: int) -> set[int]:
    """Every group's first commit (offset 0), retried until accepted; returns the error codes
    seen. Kafka answers FindCoordinator as soon as ``__consumer_offsets`` has leaders but
    refuses commits with NOT_COORDINATOR until it has loaded the partition, which a client
    retries: that start-up belongs to neither the commit latency nor the steady state."""
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    waiting = list(range(len(groups)))
    while waiting:
        answers = await asyncio.gather(
            *(
                asyncio.wait_for(
                    connections[i % len(connections)].send(commit_request(version, groups[i], 0)),
                    ANSWER_TIMEOUT,
                )
                for i in waiting
            )
        )
        refused = []
        for i, (_, response) in zip(waiting, answers):
            codes = set(commit_error_codes(response)) - {NONE}
            if codes - RETRIABLE_COORDINATOR_ERRORS:
                raise BrokerError(f"OffsetCommit {groups[i]}: error codes {sorted(codes)}")
            if codes:
                refused.append(i)
                seen |= codes
        waiting = refused
        if waiting:
            if time.monotonic() > deadline:
                raise BrokerError(f"{len(waiting)} groups' commits still refused: {sorted(seen)}")
            await asyncio.sleep(0.2)
    return seen


async def groups_run(
    target: Target, count: int, seconds: float, rounds: int = 1
) -> tuple[list[Figure], int]:
    """Returns the figures and the offset group 0 committed last."""

    groups = [group_id(i) for i in range(count)]
    bootstrap = await open_connections(target.bootstrap, 1, GROUP_TOPIC)
    try:
        await wait_partitions(bootstrap[0], GROUP_TOPIC, GROUP_PARTITIONS)
        coordinators = await find_coordinators(bootstrap[0], groups)
    finally:
        await close_all(bootstrap)
    if len(coordinators) != 1:
        raise BrokerError(f"a single-node broker named {len(coordinators)} coordinators")
    ((host, port),) = coordinators
    connection_count = math.ceil(count / GROUPS_PER_CONNECTION)
    connections = await open_connections(f"{host}:{port}", connection_count, GROUP_TOPIC)
    try:
        version = connections[0].version(OffsetCommitRequest)

        def send(slot: int, round_: int) -> asyncio.Future:
            connection = connections[slot % connection_count]
            return connection.send(commit_request(version, groups[slot], round_ + 1))

        warm_up_codes = await first_commits(connections, groups, version)
        tallies, cpus = await timed_rounds(
            target.pid, rounds, count, seconds, send, commit_error_codes
        )
    finally:
        await close_all(connections)
    note = Tally.together(tallies).note(
        f"OffsetCommit v{version} over {connection_count} connections"
    )
    if warm_up_codes:
        note += f"; first commits retried after codes {sorted(warm_up_codes)}"
    return [
        *latency_figures("groups", count, "commit", tallies, note),
        mean_of_rounds("groups", count, "coordinator CPU (% of a core)", cpus),
    ], rounds * sends_per_slot(seconds)


async def fetch_committed(bootstrap: str, group: str) -> tuple[list[int], float]:
    """Group ``group``'s committed offsets of the benchmark topic's partitions, asked until
    the coordinator has loaded them; returns them and how long that took."""
    began = time.perf_counter()
    deadline = time.monotonic() + 120
    connections = await open_connections(bootstrap, 1, GROUP_TOPIC)
    connection = connections[0]
    try:
        await find_coordinators(connection, [group])
        version = connection.version(OffsetFetchRequest)
        if version < 8:
            raise BrokerError(f"OffsetFetch v{version} is not the grouped form")
        groups = OffsetFetchRequest.OffsetFetchRequestGroup
        while True:
            response = await connection.request(
                OffsetFetchRequest(
                    version=version,
                    groups=[
                        groups(
                            group_id=group,
                            member_id=None,
                            member_epoch=-1,
                            topics=[
                                groups.OffsetFetchRequestTopics(
                                    name=GROUP_TOPIC,
                                    partition_indexes=list(range(GROUP_PARTITIONS)),
                                )
                            ],
                        )
                    ],
                    require_stable=False,
                )
            )
            answer = response.groups[0]
            codes = {answer.error_code} | {
                p.error_code for t in answer.topics for p in t.partitions
            }
            if codes == {NONE}:
                offsets = [p.committed_offset for t in answer.topics for p in t.partitions]
                return offsets, time.perf_counter() - began
            if not codes <= RETRIABLE_COORDINATOR_ERRORS | {NONE} or time.monotonic() > deadline:
                raise BrokerError(f"OffsetFetch: error codes {sorted(codes)}")
            await asyncio.sleep(0.1)
    finally:
        await close_all(connections)


GROUP_METRICS = ("commit p50 (ms)", "commit p99 (ms)", "coordinator CPU (% of a core)")


def measure_groups(
    target: Target,
    sizes: list[int],
    quick: bool,
    *,
    seconds: float | None = None,
    rounds: int = 1,
) -> list[Figure]:
    """For each size N: N groups each committing 4 partitions' offsets once a second
    (standalone commits, no members) for ``rounds`` rounds on the same connections, then a
    clean restart with that history and a check that group 0's offsets survived it.
    ``seconds`` of committing per round (default 10, quick 4)."""
    raise_open_files_limit()
    create_topic(target.bootstrap, GROUP_TOPIC, GROUP_PARTITIONS)
    duration = phase_seconds(quick, seconds)
    figures: list[Figure] = []
    for count in sizes:
        try:
            run_figures, last_offset = asyncio.run(groups_run(target, count, duration, rounds))
        except Exception as exc:  # noqa: BLE001 - one size failing leaves the others
            note = f"failed: {type(exc).__name__}: {exc}"
            figures += [Figure("groups", count, m, None, note) for m in GROUP_METRICS]
            continue
        figures += run_figures
        figures.append(startup_with_history(target, count, last_offset))
    return figures


def startup_with_history(target: Target, count: int, expected: int) -> Figure:
    metric = "start-up with history (s)"
    try:
        took = target.restart()
    except Exception as exc:  # noqa: BLE001 - reported as a failed figure
        return Figure("groups", count, metric, None, f"restart failed: {exc!r}")
    try:
        offsets, after = asyncio.run(fetch_committed(target.bootstrap, group_id(0)))
    except Exception as exc:  # noqa: BLE001 - the start-up time stands; the check failed
        return Figure("groups", count, metric, round(took, 2), f"OffsetFetch failed: {exc!r}")
    if offsets == [expected] * GROUP_PARTITIONS:
        note = f"{group_id(0)} offsets {expected} read back {after:.2f} s after the restart"
    else:
        note = f"{group_id(0)} offsets {offsets} after the restart, committed {expected}"
    return Figure("groups", count, metric, round(took, 2), note)


MEASURES = {"connections": measure_connections, "groups": measure_groups}


def main() -> None:
    from benchmarks.compare import choose_pinning
    from benchmarks.scaling_targets import TARGETS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=[*TARGETS, "both"], default="both")
    parser.add_argument("--dimension", choices=[*MEASURES, "both"], default="both")
    parser.add_argument("--sizes", type=int, nargs="*", help="default: quick sizes")
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    names = list(TARGETS) if args.target == "both" else [args.target]
    dimensions = list(MEASURES) if args.dimension == "both" else [args.dimension]
    quick_sizes = {"connections": [10, 100], "groups": [1, 100]}
    full_sizes = {"connections": [10, 100, 1000], "groups": [1, 100, 1000]}
    for name in names:
        for dimension in dimensions:
            target = TARGETS[name](choose_pinning(False))
            try:
                print(f"{target.name}: started in {target.start():.2f} s", flush=True)
                sizes = args.sizes or (quick_sizes if args.quick else full_sizes)[dimension]
                for fig in MEASURES[dimension](target, sizes, args.quick, seconds=args.seconds):
                    value = "failed" if fig.value is None else f"{fig.value:g}"
                    print(
                        f"{target.name} {fig.dimension}={fig.size} {fig.metric}: {value}"
                        f"{'  [' + fig.note + ']' if fig.note else ''}",
                        flush=True,
                    )
            finally:
                target.close()


if __name__ == "__main__":
    main()
