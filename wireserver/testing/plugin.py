"""The pytest plugin (the ``wireserver`` ``pytest11`` entry point): test brokers as fixtures.

Fixtures
    ``kafka_broker``          a broker for this test (see "Fresh or shared" below)
    ``kafka_bootstrap``       its ``"host:port"``
    ``kafka_broker_session``  the session's shared broker, with no per-test cleanup
    ``kafka_controls``        ``kafka_broker.controls`` (faults, latency, the broker's clock:
                              ``wireserver.testing.controls``), reset before and after the test
                              (a shared broker's controls are reset after every test anyway)
    ``kafka_cluster``         a 3-broker ``LocalCluster`` (``.bootstrap``, ``.brokers``) on a
                              ZooKeeper started for the session, each cluster in its own chroot,
                              with ``FAST_FAILOVER`` settings; shared by the session: after each
                              test its topics are deleted, its brokers' controls reset and any
                              broker the test stopped or killed is started again
    ``kafka_cluster_session`` that shared cluster, with no per-test cleanup
    ``wireserver_zookeeper``  the session's ``ZooKeeperServer`` (``.connect``); missing
                              ZooKeeper skips the test, or fails it under ``CI=true``

Marker
    ``@pytest.mark.wireserver(overrides={...}, brokers=N, mode="thread"|"subprocess")`` gives
    the test its own fresh broker through ``kafka_broker`` (``mode`` as given, else the
    session's), or its own cluster of ``brokers`` brokers (default 3) through
    ``kafka_cluster``, with ``overrides`` over the usual settings; closed after it. A
    cluster's brokers are subprocesses unless ``mode="thread"``: then they run on the test
    process's reactor thread and start and close in a fifth of the time (about 0.5 s against
    2.7 s), but cannot be killed.

Options (ini in brackets)
    ``--wireserver-mode=thread|subprocess`` [``wireserver_mode``]
    ``--wireserver-override KEY=VALUE``, repeatable [``wireserver_overrides``, one a line]:
    broker settings for every broker the plugin starts, over ``FIXTURE_DEFAULTS`` (one
    partition for each internal topic) and ``EmbeddedBroker``'s ``TEST_DEFAULTS``
    ``--wireserver-fresh[=true|false]`` [``wireserver_fresh``]: a fresh broker per test
    ``--kafka-bootstrap HOST:PORT``: ``kafka_broker`` is that running broker (a real Kafka, say)
    and every non-internal topic on it is deleted after each test; nothing is started

Fresh or shared
    A fresh broker per test is the default in thread mode: starting and closing one costs about
    6 ms of wall and broker time when its data dir is on tmpfs (the fixtures put it on
    ``/dev/shm`` when that has room, ``temp_parent``; on this machine's disk it is 15 to 60
    ms, the fsyncs),
    about what deleting a test's topics from a shared broker takes (4 to 6 ms), and it isolates
    what a topic cleanup leaves behind: consumer groups, producer ids and transactions, ACLs,
    quotas, dynamic configs, SCRAM users. A typical test (a topic, 10 records produced and
    consumed) costs the broker about 25 ms either way (benchmarks/results.md, "Test-broker
    fixtures"). A subprocess broker costs a process start (about a second, mostly imports), so
    in subprocess mode ``kafka_broker`` stays one broker shared by the session, topics deleted
    after each test. ``wireserver_fresh`` (or ``--wireserver-fresh=``) set to true or false
    decides for either mode. A cluster takes seconds to start, so ``kafka_cluster`` is shared
    unless a test is marked.

pytest loads this module in every session of a project that has wireserver installed: it
imports nothing heavy (no Twisted, no Kafka client, no broker) until a fixture starts a broker.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from wireserver.testing.cluster import FAST_FAILOVER, LocalCluster
from wireserver.testing.embedded import MODES, EmbeddedBroker, ExternalBroker, temp_parent

try:
    import pytest
except ImportError:  # pragma: no cover - used without pytest
    pytest = None  # type: ignore[assignment]

MARKER = "wireserver"
MARKER_HELP = (
    "wireserver(overrides={...}, brokers=N, mode='thread'|'subprocess'): the test gets its own "
    "fresh broker (kafka_broker) or cluster of N brokers (kafka_cluster, default 3) with these "
    "broker settings"
)
#: Settings of the brokers the fixtures start, over ``TEST_DEFAULTS`` and under the options'
#: and the marker's: one partition for each internal topic (as Testcontainers' Kafka has),
#: because a fresh broker creates ``__consumer_offsets`` when a test first uses a consumer
#: group, and Kafka's 50 partitions cost that test about 17 ms of broker time on tmpfs and
#: 0.4 s on a disk (an fsync or two per partition), where one partition costs 2 ms.
FIXTURE_DEFAULTS = {
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
}
#: How many brokers ``kafka_cluster`` starts unless the marker says otherwise.
CLUSTER_SIZE = 3
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
#: ZooKeeper chroots of the clusters this process started, one each.
_chroots = itertools.count(1)


@dataclass(frozen=True)
class BrokerWish:
    """What ``@pytest.mark.wireserver(...)`` asks for, checked."""

    overrides: dict[str, Any] = field(default_factory=dict)
    brokers: int | None = None
    mode: str | None = None


def read_marker(args: tuple, kwargs: Mapping[str, Any]) -> BrokerWish:
    """The marker's arguments as a :class:`BrokerWish`; a ``ValueError`` naming what is wrong
    with them otherwise."""
    if args:
        raise ValueError(
            f"@pytest.mark.{MARKER} takes keyword arguments only (overrides=, brokers=, "
            f"mode=), not {args!r}"
        )
    unknown = sorted(set(kwargs) - {"overrides", "brokers", "mode"})
    if unknown:
        raise ValueError(
            f"@pytest.mark.{MARKER}: unknown argument(s) {', '.join(unknown)} "
            "(it takes overrides=, brokers=, mode=)"
        )
    overrides = kwargs.get("overrides") or {}
    if not isinstance(overrides, Mapping) or not all(isinstance(k, str) for k in overrides):
        raise ValueError(
            f"@pytest.mark.{MARKER}: overrides must be a dict of broker config keys, "
            f"not {overrides!r}"
        )
    brokers = kwargs.get("brokers")
    if brokers is not None and (
        isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1
    ):
        raise ValueError(f"@pytest.mark.{MARKER}: brokers must be an int >= 1, not {brokers!r}")
    mode = kwargs.get("mode")
    if mode is not None and mode not in MODES:
        raise ValueError(f"@pytest.mark.{MARKER}: mode must be one of {MODES}, not {mode!r}")
    return BrokerWish(dict(overrides), brokers, mode)


def parse_fresh(text: str, source: str) -> bool | None:
    """``wireserver_fresh``'s value: True, False, or None when unset (the mode decides)."""
    value = text.strip().lower()
    if not value:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{source} must be true or false, not {text!r}")


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
            help="a broker config key for the brokers the fixtures start",
        )
        group.addoption(
            "--wireserver-fresh",
            nargs="?",
            const="true",
            default=None,
            metavar="true|false",
            help="a fresh broker for each test using kafka_broker (default: ini "
            "wireserver_fresh, else true in thread mode and false in subprocess mode)",
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
            "broker config for the brokers the fixtures start, KEY=VALUE a line",
            type="linelist",
            default=[],
        )
        parser.addini(
            "wireserver_fresh",
            "true: a fresh broker for each test using kafka_broker; false: one shared by "
            "the session (default: true in thread mode, false in subprocess mode)",
            default="",
        )

    def pytest_configure(config: Any) -> None:
        config.addinivalue_line("markers", MARKER_HELP)
        # A bad option is a usage error at once, not an error in the first test using a broker.
        _fixture_overrides(config)
        _fresh_by_default(config)

    def _fixture_overrides(config: Any) -> dict[str, str]:
        """``FIXTURE_DEFAULTS`` and the options' ``KEY=VALUE`` settings over them."""
        overrides = dict(FIXTURE_DEFAULTS)
        for item in list(config.getini("wireserver_overrides")) + list(
            config.getoption("wireserver_override")
        ):
            key, sep, value = item.partition("=")
            if not sep:
                raise pytest.UsageError(f"wireserver override {item!r} is not KEY=VALUE")
            overrides[key.strip()] = value.strip()
        return overrides

    def _session_mode(config: Any) -> str:
        return config.getoption("wireserver_mode") or config.getini("wireserver_mode")

    def _fresh_by_default(config: Any) -> bool:
        """Whether an unmarked test gets its own broker (see the module docstring)."""
        if config.getoption("kafka_bootstrap"):
            return False
        try:
            fresh = parse_fresh(config.getoption("wireserver_fresh") or "", "--wireserver-fresh")
            if fresh is None:
                fresh = parse_fresh(config.getini("wireserver_fresh"), "ini wireserver_fresh")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        return _session_mode(config) == "thread" if fresh is None else fresh

    def _wish(request: Any) -> BrokerWish | None:
        """The test's ``@pytest.mark.wireserver`` (the closest one), checked; None unmarked."""
        marker = request.node.get_closest_marker(MARKER)
        if marker is None:
            return None
        try:
            return read_marker(marker.args, marker.kwargs)
        except ValueError as exc:
            pytest.fail(str(exc), pytrace=False)

    @pytest.fixture(scope="session")
    def kafka_broker_session(pytestconfig: Any) -> Iterator[Any]:
        """The session's broker, without per-test cleanup (see ``kafka_broker``)."""
        external = pytestconfig.getoption("kafka_bootstrap")
        if external:
            yield ExternalBroker(external)
            return
        broker = EmbeddedBroker(
            _session_mode(pytestconfig),
            overrides=_fixture_overrides(pytestconfig),
            tmp_root=temp_parent(),
        )
        broker.start()
        try:
            yield broker
        finally:
            broker.close()

    @pytest.fixture
    def kafka_broker(request: Any, pytestconfig: Any) -> Iterator[Any]:
        """A broker for this test: its own (marked, or fresh by default) and closed after it,
        or the session's, its controls reset and every non-internal topic deleted after the
        test so tests don't see each other's topics, records or faults."""
        wish = _wish(request)
        if wish is None and not _fresh_by_default(pytestconfig):
            shared = request.getfixturevalue("kafka_broker_session")
            yield shared
            _reset_controls(shared)  # first: a listener the test took down is up again
            shared.delete_all_topics()
            return
        wish = wish or BrokerWish()
        if wish.brokers not in (None, 1):
            pytest.fail(
                f"kafka_broker is one broker: take kafka_cluster for brokers={wish.brokers}",
                pytrace=False,
            )
        if pytestconfig.getoption("kafka_bootstrap"):
            pytest.skip(
                f"@pytest.mark.{MARKER} asks for a broker of its own; --kafka-bootstrap "
                "runs the tests against one already running"
            )
        broker = EmbeddedBroker(
            wish.mode or _session_mode(pytestconfig),
            overrides={**_fixture_overrides(pytestconfig), **wish.overrides},
            tmp_root=temp_parent(),
        )
        try:
            broker.start()
            yield broker
        finally:
            broker.close()

    @pytest.fixture
    def kafka_bootstrap(kafka_broker: Any) -> str:
        """``"host:port"`` of ``kafka_broker`` (with its per-test cleanup)."""
        return kafka_broker.bootstrap_servers

    @pytest.fixture
    def kafka_controls(kafka_broker: Any) -> Iterator[Any]:
        """``kafka_broker.controls``, reset (every control undone, the clock back) before the
        test and after it, so no fault or delay of one test is seen by the next."""
        controls = getattr(kafka_broker, "controls", None)
        if controls is None:
            pytest.skip(
                "kafka_controls needs a wireserver broker the plugin starts (not "
                f"--kafka-bootstrap); {kafka_broker!r} has no controls"
            )
        controls.reset()
        yield controls
        controls.reset()

    @pytest.fixture(scope="session")
    def wireserver_zookeeper() -> Iterator[Any]:
        """A ZooKeeper server for the session's clusters (each in its own chroot)."""
        from wireserver.cluster.zookeeper import ZooKeeperError, ZooKeeperServer, available

        def missing(reason: str) -> None:
            if os.environ.get("CI") == "true":
                pytest.fail(reason, pytrace=False)
            pytest.skip(reason)

        if not available():
            missing("kafka_cluster needs ZooKeeper (apt-get install zookeeper) and Java")
        server = ZooKeeperServer()
        try:
            server.start()
        except ZooKeeperError as exc:
            server.close()
            missing(f"kafka_cluster's ZooKeeper did not start: {exc}")
        try:
            yield server
        finally:
            server.close()

    def _start_cluster(
        zookeeper: Any,
        config: Any,
        count: int,
        overrides: Mapping[str, Any],
        mode: str = "subprocess",
    ) -> LocalCluster:
        cluster = LocalCluster(
            f"{zookeeper.connect}/wireserver-fixture-{next(_chroots)}",
            count,
            {**FAST_FAILOVER, **_fixture_overrides(config), **overrides},
            mode=mode,
            tmp_root=temp_parent(),
        )
        try:
            return cluster.start(together=True)
        except BaseException:
            cluster.close()
            raise

    @pytest.fixture(scope="session")
    def kafka_cluster_session(pytestconfig: Any, wireserver_zookeeper: Any) -> Iterator[Any]:
        """The session's cluster, without per-test cleanup (see ``kafka_cluster``)."""
        cluster = _start_cluster(wireserver_zookeeper, pytestconfig, CLUSTER_SIZE, {})
        try:
            yield cluster
        finally:
            cluster.close()

    @pytest.fixture
    def kafka_cluster(request: Any, pytestconfig: Any) -> Iterator[Any]:
        """A cluster for this test: its own when marked, else the session's, tidied after the
        test (brokers it stopped started again, controls reset, topics deleted)."""
        wish = _wish(request)
        if wish is None:
            shared = request.getfixturevalue("kafka_cluster_session")
            yield shared
            _tidy_cluster(shared)
            return
        zookeeper = request.getfixturevalue("wireserver_zookeeper")
        cluster = _start_cluster(
            zookeeper,
            pytestconfig,
            wish.brokers or CLUSTER_SIZE,
            wish.overrides,
            wish.mode or "subprocess",
        )
        try:
            yield cluster
        finally:
            cluster.close()

    def _tidy_cluster(cluster: LocalCluster) -> None:
        """Make the shared cluster as the next test expects it: every broker running and
        listed by the others, no controls active, no topics."""
        stopped = [broker for broker in cluster.brokers.values() if not broker.running]
        for broker in stopped:
            broker.start()
        if stopped:
            cluster.wait_ready()
        for broker in cluster.brokers.values():
            _reset_controls(broker)
        cluster.delete_all_topics()

    def _reset_controls(broker: Any) -> None:
        """Undo every control a test left on a shared broker (through ``kafka_controls`` or
        ``broker.controls`` itself), when it has its controls on (``TEST_DEFAULTS``)."""
        if (
            isinstance(broker, EmbeddedBroker)
            and broker.running
            and broker.overrides.get("controls.enable", "").lower() == "true"
        ):
            broker.controls.reset()
