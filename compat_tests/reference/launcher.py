"""Run a real Apache Kafka (KRaft) cluster, and Kafka's own CLI tools, from Maven jars.

No Kafka distribution tarball and no shell scripts are used: ``resolve.py``
puts the broker, the tools and their dependencies into one cached ``lib``
directory and everything here is ``java -cp '<lib>/*' <main class>``.

Cluster layout
--------------
``KafkaCluster(nodes=N)`` runs N JVMs on 127.0.0.1. Every node is a combined
``broker,controller`` (``process.roles=broker,controller``), and the controller
quorum is *all* N nodes, fixed by ``controller.quorum.voters`` (a static
quorum: ``kafka-storage format`` needs no ``--standalone`` or
``--initial-controllers``, and a killed node rejoins with the same identity).
N=1 is one combined node; N=3 tolerates the loss of any one node. Node ``i``
has ``node.id=i``, its own PLAINTEXT (client) port and CONTROLLER port, both
picked free up front by binding port 0, because the voters list has to name the
controller ports before any node starts.

``KafkaCluster(nodes=3, node_ids=[1, 2, 3], dedicated_controller=100, placements={...},
port=9092)`` is the other layout (the fault campaign's, ``chaos/kafka_cluster.py``): three
``process.roles=broker`` nodes and one ``process.roles=controller`` node, the quorum's only
voter, each placed (:class:`Placement`) on an address of its own, under a command prefix (a
network namespace) and with a log dir of its own.

Settings chosen for a test machine: internal topics are replicated
``min(3, N)`` ways with ``min.insync.replicas`` ``min(2, N)``, so N=1 works;
``group.initial.rebalance.delay.ms=0``; ``auto.create.topics.enable`` and
``num.partitions`` are parameters; ``broker_props`` adds or overrides anything.

Files: ``<workdir>/node-<i>/`` holds ``server.properties``, ``data/`` (the log
dir), ``server.log`` / ``state-change.log`` (log4j2, see log4j2-broker.xml) and
``console.log`` (the JVM's stdout and stderr). The work dir is a fresh temporary
directory unless given, and is deleted by ``stop()`` unless ``keep_workdir``.

Typical use::

    with KafkaCluster(nodes=1) as kafka:
        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
        run_tool("kafka-topics", ["--bootstrap-server", kafka.bootstrap_servers,
                                  "--list"], check=True)
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import cds
from .resolve import (
    KAFKA_VERSION,
    LOG4J2_BROKER,
    LOG4J2_TOOLS,
    ResolutionError,
    classpath,
    resolve,
    which_java,
)

log = logging.getLogger(__name__)

HOST = "127.0.0.1"

#: CLI tool name (as in Kafka's bin/*.sh, ".sh" optional) -> 4.x main class.
#: All are in kafka-tools-<v>.jar except the three ``kafka.*`` ones, which are in
#: kafka_2.13-<v>.jar. Checked against the 4.1.1 jars' class listings; later releases
#: move some to kafka-tools (:data:`MOVED_TOOLS`), and :data:`TOOLS` is this table for
#: :data:`KAFKA_VERSION`.
TOOLS_4_1: dict[str, str] = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-share-consumer-perf-test": "org.apache.kafka.tools.ShareConsumerPerformance",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-verifiable-share-consumer": "org.apache.kafka.tools.VerifiableShareConsumer",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-replica-verification": "org.apache.kafka.tools.ReplicaVerificationTool",
    "kafka-streams-application-reset": "org.apache.kafka.tools.StreamsResetter",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-jmx": "org.apache.kafka.tools.JmxTool",
    "kafka-dump-log": "kafka.tools.DumpLogSegments",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-server-start": "kafka.Kafka",
}

#: Tools whose main class moved to kafka-tools-<v>.jar: name -> (first release, class).
#: Checked against the 4.2.0, 4.3.0 and 4.4.0 jars.
MOVED_TOOLS: dict[str, tuple[tuple[int, int], str]] = {
    "kafka-dump-log": ((4, 3), "org.apache.kafka.tools.DumpLogSegments"),
    "kafka-configs": ((4, 4), "org.apache.kafka.tools.ConfigCommand"),
}


def _release(version: str) -> tuple[int, ...]:
    """``"4.4.0"`` -> ``(4, 4)``."""
    return tuple(int(part) for part in version.split(".")[:2] if part.isdigit())


def tools_for(version: str) -> dict[str, str]:
    """The CLI tool -> main class table of Kafka ``version`` (``"4.4.0"``)."""
    release = _release(version)
    tools = dict(TOOLS_4_1)
    for name, (since, main_class) in MOVED_TOOLS.items():
        if release >= since:
            tools[name] = main_class
    return tools


TOOLS: dict[str, str] = tools_for(KAFKA_VERSION)

#: Options KIP-1147 renamed in 4.2 (the old names still work but print "Option ... is
#: deprecated" into the tool's standard output): tool -> {old option: new option}. Callers
#: write the old names, which every 4.x release accepts; :func:`tool_command` passes the new
#: ones to a release that has them. Checked against the 4.1.1 and 4.4.0 jars' --help.
RENAMED_OPTIONS: dict[str, dict[str, str]] = {
    "kafka-console-producer": {
        "--producer-property": "--command-property",
        "--producer.config": "--command-config",
        "--property": "--reader-property",
    },
    "kafka-console-consumer": {
        "--consumer-property": "--command-property",
        "--consumer.config": "--command-config",
        "--property": "--formatter-property",
    },
    "kafka-verifiable-producer": {"--producer.config": "--command-config"},
    "kafka-verifiable-consumer": {"--consumer.config": "--command-config"},
    "kafka-producer-perf-test": {
        "--producer-props": "--command-property",
        "--producer.config": "--command-config",
    },
    "kafka-consumer-perf-test": {
        "--consumer.config": "--command-config",
        "--messages": "--num-records",
    },
}
RENAMED_SINCE = (4, 2)


def current_options(tool: str, args: Sequence[str], version: str = KAFKA_VERSION) -> list[str]:
    """``args`` with the options :data:`RENAMED_OPTIONS` lists under their names in
    ``version``."""
    renamed = RENAMED_OPTIONS.get(tool, {}) if _release(version) >= RENAMED_SINCE else {}
    return [renamed.get(arg, arg) for arg in map(str, args)]


#: Tools that run long or measure throughput: they get the server JIT and heap.
_LONG_RUNNING = {
    "kafka-producer-perf-test",
    "kafka-consumer-perf-test",
    "kafka-share-consumer-perf-test",
    "kafka-verifiable-producer",
    "kafka-verifiable-consumer",
    "kafka-verifiable-share-consumer",
    "kafka-e2e-latency",
    "kafka-server-start",
}

BROKER_JVM_OPTS = (
    "-Xmx512m",
    "-Xms256m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
#: Short admin tools, as Kafka's bin scripts do (-Xmx256M), compiled by C1 only: a tool that
#: runs for a second or two never profits from C2, whose compiler threads cost it about a third
#: of its CPU (kafka-topics --list: 3.1 s -> 2.1 s here). They also start from a class-data
#: sharing archive of their own (``cds.py``).
TOOL_JVM_OPTS_SHORT = (
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
)
TOOL_JVM_OPTS_LONG = ("-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true")
#: A dedicated KRaft controller holds the metadata log alone: half a broker's heap.
CONTROLLER_JVM_OPTS = ("-Xmx256m", "-Xms128m", *BROKER_JVM_OPTS[2:])


class KafkaStartError(RuntimeError):
    """A reference broker did not come up; the message carries its log tail."""


# --------------------------------------------------------------------------- helpers


def free_ports(count: int, host: str = HOST) -> list[int]:
    """``count`` distinct free TCP ports (bound to port 0 together, then released).

    Another process may grab one before Kafka binds it; that race is accepted.
    """
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding.

    Like Kafka's own ``Uuid.randomUuid()``, never one starting with ``-``: the
    storage tool's argument parser would take it for an option
    (``--cluster-id/-t: expected one argument``).
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def _pdeathsig_preexec():
    """In the child: ask Linux to SIGKILL it when the parent thread dies.

    Keeps JVMs from outliving a crashed or killed test run. Only used when
    the starting thread is the main thread (the signal fires on thread exit).
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux/glibc: atexit cleanup still applies
        pass


def _preexec():
    if threading.current_thread() is threading.main_thread() and os.name == "posix":
        return _pdeathsig_preexec
    return None


def _tail(path: Path, lines: int = 60) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return f"<no {path.name}>"
    return "\n".join(data.splitlines()[-lines:])


def _java() -> str:
    java = which_java()
    if java is None:
        raise ResolutionError("no 'java' on PATH (and JAVA_HOME unset): cannot run Kafka")
    return java


def tool_command(
    tool: str,
    args: Sequence[str] = (),
    *,
    lib: Path | None = None,
    jvm_opts: Sequence[str] | None = None,
    log4j2: Path | str | None = None,
) -> list[str]:
    """The ``java ...`` argv that runs Kafka CLI ``tool`` with ``args``; ``log4j2`` is a
    logging configuration of the caller's instead of the tools' (warnings to stderr).

    ``tool`` is a name from :data:`TOOLS` (``kafka-topics`` or
    ``kafka-topics.sh``) or a fully qualified main class name.
    """
    name = tool[:-3] if tool.endswith(".sh") else tool
    if name in TOOLS:
        main_class = TOOLS[name]
    elif "." in name and not name.startswith("kafka-"):
        main_class = name
    else:
        raise KeyError(f"unknown Kafka tool {tool!r}; known: {', '.join(sorted(TOOLS))}")
    lib = lib or resolve()
    java, path = _java(), classpath(lib)
    sharing: list[str] = []
    if jvm_opts is None and name not in _LONG_RUNNING:
        jvm_opts = TOOL_JVM_OPTS_SHORT
        sharing = cds.options(lib.parent / "cds", name, java, jvm_opts, path)
    elif jvm_opts is None:
        jvm_opts = TOOL_JVM_OPTS_LONG
    return [
        java,
        *jvm_opts,
        *sharing,
        f"-Dlog4j2.configurationFile={log4j2 or LOG4J2_TOOLS}",
        "-cp",
        path,
        main_class,
        *current_options(name, args),
    ]


#: Tools whose --bootstrap-server must come before their sub-command (argparse sub-parsers).
_BOOTSTRAP_FIRST = {"kafka-metadata-quorum", "kafka-transactions", "kafka-features"}


def _with_bootstrap(tool: str, args: Sequence[str], bootstrap: str | None) -> list[str]:
    args = [str(a) for a in args]
    if not bootstrap:
        return args
    name = tool[:-3] if tool.endswith(".sh") else tool
    if name in _BOOTSTRAP_FIRST:
        return ["--bootstrap-server", bootstrap, *args]
    if name == "kafka-producer-perf-test":  # 4.1 has no --bootstrap-server flag
        prop = f"bootstrap.servers={bootstrap}"
        if "--producer-props" in args:
            i = args.index("--producer-props") + 1
            return [*args[:i], prop, *args[i:]]
        return [*args, "--producer-props", prop]
    return [*args, "--bootstrap-server", bootstrap]


def run_tool(
    tool: str,
    args: Sequence[str] = (),
    *,
    input: str | bytes | None = None,
    timeout: float | None = 120.0,
    check: bool = False,
    bootstrap: str | None = None,
    env: Mapping[str, str] | None = None,
    jvm_opts: Sequence[str] | None = None,
    text: bool = True,
    cwd: str | os.PathLike | None = None,
) -> subprocess.CompletedProcess:
    """Run a Kafka CLI tool to completion and capture stdout/stderr.

    ``bootstrap`` (optional) adds ``--bootstrap-server <bootstrap>``, which
    the 4.x client tools accept (after the other arguments; before them for
    kafka-metadata-quorum; as ``--producer-props bootstrap.servers=...`` for
    kafka-producer-perf-test); the address can be any broker, wireserver's too. ``input`` is fed to stdin (e.g. console-producer lines);
    otherwise stdin is /dev/null. ``check=True`` raises CalledProcessError.
    """
    cmd = tool_command(tool, _with_bootstrap(tool, args, bootstrap), jvm_opts=jvm_opts)
    if isinstance(input, str) and not text:
        input = input.encode()
    elif isinstance(input, bytes) and text:
        input = input.decode()
    return subprocess.run(
        cmd,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=text,
        timeout=timeout,
        check=check,
        env=None if env is None else {**os.environ, **env},
        cwd=cwd,
    )


def popen_tool(
    tool: str,
    args: Sequence[str] = (),
    *,
    bootstrap: str | None = None,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    env: Mapping[str, str] | None = None,
    jvm_opts: Sequence[str] | None = None,
    text: bool = True,
    cwd: str | os.PathLike | None = None,
) -> subprocess.Popen:
    """Start a long-running Kafka CLI tool (perf tests, verifiable clients, a
    console consumer without --max-messages). The caller owns the process:
    terminate() / wait() it, or use it as a context manager."""
    cmd = tool_command(tool, _with_bootstrap(tool, args, bootstrap), jvm_opts=jvm_opts)
    return subprocess.Popen(
        cmd,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        text=text,
        env=None if env is None else {**os.environ, **env},
        cwd=cwd,
        preexec_fn=_preexec(),
    )


def broker_ids(bootstrap: str, timeout_ms: int = 5000) -> set[int] | None:
    """Ids of the unfenced brokers in a Metadata (DescribeCluster) answer from
    ``bootstrap``, or None when it does not answer (yet)."""
    from kafka.admin import KafkaAdminClient  # imported late: optional for tool-only use

    admin = None
    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            client_id="wireserver-reference-probe",
            request_timeout_ms=timeout_ms,
        )
        brokers = admin.describe_cluster().get("brokers") or []
        return {
            b.get("broker_id", b.get("node_id")) for b in brokers if not b.get("is_fenced", False)
        }
    except Exception as exc:  # not ready yet: any client error just means "retry"
        log.debug("probe %s: %r", bootstrap, exc)
        return None
    finally:
        if admin is not None:
            with contextlib.suppress(Exception):
                admin.close()


def wait_for_brokers(bootstrap: str, count: int = 1, timeout: float = 90.0) -> set[int]:
    """Poll ``bootstrap`` until its Metadata lists at least ``count`` brokers."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = broker_ids(bootstrap)
        if last is not None and len(last) >= count:
            return last
        if time.monotonic() > deadline:
            raise KafkaStartError(
                f"{bootstrap} did not list {count} broker(s) in Metadata within "
                f"{timeout:.0f}s (last answer: {sorted(last) if last is not None else 'none'})"
            )
        time.sleep(0.25)


# --------------------------------------------------------------------------- cluster


@dataclass(frozen=True)
class Placement:
    """Where one node runs, when not on 127.0.0.1 beside the others: the address it listens
    on, a command its JVM runs under (``["ip", "netns", "exec", NS]``: a network namespace of
    its own), and its log dir (a small filesystem of its own, say)."""

    host: str = HOST
    prefix: tuple[str, ...] = ()
    log_dir: str | None = None


@dataclass
class KafkaNode:
    node_id: int
    port: int
    controller_port: int
    dir: Path
    process: subprocess.Popen | None = None
    console: object | None = field(default=None, repr=False)
    #: extra listener name -> its port (see ``KafkaCluster(extra_listeners=...)``)
    listener_ports: dict[str, int] = field(default_factory=dict)
    placement: Placement = field(default_factory=Placement)
    #: ``process.roles``: a node of a cluster with a dedicated controller is one or the other
    roles: str = "broker,controller"

    @property
    def host(self) -> str:
        return self.placement.host

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def listener_address(self, name: str) -> str:
        return f"{self.host}:{self.listener_ports[name]}"

    @property
    def properties_file(self) -> Path:
        return self.dir / "server.properties"

    @property
    def data_dir(self) -> Path:
        log_dir = self.placement.log_dir
        return Path(log_dir) if log_dir else self.dir / "data"

    @property
    def server_log(self) -> Path:
        return self.dir / "server.log"

    @property
    def console_log(self) -> Path:
        return self.dir / "console.log"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


_LIVE: weakref.WeakSet[KafkaCluster] = weakref.WeakSet()


@atexit.register
def _stop_all_at_exit() -> None:
    for cluster in list(_LIVE):
        with contextlib.suppress(Exception):
            cluster.stop(timeout=5)


class KafkaCluster:
    """A KRaft cluster of ``nodes`` combined broker+controller JVMs on 127.0.0.1, or of
    ``nodes`` brokers and one dedicated controller, placed where ``placements`` say."""

    def __init__(
        self,
        nodes: int = 1,
        *,
        auto_create_topics: bool = True,
        num_partitions: int = 1,
        broker_props: Mapping[str, object] | None = None,
        workdir: str | os.PathLike | None = None,
        keep_workdir: bool = False,
        startup_timeout: float = 90.0,
        jvm_opts: Sequence[str] = BROKER_JVM_OPTS,
        version: str = KAFKA_VERSION,
        extra_listeners: Mapping[str, str] | None = None,
        node_ids: Sequence[int] | None = None,
        dedicated_controller: int | None = None,
        placements: Mapping[int, Placement] | None = None,
        port: int | None = None,
        controller_jvm_opts: Sequence[str] = CONTROLLER_JVM_OPTS,
    ):
        """``node_ids`` are the nodes' ids (0 .. nodes-1 unless given). With
        ``dedicated_controller`` (an id), one more node runs ``process.roles=controller`` (with
        ``controller_jvm_opts``) and is the quorum's only voter, and the ``nodes`` are brokers
        alone: the controller can then fail apart from them. ``placements`` maps a node id to
        where it runs; ``port`` fixes every node's client port (its controller port is the next
        one), for nodes that each have an address of their own.

        ``extra_listeners`` maps more client listener names to their security protocol
        (``{"SASL_PLAINTEXT": "SASL_PLAINTEXT"}``); each node gets a free port for each, and
        ``broker_props`` carries their settings (``listener.name.<name>.*``). The PLAINTEXT
        listener stays: readiness probes, the inter-broker link and ``bootstrap_servers`` use
        it, so a secured cluster needs ``User:ANONYMOUS`` among its ``super.users``."""
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        self.size = nodes
        self.auto_create_topics = auto_create_topics
        self.num_partitions = num_partitions
        self.broker_props = dict(broker_props or {})
        self.keep_workdir = keep_workdir
        self.startup_timeout = startup_timeout
        self.jvm_opts = tuple(jvm_opts)
        self.version = version
        self.cluster_id = new_cluster_id()
        self._own_workdir = workdir is None
        self.workdir = (
            Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="wireserver-kafka-"))
        )
        self.lib: Path | None = None
        self.extra_listeners = dict(extra_listeners or {})
        ids = list(node_ids if node_ids is not None else range(nodes))
        if len(ids) != nodes:
            raise ValueError(f"{nodes} nodes but {len(ids)} node ids")
        roles = {i: "broker,controller" if dedicated_controller is None else "broker" for i in ids}
        if dedicated_controller is not None:
            roles[dedicated_controller] = "controller"
        self.controller_jvm_opts = tuple(controller_jvm_opts)
        per_node = 2 + len(self.extra_listeners)
        if port is None:
            ports = free_ports(per_node * len(roles))
        else:
            ports = [port + k for _ in roles for k in range(per_node)]
        self.nodes = []
        for index, (node_id, role) in enumerate(roles.items()):
            mine = ports[per_node * index : per_node * (index + 1)]
            self.nodes.append(
                KafkaNode(
                    node_id,
                    mine[0],
                    mine[1],
                    self.workdir / f"node-{node_id}",
                    listener_ports=dict(zip(self.extra_listeners, mine[2:])),
                    placement=(placements or {}).get(node_id, Placement()),
                    roles=role,
                )
            )
        self.startup_seconds: float | None = None
        self._started = False

    # ------------------------------------------------------------------ properties
    @property
    def brokers(self) -> list[KafkaNode]:
        return [n for n in self.nodes if n.is_broker]

    def index(self, node_id: int) -> int:
        """The position in :attr:`nodes` (what :meth:`kill` and the like take) of a node id."""
        return next(i for i, n in enumerate(self.nodes) if n.node_id == node_id)

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated ``host:port`` of every broker's client listener."""
        return ",".join(n.address for n in self.brokers)

    def node_bootstrap(self, node: int) -> str:
        return self.nodes[node].address

    def listener_bootstrap(self, name: str) -> str:
        """Comma-separated ``host:port`` of every node's extra listener ``name``."""
        return ",".join(n.listener_address(name) for n in self.brokers)

    @property
    def quorum_voters(self) -> str:
        voters = [n for n in self.nodes if "controller" in n.roles]
        return ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in voters)

    def server_properties(self, node: KafkaNode) -> dict[str, str]:
        n = self.size
        extra = "".join(f",{name}://{node.listener_address(name)}" for name in self.extra_listeners)
        protocols = "".join(
            f",{name}:{protocol}" for name, protocol in self.extra_listeners.items()
        )
        client = f"PLAINTEXT://{node.address}{extra}"
        controller = f"CONTROLLER://{node.host}:{node.controller_port}"
        listeners = {
            "broker,controller": f"{client},{controller}",
            "broker": client,
            "controller": controller,
        }[node.roles]
        props: dict[str, object] = {
            "process.roles": node.roles,
            "node.id": node.node_id,
            "controller.quorum.voters": self.quorum_voters,
            "listeners": listeners,
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT{protocols}",
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(node.data_dir),
            "num.partitions": self.num_partitions,
            "auto.create.topics.enable": str(self.auto_create_topics).lower(),
            "offsets.topic.replication.factor": min(3, n),
            "transaction.state.log.replication.factor": min(3, n),
            "transaction.state.log.min.isr": min(2, n),
            "share.coordinator.state.topic.replication.factor": min(3, n),
            "share.coordinator.state.topic.min.isr": min(2, n),
            "group.initial.rebalance.delay.ms": 0,
            "num.network.threads": 2,
            "num.io.threads": 4,
            "num.recovery.threads.per.data.dir": 1,
            "log.retention.check.interval.ms": 300000,
        }
        if node.is_broker:
            props["advertised.listeners"] = client
            props["inter.broker.listener.name"] = "PLAINTEXT"
        props.update(self.broker_props)
        return {k: str(v) for k, v in props.items()}

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> KafkaCluster:
        """Resolve jars, write configs, format storage, start every node, and
        wait until all of them are in the cluster's Metadata."""
        if self._started:
            return self
        started = time.monotonic()
        self.lib = resolve(self.version)
        _LIVE.add(self)
        self._started = True
        try:
            for node in self.nodes:
                node.dir.mkdir(parents=True, exist_ok=True)
                self._write_properties(node)
            self._format_all()
            for node in self.nodes:
                self._spawn(node)
            self.wait_ready(timeout=self.startup_timeout)
        except BaseException:
            self.stop(timeout=5, remove_workdir=False)
            raise
        self.startup_seconds = time.monotonic() - started
        log.info(
            "Kafka %s x%d ready at %s in %.1fs",
            self.version,
            self.size,
            self.bootstrap_servers,
            self.startup_seconds,
        )
        return self

    def _write_properties(self, node: KafkaNode) -> None:
        lines = [f"# written by compat_tests/reference/launcher.py (Kafka {self.version})"]
        lines += [f"{k}={v}" for k, v in self.server_properties(node).items()]
        node.properties_file.write_text("\n".join(lines) + "\n")

    def _format_all(self) -> None:
        """``kafka-storage format`` each node (in parallel: one JVM start each)."""
        procs = []
        for node in self.nodes:
            cmd = tool_command(
                "kafka-storage",
                [
                    "format",
                    "--config",
                    str(node.properties_file),
                    "--cluster-id",
                    self.cluster_id,
                    "--ignore-formatted",
                ],
                lib=self.lib,
            )
            procs.append(
                (
                    node,
                    subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                    ),
                )
            )
        failures = []
        for node, proc in procs:
            out, _ = proc.communicate(timeout=120)
            (node.dir / "format.log").write_text(out)
            if proc.returncode != 0:
                failures.append(f"node {node.node_id}: exit {proc.returncode}\n{out}")
        if failures:
            raise KafkaStartError("kafka-storage format failed:\n" + "\n".join(failures))

    def _spawn(self, node: KafkaNode) -> None:
        logs = node.dir
        cmd = [
            *node.placement.prefix,
            _java(),
            *(self.jvm_opts if node.is_broker else self.controller_jvm_opts),
            f"-Dlog4j2.configurationFile={LOG4J2_BROKER}",
            f"-Dkafka.logs.dir={logs}",
            "-cp",
            classpath(self.lib),
            "kafka.Kafka",
            str(node.properties_file),
        ]
        console = open(node.console_log, "ab")
        node.console = console
        node.process = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            cwd=str(node.dir),
            preexec_fn=_preexec(),
        )

    # ------------------------------------------------------------------ readiness
    def _probe(self, node: KafkaNode, expect: Iterable[int]) -> bool:
        """True when ``node`` accepts TCP and its Metadata lists every id in ``expect``."""
        with contextlib.suppress(OSError):
            socket.create_connection((node.host, node.port), timeout=1).close()
            return self._metadata_has(node, set(expect))
        return False

    def _metadata_has(self, node: KafkaNode, expect: set[int]) -> bool:
        ids = broker_ids(node.address)
        return ids is not None and expect <= ids

    def wait_ready(self, timeout: float | None = None, nodes: Sequence[int] | None = None) -> None:
        """Block until each broker in ``nodes`` (positions; default: all) answers a
        Metadata request listing every running broker (a dedicated controller has nothing to
        ask: it only has to be running)."""
        timeout = self.startup_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        targets = [self.nodes[i] for i in (nodes if nodes is not None else range(len(self.nodes)))]
        pending = list(targets)
        while pending:
            for node in list(pending):
                if not node.running():
                    raise KafkaStartError(
                        self._failure(
                            node,
                            f"Kafka node {node.node_id} exited with code "
                            f"{node.process.returncode if node.process else None} during startup",
                        )
                    )
                expect = [n.node_id for n in self.brokers if n.running()]
                if not node.is_broker or self._probe(node, expect):
                    pending.remove(node)
            if not pending:
                return
            if time.monotonic() > deadline:
                node = pending[0]
                raise KafkaStartError(
                    self._failure(
                        node,
                        f"Kafka node {node.node_id} ({node.address}) did not answer Metadata "
                        f"with all brokers within {timeout:.0f}s",
                    )
                )
            time.sleep(0.25)

    def _failure(self, node: KafkaNode, message: str) -> str:
        return (
            f"{message}\n--- {node.server_log} (tail) ---\n{_tail(node.server_log)}"
            f"\n--- {node.console_log} (tail) ---\n{_tail(node.console_log, 30)}"
        )

    def log_tail(self, node: int = 0, lines: int = 60) -> str:
        return _tail(self.nodes[node].server_log, lines)

    # ------------------------------------------------------------------ faults
    def kill(self, node: int) -> None:
        """SIGKILL one node (no clean shutdown): for fault tests."""
        n = self.nodes[node]
        if n.running():
            n.process.kill()
            n.process.wait(timeout=30)
        self._close_console(n)

    def stop_node(self, node: int, timeout: float = 30.0) -> None:
        """SIGTERM one node (Kafka's clean shutdown), SIGKILL after ``timeout``."""
        n = self.nodes[node]
        self._terminate([n], timeout)

    def start_node(self, node: int, wait: bool = True, timeout: float | None = None) -> None:
        """Start a stopped or killed node again with its old config and data."""
        n = self.nodes[node]
        if n.running():
            return
        self._close_console(n)  # of a process that exited by itself
        self._spawn(n)
        if wait:
            self.wait_ready(timeout=timeout, nodes=[node])

    def wait_listening(self, node: int, timeout: float | None = None) -> bool:
        """Block until one node accepts TCP connections (a broker on its client port, a
        dedicated controller on its controller port): its process is up, whether or not the
        cluster has taken it back yet. False when it exits first or ``timeout`` passes."""
        n = self.nodes[node]
        port = n.port if n.is_broker else n.controller_port
        deadline = time.monotonic() + (self.startup_timeout if timeout is None else timeout)
        while n.running() and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                socket.create_connection((n.host, port), timeout=1).close()
                return True
            time.sleep(0.2)
        return False

    def restart(self, node: int, timeout: float | None = None, graceful: bool = True) -> None:
        """Stop (SIGTERM, or SIGKILL when ``graceful`` is false) and start one node,
        waiting until it is back in the cluster's Metadata."""
        if graceful:
            self.stop_node(node)
        else:
            self.kill(node)
        self.start_node(node, wait=True, timeout=timeout)

    def running_nodes(self) -> list[int]:
        return [n.node_id for n in self.nodes if n.running()]

    # ------------------------------------------------------------------ stop
    def _terminate(self, nodes: list[KafkaNode], timeout: float) -> None:
        for n in nodes:
            if n.running():
                with contextlib.suppress(ProcessLookupError):
                    n.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for n in nodes:
            if n.process is None:
                continue
            try:
                n.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("Kafka node %d ignored SIGTERM for %.0fs; killing", n.node_id, timeout)
                n.process.kill()
                n.process.wait(timeout=30)
            self._close_console(n)

    @staticmethod
    def _close_console(n: KafkaNode) -> None:
        if n.console is not None:
            with contextlib.suppress(Exception):
                n.console.close()
            n.console = None

    def stop(self, timeout: float = 20.0, remove_workdir: bool | None = None) -> None:
        """SIGTERM every node at once, SIGKILL whatever is left after ``timeout``
        seconds, then delete the work dir (unless kept). Safe to call twice."""
        self._terminate(self.nodes, timeout)
        _LIVE.discard(self)
        self._started = False
        if remove_workdir is None:
            remove_workdir = self._own_workdir and not self.keep_workdir
        if remove_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
