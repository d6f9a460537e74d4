"""A one-node reference Kafka in Docker (``apache/kafka:<KAFKA_VERSION>``) via testcontainers.

Used only where a Docker engine answers (see :func:`docker_available`). Note:
testcontainers-python's own ``KafkaContainer`` drives Confluent's
``cp-kafka`` image through ``/etc/confluent/docker/*`` scripts that the Apache
image does not have, so this module builds on testcontainers' generic
``DockerContainer`` instead and does what testcontainers-java does for
``apache/kafka``: the container waits for a start script, which is written
after start-up (when the host port mapping is known) and exports
``KAFKA_ADVERTISED_LISTENERS`` before exec'ing the image's own
``/etc/kafka/docker/run``. Every broker setting is passed as the image's
``KAFKA_*`` environment variables.
"""

from __future__ import annotations

import io
import logging
import os
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path

from .resolve import KAFKA_VERSION

log = logging.getLogger(__name__)

IMAGE = f"apache/kafka:{KAFKA_VERSION}"
CLIENT_PORT = 9092  # exposed, advertised as <docker host>:<mapped port>
BROKER_PORT = 9093  # inside the container only
CONTROLLER_PORT = 9094  # inside the container only
START_SCRIPT = "/wireserver-start.sh"
CLUSTER_ID = "d2lyZXNlcnZlci1yZWZlcg"

_SOCKETS = ("/var/run/docker.sock", "~/.docker/run/docker.sock", "~/.docker/desktop/docker.sock")


def docker_available(timeout: float = 3.0) -> bool:
    """True only if a Docker engine answers a ping within ``timeout`` seconds.

    Answers False at once when no DOCKER_HOST / testcontainers host is set and
    no well-known socket exists (a docker CLI without an engine, as here), and
    when ``WIRESERVER_REFERENCE_DOCKER=0``.
    """
    if os.environ.get("WIRESERVER_REFERENCE_DOCKER", "").lower() in ("0", "false", "no"):
        return False
    host = os.environ.get("DOCKER_HOST")
    if not host:
        try:
            from testcontainers.core.docker_client import get_docker_host

            host = get_docker_host()
        except Exception:
            host = None
    sockets = [Path(p).expanduser() for p in _SOCKETS]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        sockets.append(Path(runtime) / "docker.sock")
    if not host and not any(s.exists() for s in sockets):
        return False
    try:
        import docker

        kwargs = {"base_url": host} if host else {}
        client = (
            docker.DockerClient(timeout=timeout, **kwargs)
            if host
            else docker.from_env(timeout=timeout)
        )
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception as exc:
        log.debug("docker not available: %r", exc)
        return False


def env_name(prop: str) -> str:
    """The apache/kafka image's env var for a broker property:
    ``.`` -> ``_``, ``_`` -> ``__``, ``-`` -> ``___``, upper-cased, ``KAFKA_`` prefix."""
    out = prop.replace("_", "__").replace("-", "___").replace(".", "_")
    return "KAFKA_" + out.upper()


class ApacheKafkaContainer:
    """Start/stop wrapper with ``bootstrap_servers`` like :class:`KafkaCluster`."""

    def __init__(
        self,
        *,
        auto_create_topics: bool = True,
        num_partitions: int = 1,
        broker_props: Mapping[str, object] | None = None,
        image: str = IMAGE,
        startup_timeout: float = 120.0,
    ):
        from testcontainers.core.container import DockerContainer

        self.image = image
        self.startup_timeout = startup_timeout
        self.startup_seconds: float | None = None
        props: dict[str, object] = {
            "node.id": 1,
            "process.roles": "broker,controller",
            "controller.quorum.voters": f"1@localhost:{CONTROLLER_PORT}",
            "listeners": (
                f"PLAINTEXT://0.0.0.0:{CLIENT_PORT},BROKER://0.0.0.0:{BROKER_PORT},"
                f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}"
            ),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "BROKER",
            "controller.listener.names": "CONTROLLER",
            "offsets.topic.replication.factor": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            "group.initial.rebalance.delay.ms": 0,
            "num.partitions": num_partitions,
            "auto.create.topics.enable": str(auto_create_topics).lower(),
        }
        props.update(broker_props or {})
        self._container = DockerContainer(image)
        self._container.with_env("CLUSTER_ID", CLUSTER_ID)
        for key, value in props.items():
            self._container.with_env(env_name(key), str(value))
        self._container.with_exposed_ports(CLIENT_PORT)
        self._container.with_command(
            [
                "sh",
                "-c",
                f"while [ ! -f {START_SCRIPT} ]; do sleep 0.1; done; exec sh {START_SCRIPT}",
            ]
        )
        self._bootstrap: str | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self._bootstrap is None:
            raise RuntimeError("container not started")
        return self._bootstrap

    def start(self) -> ApacheKafkaContainer:
        from .launcher import KafkaStartError, wait_for_brokers

        started = time.monotonic()
        self._container.start()
        host = self._container.get_container_host_ip()
        port = self._container.get_exposed_port(CLIENT_PORT)
        self._bootstrap = f"{host}:{port}"
        script = (
            "#!/bin/sh\n"
            f"export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://{host}:{port},"
            f"BROKER://$(hostname -i | cut -d' ' -f1):{BROKER_PORT}\n"
            "exec /etc/kafka/docker/run\n"
        ).encode()
        self._put_file(script, START_SCRIPT)
        try:
            wait_for_brokers(self._bootstrap, 1, timeout=self.startup_timeout)
        except KafkaStartError as exc:
            logs = self._container.get_wrapped_container().logs(tail=60).decode("utf-8", "replace")
            self.stop()
            raise KafkaStartError(f"{exc}\n--- container log (tail) ---\n{logs}") from None
        self.startup_seconds = time.monotonic() - started
        return self

    def _put_file(self, content: bytes, path: str) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name=path.lstrip("/"))
            info.size = len(content)
            info.mode = 0o755
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(content))
        buf.seek(0)
        self._container.get_wrapped_container().put_archive("/", buf.getvalue())

    def stop(self) -> None:
        try:
            self._container.stop()
        except Exception as exc:  # already gone
            log.debug("container stop: %r", exc)

    def __enter__(self) -> ApacheKafkaContainer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
