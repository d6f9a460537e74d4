"""Class-data sharing (AppCDS) for Kafka's short command-line tools.

A short tool (kafka-topics, the console producer and consumer, ...) spends most of its
2-3 s of CPU loading and verifying a few thousand classes from ~100 jars; the compat suite and
the tests start several hundred of them. The JVM can instead map the classes from an archive
written by an earlier run of the same tool with the same JVM, options and class path: the
measured CPU of ``kafka-topics --list`` drops from about 2.2 s to 1.1 s.

The first run of a tool writes its archive at exit (``-XX:ArchiveClassesAtExit``) to a part
file of its own; a later run checks that the part file is whole (a JVM killed while writing
leaves a truncated one, and mapping that crashes the JVM) by starting a JVM with it, then
moves it into place. Until then, and whenever anything is off, the tool runs without an
archive: the archive only ever saves time. ``WIRESERVER_TOOL_CDS=0`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

#: JVM logging of the archive's own troubles (a mismatch, an unusable file) stays quiet: a
#: tool's output is what the tests read.
QUIET = ("-Xlog:cds*=off", "-Xlog:class+path=off")
#: A broken part file may crash the JVM that checks it: no hs_err file, no core dump.
NO_CRASH_FILES = (f"-XX:ErrorFile={os.devnull}", "-XX:-CreateCoredumpOnCrash")
#: A part file this old was written by a JVM that has exited (it is written at exit).
SETTLED_S = 5.0


def options(
    folder: Path, tool: str, java: str, jvm_opts: Sequence[str], classpath: str
) -> list[str]:
    """The JVM options that make ``tool`` use (or write) its archive in ``folder``."""
    if os.environ.get("WIRESERVER_TOOL_CDS", "1") == "0":
        return []
    key = hashlib.sha1(
        "\0".join([os.path.realpath(java), *jvm_opts, classpath, tool]).encode()
    ).hexdigest()[:16]
    archive = folder / f"{tool}-{key}.jsa"
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}", *QUIET]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if _promote(archive, java, jvm_opts, classpath):
            return [f"-XX:SharedArchiveFile={archive}", *QUIET]
        if any(folder.glob(f"{archive.stem}.*.part")):
            return []  # one was written a moment ago: the next run takes it
    except OSError:
        return []
    part = archive.with_name(f"{archive.stem}.{uuid.uuid4().hex[:8]}.part")
    return [f"-XX:ArchiveClassesAtExit={part}", *QUIET]


def _promote(archive: Path, java: str, jvm_opts: Sequence[str], classpath: str) -> bool:
    """Move a settled, loadable part file of ``archive`` into place; drop broken ones."""
    for part in archive.parent.glob(f"{archive.stem}.*.part"):
        try:
            if time.time() - part.stat().st_mtime < SETTLED_S:
                continue
            if _loads(java, part, jvm_opts, classpath):
                os.replace(part, archive)
                return True
            part.unlink()
        except OSError:
            continue  # another run moved or removed it first
    return archive.is_file()


def _loads(java: str, part: Path, jvm_opts: Sequence[str], classpath: str) -> bool:
    """Whether a JVM starts with ``part`` as its archive (``-Xshare:on``: no silent
    fallback)."""
    try:
        done = subprocess.run(
            [
                java,
                *jvm_opts,
                "-Xshare:on",
                f"-XX:SharedArchiveFile={part}",
                *QUIET,
                *NO_CRASH_FILES,
                "-cp",
                classpath,
                "-version",
            ],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
