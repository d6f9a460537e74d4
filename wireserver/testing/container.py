"""``KafkaContainer``: shaped like testcontainers' class, so existing tests switch to a
wireserver broker with one import."""

from __future__ import annotations

from typing import Any

from wireserver.testing.embedded import EmbeddedBroker, _AdminMixin


def _env_to_config_key(name: str) -> str | None:
    """Confluent image convention: ``KAFKA_LOG_RETENTION_MS`` → ``log.retention.ms``
    (``__`` → ``_``, ``___`` → ``-``)."""
    if not name.startswith("KAFKA_"):
        return None
    body = name[len("KAFKA_") :].lower()
    return (
        body.replace("___", "\0")
        .replace("__", "\1")
        .replace("_", ".")
        .replace("\0", "-")
        .replace("\1", "_")
    )


class KafkaContainer(_AdminMixin):
    """Stands in for ``testcontainers.kafka.KafkaContainer``: same constructor, ``start()``,
    ``stop()``, ``get_bootstrap_server()``, context manager. The image is accepted and ignored;
    ``with_env("KAFKA_SOME_KEY", v)`` sets broker key ``some.key`` (the Confluent image rule);
    other environment variables are ignored. ``mode`` picks the EmbeddedBroker mode.
    Unlike the Docker one, it has ``controls`` (docs/testing.md)."""

    def __init__(
        self, image: str = "wireserver", port: int = 9093, mode: str = "thread", **kwargs: Any
    ):
        self.image = image
        self.port = port
        self.mode = mode
        self.env: dict[str, str] = {}
        self._overrides: dict[str, Any] = {}
        self._broker: EmbeddedBroker | None = None

    def with_env(self, key: str, value: Any) -> KafkaContainer:
        self.env[key] = str(value)
        config_key = _env_to_config_key(key)
        if config_key is not None:
            self._overrides[config_key] = value
        return self

    def with_kraft(self) -> KafkaContainer:
        return self

    def with_cluster_id(self, cluster_id: str) -> KafkaContainer:
        self._overrides["cluster.id"] = cluster_id
        return self

    def with_name(self, name: str) -> KafkaContainer:
        return self

    def start(self, timeout: float = 60.0) -> KafkaContainer:
        if self._broker is None:
            self._broker = EmbeddedBroker(
                self.mode, overrides=self._overrides, startup_timeout=timeout
            ).start()
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        if self._broker is not None:
            self._broker.close()
            self._broker = None

    def __enter__(self) -> KafkaContainer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def broker(self) -> EmbeddedBroker:
        if self._broker is None:
            raise RuntimeError("the KafkaContainer has not been started")
        return self._broker

    @property
    def controls(self) -> Any:
        """The broker's test controls (``EmbeddedBroker.controls``): errors, latency,
        disconnects, throttling, a clock that jumps, the broker down and up."""
        return self.broker.controls

    @property
    def bootstrap_servers(self) -> str:  # type: ignore[override]
        return self.broker.bootstrap_servers

    def get_bootstrap_server(self) -> str:
        return self.broker.bootstrap_servers

    def get_container_host_ip(self) -> str:
        return self.broker.host

    def get_exposed_port(self, port: int | None = None) -> int:
        return self.broker.port
