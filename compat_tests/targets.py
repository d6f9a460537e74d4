"""The two brokers every scenario runs against: the reference Apache Kafka and wireserver.

Both run with the same broker settings: ``num.partitions=3`` (so an auto-created topic is
told apart from a one-partition default), ``auto.create.topics.enable`` on or off as a
scenario needs, and ``log.cleaner.backoff.ms=1000`` (a cleaner with nothing to do looks again
after a second instead of Kafka's 15: the compaction scenarios wait for it), and
``group.share.min.record.lock.duration.ms=1000`` (Kafka's floor for a share group's
``share.record.lock.duration.ms`` is 15 s: the share scenarios set 2 s and wait it out). Each
(target, auto-create) pair is one broker started on first use and shared by the whole
session; scenarios make a fresh topic each.

The reference is :func:`compat_tests.reference.reference_kafka`, so
``WIRESERVER_REFERENCE_BOOTSTRAP`` points it at any running Kafka cluster. Such a cluster has
one auto-create setting: scenarios that need the other are reported with a clear error
(they cannot run), never silently against the wrong settings.
wireserver is :class:`wireserver.testing.EmbeddedBroker` in subprocess mode: the broker
runs in its own process as users run it, and does not share the GIL with the clients.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field

KAFKA = "kafka"
WIRESERVER = "wireserver"

#: bootstrap address -> the process id of the broker behind it, for the targets started here
#: (a scenario that must hand a broker several requests at once pauses it: ``paused``).
PIDS: dict[str, int] = {}
TARGETS = (KAFKA, WIRESERVER)
NUM_PARTITIONS = 3
#: broker settings both targets get (see the module docstring)
BROKER_SETTINGS = {"log.cleaner.backoff.ms": 1000, "group.share.min.record.lock.duration.ms": 1000}


@dataclass
class Target:
    name: str  # KAFKA | WIRESERVER
    auto_create: bool
    bootstrap: str
    kind: str  # "local", "docker", "external", "subprocess"
    problem: str | None = None  # why scenarios cannot run here (external, wrong settings)
    startup_seconds: float = 0.0
    info: dict = field(default_factory=dict)


class Targets:
    """Starts targets on first use; :meth:`close` stops everything it started."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._targets: dict[tuple[str, bool], Target] = {}
        self._lock = threading.Lock()

    def get(self, name: str, auto_create: bool = True) -> Target:
        with self._lock:
            key = (name, auto_create)
            if key not in self._targets:
                started = time.monotonic()
                target = self._start(name, auto_create)
                target.startup_seconds = time.monotonic() - started
                self._targets[key] = target
            return self._targets[key]

    def started(self) -> list[Target]:
        return list(self._targets.values())

    def _start(self, name: str, auto_create: bool) -> Target:
        if name == KAFKA:
            from compat_tests.reference import reference_kafka

            ref = self._stack.enter_context(
                reference_kafka(
                    nodes=1,
                    auto_create_topics=auto_create,
                    num_partitions=NUM_PARTITIONS,
                    broker_props=BROKER_SETTINGS,
                )
            )
            target = Target(
                KAFKA, auto_create, ref.bootstrap_servers, ref.kind, info={"version": ref.version}
            )
            if ref.cluster is not None and ref.cluster.nodes[0].process is not None:
                PIDS[ref.bootstrap_servers] = ref.cluster.nodes[0].process.pid
            if ref.kind == "external":
                target.problem = _check_external(ref.bootstrap_servers, auto_create)
            return target
        if name == WIRESERVER:
            from wireserver.testing import EmbeddedBroker

            broker = self._stack.enter_context(
                EmbeddedBroker(
                    mode="subprocess",
                    overrides={
                        "auto.create.topics.enable": str(auto_create).lower(),
                        "num.partitions": NUM_PARTITIONS,
                        **BROKER_SETTINGS,
                    },
                )
            )
            PIDS[broker.bootstrap_servers] = broker.pid
            return Target(
                WIRESERVER,
                auto_create,
                broker.bootstrap_servers,
                "subprocess",
                info={"log_path": broker.log_path},
            )
        raise ValueError(name)

    def close(self) -> None:
        self._stack.close()


@contextlib.contextmanager
def paused(bootstrap: str):
    """SIGSTOP the broker at ``bootstrap`` for the block, then SIGCONT: what clients send
    meanwhile waits in its sockets and reaches it at once, as a busy broker receives it."""
    import os
    import signal

    pid = PIDS.get(bootstrap)
    if pid is None:
        raise RuntimeError(f"no process of ours serves {bootstrap}: it cannot be paused")
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _check_external(bootstrap: str, auto_create: bool) -> str | None:
    """An external reference must have the settings the scenario needs."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-settings")
    try:
        node = admin.describe_cluster()["brokers"][0]["node_id"]
        found = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, str(node))], config_filter="all"
        )
        configs = next(iter(next(iter(found.values())).values()))
        values = {k: (v.get("value") if isinstance(v, dict) else v) for k, v in configs.items()}
    except Exception as exc:  # an external cluster we cannot inspect: say so
        return f"cannot read the broker settings of {bootstrap}: {exc!r}"
    finally:
        admin.close()
    problems = []
    if str(values.get("auto.create.topics.enable")).lower() != str(auto_create).lower():
        problems.append(
            f"auto.create.topics.enable={values.get('auto.create.topics.enable')}"
            f" (scenario needs {str(auto_create).lower()})"
        )
    if str(values.get("num.partitions")) != str(NUM_PARTITIONS):
        problems.append(
            f"num.partitions={values.get('num.partitions')} (the suite needs {NUM_PARTITIONS})"
        )
    return "; ".join(problems) or None
