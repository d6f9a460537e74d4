"""Run a standalone ZooKeeper server (the Debian ``zookeeper`` package's jars) on 127.0.0.1 for
tests and the development cluster."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/*"
MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"


class ZooKeeperError(RuntimeError):
    pass


def available() -> bool:
    return bool(shutil.which("java")) and os.path.exists("/usr/share/java/zookeeper.jar")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _ruok(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1) as sock:
            sock.sendall(b"ruok")
            return sock.recv(16) == b"imok"
    except OSError:
        return False


class ZooKeeperServer:
    """``with ZooKeeperServer() as zk: zk.connect`` → ``"127.0.0.1:PORT"``.

    ``host`` and ``command_prefix`` run it elsewhere: the fault campaign (``chaos/``) starts it
    inside a network namespace with ``command_prefix=["ip", "netns", "exec", NAME]`` and the
    namespace's address as ``host`` (then give a ``port``: a free one here may not be free
    there)."""

    def __init__(
        self,
        port: int = 0,
        data_dir: str | None = None,
        tick_ms: int = 500,
        host: str = "127.0.0.1",
        command_prefix: tuple[str, ...] | list[str] = (),
    ):
        self.host = host
        self.command_prefix = list(command_prefix)
        self.port = port or free_port()
        self._root = tempfile.mkdtemp(prefix="wireserver-zk-")
        self.data_dir = data_dir or os.path.join(self._root, "data")
        self.tick_ms = tick_ms
        self.process: subprocess.Popen | None = None
        self.log_path = os.path.join(self._root, "zookeeper.log")

    @property
    def connect(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        if not available():
            raise ZooKeeperError("ZooKeeper is not installed (apt-get install zookeeper)")
        os.makedirs(self.data_dir, exist_ok=True)
        config = os.path.join(self._root, "zoo.cfg")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(
                f"tickTime={self.tick_ms}\ndataDir={self.data_dir}\n"
                f"clientPort={self.port}\nclientPortAddress={self.host}\n"
                "admin.enableServer=false\n4lw.commands.whitelist=ruok,stat\n"
                f"minSessionTimeout={2 * self.tick_ms}\nmaxSessionTimeout=60000\n"
                "maxClientCnxns=0\n"
            )
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(
                [
                    *self.command_prefix,
                    "java",
                    "-Xmx256m",
                    "-cp",
                    CLASSPATH,
                    f"-Dzookeeper.log.dir={self._root}",
                    MAIN,
                    config,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ZooKeeperError(
                    f"ZooKeeper exited with {self.process.returncode}: {self.log_tail()}"
                )
            if _ruok(self.port, self.host):
                return self
            time.sleep(0.1)
        self.stop()
        raise ZooKeeperError(f"ZooKeeper did not start in {timeout} s: {self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                return "".join(handle.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
