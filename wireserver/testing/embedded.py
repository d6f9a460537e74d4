"""``EmbeddedBroker``: a wireserver broker for tests, in this process (``thread`` mode) or as
its own process (``subprocess`` mode), and ``ExternalBroker``, one that something else runs.
See the package docstring (``wireserver.testing``) for the modes and defaults."""

from __future__ import annotations

import atexit
import logging
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from wireserver.testing.wire import KafkaWire

if TYPE_CHECKING:
    from wireserver.testing.controls import Controls

log = logging.getLogger(__name__)

TEST_DEFAULTS: dict[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:0",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    # The test controls (``EmbeddedBroker.controls``, ``wireserver.testing.controls``).
    "controls.enable": "true",
}

READY_RE = re.compile(
    r"^wireserver ready: node (?P<node>-?\d+) cluster (?P<cluster>\S+) "
    r"listening on (?P<endpoints>.+)$"
)
#: The lines ``wireserver serve`` prints before the ready line, one per operations listener.
OPS_RE = re.compile(r"^wireserver ops: (?P<url>\S+)$")
_ENDPOINT_RE = re.compile(
    r"^(?P<name>[^:/\s]+)://(?:\[(?P<v6>[^\]]*)\]|(?P<host>[^:]*)):"
    r"(?P<port>\d+)$"
)
MODES = ("thread", "subprocess")
#: A RAM-backed filesystem for brokers' temporary dirs, used while it has ``SHM_MIN_FREE``.
SHM_DIR = "/dev/shm"
SHM_MIN_FREE = 1 << 30


def temp_parent() -> str | None:
    """Where the pytest fixtures' brokers keep their temporary dirs (``EmbeddedBroker``'s
    ``tmp_root``): ``SHM_DIR`` when it is there with room and ``TMPDIR`` does not name another
    place, else the system's temporary directory (None). Other brokers (the project's own
    tests, benchmarks beside Kafka) stay on the disk.

    The broker fsyncs a checkpoint file (and its directory) at start, for every partition
    created, on every topic deletion and at shutdown, as Kafka does: a test that starts a
    broker, creates and deletes a topic and closes it makes about 40 fsyncs, which on a disk
    are most of its cost. On tmpfs an fsync returns at once, and nothing reaches a disk for
    data that ``close()`` removes anyway."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        room = os.statvfs(SHM_DIR)
    except OSError:
        return None
    if room.f_bavail * room.f_frsize < SHM_MIN_FREE or not os.access(SHM_DIR, os.W_OK):
        return None
    return SHM_DIR


class BrokerStartError(RuntimeError):
    """The broker did not become ready (bad config, port in use, crash, timeout)."""


def parse_endpoints(text: str) -> list[tuple[str, str, int]]:
    """``"A://h:1,B://[::1]:2"`` (comma or space separated) → ``[(name, host, port), ...]``."""
    endpoints = []
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        match = _ENDPOINT_RE.match(item)
        if match is None:
            raise ValueError(f"not a listener: {item!r}")
        host = match.group("v6") if match.group("v6") is not None else match.group("host")
        endpoints.append((match.group("name").upper(), host, int(match.group("port"))))
    return endpoints


def _format_endpoint(name: str, host: str, port: int) -> str:
    return f"{name}://[{host}]:{port}" if ":" in host else f"{name}://{host}:{port}"


class _AdminMixin:
    """Topic chores over the wire; needs ``bootstrap_servers``."""

    bootstrap_servers: str

    def wire(self, timeout: float = 10.0) -> KafkaWire:
        """A new raw connection to the broker (close it, or use it as a context manager).
        On a secured embedded broker it authenticates as the broker's admin (a super user)."""
        return KafkaWire(self.bootstrap_servers, timeout=timeout, **self._wire_security())

    def _wire_security(self) -> dict[str, Any]:
        return {}

    def topics(self) -> list[str]:
        """Names of the non-internal topics."""
        with self.wire() as wire:
            return wire.topics()

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: Mapping[str, Any] | None = None,
    ) -> None:
        """Create a topic with CreateTopics (raises ``KafkaWireError`` if the broker refuses)."""
        with self.wire() as wire:
            wire.create_topic(name, partitions, replication_factor, configs)

    def delete_all_topics(self, timeout: float = 30.0) -> list[str]:
        """Delete every non-internal topic with DeleteTopics and wait until Metadata no longer
        lists them. Internal topics (``__consumer_offsets`` and the like) stay. Returns the
        names deleted."""
        deadline = time.monotonic() + timeout
        with self.wire() as wire:
            names = wire.topics()
            if not names:
                return []
            left = names
            while True:
                wire.delete_topics(left, timeout_ms=int(timeout * 1000))
                # Gone, unless a client still running auto-created one again meanwhile.
                left = sorted(set(wire.topics()) & set(names))
                if not left:
                    return names
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"topics still there after DeleteTopics: {left} (a "
                        "client still running may be re-creating them)"
                    )
                time.sleep(0.05)


class ExternalBroker(_AdminMixin):
    """A broker something else runs (``--kafka-bootstrap``): only the chores."""

    mode = "external"

    def __init__(self, bootstrap_servers: str):
        self.bootstrap_servers = bootstrap_servers

    def close(self) -> None:
        pass


# ------------------------------------------------------------------------------------------
# The process's reactor thread (thread mode)


def _new_reactor() -> Any:
    """A reactor instance of our own, not installed as ``twisted.internet.reactor``."""
    try:
        from twisted.internet.epollreactor import EPollReactor

        return EPollReactor()
    except ImportError:  # not Linux
        try:
            from twisted.internet.pollreactor import PollReactor

            return PollReactor()
        except ImportError:
            from twisted.internet.selectreactor import SelectReactor

            return SelectReactor()


class ReactorThread:
    """One reactor running in a daemon thread for the whole process. ``call`` runs a function
    on it and waits for its result (following a Deferred), with a timeout."""

    _instance: ReactorThread | None = None
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> ReactorThread:
        with cls._lock:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            return cls._instance

    def __init__(self) -> None:
        self.reactor = _new_reactor()
        # Don't claim the process's "I/O thread" (twisted.python.threadable): a test may run
        # the global reactor in its main thread.
        self.reactor._registerAsIOThread = False
        running = threading.Event()
        self.reactor.callWhenRunning(running.set)
        self.thread = threading.Thread(target=self._run, name="wireserver-reactor", daemon=True)
        self.thread.start()
        if not running.wait(10):
            raise BrokerStartError("the wireserver reactor thread did not start")

    def _run(self) -> None:
        self.reactor.run(installSignalHandlers=False)

    def call(self, func: Callable[..., Any], *args: Any, timeout: float = 30.0) -> Any:
        from twisted.internet import defer

        results: queue.SimpleQueue = queue.SimpleQueue()

        def run() -> None:
            d = defer.maybeDeferred(func, *args)
            d.addCallbacks(
                lambda value: results.put((True, value)),
                lambda failure: results.put((False, failure)),
            )

        self.reactor.callFromThread(run)
        try:
            ok, value = results.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(
                f"{getattr(func, '__qualname__', func)} did not finish in "
                f"{timeout} s on the reactor thread"
            ) from None
        if not ok:
            value.raiseException()
        return value

    def shutdown(self) -> None:
        if self.thread.is_alive():
            self.reactor.callFromThread(self.reactor.stop)
            self.thread.join(10)


# ------------------------------------------------------------------------------------------
# EmbeddedBroker


_LIVE: weakref.WeakSet[EmbeddedBroker] = weakref.WeakSet()


@atexit.register
def _at_exit() -> None:
    """Close brokers nobody closed (a subprocess would outlive us), then stop the reactor."""
    for broker in list(_LIVE):
        try:
            broker.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass
    if ReactorThread._instance is not None:
        ReactorThread._instance.shutdown()


class EmbeddedBroker(_AdminMixin):
    """A wireserver broker for tests. See the module docstring.

    Attributes once started: ``bootstrap_servers`` (``"127.0.0.1:PORT"``), ``host``, ``port``,
    ``cluster_id``, ``data_dir``; thread mode: ``broker`` (the ``wireserver.broker.Broker``);
    subprocess mode: ``pid``, ``process``, ``log_path`` and ``log_text()``. A subprocess broker
    can run on another event loop: ``reactor="asyncio"`` or ``"uvloop"`` (``serve --reactor``).
    """

    def __init__(
        self,
        mode: str = "thread",
        *,
        overrides: Mapping[str, Any] | None = None,
        data_dir: str | os.PathLike | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        startup_timeout: float = 30.0,
        log_level: str | Iterable[str] = "INFO",
        python: str | None = None,
        sasl: str | None = None,
        users: Mapping[str, str] | None = None,
        tls: bool = False,
        client_auth: str = "none",
        authorizer: bool = False,
        super_users: Iterable[str] = (),
        reactor: str = "default",
        command_prefix: Iterable[str] = (),
        tmp_root: str | None = None,
    ):
        """``command_prefix`` goes before a subprocess broker's command: the fault campaign
        (``chaos/``) runs brokers in network namespaces with ``["ip", "netns", "exec", NAME]``
        (which execs, so ``pid`` is still the broker's own). ``tmp_root`` is where the
        broker's temporary dir goes (the system's temporary directory by default; the pytest
        fixtures give ``temp_parent()``, tmpfs)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if reactor != "default" and mode != "subprocess":
            raise ValueError("only a subprocess broker can choose its reactor (serve --reactor)")
        self.mode = mode
        self.reactor = reactor
        self.command_prefix = list(command_prefix)
        self.startup_timeout = startup_timeout
        # A subprocess broker's ``--log-level`` values: a level, or several ("INFO",
        # "kafka.request.logger=DEBUG").
        self.log_level = [log_level] if isinstance(log_level, str) else list(log_level)
        self.python = python or sys.executable
        # _root holds the broker log, and the data dir unless one is given (then it is kept).
        self._root = tempfile.mkdtemp(prefix="wireserver-", dir=tmp_root)
        self.data_dir = (
            os.path.join(self._root, "data") if data_dir is None else os.fspath(data_dir)
        )
        self.log_path = os.path.join(self._root, "broker.log")
        self.overrides: dict[str, str] = dict(TEST_DEFAULTS)
        self.overrides["listeners"] = _format_endpoint("PLAINTEXT", host, port)
        self.overrides["log.dirs"] = self.data_dir
        self._secure(
            host, port, sasl, dict(users or {}), tls, client_auth, authorizer, list(super_users)
        )
        for key, value in (overrides or {}).items():
            self.overrides[key] = _config_text(value)
        if mode == "subprocess" and "metrics.listeners" not in self.overrides:
            # Where a process broker's controls are reached (``/controls``).
            self.overrides["metrics.listeners"] = "http://127.0.0.1:0"
        self.endpoints: list[tuple[str, str, int]] = []
        #: the operations listener's URLs (``metrics.listeners``), e.g. ``http://127.0.0.1:P``
        self.ops_urls: list[str] = []
        self.cluster_id: str | None = None
        self.node_id: int | None = None
        self.broker: Any = None  # thread mode
        self._runner: ReactorThread | None = None
        self._bound_ports: dict[str, int] = {}
        self.process: subprocess.Popen | None = None  # subprocess mode
        self._stdout_thread: threading.Thread | None = None
        self._closed = False
        self.exit_code: int | None = None  # how the broker last ended by itself (a halt)

    # -- security ----------------------------------------------------------------------------

    def _secure(
        self,
        host: str,
        port: int,
        sasl: str | None,
        users: dict[str, str],
        tls: bool,
        client_auth: str,
        authorizer: bool,
        super_users: list[str],
    ) -> None:
        """Turn on SASL (one mechanism), TLS (a generated CA and server certificate for
        127.0.0.1/localhost) and ACLs. The broker's own admin chores authenticate as
        ``admin_user`` (SASL) or with the ``admin`` client certificate (TLS only), a super
        user."""
        self.sasl_mechanism = sasl.upper() if sasl else None
        self.users = users
        self.pki = None
        self.ca_path = None
        self.admin_user: tuple[str, str] | None = None
        if not (sasl or tls or authorizer):
            return
        protocol = {
            (True, True): "SASL_SSL",
            (True, False): "SASL_PLAINTEXT",
            (False, True): "SSL",
            (False, False): "PLAINTEXT",
        }[(bool(sasl), tls)]
        self.overrides["listeners"] = _format_endpoint(protocol, host, port)
        self.protocol = protocol
        supers = list(super_users)
        if tls:
            from wireserver.security.certs import write_test_pki

            self.pki = write_test_pki(os.path.join(self._root, "pki"))
            self.ca_path = self.pki.ca
            self.overrides.update(
                {
                    "ssl.keystore.type": "PEM",
                    "ssl.keystore.location": self.pki.server,
                    "ssl.truststore.type": "PEM",
                    "ssl.truststore.location": self.pki.ca,
                    "ssl.client.auth": client_auth,
                }
            )
            if not sasl:
                supers.append("User:" + self.pki.admin_dn)
        if sasl:
            import secrets

            mechanism = self.sasl_mechanism
            self.admin_user = ("wireserver-admin", secrets.token_urlsafe(12))
            everyone = {**users, self.admin_user[0]: self.admin_user[1]}
            self.overrides["sasl.enabled.mechanisms"] = mechanism
            prefix = f"listener.name.{protocol.lower()}.{mechanism.lower()}.sasl.jaas.config"
            if mechanism == "PLAIN":
                options = " ".join(
                    f'user_{name}="{password}"' for name, password in everyone.items()
                )
                self.overrides[prefix] = (
                    f"org.apache.kafka.common.security.plain.PlainLoginModule required {options};"
                )
            elif mechanism.startswith("SCRAM-"):
                from wireserver.security.scram import write_users

                write_users(self.data_dir, mechanism, everyone)
            elif mechanism == "OAUTHBEARER":
                self.overrides[prefix] = (
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
                )
                self.admin_user = None
            else:
                raise ValueError(f"unsupported SASL mechanism {sasl!r}")
            if self.admin_user is not None:
                supers.append(f"User:{self.admin_user[0]}")
        if authorizer:
            self.overrides["authorizer.class.name"] = (
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
            )
            self.overrides["super.users"] = ";".join(supers)

    def _wire_security(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.pki is not None:
            import ssl

            context = ssl.create_default_context(cafile=self.pki.ca)
            if not self.sasl_mechanism:
                context.load_cert_chain(self.pki.admin_cert, self.pki.admin_key)
            options["ssl_context"] = context
        if self.admin_user is not None:
            options["sasl"] = (self.sasl_mechanism, *self.admin_user)
        return options

    # -- addresses ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        if self.mode == "thread":
            return self.broker is not None
        return self.process is not None and self.process.poll() is None

    @property
    def host(self) -> str:
        self._require_started()
        host = self.endpoints[0][1]
        return host if host not in ("", "0.0.0.0", "::") else "127.0.0.1"

    @property
    def port(self) -> int:
        self._require_started()
        return self.endpoints[0][2]

    @property
    def bootstrap_servers(self) -> str:  # type: ignore[override]
        host = self.host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    @property
    def ops_url(self) -> str:
        """The first operations listener's URL (``http://127.0.0.1:PORT``); turn it on with
        ``overrides={"metrics.listeners": "HTTP://:0"}``."""
        self._require_started()
        if not self.ops_urls:
            raise RuntimeError("the broker has no operations listener (metrics.listeners)")
        return self.ops_urls[0]

    @property
    def controls(self) -> Controls:
        """The broker's test controls (``wireserver.testing.controls``): on its reactor
        thread in thread mode, over ``/controls`` of ``ops_url`` in subprocess mode. Needs
        ``controls.enable=true`` (a ``TEST_DEFAULTS`` key)."""
        from wireserver.testing.controls import Controls, HttpTransport, ReactorTransport

        self._require_started()
        if self.mode == "thread":
            broker = self.broker
            if broker is None or self._runner is None:
                raise RuntimeError("the broker is not running")
            if broker.controls is None:
                raise RuntimeError("the broker's controls are off (controls.enable=false)")
            return Controls(ReactorTransport(self._runner.call, broker.controls))
        return Controls(HttpTransport(self.ops_url))

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def _require_started(self) -> None:
        if not self.endpoints:
            raise RuntimeError("the broker has not been started")

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> EmbeddedBroker:
        """Start the broker and return once it accepts connections. After a first start,
        it binds the ports it had before (retrying for a few seconds if one is still busy)."""
        if self._closed:
            raise RuntimeError("this broker was closed")
        if self.running:
            return self
        if self.process is not None:  # it exited by itself (a halt): reap it first
            self.process.wait()
            self._reap()
        self.exit_code = None
        _LIVE.add(self)
        overrides = dict(self.overrides)
        if self.endpoints:
            overrides["listeners"] = self._fixed_listeners(overrides["listeners"])
        deadline = time.monotonic() + (5.0 if self.endpoints else 0.0)
        while True:
            try:
                if self.mode == "thread":
                    self._start_thread(overrides)
                else:
                    self._start_subprocess(overrides)
                return self
            except BrokerStartError as exc:
                if "in use" not in str(exc).lower() or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _fixed_listeners(self, configured: str) -> str:
        """``listeners`` with every port 0 replaced by the port that listener got last time
        (the bound port in thread mode; the advertised one, from the ready line, in
        subprocess mode)."""
        ports = {name: port for name, _, port in self.endpoints}
        ports.update(self._bound_ports)
        fixed = []
        for name, host, port in parse_endpoints(configured):
            fixed.append(_format_endpoint(name, host, port or ports.get(name, 0)))
        return ",".join(fixed)

    def _start_thread(self, overrides: Mapping[str, str]) -> None:
        from twisted.internet.error import CannotListenError

        from wireserver.broker import Broker
        from wireserver.config import BrokerConfig

        config = BrokerConfig.load(None, overrides)
        runner = ReactorThread.get()
        broker = Broker(config, runner.reactor, halt=lambda: self._halt_thread(broker))
        try:
            runner.call(broker.start, timeout=self.startup_timeout)
        except CannotListenError as exc:
            runner.call(_abandon, broker, timeout=self.startup_timeout)
            raise BrokerStartError(f"cannot listen: address in use? {exc}") from exc
        except Exception:
            runner.call(_abandon, broker, timeout=self.startup_timeout)
            raise
        self.broker = broker
        self._runner = runner
        self.cluster_id = broker.cluster_id
        self.node_id = broker.node_id
        self.endpoints = [
            (listener.name, listener.host, listener.port) for listener in broker.advertised
        ]
        self._bound_ports = {listener.name.upper(): listener.port for listener in broker.bound}
        self.ops_urls = list(broker.ops.urls)

    def _halt_thread(self, broker: Any) -> None:
        """Thread mode's halt (``Broker.halt``, when all log dirs failed): where a process
        broker calls ``os._exit(1)``, this one stops on the spot without flushing anything
        (``Broker.stop_without_flush``) and counts as exited with code 1; the test process
        lives on. It counts as exited once its listening sockets are closed, as a process's
        are when it has exited: a ``start()`` right after ``wait_exit()`` binds the same port,
        and finding it busy it would abandon a start that had already recovered the logs and
        closed them cleanly (a clean-shutdown marker for the start after it)."""

        def exited(result: Any) -> Any:
            if self.broker is broker:
                self.broker = None
                self.exit_code = 1
            return result

        broker.stop_without_flush().addBoth(exited)

    def wait_exit(self, timeout: float = 30.0) -> int:
        """Wait until the broker ends by itself (a halt) and return its exit code; raises
        ``TimeoutError`` if it is still running after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        if self.mode == "subprocess":
            process = self.process
            if process is None:
                if self.exit_code is None:
                    raise RuntimeError("the broker was not started")
                return self.exit_code
            try:
                self.exit_code = process.wait(timeout)
            except subprocess.TimeoutExpired:
                raise TimeoutError(f"wireserver pid {process.pid} still runs") from None
            self._reap()
            return self.exit_code
        while self.broker is not None:
            if time.monotonic() > deadline:
                raise TimeoutError("the thread-mode broker is still running")
            time.sleep(0.05)
        if self.exit_code is None:
            raise RuntimeError("the broker was stopped, it did not exit")
        return self.exit_code

    def _command(self, overrides: Mapping[str, str]) -> list[str]:
        command = [
            *self.command_prefix,
            self.python,
            "-m",
            "wireserver.cli",
            "serve",
            *(arg for level in self.log_level for arg in ("--log-level", level)),
            "--reactor",
            self.reactor,
        ]
        for key, value in overrides.items():
            command += ["--override", f"{key}={value}"]
        return command

    def _start_subprocess(self, overrides: Mapping[str, str]) -> None:
        os.makedirs(self._root, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            process = subprocess.Popen(
                self._command(overrides),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log_file,
                start_new_session=True,
            )
        ready = threading.Event()
        found: dict[str, Any] = {}
        ops_urls: list[str] = []

        def read_stdout() -> None:
            assert process.stdout is not None
            for raw in process.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                ops = OPS_RE.match(line)
                if ops and not ready.is_set():
                    ops_urls.append(ops.group("url"))
                match = READY_RE.match(line)
                if match and not ready.is_set():
                    found["match"] = match
                    ready.set()
            ready.set()  # EOF: the process exited

        reader = threading.Thread(
            target=read_stdout, name=f"wireserver-{process.pid}-stdout", daemon=True
        )
        reader.start()
        ready.wait(self.startup_timeout)
        match = found.get("match")
        if match is None:
            if process.poll() is None:
                process.kill()
            process.wait()
            raise BrokerStartError(
                f"wireserver did not become ready in {self.startup_timeout} s "
                f"(exit code {process.returncode}); log:\n{self._log_tail()}"
            )
        self.process = process
        self._stdout_thread = reader
        self.cluster_id = match.group("cluster")
        self.node_id = int(match.group("node"))
        self.endpoints = parse_endpoints(match.group("endpoints"))
        self.ops_urls = ops_urls

    def stop(self, timeout: float = 30.0) -> None:
        """Stop cleanly: thread mode stops the Broker; subprocess mode sends SIGTERM and waits
        (SIGKILL after ``timeout``). The data dir stays, for ``start()``/``restart()``."""
        if self.mode == "thread":
            broker, self.broker = self.broker, None
            if broker is None:
                return
            if self._runner is not None and self._runner.thread.is_alive():
                self._runner.call(broker.stop, timeout=timeout)
            elif getattr(broker, "logs", None) is not None:  # the reactor is gone
                broker.logs.close()
            return
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning(
                    "wireserver pid %d ignored SIGTERM for %s s; killing it", process.pid, timeout
                )
                process.kill()
                process.wait()
        self._reap()

    def kill(self) -> None:
        """SIGKILL the broker process: nothing is flushed or checkpointed (subprocess mode)."""
        if self.mode != "subprocess":
            raise RuntimeError("kill() needs mode='subprocess'")
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        self._reap()

    def _reap(self) -> None:
        if self._stdout_thread is not None:
            self._stdout_thread.join(5)
            self._stdout_thread = None
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None

    def restart(self, kill: bool = False) -> EmbeddedBroker:
        """Stop (or, with ``kill=True``, SIGKILL) and start again on the same data dir and
        the same port."""
        if kill:
            self.kill()
        else:
            self.stop()
        return self.start()

    def close(self) -> None:
        """Stop, and remove the temporary directory (and the data dir if it was ours)."""
        if self._closed:
            return
        try:
            self.stop()
        finally:
            self._closed = True
            _LIVE.discard(self)
            shutil.rmtree(self._root, ignore_errors=True)

    # -- logs --------------------------------------------------------------------------------

    def log_text(self) -> str:
        """Everything the subprocess broker logged so far (all its runs)."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except FileNotFoundError:
            return ""

    def _log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self.endpoints else "not started"
        return f"<EmbeddedBroker {self.mode} {where}>"


def _abandon(broker: Any) -> None:
    """Undo a ``Broker.start()`` that failed half-way: close the ports and the logs it opened."""
    for port in broker.ports:
        port.stopListening()
    broker.ports.clear()
    broker.ops.stop()
    if getattr(broker, "logs", None) is not None:
        broker.logs.close()


def _config_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
