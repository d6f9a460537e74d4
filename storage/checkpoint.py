"""Checkpoint files in Kafka's text formats, written atomically.

Every write goes to ``<name>.tmp``, is fsynced, renamed over ``<name>`` and the directory is
fsynced, so a crash leaves either the old file or the new one, never a torn mix.

Formats (Kafka's ``CheckpointFile``): a version line ``0``, a count line, then one entry a line.

- ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``cleaner-offset-checkpoint`` (per log dir):
  ``<topic> <partition> <offset>``.
- ``leader-epoch-checkpoint`` (per partition dir): ``<epoch> <start offset>``.
- ``partition.metadata`` (per partition dir): ``version: 0`` and ``topic_id: <base64 uuid>``.
"""

from __future__ import annotations

import base64
import ctypes
import functools
import json
import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
#: The log cleaner's progress: the first dirty (not yet compacted) offset of each compacted log.
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"

CHECKPOINT_VERSION = 0


class CheckpointError(ValueError):
    """A checkpoint file that does not parse."""


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sync_file_system(path: str) -> None:
    """Write back everything written to the file system holding ``path`` (Linux ``syncfs``;
    ``os.sync`` elsewhere): one call where closing ten thousand partitions one fsync per file
    at a time would take minutes. Raises ``OSError`` when the write-back failed (EIO)."""
    syncfs = getattr(_libc(), "syncfs", None)
    if syncfs is None:
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if syncfs(fd) != 0:
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error), path)
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def atomic_write(path: str, data: bytes | str, *, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (tmp, fsync, rename, fsync dir). On an error
    (a full disk) the tmp file is removed and ``path`` left as it was."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if sync:
        fsync_dir(os.path.dirname(os.path.abspath(path)))


def _render(entries: list[str]) -> str:
    return "".join([f"{CHECKPOINT_VERSION}\n", f"{len(entries)}\n"] + [e + "\n" for e in entries])


def _parse_lines(path: str, fields: int) -> list[list[str]]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if len(lines) < 2:
        raise CheckpointError(f"{path}: missing version or count line")
    try:
        version = int(lines[0])
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: malformed header") from None
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: unrecognised version {version}")
    body = [line for line in lines[2:] if line.strip()]
    if len(body) != count:
        raise CheckpointError(f"{path}: expected {count} entries, found {len(body)}")
    out = []
    for line in body:
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(f"{path}: malformed entry {line!r}")
        out.append(parts)
    return out


def write_offsets(path: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Write a ``topic partition offset`` checkpoint."""
    entries = [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    atomic_write(path, _render(entries))


def read_offsets(path: str) -> dict[tuple[str, int], int]:
    """Read a ``topic partition offset`` checkpoint; a missing file reads as empty."""
    if not os.path.exists(path):
        return {}
    out: dict[tuple[str, int], int] = {}
    for topic, partition, offset in _parse_lines(path, 3):
        try:
            out[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CheckpointError(f"{path}: malformed entry for {topic}") from None
    return out


def write_epochs(path: str, entries: Iterable[tuple[int, int]], *, sync: bool = True) -> None:
    atomic_write(path, _render([f"{e} {o}" for e, o in entries]), sync=sync)


def read_epochs(path: str) -> list[tuple[int, int]]:
    if not os.path.exists(path):
        return []
    try:
        return [(int(e), int(o)) for e, o in _parse_lines(path, 2)]
    except ValueError:
        raise CheckpointError(f"{path}: malformed epoch entry") from None


def topic_id_to_base64(topic_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def topic_id_from_base64(text: str) -> uuid.UUID:
    text = text.strip()
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise CheckpointError(f"topic id {text!r} is not 16 bytes")
    return uuid.UUID(bytes=raw)


def write_partition_metadata(directory: str, topic_id: uuid.UUID, *, sync: bool = True) -> None:
    """``sync=False`` when a partition is created: the topics file (written with fsync) is the
    record of the topic, and a start that finds the partition's file missing or torn writes it
    again from there. Kafka too flushes this file lazily, not when the log is created."""
    atomic_write(
        os.path.join(directory, PARTITION_METADATA),
        f"version: 0\ntopic_id: {topic_id_to_base64(topic_id)}\n",
        sync=sync,
    )


def read_partition_metadata(directory: str) -> uuid.UUID | None:
    path = os.path.join(directory, PARTITION_METADATA)
    if not os.path.exists(path):
        return None
    fields: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if ":" in line:
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise CheckpointError(f"{path}: malformed partition metadata")
    return topic_id_from_base64(fields["topic_id"])


def write_json(path: str, value: Any) -> None:
    atomic_write(path, json.dumps(value, indent=2, sort_keys=True) + "\n")


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)
