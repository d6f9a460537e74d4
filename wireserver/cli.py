"""The ``wireserver`` command line.

    wireserver serve [--config server.properties] [--override key=value ...]
                     [--log-level INFO] [--log-level LOGGER=LEVEL ...] [--log-config FILE]
    wireserver --version

``serve`` reads and checks the whole configuration before anything starts: a bad value or a
malformed override prints ``wireserver: <message naming the key>`` on stderr and exits with 2,
like any other usage error. Only then is ``wireserver.broker`` imported and run.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
import types
from collections.abc import Sequence

from wireserver.config import BrokerConfig, ConfigError
from wireserver.storage.configdef import ConfigValueError

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: log4j's TRACE, below DEBUG (``kafka.request.logger`` at TRACE adds the request bodies).
TRACE = 5
#: Loggers that stay quiet whatever the root level says, as in Kafka's log4j configuration:
#: the request log is turned on by name (``--log-level kafka.request.logger=DEBUG``).
QUIET_LOGGERS = {"kafka.request.logger": "WARNING"}
EXIT_CONFIG_ERROR = 2

log = logging.getLogger("wireserver.cli")


def version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version

        return dist_version("wireserver")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


class _PrintVersion(argparse.Action):
    """``--version``, looked up only when asked for: ``importlib.metadata`` and its scan of
    the installed distributions cost a serving broker (on top of what Twisted imports anyway)
    about 1 MB for a string it never shows."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"wireserver {version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wireserver",
        description="A Kafka-wire-protocol broker: stock Kafka clients work against it.",
    )
    parser.add_argument(
        "--version",
        action=_PrintVersion,
        nargs=0,
        help="show the program's version number and exit",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run a broker",
        description="Run a broker until SIGTERM or SIGINT. Keys and defaults are Kafka's; "
        "see docs/configuration.md.",
    )
    serve.add_argument("--config", metavar="PATH", help="a Kafka server.properties file")
    serve.add_argument(
        "--override",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="set one config key, over the file (repeatable)",
    )
    serve.add_argument(
        "--log-level",
        metavar="[LOGGER=]LEVEL",
        action="append",
        type=parse_log_level,
        help=f"the root level, one of {', '.join(LOG_LEVELS)} (default INFO), or one logger's, "
        "e.g. kafka.request.logger=DEBUG for the request log (repeatable)",
    )
    serve.add_argument(
        "--log-config",
        metavar="PATH",
        help="a logging configuration file (Python's logging.config.fileConfig format), "
        "applied before the --log-level settings; see docs/operations.md",
    )
    serve.add_argument(
        "--reactor",
        default="default",
        choices=REACTORS,
        help="the event loop: Twisted's default for the platform (epoll on "
        "Linux), asyncio's, or asyncio on uvloop (pip install uvloop); "
        "benchmarks/reactors.py compares them (default %(default)s)",
    )
    cluster = commands.add_parser(
        "cluster",
        help="run a development cluster (ZooKeeper and N brokers)",
        description="Start ZooKeeper and N brokers on free ports of 127.0.0.1 and print one "
        "line per broker; Ctrl-C stops them all.",
    )
    from wireserver.testing.dev_cluster import add_arguments

    add_arguments(cluster)
    return parser


def parse_log_level(text: str) -> tuple[str, str]:
    """``LEVEL`` (the root logger's) or ``LOGGER=LEVEL``: (logger name, "" for the root, and
    the level's name)."""
    name, _, level = text.rpartition("=")
    level = level.strip().upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(
            f"invalid level {level!r} in {text!r} (choose from {', '.join(LOG_LEVELS)})"
        )
    return name.strip(), level


def _level(name: str) -> int:
    return TRACE if name == "TRACE" else logging.getLevelName(name)


def configure_logging(
    levels: str | Sequence[tuple[str, str]] = "INFO", config_file: str | None = None
) -> None:
    """Log to stderr in one plain format, unless the process already set up logging; the
    root at INFO and ``QUIET_LOGGERS`` at their own levels, then ``config_file``
    (``logging.config.fileConfig``), then ``levels``: a root level, or (logger, level) pairs
    (logger "" is the root) as ``--log-level`` gives them."""
    logging.addLevelName(TRACE, "TRACE")
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    for name, level in QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(level)
    if config_file is not None:
        from logging import config as logging_config

        logging_config.fileConfig(config_file, disable_existing_loggers=False)
    if isinstance(levels, str):
        levels = [("", levels.upper())]
    for name, level in levels:
        logging.getLogger(name or None).setLevel(_level(level))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else 2
    if args.command == "serve":
        try:
            return serve(args)
        except KeyboardInterrupt:
            return 130
    if args.command == "cluster":
        from wireserver.testing.dev_cluster import run

        return run(args)
    parser.print_help(sys.stderr)
    return 2


#: Packages whose ``__init__`` a ``serve`` process skips (``_without_package_init``).
LEAN_PACKAGES = ("kafka", "crc32c")


def _without_package_init(name: str) -> None:
    """Let a broker process import a package's submodules without running its ``__init__``.

    ``import kafka.protocol`` first runs ``kafka/__init__.py``, which imports the whole client
    (producer, consumer, admin, networking): several megabytes of a broker's idle memory for
    code a broker never runs. ``crc32c/__init__.py`` looks up its own version with
    ``importlib.metadata`` (which imports ``email``, ``zipfile``, ``csv`` and reads every
    installed distribution's metadata). A ``serve`` process needs only
    ``kafka.protocol``/``kafka.record`` and ``crc32c._crc32c``, so it registers these packages
    without running their ``__init__``; the submodules import exactly as usual. (Embedded
    brokers in a test process leave them alone: the tests' own clients need them whole.)
    """
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return
    package = types.ModuleType(name)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    package.__file__ = spec.origin
    sys.modules[name] = package


class _ImportOnUse(types.ModuleType):
    """A stand-in for a module that is imported only to be re-exported: the real module is
    imported when one of its attributes is first read."""

    def __getattr__(self, attribute: str):
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attribute)


#: ``serve --reactor`` choices. The default stays Twisted's (epoll on Linux): measured against
#: asyncio on uvloop with ``python -m benchmarks.reactors``, uvloop was no faster and used
#: about 6 MiB more (see benchmarks/results.md), and epoll needs nothing beyond Twisted.
REACTORS = ("default", "asyncio", "uvloop")


def install_reactor(name: str) -> None:
    """Install the reactor ``serve --reactor`` names (before anything imports the default)."""
    if name == "default":
        from twisted.internet import reactor  # noqa: F401 - installs the platform's default

        return
    import asyncio

    from twisted.internet import asyncioreactor

    if name == "uvloop":
        import uvloop

        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    asyncioreactor.install(loop)


#: Modules a plaintext broker keeps out while the reactor is imported (``_reactor_without_tls``).
HIDDEN_WHILE_IMPORTING_REACTOR = ("OpenSSL", "ssl")


def _reactor_without_tls(config: BrokerConfig, reactor_name: str = "default") -> None:
    """Install the reactor without TLS libraries when no listener uses TLS.

    Twisted's TCP module loads pyOpenSSL (and with it ``cryptography``) whenever it is
    installed, for ``startTLS``: about 13 MB of an idle broker. wireserver's own TLS listeners
    wrap connections with ``twisted.protocols.tls`` instead, so a broker without SSL listeners
    hides pyOpenSSL while the reactor is imported; later imports see it as usual. The same
    goes for the standard ``ssl`` module (``asyncio``, which ``twisted.internet.defer`` imports,
    works without it; kafka-python's package gets a stand-in, ``_import_with_ssl_on_use``;
    the operations listener's ``prometheus_client`` needs the real one), and ``twisted.python.compat`` gets a stand-in for
    ``http.cookiejar``, which it imports only to re-export and which brings ``urllib.request``,
    ``http.client`` and ``email``: together another 2.5 MB.
    """
    if "twisted.internet.reactor" in sys.modules:
        return
    if reactor_name == "uvloop":
        import uvloop  # noqa: F401 - it needs the ssl module, so it comes before the hiding
    hidden = [name for name in HIDDEN_WHILE_IMPORTING_REACTOR if name not in sys.modules]
    if (
        any(listener.security_protocol in ("SSL", "SASL_SSL") for listener in config.listeners)
        or "http.cookiejar" in sys.modules
    ):
        hidden = []
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # makes "import <name>" fail
    stand_in = None
    if hidden:
        sys.modules["http.cookiejar"] = stand_in = _ImportOnUse("http.cookiejar")
    try:
        install_reactor(reactor_name)
    finally:
        for name in hidden:
            del sys.modules[name]
        if stand_in is not None and sys.modules.get("http.cookiejar") is stand_in:
            del sys.modules["http.cookiejar"]
    if "ssl" in hidden:
        # kafka-python 3's package ``__init__`` loads its client network layer (``kafka.net``),
        # which imports ``ssl``; the broker never uses it (it reads ``kafka.protocol`` only, but
        # Python runs the package's ``__init__`` first). The operations listener cannot avoid
        # ``ssl``: ``prometheus_client`` reads ``ssl.TLSVersion`` as it is imported.
        _import_with_ssl_on_use(["kafka"])


def _import_with_ssl_on_use(modules: list[str]) -> None:
    """Import ``modules`` with a stand-in for ``ssl`` that imports the real one only when an
    attribute of it is read."""
    if "ssl" in sys.modules:
        return
    sys.modules["ssl"] = stand_in = _ImportOnUse("ssl")
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        if sys.modules.get("ssl") is stand_in:
            del sys.modules["ssl"]


def serve(args: argparse.Namespace) -> int:
    try:
        configure_logging(args.log_level or [], args.log_config)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:  # an unreadable --log-config
        print(f"wireserver: cannot apply --log-config {args.log_config}: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    try:
        config = BrokerConfig.load(args.config, args.override)
    except (ConfigError, ConfigValueError) as exc:
        print(f"wireserver: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    for name in LEAN_PACKAGES:
        _without_package_init(name)
    try:
        _reactor_without_tls(config, args.reactor)
    except ImportError as exc:  # --reactor uvloop without uvloop installed
        print(f"wireserver: cannot install the {args.reactor} reactor: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    try:
        from wireserver.broker import serve_forever
    except ImportError as exc:
        log.error("cannot load the broker", exc_info=True)
        print(f"wireserver: cannot load the broker: {exc}", file=sys.stderr)
        return 1
    raise_open_files_limit()
    return serve_forever(config)


def raise_open_files_limit() -> None:
    """Raise the soft open-files limit to the hard one, as the JVM does for Kafka at start
    (HotSpot's ``MaxFDLimit``): a broker's descriptors grow with connections and partitions."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (OSError, ValueError):
            log.info("the open-files limit stays at %d (hard limit %d)", soft, hard)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
