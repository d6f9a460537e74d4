"""The reference Apache Kafka broker that the compatibility suite compares against.

One entry point for tests::

    from compat_tests.reference import reference_kafka

    with reference_kafka() as ref:            # ref.bootstrap_servers, ref.kind
        ...

Where the reference comes from, first match wins:

(a) ``WIRESERVER_REFERENCE_BOOTSTRAP=host:port[,...]``: an already-running
    cluster; nothing is started or stopped. Used for a request of ``nodes=N``
    only if its Metadata lists at least N brokers, and never when
    ``controllable=True`` (kill/restart need processes we own).
(b) A Docker engine that answers a ping (checked in about a millisecond when
    there is no socket, as on the project's machines): ``apache/kafka:<version>``
    via testcontainers (see container.py). One node only, not controllable.
    ``WIRESERVER_REFERENCE_DOCKER=0`` disables this step.
(c) Java + Maven (or an already filled jar cache): :class:`KafkaCluster` from
    launcher.py, N nodes, controllable.

The version is ``KAFKA_VERSION``: ``$WIRESERVER_KAFKA_VERSION`` when set (``4.1.1``), else
the pinned 4.4.0 (see resolve.py). It names the jars, the Docker image tag and the cache
directory alike.

If none is possible, :class:`ReferenceUnavailable` is raised. It is an error,
not a skip, so under ``CI=true`` a missing reference always fails the run;
tests must not turn it into ``pytest.skip`` when ``CI`` is set (see
:func:`must_not_skip`).

The Kafka CLI tools (``run_tool`` / ``popen_tool``) always run from the cached
jars and accept any bootstrap address, wireserver's included.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .launcher import (
    TOOLS,
    KafkaCluster,
    KafkaStartError,
    broker_ids,
    popen_tool,
    run_tool,
    tool_command,
    wait_for_brokers,
)
from .resolve import (
    DEFAULT_KAFKA_VERSION,
    KAFKA_VERSION,
    ResolutionError,
    resolve,
    which_java,
    which_mvn,
)

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "KAFKA_VERSION",
    "TOOLS",
    "KafkaCluster",
    "KafkaStartError",
    "Reference",
    "ReferenceUnavailable",
    "ResolutionError",
    "broker_ids",
    "must_not_skip",
    "require_tools",
    "popen_tool",
    "reference_kafka",
    "resolve",
    "run_tool",
    "tool_command",
    "wait_for_brokers",
    "which_java",
    "which_mvn",
]

log = logging.getLogger(__name__)

BOOTSTRAP_ENV = "WIRESERVER_REFERENCE_BOOTSTRAP"


class ReferenceUnavailable(RuntimeError):
    """No way to get a reference Kafka on this machine."""


@dataclass
class Reference:
    """What a test gets: where the reference listens and how it was obtained."""

    bootstrap_servers: str
    kind: str  # "external" | "docker" | "local"
    version: str | None  # None for an external cluster (unknown)
    cluster: KafkaCluster | None  # set for kind == "local": kill/restart/logs
    startup_seconds: float | None = None


def must_not_skip() -> bool:
    """True under CI (``CI=true``): a missing reference must fail, not skip."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_tools() -> None:
    """For a test that runs Kafka's CLI tools: fetch the jars once, and where that cannot be
    done (no Java, no jars) skip the test, or fail it under CI."""
    import pytest

    try:
        resolve()
    except Exception as exc:  # noqa: BLE001 - no JVM or jars on this machine
        if must_not_skip():
            pytest.fail(f"no Kafka CLI tools under CI: {exc}")
        pytest.skip(f"no Kafka CLI tools: {exc}")


@contextlib.contextmanager
def reference_kafka(
    nodes: int = 1,
    *,
    controllable: bool = False,
    auto_create_topics: bool = True,
    num_partitions: int = 1,
    broker_props: Mapping[str, object] | None = None,
    startup_timeout: float = 90.0,
    **cluster_kwargs,
) -> Iterator[Reference]:
    """Provide a reference Kafka for the duration of the ``with`` block.

    ``nodes`` > 1, ``controllable=True`` or ``extra_listeners=...`` skip Docker (single
    node, no fault injection, no extra listeners) and go to the local launcher. ``cluster_kwargs`` go to
    :class:`KafkaCluster` (e.g. ``keep_workdir=True``).
    """
    # Extra listeners (a SASL one, say) need a cluster launched here with their settings.
    local_only = controllable or bool(cluster_kwargs.get("extra_listeners"))
    external = os.environ.get(BOOTSTRAP_ENV, "").strip()
    if external and not local_only:
        ids = broker_ids(external, timeout_ms=10000)
        if ids is None:
            raise ReferenceUnavailable(f"{BOOTSTRAP_ENV}={external} does not answer Metadata")
        if len(ids) >= nodes:
            yield Reference(external, "external", None, None)
            return
        log.info(
            "%s has %d broker(s), %d wanted: starting a local cluster",
            BOOTSTRAP_ENV,
            len(ids),
            nodes,
        )

    if nodes == 1 and not local_only:
        from .container import ApacheKafkaContainer, docker_available

        if docker_available():
            container = ApacheKafkaContainer(
                auto_create_topics=auto_create_topics,
                num_partitions=num_partitions,
                broker_props=broker_props,
                startup_timeout=max(startup_timeout, 120.0),
            )
            with container:
                yield Reference(
                    container.bootstrap_servers,
                    "docker",
                    KAFKA_VERSION,
                    None,
                    container.startup_seconds,
                )
            return

    problems = []
    if which_java() is None:
        problems.append("no java on PATH")
    try:
        resolve()
    except ResolutionError as exc:
        problems.append(str(exc))
    if problems:
        raise ReferenceUnavailable(
            f"no reference Kafka: {BOOTSTRAP_ENV} unset, no Docker engine, and "
            + "; ".join(problems)
        )
    cluster = KafkaCluster(
        nodes,
        auto_create_topics=auto_create_topics,
        num_partitions=num_partitions,
        broker_props=broker_props,
        startup_timeout=startup_timeout,
        **cluster_kwargs,
    )
    with cluster:
        yield Reference(
            cluster.bootstrap_servers, "local", KAFKA_VERSION, cluster, cluster.startup_seconds
        )
