"""Resolve the reference Apache Kafka jars from Maven Central into a local cache.

The jars never live in the repository. ``pom.xml`` beside this file names
``org.apache.kafka:kafka_2.13`` (the broker and ``kafka.tools.StorageTool``),
``org.apache.kafka:kafka-tools`` (the command-line tools) and an SLF4J->log4j2
binding; Maven copies them with every runtime dependency into::

    $WIRESERVER_KAFKA_CACHE/kafka-<version>/lib      (when the variable is set)
    ~/.cache/wireserver/kafka-<version>/lib           (otherwise)

The version is ``$WIRESERVER_KAFKA_VERSION`` when that variable is set (e.g.
``WIRESERVER_KAFKA_VERSION=4.1.1``), otherwise :data:`DEFAULT_KAFKA_VERSION`
(the ``<kafka.version>`` that pom.xml pins); every user of :data:`KAFKA_VERSION`
(the compatibility suite, the protocol conformance tests, the benchmarks, the
Docker image tag) follows it. The exact command (run from any directory)::

    mvn -B -q -f compat_tests/reference/pom.xml -Dkafka.version=<version> \\
        dependency:copy-dependencies -DincludeScope=runtime \\
        -DoutputDirectory=<tmp dir next to lib>

The copy goes to a temporary sibling directory that is renamed to ``lib`` and
then gets a marker file ``.wireserver-complete`` listing every jar and the hash
of the pom it came from. A later run that finds the marker, the same pom hash
and every listed jar (``kafka_2.13``, ``kafka-tools`` and ``kafka-clients`` of
the version asked for among them) skips Maven entirely; each version has its own
directory and marker. Concurrent resolutions (two pytest
processes) are serialised with a lock file.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: The pinned default Kafka version; must equal <kafka.version> in pom.xml.
DEFAULT_KAFKA_VERSION = "4.4.0"

#: Names another release to compare against (``WIRESERVER_KAFKA_VERSION=4.1.1``).
VERSION_ENV = "WIRESERVER_KAFKA_VERSION"

#: The reference version in use: ``$WIRESERVER_KAFKA_VERSION``, else the pinned default.
KAFKA_VERSION = os.environ.get(VERSION_ENV, "").strip() or DEFAULT_KAFKA_VERSION

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
LOG4J2_BROKER = HERE / "log4j2-broker.xml"
LOG4J2_TOOLS = HERE / "log4j2-tools.xml"

MARKER = ".wireserver-complete"
CACHE_ENV = "WIRESERVER_KAFKA_CACHE"

#: Jars that must be present for the broker and the tools to run at all.
REQUIRED_JAR_PREFIXES = (
    "kafka_2.13-",
    "kafka-tools-",
    "kafka-clients-",
    "kafka-server-",
    "kafka-storage-",
    "scala-library-",
    "slf4j-api-2.",
    "log4j-slf4j2-impl-",
    "log4j-core-",
)


class ResolutionError(RuntimeError):
    """Java or Maven is missing, or Maven could not resolve the jars."""


def cache_root() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return Path.home() / ".cache" / "wireserver"


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"kafka-{version}"


def lib_dir(version: str = KAFKA_VERSION) -> Path:
    return kafka_home(version) / "lib"


def _pom_hash(pom: Path = POM) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


def classpath(lib: Path) -> str:
    """A JVM class path naming every jar in ``lib`` (a ``lib/*`` wildcard)."""
    return str(lib / "*")


def which_java() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def which_mvn() -> str | None:
    return shutil.which("mvn")


#: Jars whose file names carry the Kafka version itself.
VERSIONED_JAR_PREFIXES = ("kafka_2.13-", "kafka-tools-", "kafka-clients-")


@dataclass(frozen=True)
class JarSet:
    """One Maven resolution into ``kafka-<version>/<dirname>``: the broker and tools
    (:data:`BROKER_JARS`, this module's pom) or another pom's jars (the applications of
    compat_tests/applications.py), each with its own marker."""

    pom: Path
    dirname: str
    required: tuple[str, ...]  # jar name prefixes that must be there
    versioned: tuple[str, ...]  # prefixes whose jar carries the version asked for
    #: version -> extra ``-D`` properties for Maven
    properties: Callable[[str], dict[str, str]] = lambda version: {}


BROKER_JARS = JarSet(POM, "lib", REQUIRED_JAR_PREFIXES, VERSIONED_JAR_PREFIXES)


def is_complete(lib: Path, version: str | None = None, jars_of: JarSet = BROKER_JARS) -> bool:
    """True when ``lib`` holds a finished copy made from the current pom (and, when
    ``version`` is given, Kafka's own jars of that version)."""
    marker = lib / MARKER
    try:
        lines = marker.read_text().splitlines()
    except OSError:
        return False
    if not lines or lines[0] != f"pom-sha256 {_pom_hash(jars_of.pom)}":
        return False
    jars = [line for line in lines[1:] if line]
    if not jars or not all((lib / jar).is_file() for jar in jars):
        return False
    if version is not None and not all(f"{p}{version}.jar" in jars for p in jars_of.versioned):
        return False
    return all(any(j.startswith(p) for j in jars) for p in jars_of.required)


def resolve(
    version: str = KAFKA_VERSION,
    *,
    quiet: bool = True,
    timeout: float = 900.0,
    jars_of: JarSet = BROKER_JARS,
) -> Path:
    """Return the lib directory for ``version``, running Maven on first use.

    Raises :class:`ResolutionError` when Maven is needed but missing or fails.
    """
    lib = kafka_home(version) / jars_of.dirname
    if is_complete(lib, version, jars_of):
        return lib
    mvn = which_mvn()
    if mvn is None:
        raise ResolutionError(
            f"Kafka {version} jars are not cached in {lib} and 'mvn' is not on PATH"
        )
    home = kafka_home(version)
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".resolve.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_complete(lib, version, jars_of):  # another process finished while we waited
            return lib
        tmp = home / f"{jars_of.dirname}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [
            mvn,
            "-B",
            *(["-q"] if quiet else []),
            "-f",
            str(jars_of.pom),
            f"-Dkafka.version={version}",
            *(f"-D{k}={v}" for k, v in jars_of.properties(version).items()),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={tmp}",
        ]
        started = time.monotonic()
        try:
            proc = subprocess.run(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=timeout,
                cwd=str(home),
            )
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ResolutionError(f"Maven timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            tail = "\n".join(proc.stdout.splitlines()[-40:])
            raise ResolutionError(f"Maven failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
        jars = sorted(p.name for p in tmp.glob("*.jar"))
        if lib.exists():
            shutil.rmtree(lib)
        tmp.rename(lib)
        (lib / MARKER).write_text("\n".join([f"pom-sha256 {_pom_hash(jars_of.pom)}", *jars]) + "\n")
        (home / f"{jars_of.dirname}.resolve.log").write_text(
            f"{' '.join(cmd)}\nseconds {time.monotonic() - started:.1f}\n"
            f"jars {len(jars)}\n{proc.stdout}"
        )
        if not is_complete(lib, version, jars_of):
            raise ResolutionError(
                f"Maven succeeded but {lib} lacks a required jar "
                f"(need prefixes {jars_of.required}, version {version})"
            )
        return lib


def main() -> None:  # python -m compat_tests.reference [resolve]
    started = time.monotonic()
    lib = resolve(quiet=False)
    size = sum(p.stat().st_size for p in lib.glob("*.jar"))
    print(
        f"{lib}: {len(list(lib.glob('*.jar')))} jars, {size / 1e6:.1f} MB, "
        f"{time.monotonic() - started:.1f}s"
    )


if __name__ == "__main__":
    main()
