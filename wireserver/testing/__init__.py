"""A Kafka broker for tests: ``EmbeddedBroker``, a pytest plugin, and a ``KafkaContainer``
shaped like testcontainers' so existing tests switch with one import.

    from wireserver.testing import EmbeddedBroker

    with EmbeddedBroker() as kafka:                       # in-process, a few milliseconds
        producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)

    with EmbeddedBroker(mode="subprocess") as kafka:      # its own process: kill(), restart()
        ...
        kafka.kill()                                      # SIGKILL, no flush
        kafka.restart()                                   # same data dir, same port

Modes
    ``thread``: the broker runs inside the test process, on one reactor thread that this
    module starts once per process and shares between every thread-mode broker. A Twisted
    reactor cannot be restarted, so brokers come and go on that one running reactor
    (``callFromThread``), and a *private* reactor instance is used, never the global
    ``twisted.internet.reactor``: tests that run their own Twisted reactor are unaffected.
    ``subprocess``: ``python -m wireserver.cli serve`` on port 0; the ready line it prints
    gives the port. Its stderr (the broker log) goes to ``log_path``. Only this mode has
    ``kill()``.

A broker whose log dirs have all failed (a full disk) halts as Kafka does: a subprocess
broker exits with code 1; a thread-mode one stops on the spot without flushing, leaving the
test process running. ``wait_exit()`` waits for either and returns the exit code; ``start()``
brings it back on the same data dir.

Defaults (``TEST_DEFAULTS``) are single-node safe, as Kafka test setups need: internal topics
with replication factor 1 and min ISR 1, no initial rebalance delay, ``PLAINTEXT`` on
``127.0.0.1:0``, and a temporary ``log.dirs`` removed on ``close()`` (a ``data_dir`` you pass
is kept) in the system's temporary directory, or in ``tmp_root`` (the pytest fixtures' brokers
use tmpfs, ``/dev/shm``, when there is room and ``TMPDIR`` names no other place). ``overrides``
(a dict of Kafka broker keys) goes over them. ``restart()`` binds the same port again, so
clients keep their bootstrap address.

Controls (``controls.enable``, on in ``TEST_DEFAULTS``): ``kafka.controls`` injects errors,
latency, disconnects, throttling, refused connections, a listener outage and clock jumps, and
undoes them (``wireserver.testing.controls``; a subprocess broker is reached over ``/controls``
of the operations listener it gets on ``127.0.0.1:0`` unless ``metrics.listeners`` is set):

    with kafka.controls.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2):
        ...                                               # the client retries, then succeeds

pytest plugin (``wireserver.testing.plugin``, registered as the ``wireserver`` ``pytest11``
entry point; its docstring has the details and the figures behind the choices):
    ``kafka_broker``          a broker for the test: in thread mode a fresh one per test (a
                              few milliseconds to start and close), in subprocess mode the
                              session's, its controls reset and its topics deleted after each
                              test (``--wireserver-fresh=true|false`` decides for either mode)
    ``kafka_bootstrap``       its ``"host:port"``
    ``kafka_broker_session``  the session's broker (one per xdist worker), no per-test cleanup
    ``kafka_controls``        ``kafka_broker.controls``, reset before and after the test
    ``kafka_cluster``         the session's 3-broker ``LocalCluster`` on a ZooKeeper started
                              for it; topics deleted, controls reset and stopped brokers
                              started again after each test (``kafka_cluster_session``: no
                              cleanup; ``wireserver_zookeeper``: the ZooKeeper)
    ``@pytest.mark.wireserver(overrides={...}, brokers=N, mode=...)``: the test gets its own
    broker (``kafka_broker``) or cluster of N (``kafka_cluster``) with those settings.
    Options: ``--wireserver-mode=thread|subprocess`` (ini ``wireserver_mode``),
    ``--wireserver-override KEY=VALUE`` (repeatable; ini ``wireserver_overrides``, one a line),
    ``--wireserver-fresh[=true|false]`` (ini ``wireserver_fresh``), ``--kafka-bootstrap
    HOST:PORT`` to run the same tests against a broker already running (a real Kafka, say)
    instead of starting one.

This module imports nothing heavy until a broker starts, because pytest loads it in every
session of a project that has wireserver installed.
"""

from wireserver.testing.cluster import FAST_FAILOVER, LocalCluster, cluster_metadata
from wireserver.testing.container import KafkaContainer
from wireserver.testing.controls import Control, ControlError, Controls
from wireserver.testing.embedded import (
    READY_RE,
    TEST_DEFAULTS,
    BrokerStartError,
    EmbeddedBroker,
    ExternalBroker,
    parse_endpoints,
)
from wireserver.testing.wire import KafkaWire, KafkaWireError, wait_for

__all__ = [
    "EmbeddedBroker",
    "Controls",
    "Control",
    "ControlError",
    "ExternalBroker",
    "KafkaContainer",
    "KafkaWire",
    "BrokerStartError",
    "KafkaWireError",
    "TEST_DEFAULTS",
    "READY_RE",
    "parse_endpoints",
    "wait_for",
    "LocalCluster",
    "FAST_FAILOVER",
    "cluster_metadata",
]
