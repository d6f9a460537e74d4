"""Runs ``compat_tests/apps/WordCountApp.java``, a Kafka Streams application on the Streams
group protocol (KIP-1071), against any broker, driven line by line on its stdin (start and close
instances, ask which active tasks each one runs). Its class path, the kafka-streams jars and
the compiled apps come from ``compat_tests.applications`` (resolved and compiled on first use).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from compat_tests.applications import streams_classpath
from compat_tests.reference.resolve import LOG4J2_TOOLS


class WordCountApp:
    """One JVM running any number of named KafkaStreams instances of one application."""

    def __init__(self, bootstrap: str, app_id: str, source: str, sink: str):
        self.state_dir = tempfile.mkdtemp(prefix="wordcount-state-")
        cp = streams_classpath()
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
