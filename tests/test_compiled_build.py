"""The compiled build (setup.py with ``WIRESERVER_COMPILE=1``): every module setup.py lists is
an extension module in it, a broker started from it runs them, and that broker serves real
clients; the tests of ``SUITE`` pass with it (run in a pytest process of their own that imports
the build, ``--import-mode=append`` so that the checkout does not come first). mypyc enforces
a compiled module's annotations at run time, so an annotation that does not hold is a
``TypeError`` here that the pure-Python build would never raise; and some Python does not
behave the same compiled (``twisted``'s ``inlineCallbacks`` takes only the interpreter's
generators; a class attribute of an exception subclass read as the base class's)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.compiled import compiled_environment, compiled_tree
from wireserver.testing import EmbeddedBroker

ROOT = Path(__file__).resolve().parents[1]

#: What the compiled build's own pytest process runs: the tests of the compiled modules'
#: packages (the partition layer's among tests/wireserver) and of the handlers, and those that
#: drive a broker with real clients. The cluster, group and security suites passed on it too
#: when it was added; they stay on the pure build here for the run's length.
SUITE = [
    "tests/storage",
    "tests/protocol",
    "tests/idempotence",
    "tests/integration",
    "tests/wireserver",
    "tests/apis",
]


def compiled_modules() -> list[str]:
    """setup.py's ``COMPILED`` (read, not imported: importing setup.py runs the build)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(t, "id", None) == "COMPILED" for t in targets):
                assert node.value is not None
                return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no COMPILED list")


@pytest.fixture(scope="module")
def build() -> Path:
    return compiled_tree()


def extension_of(build: Path, source: str) -> Path | None:
    path = build / source
    found = sorted(path.parent.glob(f"{path.stem}.cpython-*.so"))
    return found[0] if found else None


def test_each_listed_module_is_an_extension_module_in_the_build(build):
    """... and a process whose path the build leads imports each as one."""
    modules = compiled_modules()
    assert "wireserver/server.py" in modules and "wireserver/storage/log.py" in modules
    assert [m for m in modules if extension_of(build, m) is None] == []
    names = [m.removesuffix(".py").replace("/", ".") for m in modules]
    imported = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import importlib\nfor n in {names!r}: print(importlib.import_module(n).__file__)",
        ],
        env={**os.environ, **compiled_environment()},
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    files = imported.stdout.split()
    assert len(files) == len(names), imported.stderr
    assert [f for f in files if not f.endswith(".so")] == []


def test_a_broker_of_the_compiled_build_runs_the_extensions_and_serves_clients(
    build, tmp_path, monkeypatch
):
    from confluent_kafka import Consumer, Producer

    for name, value in compiled_environment().items():
        monkeypatch.setenv(name, value)
    with EmbeddedBroker("subprocess", data_dir=str(tmp_path / "data")) as broker:
        broker.create_topic("compiled", partitions=3)
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "enable.idempotence": True,
                "acks": "all",
                "compression.type": "lz4",
                "linger.ms": 5,
            }
        )
        sent = {(p, f"{p}-{i}".encode()) for p in range(3) for i in range(500)}
        for partition, value in sorted(sent):
            producer.produce("compiled", value=value, partition=partition)
        assert producer.flush(30) == 0
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "compiled",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["compiled"])
        received = set()
        deadline = time.monotonic() + 30
        while len(received) < len(sent) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                received.add((message.partition(), message.value()))
        consumer.close()
        assert received == sent
        # the broker runs the build's compiled code (one library holds every module's)
        maps = Path(f"/proc/{broker.process.pid}/maps").read_text()
        (library,) = build.glob("*__mypyc.cpython-*.so")
        assert str(library) in maps


@pytest.mark.integration
def test_the_suite_passes_on_the_compiled_build(build):
    # (that the build's modules import as extensions there is the first test's check)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--import-mode=append", "-q", "-p", "no:cacheprovider"]
        + ["--durations=0", "-x", *SUITE],
        env={**os.environ, **compiled_environment()},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
