"""The class-data sharing archives of Kafka's short tools (compat_tests/reference/cds.py): a
first run writes one, a later run uses it, and a broken one is dropped, never used."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from compat_tests.reference import require_tools, resolve
from compat_tests.reference.cds import SETTLED_S, options
from compat_tests.reference.launcher import TOOL_JVM_OPTS_SHORT, _java, classpath

pytestmark = pytest.mark.integration


def run_version(java: str, cp: str, sharing: list[str]) -> subprocess.CompletedProcess:
    """A JVM with the tools' options that loads Kafka's version class and prints it."""
    return subprocess.run(
        [
            java,
            *TOOL_JVM_OPTS_SHORT,
            *sharing,
            "-cp",
            cp,
            "org.apache.kafka.tools.TopicCommand",
            "--version",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def settle(folder) -> None:
    """Age the part files as if their JVMs had exited a while ago."""
    past = time.time() - SETTLED_S - 1
    for part in folder.glob("*.part"):
        os.utime(part, (past, past))


def test_first_run_writes_the_archive_later_runs_use_it(tmp_path):
    require_tools()
    java, cp = _java(), classpath(resolve())
    first = options(tmp_path, "kafka-topics", java, TOOL_JVM_OPTS_SHORT, cp)
    assert any(o.startswith("-XX:ArchiveClassesAtExit=") for o in first), first
    done = run_version(java, cp, first)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
    assert done.stderr == "" and len(done.stdout.splitlines()) == 1  # nothing else printed
    [part] = tmp_path.glob("*.part")
    assert options(tmp_path, "kafka-topics", java, TOOL_JVM_OPTS_SHORT, cp) == []  # not settled
    settle(tmp_path)
    later = options(tmp_path, "kafka-topics", java, TOOL_JVM_OPTS_SHORT, cp)
    [archive] = tmp_path.glob("*.jsa")
    assert later[0] == f"-XX:SharedArchiveFile={archive}" and not part.exists()
    again = run_version(java, cp, later)
    assert (again.returncode, again.stdout, again.stderr) == (0, done.stdout, "")


def test_a_truncated_archive_is_dropped_not_used(tmp_path):
    require_tools()
    java, cp = _java(), classpath(resolve())
    first = options(tmp_path, "kafka-topics", java, TOOL_JVM_OPTS_SHORT, cp)
    assert run_version(java, cp, first).returncode == 0
    [part] = tmp_path.glob("*.part")
    with open(part, "r+b") as f:  # a JVM killed while writing it
        f.truncate(part.stat().st_size // 3)
    settle(tmp_path)
    after = options(tmp_path, "kafka-topics", java, TOOL_JVM_OPTS_SHORT, cp)
    assert any(o.startswith("-XX:ArchiveClassesAtExit=") for o in after), after
    assert not part.exists() and not list(tmp_path.glob("*.jsa"))
    assert not list(Path.cwd().glob("hs_err_pid*.log"))  # the crash it caused left nothing
    assert run_version(java, cp, after).returncode == 0
