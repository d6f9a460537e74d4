"""Runs ``compat_tests/streams_app/WordCountApp.java``, a Kafka Streams application on the
Streams group protocol (KIP-1071), against any broker: compiled once per run with ``javac``
against the reference's jars plus kafka-streams and RocksDB, then driven line by line on its
stdin (start and close instances, ask which active tasks each one runs).

The class path is the reference's ``lib`` (broker, clients, tools) and the kafka-streams and
rocksdbjni jars of the same Kafka release from the local Maven repository, where resolving
kafka-streams puts them (``STREAMS_JARS``); the broker's cached ``lib`` is left as it is.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from compat_tests.reference.resolve import KAFKA_VERSION, LOG4J2_TOOLS, classpath, resolve

SOURCE = Path(__file__).resolve().parent / "streams_app" / "WordCountApp.java"
M2 = Path(os.environ.get("MAVEN_REPOSITORY", Path.home() / ".m2" / "repository"))
#: The jars kafka-streams adds to the reference's lib (RocksDB is its only other dependency).
STREAMS_JARS = (
    M2 / "org/apache/kafka/kafka-streams" / KAFKA_VERSION / f"kafka-streams-{KAFKA_VERSION}.jar",
    M2 / "org/rocksdb/rocksdbjni/10.1.3/rocksdbjni-10.1.3.jar",
)

_compiled: dict[str, Path] = {}
_lock = threading.Lock()


def streams_classpath() -> str:
    missing = [str(j) for j in STREAMS_JARS if not j.is_file()]
    if missing:
        raise FileNotFoundError(
            f"kafka-streams jars missing: {missing} (mvn dependency:get "
            f"-Dartifact=org.apache.kafka:kafka-streams:{KAFKA_VERSION})"
        )
    return os.pathsep.join([classpath(resolve()), *map(str, STREAMS_JARS)])


def compiled() -> Path:
    """The directory holding WordCountApp.class (compiled once per process)."""
    with _lock:
        if "dir" not in _compiled:
            out = Path(tempfile.mkdtemp(prefix="wordcount-"))
            subprocess.run(
                ["javac", "-d", str(out), "-cp", streams_classpath(), str(SOURCE)],
                check=True,
                capture_output=True,
                timeout=180,
            )
            _compiled["dir"] = out
        return _compiled["dir"]


class WordCountApp:
    """One JVM running any number of named KafkaStreams instances of one application."""

    def __init__(self, bootstrap: str, app_id: str, source: str, sink: str):
        self.state_dir = tempfile.mkdtemp(prefix="wordcount-state-")
        cp = os.pathsep.join([str(compiled()), streams_classpath()])
        self.log = tempfile.NamedTemporaryFile(prefix="wordcount-", suffix=".log", delete=False)
        self.process = subprocess.Popen(
            [
                "java",
                "-Xmx384m",
                f"-Dlog4j2.configurationFile={LOG4J2_TOOLS}",
                "-cp",
                cp,
                "WordCountApp",
                bootstrap,
                app_id,
                source,
                sink,
                self.state_dir,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )

    def _command(self, line: str, until: str) -> list[str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        lines = []
        while True:
            out = self.process.stdout.readline()
            if not out:
                raise RuntimeError(f"WordCountApp exited: {self.stderr_tail()}")
            out = out.rstrip("\n")
            if out.startswith(until):
                return lines
            lines.append(out)

    def start(self, name: str) -> None:
        self._command(f"start {name}", f"started {name}")

    def close(self, name: str) -> None:
        self._command(f"close {name}", f"closed {name}")

    def tasks(self) -> dict[str, tuple[str, list[str]]]:
        """instance -> (KafkaStreams state, its active task ids)"""
        found = {}
        for line in self._command("tasks", "end"):
            parts = line.split(" ")
            if parts[0] == "tasks":
                found[parts[1]] = (parts[2], [t for t in parts[3:4] for t in t.split(",") if t])
        return found

    def wait_for(self, predicate, timeout: float = 90.0) -> dict[str, tuple[str, list[str]]]:
        """Polls ``tasks()`` until ``predicate(tasks)``; returns the last answer."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.tasks()
            if predicate(found):
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"tasks never settled: {found}\n{self.stderr_tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                self._command("quit", "bye")
                self.process.wait(timeout=60)
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()

    def stderr_tail(self, lines: int = 40) -> str:
        return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-lines:])
