"""wireserver side by side with Apache Kafka: the same workloads, the same clients, one table.

Run: ``scripts/bench`` (or ``python -m benchmarks.compare``) ``[--quick] [--no-pin]
[--targets kafka,wireserver] [--skip-java] [--output benchmarks/results.md]``.

It starts every broker (the reference Apache Kafka 4.x from ``compat_tests.reference``, one
KRaft node, and wireserver as a ``wireserver serve`` subprocess), all of them up at once, and

1. times each one's spawn → first successful Metadata response (for Kafka this includes
   ``kafka-storage format`` and the JVM start), then reads the idle RSS;
2. runs the throughput workloads while sampling the RSS of each broker's process tree:
   confluent-kafka (librdkafka) producers for 1 KB and 100 B records × 1 and 8 partitions ×
   acks 1 and all, Kafka's ``kafka-producer-perf-test`` (the Java producer, idempotent by
   default), and full-log reads with confluent-kafka and ``kafka-consumer-perf-test``;
3. runs the latency workloads: produce latency at a fixed 5,000 records/s (librdkafka and the
   Java perf test), end-to-end latency (produce → consume) at a fixed rate, and the time for a
   confluent-kafka consumer with a fresh group to get its assignment;
4. stops them; a few more cold starts of each give the median start-up time.

Each workload runs against one broker after the other before the next workload starts, and
who goes first changes from one workload to the next; the Java tools' throughput runs take
turns in rounds (``run_targets``, ``alternate_java``). While one broker is measured the others
are stopped (``alone``), so that no idle broker's timers and threads share its CPU.

Every load generator is a separate process (``benchmarks.rdkafka_load`` for librdkafka; a
JVM for Kafka's tools). On a machine with two or more usable CPUs the broker (and all its
threads) is pinned to the first CPU and every client to the others. Each workload has a
warm-up and reports the median of its repetitions. The table is printed and written to
``benchmarks/results.md`` (overwritten) with the machine, the command line and the date.

These are figures, never assertions; see DESIGN.md ("Benchmarks live in benchmarks/").
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import itertools
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results.md"
MIB = 1024 * 1024


# ------------------------------------------------------------------------------ sizes


@dataclass(frozen=True)
class Sizes:
    records_1k: int  # records per timed produce repetition, 1 KB values
    records_100: int  # records per timed produce repetition, 100 B values
    reps: int  # timed repetitions of each librdkafka workload
    java_reps: int  # runs of the Java producer's latency workload (a JVM each)
    java_rounds: int  # rounds of the Java throughput tools, one run against each broker
    java_records_1k: int  # records a Java producer run reports on, 1 KB values
    java_warmup_1k: int  # records it sends first (``java_throughput_workloads``)
    java_records_100: int
    java_warmup_100: int
    latency_seconds: float  # timed part of each fixed-rate latency run
    join_reps: int
    kafka_starts: int  # cold starts measured in total (the first is the one used)
    wireserver_starts: int


DEFAULT = Sizes(
    records_1k=200_000,
    records_100=1_000_000,
    reps=3,
    # A Java perf tool is the limit in its rows (its one core JITs while it measures): runs of
    # the same tool against the same broker spread by ±30 %, so two were not enough to order
    # the brokers.
    java_reps=5,
    # Alternating rounds (``alternate_java``): the median of five pairs of steady-state
    # runs (runs that were mostly the tool's JIT spread by ±30 % and took eight).
    java_rounds=5,
    java_records_1k=1_000_000,
    java_warmup_1k=1_500_000,
    java_records_100=6_000_000,
    java_warmup_100=8_000_000,
    latency_seconds=10.0,
    join_reps=5,
    kafka_starts=3,
    wireserver_starts=5,
)
QUICK = Sizes(
    records_1k=30_000,
    records_100=150_000,
    reps=3,
    java_reps=1,
    java_rounds=1,
    java_records_1k=30_000,
    java_warmup_1k=15_000,
    java_records_100=150_000,
    java_warmup_100=75_000,
    latency_seconds=3.0,
    join_reps=3,
    kafka_starts=1,
    wireserver_starts=3,
)

LATENCY_RATE = 5000  # records/s for the produce-latency workloads
JAVA_LATENCY_WARMUP_S = 5  # seconds the Java latency runs send before their steady-state line
E2E_RATE = 1000  # records/s for the end-to-end workload
IDLE_SETTLE_S = 2.0  # wait after start-up before reading the idle RSS


# ------------------------------------------------------------------------------ CPUs


@dataclass
class Pinning:
    broker: set[int] | None
    client: set[int] | None

    def describe(self) -> str:
        if self.broker is None:
            return f"not pinned ({os.cpu_count()} CPUs shared by broker and clients)"
        return (
            f"broker pinned to CPU {_cpus(self.broker)}, clients (load generators and "
            f"this harness) to CPU {_cpus(self.client)}"
        )

    def client_preexec(self) -> Callable[[], None] | None:
        cpus = self.client
        return None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))

    def broker_preexec(self) -> Callable[[], None] | None:
        cpus = self.broker
        return None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))

    @contextlib.contextmanager
    def as_broker(self):
        """Run the block on the broker's CPU, so processes it spawns inherit that mask."""
        if self.broker is None:
            yield
            return
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, self.broker)
        try:
            yield
        finally:
            os.sched_setaffinity(0, before)

    def pin_tree(self, pid: int) -> None:
        """Set the broker mask on every thread of ``pid``'s process tree (belt and braces)."""
        if self.broker is None:
            return
        for p in tree_pids(pid):
            with contextlib.suppress(OSError):
                for tid in os.listdir(f"/proc/{p}/task"):
                    with contextlib.suppress(OSError):
                        os.sched_setaffinity(int(tid), self.broker)


def _cpus(cpus: set[int] | None) -> str:
    return ",".join(map(str, sorted(cpus or ())))


def choose_pinning(enabled: bool) -> Pinning:
    if not enabled or not hasattr(os, "sched_setaffinity"):
        return Pinning(None, None)
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < 2:
        return Pinning(None, None)
    return Pinning({usable[0]}, set(usable[1:]))


# ------------------------------------------------------------------------------ /proc


def stat_fields(path: str) -> list[str] | None:
    """The fields of a procfs ``stat`` file after the command name (state, ppid, ...: the
    name may hold spaces and parentheses, so the fields start after the last ")"); None when
    the process or thread is gone."""
    try:
        with open(path, encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def tree_pids(root: int) -> list[int]:
    """``root`` and all its descendants (from the ppid field of /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = stat_fields(f"/proc/{entry}/stat")
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def exit_status(pid: int) -> str | None:
    """How the child process ``pid`` ended ("exited with code 1", "was killed by SIGKILL"),
    or None while it runs; the process stays to be reaped by its ``Popen``."""
    try:
        ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # not a child of this process, or reaped already
        return None
    if ended is None:
        return None
    if ended.si_code == os.CLD_EXITED:
        return f"exited with code {ended.si_status}"
    return f"was killed by {signal.Signals(ended.si_status).name}"


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kib(root: int) -> int:
    return sum(rss_kib(p) for p in tree_pids(root))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used, to the nanosecond, threads that ended included.

    ``/proc/<pid>/stat`` counts whole clock ticks (10 ms), and a short window (the cores
    dimension's quick produce, 2 × 10,000 records over two brokers) read 0.0 from it; adding
    each live thread's ``schedstat`` to it mixed two roundings and read a negative CPU time
    across a window of a JVM's forty threads. The kernel's CPU clock of the process
    (``clock_getcpuclockid``, which Python lacks: the id is ``~pid << 3 | CPUCLOCK_SCHED``)
    sums its threads' run time exactly, the ended ones too."""
    try:
        return time.clock_gettime((~pid << 3) | _CPUCLOCK_SCHED)
    except OSError:  # gone, or a kernel without it: the ticks, when there are any
        return _stat_cpu_seconds(f"/proc/{pid}/stat")


_CPUCLOCK_SCHED = 2


def _stat_cpu_seconds(path: str) -> float:
    """utime + stime of a ``stat`` file of procfs, in seconds; 0.0 when it is gone."""
    fields = stat_fields(path)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int) -> float:
    return sum(cpu_seconds(p) for p in tree_pids(root))


def cpu_note(cpu_s: float, nbytes: int, who: str = "broker") -> str:
    """The broker's CPU per 100 MB moved, for a row's note: throughput figures are often the
    client's limit, this is the broker's cost. ``who`` names another process's CPU."""
    return f"; {who} {cpu_s * 1000 * 100 * MIB / nbytes:.0f} ms CPU/100 MB" if nbytes else ""


def children_cpu_seconds() -> float:
    """User + system CPU time of this harness's waited-for children (a Java tool's JVM)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_busy_ticks(cpus: set[int]) -> tuple[int, int]:
    """The clock ticks ``cpus`` spent busy (all but idle and iowait) and in all, from
    /proc/stat: how busy a pinned side's CPU was over a run, whoever ran on it."""
    busy = total = 0
    with open("/proc/stat") as stat:
        for line in stat:
            name, *fields = line.split()
            if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus):
                continue
            ticks = [int(field) for field in fields]
            total += sum(ticks[:8])  # guest time is counted in user time already
            busy += sum(ticks[:8]) - ticks[3] - ticks[4]
    return busy, total


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the ticks between two ``cpu_busy_ticks`` readings that were busy."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total else 0.0


def settle_writeback() -> float:
    """Write every dirty page back (``sync``) before a throughput workload; the seconds it took.

    The 1 KB workloads leave gigabytes of dirty page cache behind. Without this, a later
    workload runs while the kernel writes that back, at the dirty threshold, and which workload
    and which broker meet the writeback depended on timing: the same 100 B workload moved by
    ±40 % between runs. After a sync each workload starts from the same state on both brokers.
    """
    started = time.monotonic()
    os.sync()
    return time.monotonic() - started


class RssSampler:
    """Samples the RSS of a process tree every ``interval`` s in a thread; keeps the peak."""

    def __init__(self, pid: int, interval: float = 0.2):
        self.pid = pid
        self.interval = interval
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, tree_rss_kib(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)


# ------------------------------------------------------------------------------ probing


def metadata_ok(bootstrap: str) -> bool:
    """One Metadata request over a fresh connection; True if it lists a broker."""
    from kafka.protocol.metadata.metadata import MetadataRequest

    from wireserver.testing import KafkaWire

    try:
        with KafkaWire(
            bootstrap, timeout=2.0, negotiate=False, client_id="wireserver-bench-probe"
        ) as wire:
            response = wire.request(
                MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)
            )
            return bool(response.brokers)
    except Exception:  # refused, reset, not ready: poll again
        return False


def wait_metadata(bootstrap: str, timeout: float, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + timeout
    while not metadata_ok(bootstrap):
        if not alive():
            raise RuntimeError(f"broker at {bootstrap} exited during start-up")
        if time.monotonic() > deadline:
            raise RuntimeError(f"broker at {bootstrap} did not answer Metadata in {timeout} s")
        time.sleep(0.01)


def delete_topic(bootstrap: str, topic: str) -> None:
    """Delete ``topic`` (absent is fine); the broker frees its files in the background."""
    from wireserver.testing import KafkaWire

    with KafkaWire(bootstrap, timeout=60.0, client_id="wireserver-bench") as wire:
        wire.delete_topics([topic], timeout_ms=60000)


def delete_topic_files(broker: Broker, topic: str, timeout: float = 30.0) -> bool:
    """Delete ``topic`` and wait until its partition directories have left the broker's log
    dir (Kafka renames them ``<topic>-<n>.<id>-delete`` and removes them after
    ``log.segment.delete.delay.ms``); False if they are still there after ``timeout``."""
    delete_topic(broker.bootstrap, topic)
    if broker.data_dir is None:
        return False
    return wait_until_removed(broker.data_dir, f"{topic}-", timeout)


def wait_until_removed(data_dir: str | Path, prefix: str, timeout: float = 120) -> bool:
    """Wait until no entry of ``data_dir`` starts with ``prefix`` (a deleted topic's
    partition directories, renamed ``-delete`` first, then removed); False after
    ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if not any(name.startswith(prefix) for name in os.listdir(data_dir)):
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def served_api_keys(bootstrap: str) -> set[int]:
    from wireserver.testing import KafkaWire

    with KafkaWire(bootstrap, timeout=10.0, client_id="wireserver-bench-probe") as wire:
        return set(wire.versions)


# ------------------------------------------------------------------------------ brokers


@dataclass
class Broker:
    """A running broker under test."""

    name: str
    version: str
    bootstrap: str
    pid: int
    startup_s: float
    stop: Callable[[], None]
    ready_line_s: float | None = None
    log_file: Path | None = None  # the broker's log (read it before ``stop()``)
    data_dir: Path | None = None  # its log dir (``log.dirs``)


#: which build of wireserver a broker runs unless told (``start_wireserver``'s ``build``): the
#: pure-Python sources installed here, or the checkout compiled with mypyc (setup.py)
BUILDS = ("pure", "compiled")
BUILD = "pure"


#: The test controls (on in ``wireserver.testing``'s defaults) sit in every request's path (the
#: broker's clock read through their proxy, a check per request); Kafka has none, so the brokers
#: measured here run without them, as ``wireserver serve`` does.
NO_CONTROLS = {"controls.enable": "false"}


def start_wireserver(
    pinning: Pinning,
    reactor: str = "default",
    overrides: dict[str, str] | None = None,
    data_dir: str | None = None,
    log_level: str = "WARNING",
    startup_timeout: float = 30,
    name: str | None = None,
    scrape_every_s: float | None = None,
    build: str | None = None,
) -> Broker:
    """``wireserver serve`` on a free port with a fresh data dir; timed to first Metadata.
    ``reactor`` is ``serve --reactor``; the broker is named ``wireserver`` on the default one
    and ``wireserver/<reactor>`` otherwise, or ``name``. ``overrides`` go over the test
    defaults without the test controls (``NO_CONTROLS``); a ``data_dir`` given is used and
    kept (the fresh one is deleted by ``stop()``).
    ``scrape_every_s``: open the metrics listener and GET ``/metrics`` that often from a thread
    of this harness while the broker runs, as Prometheus would. ``build``: ``"compiled"`` runs
    the compiled build of this checkout (``benchmarks.compiled``), ``"pure"`` the installed
    sources; ``None`` is ``BUILD`` (``--build``)."""
    from wireserver.testing import READY_RE, TEST_DEFAULTS, parse_endpoints

    root = tempfile.mkdtemp(prefix="wireserver-bench-")
    overrides = {
        **TEST_DEFAULTS,
        **NO_CONTROLS,
        "log.dirs": data_dir or os.path.join(root, "data"),
        **(overrides or {}),
    }
    metrics_port = None
    if scrape_every_s is not None:
        metrics_port = free_port()
        overrides["metrics.listeners"] = f"HTTP://127.0.0.1:{metrics_port}"
    command = [
        sys.executable,
        "-m",
        "wireserver.cli",
        "serve",
        "--log-level",
        log_level,
        "--reactor",
        reactor,
    ]
    for key, value in overrides.items():
        command += ["--override", f"{key}={value}"]
    environment = {**os.environ, **build_environment(build)}
    log_file = open(os.path.join(root, "broker.log"), "wb")
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log_file,
        preexec_fn=pinning.broker_preexec(),
        env=environment,
        # ``-m`` imports from the working directory first: the broker runs this checkout's
        # code, whichever directory the benchmark was started from (as ``run_rdkafka``)
        cwd=REPO,
    )
    assert process.stdout is not None
    # lines before the ready one (``wireserver ops: URL`` with a metrics listener) are skipped
    line = process.stdout.readline().decode("utf-8", "replace").strip()
    while line.startswith("wireserver ops:"):
        line = process.stdout.readline().decode("utf-8", "replace").strip()
    ready_line = time.perf_counter() - started
    match = READY_RE.match(line)
    if match is None:
        process.kill()
        process.wait()
        log_file.close()
        tail = Path(root, "broker.log").read_text(errors="replace")[-2000:]
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"wireserver did not print its ready line ({line!r}):\n{tail}")
    _, host, port = parse_endpoints(match.group("endpoints"))[0]
    bootstrap = f"{host}:{port}"
    wait_metadata(bootstrap, startup_timeout, lambda: process.poll() is None)
    startup = time.perf_counter() - started
    # Keep draining stdout so the broker never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
    scraping = threading.Event()
    if metrics_port is not None and scrape_every_s is not None:
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        threading.Thread(
            target=scrape_until, args=(url, scrape_every_s, scraping), daemon=True
        ).start()

    def stop() -> None:
        scraping.set()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log_file.close()
        shutil.rmtree(root, ignore_errors=True)

    from wireserver.cli import version as wireserver_version

    if name is None:
        name = "wireserver" if reactor == "default" else f"wireserver/{reactor}"
    return Broker(
        name,
        wireserver_version(),
        bootstrap,
        process.pid,
        startup,
        stop,
        ready_line,
        Path(root, "broker.log"),
        Path(overrides["log.dirs"]),
    )


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def scrape_until(url: str, every_s: float, stop: threading.Event) -> None:
    """GET ``url`` every ``every_s`` seconds until ``stop`` is set (failures are retried: the
    listener may not be up for the first one)."""
    import urllib.request

    while not stop.wait(every_s):
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=10) as response:
                response.read()


def start_kafka(pinning: Pinning, broker_props: dict[str, str] | None = None) -> Broker:
    """One KRaft node from compat_tests.reference; timed from ``start()`` (storage format,
    JVM start) to the first Metadata answer that lists the broker. ``broker_props`` go into
    its server.properties."""
    from compat_tests.reference import KAFKA_VERSION, KafkaCluster

    class TimedKafka(KafkaCluster):
        """Polls readiness every 10 ms with the same probe as wireserver gets."""

        def wait_ready(self, timeout=None, nodes=None):
            node = self.nodes[0]
            wait_metadata(node.address, timeout or self.startup_timeout, node.running)

    cluster = TimedKafka(nodes=1, broker_props=broker_props)
    started = time.perf_counter()
    with pinning.as_broker():
        cluster.start()
    startup = time.perf_counter() - started
    pid = cluster.nodes[0].process.pid
    pinning.pin_tree(pid)
    return Broker(
        "Kafka",
        KAFKA_VERSION,
        cluster.bootstrap_servers,
        pid,
        startup,
        lambda: cluster.stop(timeout=30),
        log_file=cluster.nodes[0].server_log,
        data_dir=cluster.nodes[0].data_dir,
    )


#: Kafka removes a deleted topic's files ``log.segment.delete.delay.ms`` (60 s) after the
#: deletion, wireserver at once; with the delay 0 (here and in ``benchmarks.scaling``) the Java
#: producer rows delete each run's topic and wait for its files to go, so that every run,
#: against either broker, writes into the page cache the run before it freed (see
#: ``java_throughput_workloads``).
KAFKA_DELETE_AT_ONCE = {"log.segment.delete.delay.ms": "0"}
#: The comparison stops a broker while the other is measured (``alone``), for a minute or two
#: at a time: a KRaft node fences itself when it resumes after more than its 9-second broker
#: session (which moves every partition's leader epoch), so its session is ten minutes here.
KAFKA_PROPS = {**KAFKA_DELETE_AT_ONCE, "broker.session.timeout.ms": "600000"}

STARTERS = {
    "kafka": functools.partial(start_kafka, broker_props=KAFKA_PROPS),
    "wireserver": start_wireserver,
    # the other event loops of ``serve --reactor`` (benchmarks.reactors compares them)
    "wireserver/asyncio": functools.partial(start_wireserver, reactor="asyncio"),
    "wireserver/uvloop": functools.partial(start_wireserver, reactor="uvloop"),
    # what metrics cost (benchmarks.metrics_cost): the meters off, and on with /metrics
    # scraped every second
    "wireserver/metrics-off": functools.partial(
        start_wireserver, name="wireserver/metrics-off", overrides={"metrics.enable": "false"}
    ),
    "wireserver/metrics-scraped": functools.partial(
        start_wireserver, name="wireserver/metrics-scraped", scrape_every_s=1.0
    ),
}


# ------------------------------------------------------------------------------ clients


def run_rdkafka(pinning: Pinning, *args: object, timeout: float = 900) -> dict:
    """Run one ``benchmarks.rdkafka_load`` command in its own (client-pinned) process."""
    command = [sys.executable, "-m", "benchmarks.rdkafka_load", *map(str, args)]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
            preexec_fn=pinning.client_preexec(),
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}
    return json.loads(lines[-1])


def produce_args(
    bootstrap: str,
    topic: str,
    size: int,
    partitions: int,
    acks: str,
    records: int,
    reps: int,
    warmup: int = 0,
) -> list[object]:
    """The arguments of ``benchmarks.rdkafka_load produce``: ``reps`` timed runs of ``records``
    records of ``size`` bytes over ``partitions`` after ``warmup`` untimed ones."""
    return [
        "produce",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--partitions",
        partitions,
        "--size",
        size,
        "--acks",
        acks,
        "--records",
        records,
        "--reps",
        reps,
        "--warmup",
        warmup,
    ]


def rdkafka_produce(pinning: Pinning, *args: object) -> dict:
    """``benchmarks.rdkafka_load produce`` in its own process; ``args`` are
    ``produce_args``'s."""
    return run_rdkafka(pinning, *produce_args(*args))


def run_java_tool(
    pinning: Pinning, tool: str, args: list[str], timeout: float = 600
) -> subprocess.CompletedProcess | str:
    from compat_tests.reference import tool_command

    try:
        return subprocess.run(
            tool_command(tool, args),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            preexec_fn=pinning.client_preexec(),
        )
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"


_PERF_SUMMARY = re.compile(
    r"(?P<records>\d+) (?:steady state )?records sent, (?P<rps>[\d.]+) records/sec \((?P<mbps>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th"
)


def java_produce(
    pinning: Pinning,
    bootstrap: str,
    topic: str,
    records: int,
    size: int,
    throughput: int,
    props: dict[str, str],
    warmup: int = 0,
) -> dict:
    """``kafka-producer-perf-test``; the summary line's figures (MB = MiB, as the tool counts).
    With ``warmup``, that many records go first and the figures are the tool's steady-state
    line over the ``records`` after them (``--warmup-records``, KIP-1052): the JVM compiles
    the producer while it sends, on the same core, for several seconds."""
    args = [
        "--topic",
        topic,
        "--num-records",
        str(records + warmup),
        *(["--warmup-records", str(warmup)] if warmup else []),
        "--record-size",
        str(size),
        "--throughput",
        str(throughput),
        "--producer-props",
        f"bootstrap.servers={bootstrap}",
        *(f"{k}={v}" for k, v in props.items()),
    ]
    done = run_java_tool(pinning, "kafka-producer-perf-test", args)
    if isinstance(done, str):
        return {"error": done}
    found = [m for m in _PERF_SUMMARY.finditer(done.stdout)]
    if done.returncode != 0 or not found:
        text = (done.stderr.strip() or done.stdout.strip())[-300:]
        return {"error": f"exit {done.returncode}: {text}"}
    m = found[-1]
    if int(m["records"]) < records:
        return {"error": f"only {m['records']} of {records} records sent"}
    return {
        "records_per_s": float(m["rps"]),
        "mib_per_s": float(m["mbps"]),
        "p50": float(m["p50"]),
        "p99": float(m["p99"]),
    }


def java_consume(pinning: Pinning, bootstrap: str, topic: str, records: int) -> dict:
    """``kafka-consumer-perf-test`` (a subscribing consumer, so it needs groups): the fetch
    MB/s, i.e. excluding the group join."""
    args = [
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--messages",
        str(records),
        "--timeout",
        "30000",
        "--hide-header",
    ]
    done = run_java_tool(pinning, "kafka-consumer-perf-test", args)
    if isinstance(done, str):
        return {"error": done}
    for line in reversed(done.stdout.strip().splitlines()):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 10:
            try:
                consumed = int(fields[4])
                fetch_mib_s, fetch_rps = float(fields[8]), float(fields[9])
            except ValueError:
                continue
            if consumed < records:
                return {"error": f"consumed {consumed} of {records} records"}
            return {
                "mib_per_s": fetch_mib_s,
                "records_per_s": fetch_rps,
                "rebalance_ms": float(fields[6]),
            }
    text = (done.stderr.strip() or done.stdout.strip())[-300:]
    return {"error": f"exit {done.returncode}: {text}"}


# ------------------------------------------------------------------------------ table rows


@dataclass
class Row:
    workload: str
    unit: str
    higher_better: bool
    values: dict[str, float | str] = field(default_factory=dict)  # target -> figure or note
    extra: dict[str, str] = field(default_factory=dict)  # target -> suffix text


class Results:
    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.errors: list[str] = []
        self._index: dict[str, Row] = {}

    def row(self, key: str, workload: str, unit: str, higher_better: bool) -> Row:
        if key not in self._index:
            self._index[key] = Row(workload, unit, higher_better)
            self.rows.append(self._index[key])
        return self._index[key]

    def put(
        self,
        target: str,
        key: str,
        workload: str,
        unit: str,
        higher_better: bool,
        value: float | str,
        extra: str = "",
    ) -> None:
        row = self.row(key, workload, unit, higher_better)
        row.values[target] = value
        if extra:
            row.extra[target] = extra

    @contextlib.contextmanager
    def noting_failure(self, name: str, log: Callable[[str], None]):
        """Run the block for target (or workload) ``name``; an exception from it (a broker that
        does not start) is logged and kept in ``errors``, so that the other targets still run
        and the table says what failed."""
        try:
            yield
        except Exception as exc:
            log(f"== {name}: FAILED: {type(exc).__name__}: {exc}")
            self.errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:500]}")


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _fmt(value: float | str | None) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if value >= 10_000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _fmt_rate(records_per_s: float) -> str:
    if records_per_s >= 1e6:
        return f"{records_per_s / 1e6:.2f} M rec/s"
    return f"{records_per_s / 1e3:.0f} k rec/s"


def _java_figure(runs: list[dict], nbytes: int) -> tuple[float, str]:
    """The median MB/s of a Java tool's runs, and a note with its record rate, the broker's
    and the tool's (client) CPU per 100 MB (``nbytes`` moved per run), a producer's median
    p50 latency, and the runs' spread (these tools are noisy and often their own limit; the
    spread says how far to trust the ratio). At full rate a producer's records wait in its
    accumulator: a p50 near half a second means its buffer stayed full, the tool's slow
    regime (benchmarks/results.md), whichever broker it ran against."""
    mib = [r["mib_per_s"] for r in runs]
    spread = _runs_spread(mib)
    note = f" ({_fmt_rate(_median([r['records_per_s'] for r in runs]))}"
    if all("broker_cpu_s" in r for r in runs):
        moved = nbytes * len(runs)
        note += cpu_note(sum(r["broker_cpu_s"] for r in runs), moved)
        note += cpu_note(sum(r["client_cpu_s"] for r in runs), moved, "client")
    if all("p50" in r for r in runs):
        note += f"; the tool's p50 latency {_median([r['p50'] for r in runs]):.0f} ms"
    if all("client_cpus_busy" in r for r in runs):
        client = _median([r["client_cpus_busy"] for r in runs]) * 100
        broker = _median([r["broker_cpus_busy"] for r in runs]) * 100
        note += f"; CPU busy: the client's {client:.0f} %, the broker's {broker:.0f} %"
    return _median(mib), note + (f"; {spread})" if spread else ")")


def _runs_spread(values: list[float]) -> str:
    """``median of N runs, min–max`` for several runs of a Java tool, else nothing."""
    if len(values) < 2:
        return ""
    return f"median of {len(values)} runs, {min(values):.3g}–{max(values):.3g}"


# ------------------------------------------------------------------------------ workloads


class Session:
    """Runs every workload against one broker and files figures under its name."""

    def __init__(
        self,
        broker: Broker,
        sizes: Sizes,
        pinning: Pinning,
        results: Results,
        java: bool,
        log: Callable[[str], None],
    ):
        self.b = broker
        self.sizes = sizes
        self.pinning = pinning
        self.results = results
        self.java = java
        self.target = broker.name
        # the brokers take turns, so each line says whose figure it is
        self.log = lambda message: log(f"  [{self.target}] {message.strip()}")
        self.topic_records: dict[str, int] = {}  # records in each topic, as consume() saw

    def put(
        self,
        key: str,
        workload: str,
        unit: str,
        higher_better: bool,
        value: float | str,
        extra: str = "",
    ) -> None:
        self.results.put(self.target, key, workload, unit, higher_better, value, extra)

    def failed(self, key: str, workload: str, unit: str, higher_better: bool, error: str) -> None:
        ended = exit_status(self.b.pid)
        if ended is not None:
            error = f"{error} (the broker's process {ended})"
        self.log(f"  {workload}: FAILED: {error}")
        self.put(key, workload, unit, higher_better, "failed")
        self.results.errors.append(f"{self.target}, {workload}: {error}")

    # -- throughput ------------------------------------------------------------------

    def produce(self, size: int, partitions: int, acks: str) -> None:
        """One librdkafka produce workload (``PRODUCE_MATRIX``)."""
        records = self.sizes.records_1k if size == 1024 else self.sizes.records_100
        label = "1 KB" if size == 1024 else "100 B"
        workload = (
            f"produce {label}, {partitions} partition"
            f"{'s' if partitions > 1 else ''}, acks={acks} (librdkafka)"
        )
        key = f"produce-{size}-{partitions}-{acks}"
        topic = f"bench-{size}-p{partitions}-acks{acks}"
        self.settle()
        cpu_before = tree_cpu_seconds(self.b.pid)
        client_before = children_cpu_seconds()
        out = rdkafka_produce(
            self.pinning,
            self.b.bootstrap,
            topic,
            size,
            partitions,
            acks,
            records,
            self.sizes.reps,
            records // 5,
        )
        cpu = tree_cpu_seconds(self.b.pid) - cpu_before
        client_cpu = children_cpu_seconds() - client_before
        if "error" in out:
            self.failed(key, workload, "MB/s", True, out["error"])
            return
        seconds = _median([r["seconds"] for r in out["reps"]])
        moved = (records // 5 + records * self.sizes.reps) * size
        self.put_rate(key, workload, records * size, records, seconds, cpu, client_cpu, moved)

    def put_rate(
        self,
        key: str,
        workload: str,
        nbytes: int,
        records: int,
        seconds: float,
        cpu: float,
        client_cpu: float,
        moved: int,
    ) -> None:
        """A librdkafka workload's MB/s (``nbytes`` of ``records`` in ``seconds``, the median
        repetition), noted with its record rate and the broker's and the client's CPU over
        the whole command per 100 MB of the ``moved`` bytes."""
        mib_s = nbytes / MIB / seconds
        self.put(
            key,
            workload,
            "MB/s",
            True,
            mib_s,
            f" ({_fmt_rate(records / seconds)}{cpu_note(cpu, moved)}"
            f"{cpu_note(client_cpu, moved, 'client')})",
        )
        self.log(f"{workload}: {mib_s:.1f} MB/s, {records / seconds:,.0f} rec/s")

    def java_runs(self, run: Callable[[], dict]) -> list[dict] | str:
        """``run`` (one Java tool, a JVM each) ``java_reps`` times: the runs' results
        (``java_run``'s), or the first run's error."""
        runs = []
        for _ in range(self.sizes.java_reps):
            out = self.java_run(run)
            if "error" in out:
                return out["error"]
            runs.append(out)
        return runs

    def java_run(self, run: Callable[[], dict]) -> dict:
        """One ``run`` of a Java tool after a writeback settle, with the broker's and the
        tool's CPU seconds over it (``broker_cpu_s``, ``client_cpu_s``) and, when pinned, how
        busy the broker's and the clients' CPUs were (``broker_cpus_busy``,
        ``client_cpus_busy``: a share)."""
        self.settle()
        broker_before, client_before = tree_cpu_seconds(self.b.pid), children_cpu_seconds()
        pinned = self.pinning.broker, self.pinning.client
        ticks_before = [cpu_busy_ticks(cpus) for cpus in pinned if cpus is not None]
        out = run()
        if "error" not in out:
            out["broker_cpu_s"] = tree_cpu_seconds(self.b.pid) - broker_before
            out["client_cpu_s"] = children_cpu_seconds() - client_before
            if len(ticks_before) == 2:
                broker_ticks, client_ticks = ticks_before
                out["broker_cpus_busy"] = busy_share(broker_ticks, cpu_busy_ticks(pinned[0]))
                out["client_cpus_busy"] = busy_share(client_ticks, cpu_busy_ticks(pinned[1]))
        return out

    def settle(self) -> None:
        """``settle_writeback`` before a throughput workload, logged when it takes a while."""
        seconds = settle_writeback()
        if seconds >= 1:
            self.log(f"  (sync before the next workload: {seconds:.1f} s)")

    def consume(self, size: int, partitions: int, acks: str) -> None:
        """One librdkafka consume workload (``CONSUME_WORKLOADS``): reads the topic its
        produce workload wrote."""
        label = "1 KB" if size == 1024 else "100 B"
        topic = f"bench-{size}-p{partitions}-acks{acks}"
        workload = (
            f"consume {label} from a full log, {partitions} partition"
            f"{'s' if partitions > 1 else ''} (librdkafka, assigned)"
        )
        key = f"consume-{size}-{partitions}"
        self.settle()
        cpu_before = tree_cpu_seconds(self.b.pid)
        client_before = children_cpu_seconds()
        out = run_rdkafka(
            self.pinning,
            "consume",
            "--bootstrap",
            self.b.bootstrap,
            "--topic",
            topic,
            "--reps",
            self.sizes.reps,
            "--warmup",
        )
        cpu = tree_cpu_seconds(self.b.pid) - cpu_before
        client_cpu = children_cpu_seconds() - client_before
        if "error" in out:
            self.failed(key, workload, "MB/s", True, out["error"])
            return
        seconds = _median([r["seconds"] for r in out["reps"]])
        nbytes, records = out["reps"][0]["bytes"], out["reps"][0]["records"]
        self.topic_records[topic] = records
        moved = nbytes * (self.sizes.reps + 1)  # the untimed first pass too
        self.put_rate(key, workload, nbytes, records, seconds, cpu, client_cpu, moved)

    # -- latency ---------------------------------------------------------------------

    def produce_latency(self) -> None:
        base = f"produce latency @ {LATENCY_RATE:,} rec/s, 1 KB, acks=all"
        self.settle()
        out = run_rdkafka(
            self.pinning,
            "latency",
            "--bootstrap",
            self.b.bootstrap,
            "--topic",
            "bench-latency",
            "--rate",
            LATENCY_RATE,
            "--seconds",
            self.sizes.latency_seconds,
            "--acks",
            "all",
        )
        for q in ("p50", "p99"):
            workload = f"{base}, {q} (librdkafka, linger.ms=1)"
            if "error" in out:
                self.failed(f"lat-{q}", workload, "ms", False, out["error"])
            else:
                self.put(f"lat-{q}", workload, "ms", False, out[q])
        if "error" not in out:
            self.log(f"  {base} (librdkafka): p50 {out['p50']:.2f} ms, p99 {out['p99']:.2f} ms")
        if not self.java:
            return
        # A JVM each run: its first seconds JIT-compile the producer on the same core, and a
        # p99 over them (146-429 ms) measured the JIT, not the broker. The figures are the
        # tool's steady-state line after JAVA_LATENCY_WARMUP_S seconds (--warmup-records), and
        # the median of the runs, as one run's p50 has ranged from 1 to 897 ms.
        records = int(LATENCY_RATE * self.sizes.latency_seconds)
        runs = self.java_runs(
            lambda: java_produce(
                self.pinning,
                self.b.bootstrap,
                "bench-latency-java",
                records,
                1024,
                LATENCY_RATE,
                {"acks": "all", "linger.ms": "1"},
                warmup=LATENCY_RATE * JAVA_LATENCY_WARMUP_S,
            )
        )
        for q in ("p50", "p99"):
            workload = (
                f"{base}, {q} (Java perf-test, linger.ms=1, whole ms, "
                f"after {JAVA_LATENCY_WARMUP_S} s)"
            )
            if isinstance(runs, str):
                self.failed(f"java-lat-{q}", workload, "ms", False, runs)
                continue
            values = [r[q] for r in runs]
            spread = _runs_spread(values)
            note = f" ({spread})" if spread else ""
            self.put(f"java-lat-{q}", workload, "ms", False, _median(values), note)
            self.log(f"  {workload}: {_median(values):.0f} ms{note}")

    def e2e_latency(self) -> None:
        base = f"end-to-end latency @ {E2E_RATE:,} rec/s, 1 KB, acks=all"
        out = run_rdkafka(
            self.pinning,
            "e2e",
            "--bootstrap",
            self.b.bootstrap,
            "--topic",
            "bench-e2e",
            "--rate",
            E2E_RATE,
            "--seconds",
            self.sizes.latency_seconds,
            "--acks",
            "all",
        )
        for q in ("p50", "p99"):
            workload = f"{base}, {q} (librdkafka produce → consume)"
            if "error" in out:
                self.failed(f"e2e-{q}", workload, "ms", False, out["error"])
            else:
                self.put(f"e2e-{q}", workload, "ms", False, out[q])
        if "error" not in out:
            self.log(f"  {base}: p50 {out['p50']:.2f} ms, p99 {out['p99']:.2f} ms")

    def group_join(self) -> None:
        workload = "consumer group join, fresh group, to assignment (librdkafka)"
        key = "join"
        if 11 not in served_api_keys(self.b.bootstrap):  # JoinGroup
            self.put(key, workload, "ms", False, "n/a (not served)")
            self.log(f"  {workload}: n/a (JoinGroup not served)")
            return
        out = run_rdkafka(
            self.pinning,
            "join",
            "--bootstrap",
            self.b.bootstrap,
            "--topic",
            "bench-1024-p1-acks1",
            "--reps",
            self.sizes.join_reps,
        )
        if "error" in out:
            self.failed(key, workload, "ms", False, out["error"])
            return
        ms = _median(out["ms"])
        self.put(key, workload, "ms", False, ms)
        self.log(f"  {workload}: {ms:.1f} ms (median of {len(out['ms'])})")


#: the librdkafka produce workloads (size, partitions, acks), each run against every broker in
#: turn before the next; the consume workloads read what the first two sizes' acks=1 wrote
PRODUCE_MATRIX = [
    (size, partitions, acks)
    for size in (1024, 100)
    for partitions in (1, 8)
    for acks in ("1", "all")
]
CONSUME_WORKLOADS = [(1024, 1, "1"), (100, 8, "1")]
JAVA_CONSUME_TOPIC = "bench-1024-p1-acks1"


def in_turn(sessions: list[Session], turn: int) -> list[Session]:
    """``sessions`` starting from the ``turn``-th (modulo their number): who goes first moves on
    from one workload, or round, to the next."""
    first = turn % len(sessions)
    return sessions[first:] + sessions[:first]


def wait_stopped(pids: list[int], timeout: float = 10.0) -> None:
    """Wait until every thread of ``pids`` is stopped (state T) or dead: a SIGSTOP takes
    effect as each thread next enters the kernel, a moment after ``kill`` returns."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while any(state not in "TtZX" for state in _thread_states(pid)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"process {pid} did not stop in {timeout:g} s")
            time.sleep(0.001)


def _thread_states(pid: int) -> list[str]:
    """The scheduler state of each thread of ``pid`` (none once it has gone)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []
    threads = (stat_fields(f"/proc/{pid}/task/{task}/stat") for task in tasks)
    return [fields[0] for fields in threads if fields is not None]


@contextlib.contextmanager
def alone(sessions: list[Session], measured: Session) -> Iterator[None]:
    """``measured``'s broker alone on its CPU: every other session's broker (its whole process
    tree) is stopped with SIGSTOP until the block ends, then continued. Pinned, both brokers
    share one CPU, and an idle broker is not idle to the one measured beside it: an idle Kafka
    4.4 node takes 3-4 % of that CPU in 360 wake-ups a second (its controller, heartbeats and
    JVM threads), an idle wireserver next to nothing, so the comparison measured wireserver
    beside a neighbour and Kafka beside none (the Java producer's 100 B run against wireserver:
    105.8-110.8 MB/s beside an idle Kafka, 112.6-114.6 beside a stopped one, 3 rounds)."""
    stopped = [pid for s in sessions if s is not measured for pid in tree_pids(s.b.pid)]
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        wait_stopped(stopped)
        yield
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def run_targets(
    names: list[str],
    sizes: Sizes,
    pinning: Pinning,
    results: Results,
    java: bool,
    log: Callable[[str], None],
) -> None:
    """Every target's broker up at once (each pinned as ``pinning`` says, the idle ones stopped
    while one is measured on the same CPU), and each workload run against one broker after the
    other before the next workload, the first broker changing from one workload to the next;
    the Java tools' throughput runs alternate so in rounds (``java_rounds``), as their single
    runs spread by ±30 %. Run one broker's whole session minutes after the other's and the
    machine's drift between the two (other tenants, the page cache the first broker's deleted
    data leaves to be refilled) orders the brokers as much as their work does; taking turns,
    both meet the same moments. Then the latency workloads likewise, the brokers stop, and
    more cold starts of each give the median start-up time. While a broker is measured the
    others are stopped (``alone``)."""
    sessions: list[Session] = []
    started_as: dict[str, str] = {}  # broker name -> its STARTERS key, for the cold starts
    try:
        for name in names:
            log(f"== {name}: starting")
            with results.noting_failure(name, log):
                broker = STARTERS[name](pinning)
                started_as[broker.name] = name
                sessions.append(Session(broker, sizes, pinning, results, java, log))
                log(
                    f"  {broker.name} {broker.version} ready at {broker.bootstrap} "
                    f"(pid {broker.pid}) in {broker.startup_s * 1000:.0f} ms"
                )
        if not sessions:
            return
        time.sleep(IDLE_SETTLE_S)
        for s in sessions:
            idle = tree_rss_kib(s.b.pid) / 1024
            s.put(
                "rss-idle",
                f"idle RSS, {IDLE_SETTLE_S:.0f} s after start-up (process tree)",
                "MiB",
                False,
                idle,
            )
            log(f"  {s.target}: idle RSS {idle:.0f} MiB")
        java_rows = java_throughput_workloads(sizes, pinning) if java else []
        samplers = [RssSampler(s.b.pid) for s in sessions]
        with contextlib.ExitStack() as sampling:
            for sampler in samplers:
                sampling.enter_context(sampler)
            for turn, workload in enumerate(PRODUCE_MATRIX):
                for s in in_turn(sessions, turn):
                    with alone(sessions, s):
                        s.produce(*workload)
            for job in java_rows[:2]:
                alternate_java(sessions, job, sizes.java_rounds, log)
            for turn, workload in enumerate(CONSUME_WORKLOADS):
                for s in in_turn(sessions, turn):
                    with alone(sessions, s):
                        s.consume(*workload)
            for job in java_rows[2:]:
                alternate_java(sessions, job, sizes.java_rounds, log)
        for s, sampler in zip(sessions, samplers):
            s.put(
                "rss-load",
                "peak RSS during the throughput workloads (process tree)",
                "MiB",
                False,
                sampler.peak_kib / 1024,
            )
            log(f"  {s.target}: peak RSS under load {sampler.peak_kib / 1024:.0f} MiB")
        for turn, workload in enumerate((Session.produce_latency, Session.e2e_latency)):
            for s in in_turn(sessions, turn):
                with alone(sessions, s):
                    workload(s)
        for s in sessions:
            with alone(sessions, s):
                s.group_join()
    finally:
        for s in sessions:
            s.b.stop()
    for s in sessions:
        name = started_as[s.target]
        starts = [s.b.startup_s]
        total = sizes.kafka_starts if s.b.name == "Kafka" else sizes.wireserver_starts
        for _ in range(total - 1):
            again = STARTERS[name](pinning)
            again.stop()
            starts.append(again.startup_s)
        s.put(
            "startup",
            "start-up: spawn → first Metadata answer (Kafka: incl. storage format + JVM)",
            "ms",
            False,
            _median(starts) * 1000,
            f" (n={len(starts)})",
        )
        log(f"  {s.target}: start-up median {_median(starts) * 1000:.0f} ms over {len(starts)}")


@dataclass(frozen=True)
class JavaThroughput:
    """One of the Java perf tools' throughput rows: ``run`` is one run of the tool against
    a session's broker; ``nbytes`` the record bytes it moves."""

    key: str
    workload: str
    nbytes: Callable[[Session], int]
    run: Callable[[Session], dict]
    #: an untimed run against each broker before the rounds
    warm_run: bool = True
    #: called with each run's result after it, outside its figures
    after: Callable[[Session, dict], None] | None = None


def java_throughput_workloads(sizes: Sizes, pinning: Pinning) -> list[JavaThroughput]:
    """The idempotent Java producer (1 KB and 100 B records), then the group consumer reading
    the log the librdkafka 1 KB acks=1 workload wrote (all of it, as librdkafka's consumer
    did). A producer run sends ``java_warmup_*`` records before the ``java_records_*`` it
    reports (the tool's steady-state line): its rate climbs for 15-20 s while the JVM compiles
    it on its one core (5-second windows of 1 KB runs: 15-44, 33-82, 80-110, then 87-140
    MB/s against either broker), so a shorter run measures the JIT, not the broker. Each run
    writes into a topic of its own, deleted after it, as a run writes gigabytes, and the next
    run starts once the deleted topic's files are gone, against either broker
    (``delete_topic_files``; Kafka's deletion delay is 0 here, ``KAFKA_PROPS``): on the virtual
    machines these figures come from, writing into pages the guest freed moments ago costs a
    fraction of the kernel time of writing into pages it has kept free for seconds (handed back
    to the host meanwhile; ``dd`` of 2.5 GB: 0.6 s against 3.7-4.6 s of system time), so with
    Kafka's 60-second delay Kafka's runs wrote into what wireserver's last run had freed and
    wireserver's into neither."""
    rows = []
    runs = itertools.count()
    for size in (1024, 100):
        records = sizes.java_records_1k if size == 1024 else sizes.java_records_100
        warmup = sizes.java_warmup_1k if size == 1024 else sizes.java_warmup_100
        label = "1 KB" if size == 1024 else "100 B"

        def run(s: Session, size: int = size, records: int = records, warmup: int = warmup):
            topic = f"bench-java-{size}-{next(runs)}"
            out = java_produce(
                pinning, s.b.bootstrap, topic, records, size, -1, {"acks": "all"}, warmup
            )
            return {**out, "topic": topic}

        rows.append(
            JavaThroughput(
                f"java-produce-{size}",
                f"produce {label}, 1 partition, acks=all, idempotent "
                "(Java kafka-producer-perf-test)",
                # the broker's and the tool's CPU cover the whole run, warm-up included
                lambda s, nbytes=(records + warmup) * size: nbytes,
                run,
                warm_run=False,  # each run warms up long enough itself
                after=lambda s, out: delete_topic_files(s.b, out["topic"]),
            )
        )

    def consumed(s: Session) -> int:
        return s.topic_records.get(JAVA_CONSUME_TOPIC, sizes.records_1k)

    rows.append(
        JavaThroughput(
            "java-consume-1024",
            "consume 1 KB from a full log, 1 partition (Java kafka-consumer-perf-test, group)",
            lambda s: consumed(s) * 1024,
            lambda s: java_consume(pinning, s.b.bootstrap, JAVA_CONSUME_TOPIC, consumed(s)),
        )
    )
    return rows


def alternate_java(
    sessions: list[Session], job: JavaThroughput, rounds: int, log: Callable[[str], None]
) -> None:
    """``job``'s row: an untimed warm-up run against each broker, then ``rounds`` rounds of
    one run against each, the first broker of a round rotating, each with the others stopped
    (``alone``). With two brokers the second's note has the median of the rounds' ratios (the
    table's ratio is of the medians)."""
    runs: dict[str, list[dict]] = {s.target: [] for s in sessions}
    failed: dict[str, str] = {}
    for s in sessions if job.warm_run else []:
        with alone(sessions, s):
            warm = s.java_run(functools.partial(job.run, s))
        if "error" in warm:
            failed[s.target] = warm["error"]
    for turn in range(rounds):
        for s in in_turn(sessions, turn):
            if s.target in failed:
                continue
            with alone(sessions, s):
                out = s.java_run(functools.partial(job.run, s))
                if job.after is not None:
                    job.after(s, out)
            if "error" in out:
                failed[s.target] = out["error"]
            else:
                runs[s.target].append(out)
    for s in sessions:
        if s.target in failed:
            s.failed(job.key, job.workload, "MB/s", True, failed[s.target])
            continue
        mib_s, note = _java_figure(runs[s.target], job.nbytes(s))
        base = sessions[0]
        if len(sessions) == 2 and s is not base and base.target not in failed:
            note = note[:-1] + "; " + _paired_note(runs[base.target], runs[s.target]) + ")"
        s.put(job.key, job.workload, "MB/s", True, mib_s, note)
        log(f"  {s.target}, {job.workload}: {mib_s:.1f} MB/s{note}")


def _paired_note(base: list[dict], ours: list[dict]) -> str:
    """The median of the rounds' ratios (ours ÷ base) and how many rounds were above 1."""
    ratios = [o["mib_per_s"] / b["mib_per_s"] for b, o in zip(base, ours)]
    above = sum(r > 1 for r in ratios)
    return f"paired: median ratio {_median(ratios):.2f}×, {above} of {len(ratios)} rounds above 1"


# ------------------------------------------------------------------------------ report


def render_table(
    results: Results,
    base: str = "Kafka",
    ours: str = "wireserver",
    ratio_title: str = "ours ÷ Kafka",
) -> list[str]:
    """The markdown table of two brokers' figures (by broker name) and ``ours ÷ base``."""
    lines = [
        f"| workload | unit | {base} | {ours} | {ratio_title} | better |",
        "|---|---|---|---|---|---|",
    ]
    for row in results.rows:
        cells = []
        for target in (base, ours):
            value = row.values.get(target)
            cells.append(_fmt(value) + row.extra.get(target, ""))
        base_value, our_value = row.values.get(base), row.values.get(ours)
        if isinstance(base_value, float) and isinstance(our_value, float) and base_value > 0:
            ratio = f"{our_value / base_value:.2f}×"
        else:
            ratio = "—"
        better = "higher" if row.higher_better else "lower"
        lines.append(
            f"| {row.workload} | {row.unit} | {cells[0]} | {cells[1]} | {ratio} | {better} |"
        )
    return lines


def build_environment(build: str | None = None) -> dict[str, str]:
    """The environment variables a ``python -m wireserver.cli`` needs beyond this process's to
    run ``build`` (``BUILD`` if ``None``): none for the installed sources."""
    if (build or BUILD) == "compiled":
        from benchmarks.compiled import compiled_environment

        return compiled_environment()
    return {}


@contextlib.contextmanager
def spawning_build(build: str | None = None) -> Iterator[None]:
    """Run the block with ``build_environment`` in ``os.environ``, so that a broker it spawns
    (``wireserver.testing.EmbeddedBroker`` inherits this process's environment) runs
    ``build``; the environment is as before afterwards."""
    added = build_environment(build)
    before = {key: os.environ.get(key) for key in added}
    os.environ.update(added)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def build_description(build: str | None = None) -> str:
    """Which build the wireserver brokers ran, for the results' environment lines."""
    if (build or BUILD) == "compiled":
        return "compiled build (setup.py's modules compiled with mypyc; benchmarks.compiled)"
    return "pure-Python build"


def cpus() -> str:
    """This machine's CPUs as the results name them: ``2 × AMD EPYC``. A cloud VM of the
    same type can come up on another CPU model from one day to the next, and figures move
    with it."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} × {model}"


def meminfo_bytes(field: str) -> int | None:
    """A /proc/meminfo field (``MemTotal``, ``MemAvailable``) in bytes, None if unreadable."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return None


def machine_lines() -> list[str]:
    total = meminfo_bytes("MemTotal")
    mem = f"{total / 2**30:.1f} GiB" if total is not None else "unknown"
    java = "unknown"
    with contextlib.suppress(Exception):
        from compat_tests.reference import which_java

        out = subprocess.run(
            [which_java() or "java", "-version"], capture_output=True, text=True, timeout=30
        )
        java = (out.stderr or out.stdout).splitlines()[0].strip()
    import confluent_kafka

    from compat_tests.reference import KAFKA_VERSION
    from wireserver.cli import version as wireserver_version

    return [
        f"- CPUs: {cpus()}",
        f"- memory: {mem}",
        f"- OS: {platform.platform()}",
        f"- Python {platform.python_version()} ({sys.executable})",
        f"- Java: {java}",
        f"- Apache Kafka {KAFKA_VERSION} (KRaft, 1 combined node, jars from Maven via "
        "compat_tests.reference; -Xmx512m G1)",
        f"- wireserver {wireserver_version()}, {build_description()}",
        f"- clients: confluent-kafka {confluent_kafka.__version__} "
        f"(librdkafka {confluent_kafka.libversion()[0]}); Kafka {KAFKA_VERSION} perf tools "
        "(Java producer/consumer)",
    ]


def write_results(
    path: Path,
    argv: list[str],
    started: datetime.datetime,
    elapsed: float,
    pinning: Pinning,
    sizes: Sizes,
    quick: bool,
    table: list[str],
    errors: list[str],
    load: str,
    warmed: str = "",
) -> None:
    text = [
        "# wireserver vs Apache Kafka: side-by-side benchmark",
        "",
        "Written by `scripts/bench` (`python -m benchmarks.compare`); overwritten on every run.",
        "Figures, not assertions. MB = MiB of record values (Kafka's perf tools count the same way).",
        "",
        f"- date: {started.isoformat(timespec='seconds')} (run took {elapsed / 60:.1f} min)",
        f"- command: `{' '.join(argv)}`",
        f"- sizes ({'--quick' if quick else 'default'}): {sizes.records_1k:,} × 1 KB or "
        f"{sizes.records_100:,} × 100 B records per repetition, {sizes.reps} repetitions "
        f"(+ warm-up) per librdkafka workload, {sizes.java_rounds} alternating round(s) per Java "
        f"throughput tool (the consumer's after a warm-up run), {sizes.java_reps} run(s) of the "
        "Java latency workload, "
        f"{sizes.latency_seconds:g} s per latency run, {sizes.join_reps} group joins, "
        f"{sizes.kafka_starts} Kafka / {sizes.wireserver_starts} wireserver cold starts",
        f"- CPU pinning: {pinning.describe()}",
        f"- load average at the start: {load}",
        *([f"- memory warmed: {warmed}"] if warmed else []),
        *machine_lines(),
        "",
        *table,
        "",
        "Method: both brokers run at once on the same machine and loopback interface, each "
        "pinned as below, and the idle one stopped (SIGSTOP, its whole process tree) while the "
        "other is measured on the same CPU, so that neither shares its core with the other's "
        "timers and threads (an idle Kafka node wakes some 360 times a second and takes 3-4 % "
        "of a core; Kafka's broker session is 10 minutes here, so that it does not fence "
        "itself when continued); every "
        "workload runs against one and then the other before the next workload, the first "
        "broker changing from one workload to the next, so that both meet the same moments "
        "of the machine (a broker measured minutes after the other meets another one). The "
        "Java tools' throughput rows take turns in rounds (the consumer's after an untimed "
        "warm-up run against each broker), one run against each per round; such a row's "
        "figure is the median of its "
        "runs and its note gives the median of the rounds' ratios (a single run of these tools "
        "spreads by ±30 %). Each librdkafka workload is a fresh client process that sends a warm-up "
        "(a fifth of the records) and then times each repetition from the first produce() to "
        "the last acknowledgement; the figure is the median. Consume reads the topic written by "
        "the produce workload from offset 0 (one untimed pass first), with librdkafka's "
        "`fetch.queue.backoff.ms` at 1 ms for both brokers (its default, 1000 ms, idles the "
        "consumer for whole seconds whenever 100k records are queued, which with 100 B records "
        "is every fetch; see `benchmarks/rdkafka_load.py`). "
        '"Broker ... ms CPU/100 MB" in a throughput row is the user + system CPU time of '
        "the broker's process tree over the whole client command (warm-up and repetitions), "
        "per 100 MB of record values produced or read: throughput is often the client's "
        "limit, this is the broker's cost; in a Java tool's row it covers all its timed runs, and "
        '"client ... ms CPU/100 MB" is the client process\'s own CPU likewise (the Python '
        "librdkafka process, or a Java tool's JVM), on its one core. Before "
        "every throughput workload, Java run and latency workload the harness runs `sync`, so "
        "none starts while the kernel writes back the dirty pages of the one before (the 1 KB "
        "workloads leave gigabytes). Latency workloads send "
        "at a fixed rate and drop the first second. The Java tools run in a fresh JVM each time; "
        f"a Java producer throughput run sends {sizes.java_warmup_1k:,} × 1 KB or "
        f"{sizes.java_warmup_100:,} × 100 B records first and reports the tool's steady-state "
        f"line over the {sizes.java_records_1k:,} or {sizes.java_records_100:,} after them "
        "(`--warmup-records`), as the tool's rate climbs for 15-20 s while its JIT compiler "
        "shares its core, into a topic of its own that is deleted after the run, and the next "
        "run starts once that topic's files are gone (Kafka's `log.segment.delete.delay.ms` is 0 "
        "here), so that every run, against either broker, writes into page cache the run before "
        "it freed (on this virtual machine writing into pages kept free for seconds costs "
        "several times the kernel time); its latency runs likewise report the line after "
        f"{JAVA_LATENCY_WARMUP_S} s of sending, while the consumer's runs include their warm-up. "
        "A Java producer row's note gives the median of its runs' p50 latency: at full rate the "
        "tool queues records in its 32 MB buffer, and near half a second means the buffer "
        "stayed full, a regime in which the tool's own garbage collection is its limit. "
        "A Java row's note also gives how busy the client's and the broker's CPU were over "
        "its runs (the median of the runs' shares of busy clock ticks in /proc/stat, whatever "
        "ran there): a client CPU near 100 % means the row measures the tool more than the "
        "broker. "
        "Start-up is from process spawn to the first "
        "Metadata answer listing a broker (10 ms polling); for Kafka it includes "
        "`kafka-storage format` and the JVM start.",
        "",
        "Reading the figures: with pinning, each broker gets one core, which constrains a "
        "multi-threaded JVM broker (network, request-handler, GC and JIT threads share it) more "
        "than single-threaded wireserver. The clients get one core too: the Python librdkafka "
        "producer tops out near 0.7-1 M records/s, so 100 B produce figures may be client-bound, "
        "and the Java consumer JITs while it measures (short runs). Other work on the machine "
        "at the time (see the load average) adds noise, "
        "chiefly to p99 latencies and to single repetitions.",
    ]
    if errors:
        text += ["", "Failures:", "", *(f"- {e}" for e in errors)]
    kept = sections_of(path.read_text()) if path.exists() else {}
    path.write_text("\n".join(text) + "\n" + render_sections(kept))


def sections_of(text: str) -> dict[str, str]:
    """The ``## `` sections of a results file (other benchmarks write them; this one writes
    none), by heading line, in order."""
    sections: dict[str, str] = {}
    title = None
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            title = line.rstrip("\n")
            sections[title] = ""
        elif title is not None:
            sections[title] += line
    return sections


def render_sections(sections: dict[str, str]) -> str:
    """``sections`` (heading line -> body) as text, one blank line around every heading however
    the bodies were spaced: a file rewritten on every run must not gain a blank line each time."""
    return "".join(f"\n{title}\n\n{body.strip(chr(10))}\n" for title, body in sections.items())


def write_section(path: Path, title: str, lines: list[str]) -> None:
    """Put ``title`` (a ``## `` heading) and ``lines`` into the results file at ``path``, in
    place of that section if it is there, else at the end; the rest is left as it was."""
    text = path.read_text() if path.exists() else ""
    head = text.split("\n## ", 1)[0].rstrip("\n") + "\n" if text else ""
    sections = sections_of(text)
    sections[title] = "\n".join(lines)
    path.write_text(head + render_sections(sections))


#: The most ``warm_memory`` writes.
WARM_MEMORY_BYTES = 20 * 2**30


def warm_memory(directory: Path | None = None, limit: int | None = None) -> str:
    """Write a file as large as most of the memory available (at most ``limit``) to
    ``directory`` (the temporary dir, where the brokers' data dirs go), sync it, delete it,
    and say how long that took.

    On the cloud VM these figures come from, the first write into memory that the VM has
    given back costs about four times the kernel time of the next (20 GB: 52 s of system
    time, then 2.8 s for 4 GB), and a run that starts on such memory measures the VM, not
    the brokers (twice in benchmarks/results.md a run had to be thrown away for it). The
    write makes the memory the brokers will use the VM's again before anything is timed."""
    available = meminfo_bytes("MemAvailable") or 0
    chunk = bytes(1 << 20)
    limit = WARM_MEMORY_BYTES if limit is None else limit
    size = min(limit, available * 4 // 5) >> 20 << 20
    path = Path(directory or tempfile.gettempdir()) / f"benchmarks-warm-memory-{os.getpid()}"
    before, t0 = os.times(), time.monotonic()
    try:
        with open(path, "wb") as fill:
            for _ in range(size >> 20):
                fill.write(chunk)
            fill.flush()
            os.fsync(fill.fileno())
    except OSError as exc:  # a full disk: the run goes on, and says so
        return f"memory not warmed: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
    after = os.times()
    return (
        f"{size / 2**30:.1f} GiB written, synced and deleted first in "
        f"{time.monotonic() - t0:.0f} s ({after.system - before.system:.1f} s of system time)"
    )


def compile_sources() -> None:
    """Write the bytecode of wireserver's modules (``wireserver``, ``protocol``, ``storage``),
    as ``pip install`` does. A broker started from a checkout on a machine that sets
    ``PYTHONDONTWRITEBYTECODE`` (this one does) would otherwise compile every module again at
    each start: 140-180 ms of each start-up (``benchmarks.startup``: 631 ms median to the
    first Metadata answer without bytecode, 495 ms with it) that an installed broker does not
    pay. The environment variable stops the interpreter writing bytecode, not reading it."""
    import compileall

    import wireserver.protocol
    import wireserver.storage

    for package in (wireserver, wireserver.protocol, wireserver.storage):
        compileall.compile_dir(package.__path__[0], quiet=1)


@dataclass
class Run:
    """What every benchmark command records as it starts: CPU pinning (applied to this
    process, which counts as a client), the wall-clock start, a monotonic start, the load
    average and, when it warmed the machine's memory first, how that went."""

    pinning: Pinning
    started: datetime.datetime
    t0: float
    load: str
    warmed: str = ""

    @classmethod
    def begin(cls, pin: bool, warm: bool = False) -> Run:
        """``warm``: ``warm_memory`` first (before the start time and load are taken)."""
        pinning = choose_pinning(pin)
        if pinning.client is not None:
            os.sched_setaffinity(0, pinning.client)
        warmed = warm_memory() if warm else ""
        compile_sources()
        return cls(
            pinning,
            datetime.datetime.now().astimezone(),
            time.monotonic(),
            " ".join(Path("/proc/loadavg").read_text().split()[:3]),
            warmed,
        )


def add_warm_memory_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-warm-memory",
        action="store_true",
        help="do not write and delete most of the free memory's size first (warm_memory; "
        "--quick never does)",
    )


def run_pair(
    argv: list[str],
    prog: str,
    description: str,
    section: str,
    pair: tuple[str, str],
    ratio_title: str,
    columns: str,
    extra_args: Callable[[argparse.ArgumentParser], None] | None = None,
    choose_pair: Callable[[argparse.Namespace], tuple[str, str, str]] | None = None,
) -> int:
    """Two ``STARTERS`` targets (``pair``: base, ours) one after the other with the librdkafka
    workloads of this module, their table printed and written as ``section`` of the results
    file: the shape of ``benchmarks.reactors`` and ``benchmarks.metrics_cost``. ``columns``
    says what the two columns are; ``choose_pair`` may pick (base, ours, ratio title) from
    options ``extra_args`` adds."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--quick", action="store_true", help="the smaller sizes of --quick")
    parser.add_argument("--no-pin", action="store_true", help="do not pin broker and clients")
    parser.add_argument("--output", type=Path, default=RESULTS)
    if extra_args is not None:
        extra_args(parser)
    args = parser.parse_args(argv)
    base, ours = pair
    if choose_pair is not None:
        base, ours, ratio_title = choose_pair(args)
    sizes = QUICK if args.quick else DEFAULT
    run = Run.begin(not args.no_pin)
    pinning, started, t0, load = run.pinning, run.started, run.t0, run.load
    results = Results()

    def log(message: str) -> None:
        print(message, flush=True)

    log(f"{base} vs {ours}; {pinning.describe()}; load {load}")
    run_targets([base, ours], sizes, pinning, results, False, log)
    table = render_table(results, base=base, ours=ours, ratio_title=ratio_title)
    for line in table:
        log(line)
    command = f"python -m {prog.split()[-1]}" + ("" if not argv else " " + " ".join(argv))
    write_section(
        args.output,
        section,
        [
            f"Written by `{command}` on {started.isoformat(timespec='seconds')} "
            f"({(time.monotonic() - t0) / 60:.1f} min); replaced on every run. {columns}",
            "",
            f"- CPU pinning: {pinning.describe()}; load average at the start: {load}",
            *machine_lines()[:1],
            "",
            *table,
            *(["", "Failures:", "", *(f"- {e}" for e in results.errors)] if results.errors else []),
        ],
    )
    log(f"\nwritten to {args.output}")
    return 1 if results.errors and not results.rows else 0


def add_build_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--build",
        choices=BUILDS,
        default=BUILD,
        help="the wireserver build its brokers run: the installed sources, or the checkout "
        f"compiled with mypyc (default {BUILD})",
    )


def use_build(build: str) -> None:
    """Make ``build`` the brokers' build for this run, built first if it is the compiled one
    (about a minute), so that no workload's timing includes the build."""
    global BUILD
    BUILD = build
    if build == "compiled":
        from benchmarks.compiled import compiled_tree

        compiled_tree()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compare", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes: about 2 minutes")
    parser.add_argument("--no-pin", action="store_true", help="do not pin broker and clients")
    parser.add_argument(
        "--targets",
        default="kafka,wireserver",
        help=f"comma-separated subset of: {', '.join(STARTERS)}",
    )
    parser.add_argument(
        "--skip-java", action="store_true", help="skip Kafka's Java perf tools (librdkafka only)"
    )
    add_build_option(parser)
    add_warm_memory_option(parser)
    parser.add_argument(
        "--output",
        type=Path,
        default=RESULTS,
        help=f"results file (default {RESULTS.relative_to(REPO)})",
    )
    args = parser.parse_args(argv)
    use_build(args.build)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = set(targets) - set(STARTERS)
    if unknown:
        parser.error(f"unknown target(s): {', '.join(sorted(unknown))}")

    sizes = QUICK if args.quick else DEFAULT
    run = Run.begin(not args.no_pin, warm=not (args.quick or args.no_warm_memory))
    pinning, started, t0, load = run.pinning, run.started, run.t0, run.load

    def log(message: str) -> None:
        print(message, flush=True)

    if run.warmed:
        log(f"memory: {run.warmed}")

    log(
        f"wireserver vs Apache Kafka ({'quick' if args.quick else 'default'} sizes); "
        f"{pinning.describe()}; load average {load}"
    )
    results = Results()
    run_targets(targets, sizes, pinning, results, not args.skip_java, log)
    elapsed = time.monotonic() - t0
    table = render_table(results)
    log("")
    log(f"Results ({pinning.describe()}; other work on this machine makes figures noisy):")
    for line in table:
        log(line)
    command = "python -m benchmarks.compare" + ("" if not argv else " " + " ".join(argv))
    write_results(
        args.output,
        [command],
        started,
        elapsed,
        pinning,
        sizes,
        args.quick,
        table,
        results.errors,
        load,
        run.warmed,
    )
    log(f"\nwritten to {args.output} ({elapsed / 60:.1f} min)")
    return 1 if results.errors and not results.rows else 0


if __name__ == "__main__":
    sys.exit(main())
