"""Kafka's own applications as the compat suite runs them: Kafka Streams, a Connect worker in
distributed mode, MirrorMaker 2, each a JVM pointed at either broker.

- Streams runs on the reference's jars (``lib``, compat_tests/reference/pom.xml) plus
  ``streams-lib`` (compat_tests/apps/streams-pom.xml) and the Java sources of compat_tests/apps,
  compiled with ``javac`` on first use into ``kafka-<version>/apps-classes-<hash>``.
- Connect and MirrorMaker 2 run on ``connect-lib`` alone (compat_tests/apps/connect-pom.xml):
  the Connect runtime, clients and plugins of :data:`CONNECT_VERSION`, because the file and
  mirror connectors of the reference's release are not on Maven Central (see that pom).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

from compat_tests.reference.launcher import HOST, LOG4J2_TOOLS, _java, _preexec, free_ports
from compat_tests.reference.resolve import (
    KAFKA_VERSION,
    JarSet,
    ResolutionError,
    kafka_home,
    resolve,
)

APPS = Path(__file__).resolve().parent / "apps"

#: reference release -> the Connect release run against it: connect-file, connect-mirror and
#: connect-mirror-client 4.4.0 are not on Maven Central, 4.3.0 is the newest that is.
CONNECT_VERSIONS = {"4.4.0": "4.3.0"}
CONNECT_VERSION = CONNECT_VERSIONS.get(KAFKA_VERSION, KAFKA_VERSION)

STREAMS_JARS = JarSet(
    APPS / "streams-pom.xml", "streams-lib", ("kafka-streams-", "rocksdbjni-"), ("kafka-streams-",)
)
CONNECT_JARS = JarSet(
    APPS / "connect-pom.xml",
    "connect-lib",
    ("connect-runtime-", "connect-file-", "connect-mirror-", "connect-mirror-client-"),
    (),
    lambda version: {"connect.version": CONNECT_VERSIONS.get(version, version)},
)

#: A small heap and the serial collector: several of these run beside two brokers on 2 cores.
APP_JVM_OPTS = ("-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def app_command(
    classpath: str,
    main_class: str,
    *args: str,
    jvm_options: tuple[str, ...] = APP_JVM_OPTS,
    properties: Mapping[str, object] | None = None,
) -> list[str]:
    """The command line of one of the project's Java apps (or benchmark clients): ``java``,
    the JVM options, the tools' log4j2 file and ``properties`` as ``-D``s, the classpath, the
    main class and its arguments."""
    defines = {"log4j2.configurationFile": LOG4J2_TOOLS, **(properties or {})}
    return [
        _java(),
        *jvm_options,
        *(f"-D{name}={value}" for name, value in defines.items()),
        "-cp",
        classpath,
        main_class,
        *args,
    ]


def streams_classpath(version: str = KAFKA_VERSION) -> str:
    """``lib/*:streams-lib/*:<compiled apps>``, resolving and compiling on first use."""
    jars = f"{resolve(version)}/*:{resolve(version, jars_of=STREAMS_JARS)}/*"
    return f"{jars}:{_compiled(version, jars)}"


def share_client_classpath(version: str = KAFKA_VERSION) -> str:
    """``lib/*:<compiled ShareClient>``: Kafka's KafkaShareConsumer driven by
    compat_tests/apps/share/ShareClient.java (see compat_tests/share_members.py)."""
    jars = f"{resolve(version)}/*"
    return f"{jars}:{_compiled(version, jars, APPS / 'share')}"


def share_assignor_classpath(version: str = KAFKA_VERSION) -> str:
    """``lib/*:<compiled SimpleAssignorCases>``: Kafka's share ``SimpleAssignor`` on cases read
    from stdin (compat_tests/apps/assignor/SimpleAssignorCases.java)."""
    jars = f"{resolve(version)}/*"
    return f"{jars}:{_compiled(version, jars, APPS / 'assignor')}"


def connect_classpath(version: str = KAFKA_VERSION) -> str:
    return f"{resolve(version, jars_of=CONNECT_JARS)}/*"


def _compiled(version: str, cp: str, sources_dir: Path = APPS) -> Path:
    """The ``*.java`` of ``sources_dir`` compiled against ``cp``, once per content: into
    ``kafka-<version>/<dir name>-classes-<hash>``."""
    sources = sorted(sources_dir.glob("*.java"))
    digest = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()[:12]
    prefix = f"{sources_dir.name}-classes-"
    out = kafka_home(version) / f"{prefix}{digest}"
    if (out / ".compiled").is_file():
        return out
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=kafka_home(version)))
    proc = subprocess.run(
        ["javac", "-cp", cp, "-d", str(tmp), *map(str, sources)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise ResolutionError(f"javac failed on {sources_dir}:\n{proc.stdout}{proc.stderr}")
    (tmp / ".compiled").write_text(digest)
    with contextlib.suppress(OSError):  # another process compiled the same sources first
        tmp.rename(out)
    return out


class JavaApp:
    """One application JVM; its stdout and stderr go to ``log``."""

    def __init__(self, main_class: str, args: list[str], log: Path, classpath: str) -> None:
        self.main_class = main_class
        self.classpath = classpath
        self.args = args
        self.log = log
        self.process: subprocess.Popen | None = None

    def start(self) -> JavaApp:
        cmd = app_command(self.classpath, self.main_class, *self.args)
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_preexec(),
            )
        return self

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as a crashed host."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (the application's clean shutdown), SIGKILL after ``timeout``."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()


@contextlib.contextmanager
def running(*apps: JavaApp) -> Iterator[tuple[JavaApp, ...]]:
    """Start ``apps``; stop (SIGTERM) whatever still runs at the end."""
    try:
        for app in apps:
            app.start()
        yield apps
    finally:
        for app in apps:
            app.stop()


def wait_for(what: str, predicate, timeout: float, *apps: JavaApp, interval: float = 0.5):
    """``predicate()``'s first true value; a TimeoutError naming ``what`` (with the apps' log
    tails) when it has none after ``timeout`` seconds, or an app exits meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        dead = [a for a in apps if a.exited() is not None]
        if dead or time.monotonic() > deadline:
            tails = "\n".join(f"--- {a.log} ---\n{a.tail()}" for a in apps)
            cause = f"{dead[0].main_class} exited" if dead else f"not within {timeout:.0f}s"
            raise TimeoutError(f"{what}: {cause}\n{tails}")
        time.sleep(interval)


def read_committed(bootstrap: str, topic: str, timeout: float = 5.0) -> list[tuple[str, bytes]]:
    """Every committed record of ``topic`` as (key, value), partition by partition, read with
    confluent-kafka (isolation.level=read_committed) up to the last stable offsets."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "compat-apps-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        out: list[tuple[str, bytes]] = []
        pending = set(partitions)
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                pending.discard(msg.partition())
                continue
            out.append(((msg.key() or b"").decode(), msg.value()))
        return out
    finally:
        consumer.close()


class ConnectWorker(JavaApp):
    """A Connect worker in distributed mode (``ConnectDistributed``) with its REST API on a
    free port, its config, offset and status topics on ``bootstrap``, String converters."""

    def __init__(self, bootstrap: str, group: str, workdir: Path) -> None:
        self.port = free_ports(1)[0]
        props = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "config.storage.topic": f"{group}-configs",
            "offset.storage.topic": f"{group}-offsets",
            "status.storage.topic": f"{group}-status",
            "config.storage.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.flush.interval.ms": 1000,
            "listeners": f"http://{HOST}:{self.port}",
            "rest.advertised.host.name": HOST,
            "scheduled.rebalance.max.delay.ms": 1000,
        }
        path = workdir / f"{group}.properties"
        path.write_text(_properties(props))
        super().__init__(
            "org.apache.kafka.connect.cli.ConnectDistributed",
            [str(path)],
            workdir / "connect.log",
            connect_classpath(),
        )

    def rest(self, method: str, path: str, body: Mapping | None = None) -> tuple[int, object]:
        """(HTTP status, decoded JSON) of one call to the worker's REST API."""
        request = urllib.request.Request(
            f"http://{HOST}:{self.port}{path}",
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            return exc.code, json.loads(raw) if raw else None

    def ready(self) -> bool:
        """True once the REST API answers and the worker has joined its group."""
        try:
            status, _ = self.rest("GET", "/connectors")
        except OSError:
            return False
        return status == 200


def _properties(props: Mapping[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def write_properties(path: Path, props: Mapping[str, object]) -> Path:
    path.write_text(_properties(props))
    return path


def workdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"wireserver-{prefix}-"))


def remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
