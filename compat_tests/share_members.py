"""Share-group members on Kafka's own Java ``KafkaShareConsumer``, for tests/share and the
compat suite's share scenarios (compat_tests/scenarios_share.py).

:class:`ShareMember` runs compat_tests/apps/share/ShareClient.java (compiled once against the
reference jars: :func:`compat_tests.applications.share_client_classpath`) in its own JVM and
collects what it prints: one line per record it was handed, with the delivery count the Java
client exposes. The helpers around it do what those tests need besides: write records one
batch each (so that members can be handed records one at a time) and set a share group's
configs with ``kafka-configs --entity-type groups`` as a user would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from compat_tests.applications import app_command, share_client_classpath
from compat_tests.reference import require_tools
from compat_tests.reference.launcher import _preexec, run_tool

#: ShareClient leaves after this long without a record (acknowledgements committed first)
IDLE_EXIT_MS = 2000


def compiled_share_client() -> str:
    """ShareClient's classpath for a test: the reference jars fetched (or the test skipped,
    failed under CI, where they cannot be) and ShareClient compiled against them."""
    require_tools()
    return share_client_classpath()


class ShareMember:
    """One ShareClient JVM; its lines are collected as they come."""

    def __init__(
        self,
        classpath: str,
        bootstrap: str,
        topic: str,
        group: str,
        *extra: str,
        first_record_wait_ms: int = 15000,
    ):
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            app_command(
                classpath,
                "ShareClient",
                bootstrap,
                topic,
                group,
                str(IDLE_EXIT_MS),
                *extra,
                jvm_options=("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"),
                properties={"first.record.wait.ms": first_record_wait_ms},
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_preexec(),
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def records(self) -> list[tuple[int, int, str]]:
        """(offset, delivery count, value) of each record it got, in order."""
        out = []
        for line in list(self.lines):
            if line.startswith("record "):
                _, _, offset, count, value = line.split(" ", 4)
                out.append((int(offset), int(count), value))
        return out

    def wait_for(self, predicate, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; the member printed: {self.lines[-30:]}")
            if self.process.poll() is not None and not predicate():
                self._reader.join(5)
                if predicate():
                    return
                raise AssertionError(f"the member exited early: {self.lines[-30:]}")
            time.sleep(0.05)

    def finish(self, timeout: float = 60.0) -> list[tuple[int, int, str]]:
        """Wait for it to exit on its own (idle), then its records."""
        try:
            self.process.wait(timeout=timeout)
        finally:
            self.kill()
        self._reader.join(5)
        assert "closed" in self.lines, self.lines[-30:]
        return self.records()

    def pause(self) -> None:
        """SIGSTOP: the JVM keeps its connections open (no disconnect gives its records
        back) but sends nothing more, not even the fetches its client makes in the
        background, which could take records back as their locks expire."""
        os.kill(self.process.pid, signal.SIGSTOP)

    def kill(self) -> None:
        """kill -9 (a no-op once it has exited)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


def produce_one_batch_each(bootstrap: str, topic: str, values: list[str]) -> None:
    """One batch per record, so that members can be handed records one at a time."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value=value.encode())
        producer.flush(30)


def set_group_configs(bootstrap: str, group: str, **configs: object) -> None:
    """``kafka-configs --alter --entity-type groups``; ``share_auto_offset_reset=...`` names
    ``share.auto.offset.reset``."""
    settings = ",".join(f"{k.replace('_', '.')}={v}" for k, v in configs.items())
    result = run_tool(
        "kafka-configs",
        ["--alter", "--entity-type", "groups", "--entity-name", group, "--add-config", settings],
        bootstrap=bootstrap,
    )
    assert result.returncode == 0, result.stdout + result.stderr
