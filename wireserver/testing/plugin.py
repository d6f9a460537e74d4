"""The pytest plugin (the ``wireserver`` ``pytest11`` entry point): the ``kafka_broker``,
``kafka_bootstrap`` and ``kafka_broker_session`` fixtures and their options (see the package
docstring). pytest loads this module in every session of a project that has wireserver
installed, so it imports nothing heavy until a broker starts."""

from __future__ import annotations

from typing import Any

from wireserver.testing.embedded import MODES, EmbeddedBroker, ExternalBroker

try:
    import pytest
except ImportError:  # pragma: no cover - used without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    def pytest_addoption(parser: Any) -> None:
        group = parser.getgroup("wireserver", "wireserver test broker")
        group.addoption(
            "--wireserver-mode",
            choices=MODES,
            default=None,
            help="how the kafka_broker fixture runs wireserver "
            "(default: ini wireserver_mode, else thread)",
        )
        group.addoption(
            "--wireserver-override",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a broker config key for kafka_broker",
        )
        group.addoption(
            "--kafka-bootstrap",
            default=None,
            metavar="HOST:PORT",
            help="run kafka_broker tests against this running broker instead; "
            "every non-internal topic on it is deleted after each test",
        )
        parser.addini("wireserver_mode", "thread or subprocess", default="thread")
        parser.addini(
            "wireserver_overrides",
            "broker config for kafka_broker, KEY=VALUE a line",
            type="linelist",
            default=[],
        )

    def _fixture_overrides(config: Any) -> dict[str, str]:
        overrides = {}
        for item in list(config.getini("wireserver_overrides")) + list(
            config.getoption("wireserver_override")
        ):
            key, sep, value = item.partition("=")
            if not sep:
                raise pytest.UsageError(f"wireserver override {item!r} is not KEY=VALUE")
            overrides[key.strip()] = value.strip()
        return overrides

    @pytest.fixture(scope="session")
    def kafka_broker_session(pytestconfig: Any):
        """The session's broker, without per-test cleanup (see ``kafka_broker``)."""
        external = pytestconfig.getoption("kafka_bootstrap")
        if external:
            yield ExternalBroker(external)
            return
        mode = pytestconfig.getoption("wireserver_mode") or pytestconfig.getini("wireserver_mode")
        broker = EmbeddedBroker(mode, overrides=_fixture_overrides(pytestconfig))
        broker.start()
        try:
            yield broker
        finally:
            broker.close()

    @pytest.fixture
    def kafka_broker(kafka_broker_session: Any):
        """A broker shared by the whole session; every non-internal topic is deleted after each
        test that uses it, so tests don't see each other's topics or records."""
        yield kafka_broker_session
        kafka_broker_session.delete_all_topics()

    @pytest.fixture
    def kafka_bootstrap(kafka_broker: Any) -> str:
        """``"host:port"`` of ``kafka_broker`` (with its per-test cleanup)."""
        return kafka_broker.bootstrap_servers
