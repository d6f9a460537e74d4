"""A real ``wireserver serve`` subprocess for the group integration tests (restartable on the
same data directory)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

READY = re.compile(r"listening on PLAINTEXT://([\d.]+):(\d+)")


class ServedBroker:
    def __init__(self, data_dir: str, **overrides: str):
        self.data_dir = data_dir
        self.overrides = {
            "log.dirs": data_dir,
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "offsets.topic.replication.factor": "1",
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "5",
            "group.min.session.timeout.ms": "1000",
        }
        self.overrides.update(overrides)
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.output: list[str] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        args = [sys.executable, "-m", "wireserver.cli", "serve"]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        self.process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("wireserver exited before it was ready")
            found = READY.search(line)
            if found:
                self.port = int(found.group(2))
                break
        else:
            raise RuntimeError("wireserver did not become ready")
        # keep draining its output (into self.output) so it never blocks on a full pipe
        import threading

        threading.Thread(target=self._drain, args=(self.process.stdout,), daemon=True).start()

    def _drain(self, stream) -> None:
        for line in stream:
            self.output.append(line)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def served_broker(tmp_path):
    broker = ServedBroker(str(tmp_path / "data"))
    broker.start()
    yield broker
    broker.stop()


def wait_for(condition, timeout: float = 30.0, step=None, what: str = "condition"):
    """Poll ``condition`` (calling ``step`` between tries) until true or the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if step is not None:
            step()
        else:
            time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


os.environ.setdefault("PYTHONUNBUFFERED", "1")
