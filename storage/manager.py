"""``LogManager``: every partition log of the broker across its log dirs, and topic metadata.

On disk, per log dir (Kafka's names):

- ``<topic>-<partition>/`` partition directories (segments, ``leader-epoch-checkpoint``,
  ``partition.metadata`` with the topic id);
- ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``replication-offset-checkpoint`` (high watermarks);
- ``.kafka_cleanshutdown`` while the broker is stopped cleanly (written by ``close``, removed
  once ``load`` has opened the logs, so a crash later means recovery on the next start);
- ``wireserver-topics.json`` (ours; Kafka keeps this in ZooKeeper/KRaft): every topic's name, id,
  partition count and config overrides, with a ``generation`` counter. It is written to every
  log dir; ``load`` trusts the copy with the highest generation.

Deleted partitions are renamed ``<topic>-<p>.<uuid hex>-delete`` at once and removed by a
thread of their own (Kafka's ``asyncDelete``; ``close`` waits for it); leftovers are removed on
``load``. The offset checkpoints are not rewritten for a deletion: they are written before a
partition of the same name is made again, at the next periodic checkpoint, or on ``close``
(rewriting them on every deletion made deleting N topics cost N × all partitions).

I/O errors (a full disk, EIO, too many open files) go to ``failures``, Kafka's
``LogDirFailureChannel`` (``storage.log_dir_failure``): the dir goes offline and the operation
raises ``KafkaStorageError``. A topic or partition whose creation failed is removed again, so
no half-made topic is found on the next ``load``. Checkpoints skip offline dirs.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import queue
import random
import re
import shutil
import threading
import types
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from wireserver.storage import checkpoint as ckpt
from wireserver.storage.changes import ChangeJournal
from wireserver.storage.configdef import ConfigValueError
from wireserver.storage.dir_lock import LogDirLock
from wireserver.storage.errors import (
    InvalidPartitionsError,
    InvalidTopicError,
    KafkaStorageError,
    LogDirNotFoundError,
    TopicExistsError,
    UnknownTopicError,
)
from wireserver.storage.index import IndexMemory
from wireserver.storage.log import Log, parse_partition_dir
from wireserver.storage.log_config import LogConfig
from wireserver.storage.log_dir_failure import LogDirFailureChannel, out_of_descriptors
from wireserver.storage.log_move import LogMove, future_dir_name, parse_future_dir
from wireserver.storage.open_files import OpenFiles

logger = logging.getLogger(__name__)

TOPICS_FILE = "wireserver-topics.json"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: 1..249 characters from [a-zA-Z0-9._-], not '.' or '..'.
    Raises ``InvalidTopicError`` with Kafka's wording."""
    if not isinstance(name, str) or not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, topic name: {name}"
        )
    if not _LEGAL_TOPIC.match(name):
        raise InvalidTopicError(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    overrides: Mapping[str, str] = field(default_factory=dict)
    config: LogConfig = field(default_factory=LogConfig)


class _HasTopicId(Protocol):
    @property
    def topic_id(self) -> uuid.UUID: ...


_Topic = TypeVar("_Topic", bound=_HasTopicId)


class TopicTable(dict[str, _Topic]):
    """Topics by name that also keeps them by id, as Kafka's metadata image does: from v13 a
    Produce or Fetch names its topics by id, and finding one must not cost a pass over every
    topic of the broker on every request. Only item assignment and deletion change it. Holds
    anything with a ``topic_id``: the logs' ``TopicInfo``, a cluster's ZooKeeper
    assignments."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[uuid.UUID, str] = {}
        #: counts the names added and removed, so that whoever keeps something derived from
        #: the set of names (a regex subscription's matches) sees a change without a pass
        self.names_changed = 0

    def __setitem__(self, name: str, info: _Topic) -> None:
        old = self.get(name)
        if old is None:
            self.names_changed += 1
        elif self.by_id.get(old.topic_id) == name:
            del self.by_id[old.topic_id]
        super().__setitem__(name, info)
        self.by_id[info.topic_id] = name

    def __delitem__(self, name: str) -> None:
        info = self[name]
        self.names_changed += 1
        super().__delitem__(name)
        if self.by_id.get(info.topic_id) == name:
            del self.by_id[info.topic_id]

    def _unsupported(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("topics change by item assignment and deletion only")

    pop = popitem = clear = update = setdefault = _unsupported  # would bypass by_id


def _stored_topic_id(directory: str) -> uuid.UUID | None:
    """The topic id in a partition's ``partition.metadata``; None when it is missing or torn
    (it is written without fsync when the partition is made)."""
    try:
        return ckpt.read_partition_metadata(directory)
    except (ckpt.CheckpointError, ValueError, UnicodeDecodeError):
        return None


class DirRemover:
    """Removes deleted partitions' directories on a daemon thread, so that deleting a topic
    of thousands of partitions answers once they are renamed, not once every file is
    unlinked. ``join`` waits for everything handed over so far."""

    def __init__(self) -> None:
        self._paths: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def remove(self, path: str) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="wireserver-dir-remover", daemon=True
            )
            self._thread.start()
        self._paths.put(path)

    def _run(self) -> None:
        while (path := self._paths.get()) is not None:
            shutil.rmtree(path, ignore_errors=True)

    def join(self) -> None:
        if self._thread is not None:
            self._paths.put(None)
            self._thread.join()
            self._thread = None


class LogManager:
    def __init__(
        self,
        log_dirs: list[str],
        broker_defaults: Mapping[str, Any],
        now_ms: Callable[[], int],
        producer_id_expiration_ms: int = 86_400_000,
        open_files: OpenFiles | None = None,
        index_memory: IndexMemory | None = None,
    ):
        """``open_files`` caps the descriptors segment files hold (``storage.open_files``);
        by default at half the process's open-files limit. ``index_memory`` caps the inactive
        segments' index entries held in memory (``storage.index.IndexMemory``)."""
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.broker_defaults = dict(broker_defaults)
        self._now_ms = now_ms
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._topics: TopicTable[TopicInfo] = TopicTable()
        # Read-only live views of it, made once (``topics`` is read several times per request)
        self._topics_view = types.MappingProxyType(self._topics)
        self._names_by_id = types.MappingProxyType(self._topics.by_id)
        self._logs: dict[tuple[str, int], Log] = {}
        # Logs that may be due for a flush (written since they were last found not due):
        # the flush tick walks these, not all partitions.
        self._flush_watch: set[Log] = set()
        #: what changed in which topic, for answers kept between Fetches (``storage.changes``)
        self.changes = ChangeJournal()
        self._dir_of: dict[tuple[str, int], str] = {}
        self._partitions_in: collections.Counter[str] = collections.Counter()  # per log dir
        self._generation = 0
        # Topic-file saves deferred by ``saving_topics_once`` (depth) and whether one is owed.
        self._deferred_saves = 0
        self._save_owed = False
        self.clean_shutdown: dict[str, bool] = {}  # per log dir, as found by load()
        self.loaded = False
        self.failures = LogDirFailureChannel()
        self.open_files = open_files if open_files is not None else OpenFiles()
        self.failures.out_of_descriptors_listeners.append(self.open_files.shed)
        self.index_memory = index_memory if index_memory is not None else IndexMemory()
        self.dir_remover = DirRemover()
        # Deleted partitions the offset checkpoints may still name (see the module docstring).
        self._stale_in_checkpoints: set[tuple[str, int]] = set()
        # Replicas moving to another log dir (``storage.log_move``), and the dirs asked for
        # partitions that have no log here yet (Kafka's ``preferredLogDirs``).
        self.moves: dict[tuple[str, int], LogMove] = {}
        self.preferred_dirs: dict[tuple[str, int], str] = {}
        # Each log dir's ``.lock`` (``storage.dir_lock``), held from ``load`` to the close.
        self.dir_locks = [LogDirLock(d) for d in self.log_dirs]
        #: On one node every partition of every topic is this broker's. A cluster broker keeps
        #: logs only for the replicas assigned to it, as Kafka's brokers do, and says which
        #: (``hosted`` of ``create_topic`` and ``add_partitions``, ``host_partition``,
        #: ``drop_partition``); then ``load`` makes no log for a partition missing on disk.
        self.hosts_every_partition = True

    @property
    def live_log_dirs(self) -> list[str]:
        return [d for d in self.log_dirs if not self.failures.is_offline(d)]

    # -- topics ----------------------------------------------------------------------------
    @property
    def topics(self) -> Mapping[str, TopicInfo]:
        return self._topics_view

    @property
    def topic_names_by_id(self) -> Mapping[uuid.UUID, str]:
        """Topic id -> name of every topic here (a live read-only view)."""
        return self._names_by_id

    @property
    def topic_names_changed(self) -> int:
        """Grows whenever a topic name comes or goes (``TopicTable.names_changed``)."""
        return self._topics.names_changed

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    @property
    def by_partition(self) -> Mapping[tuple[str, int], Log]:
        """(topic, partition) -> its log, a live read-only view (``get_log`` without a call
        per partition, for the loops of a wide Fetch)."""
        return self._logs

    def logs(self) -> Iterator[tuple[tuple[str, int], Log]]:
        return iter(list(self._logs.items()))

    def _config_for(self, overrides: Mapping[str, str]) -> LogConfig:
        return LogConfig.from_values(self.broker_defaults, overrides)

    def _stored_config(
        self, name: str, overrides: dict[str, str]
    ) -> tuple[dict[str, str], LogConfig]:
        """The overrides and config of a topic read back from disk. An override today's rules
        refuse (a ``segment.bytes`` under 1 MiB, written before that minimum) is dropped with
        a warning, so the broker still starts and serves the topic, with that key's default."""
        while True:
            try:
                return overrides, self._config_for(overrides)
            except ConfigValueError as exc:
                if exc.name not in overrides:
                    raise
                logger.warning("topic %s: its stored config is ignored: %s", name, exc)
                overrides = {k: v for k, v in overrides.items() if k != exc.name}

    def _pick_dir(self, tp: tuple[str, int] | None = None) -> str:
        """The dir for a new log: the one AlterReplicaLogDirs asked for (used once, as Kafka's
        preferred log dir), else the live dir with the fewest partitions."""
        preferred = self.preferred_dirs.pop(tp, None) if tp is not None else None
        if preferred is not None and not self.failures.is_offline(preferred):
            return preferred
        live = self.live_log_dirs
        if not live:
            raise KafkaStorageError("No log directories available", self.log_dirs[0])
        if len(live) == 1:
            return live[0]
        counts = self._partitions_in
        return min(live, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def _place(self, tp: tuple[str, int], log_dir: str) -> None:
        self._unplace(tp)
        self._dir_of[tp] = log_dir
        self._partitions_in[log_dir] += 1

    def _unplace(self, tp: tuple[str, int]) -> None:
        log_dir = self._dir_of.pop(tp, None)
        if log_dir is not None:
            self._partitions_in[log_dir] -= 1

    def _open_partition(self, info: TopicInfo, partition: int) -> Log:
        """Create a partition's log (Kafka's ``getOrCreateLog``). On an I/O error the log dir
        goes offline and ``KafkaStorageError`` is raised; ``_open_partitions`` removes what was
        made."""
        if (info.name, partition) in self._stale_in_checkpoints:
            # A new log must not be recovered from the deleted one's recovery point.
            self.checkpoint()
        log_dir = self._pick_dir((info.name, partition))
        name = f"{info.name}-{partition}"
        directory = os.path.join(log_dir, name)
        try:
            log = self._create_log(info, log_dir, directory)
        except KafkaStorageError as exc:
            # Out of descriptors (sockets took them, or files outside the pool): close idle
            # segment files and try once more before failing the topic.
            if not out_of_descriptors(exc):
                raise
            with self.open_files.reserve():
                shutil.rmtree(directory, ignore_errors=True)
            log = self._create_log(info, log_dir, directory)
        self._adopt((info.name, partition), log)
        self._place((info.name, partition), log_dir)
        return log

    def _adopt(self, tp: tuple[str, int], log: Log) -> None:
        """Make ``log`` the partition's log, its appends reported to the flush watch and its
        changes to the change journal (which it stamps now: a topic's new log is a change)."""
        self._logs[tp] = log
        log.flush_watch = self._flush_watch
        self._flush_watch.add(log)
        log.changes = self.changes
        log.fetch_state_changed()

    def _release(self, tp: tuple[str, int]) -> Log | None:
        """Take the partition's log, if any, from this manager (to delete it): no longer the
        partition's log, it is a change of the topic (``storage.changes``)."""
        log = self._logs.pop(tp, None)
        if log is not None:
            log.fetch_state_changed()
        return log

    def _open_log(self, directory: str, info: TopicInfo, **where: Any) -> Log:
        """``Log.open`` of one of this broker's logs: its clock, producer-id expiry, failure
        channel and open-files pool; ``where`` says how to open it (``recover``, the
        checkpointed offsets)."""
        return Log.open(
            directory,
            info.config,
            now_ms=self._now_ms,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            failures=self.failures,
            open_files=self.open_files,
            index_memory=self.index_memory,
            **where,
        )

    def _create_log(self, info: TopicInfo, log_dir: str, directory: str) -> Log:
        name = os.path.basename(directory)
        with self.failures.guard(log_dir, f"Error while creating log for {name} in dir {log_dir}"):
            log = self._open_log(directory, info, recover=False)
            try:
                ckpt.write_partition_metadata(directory, info.topic_id, sync=False)
            except OSError:
                log.delete()
                raise
        return log

    def _open_partitions(self, info: TopicInfo, partitions: Iterable[int]) -> None:
        """Create the logs of ``partitions`` and record the topic as ``info``; on a
        ``KafkaStorageError`` the ones made here are removed and the error raised."""
        made: list[int] = []
        try:
            for p in partitions:
                if (info.name, p) not in self._logs:
                    made.append(p)
                    self._open_partition(info, p)
            self._save_topics()
        except KafkaStorageError:
            # Files closed first, and the reserved descriptors let go: with too many open
            # files (EMFILE) removing needs some.
            for p in made:
                self._unplace((info.name, p))
                log = self._release((info.name, p))
                if log is not None:
                    log.delete()
            with self.open_files.reserve():
                for p in made:
                    for d in self.log_dirs:
                        shutil.rmtree(os.path.join(d, f"{info.name}-{p}"), ignore_errors=True)
            raise

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        overrides: Mapping[str, str] | None = None,
        topic_id: uuid.UUID | None = None,
        hosted: Collection[int] | None = None,
    ) -> TopicInfo:
        """Create a topic's partition logs: every partition's, or those in ``hosted`` (a
        cluster broker's replicas of it). Raises InvalidTopicError, TopicExistsError,
        InvalidPartitionsError or ``ConfigValueError`` (an unknown or bad override)."""
        validate_topic_name(name)
        if name in self._topics:
            raise TopicExistsError(f"Topic '{name}' already exists.")
        key = _collision_key(name)
        for existing in self._topics:
            if _collision_key(existing) == key:
                raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {existing}")
        if num_partitions < 1:
            raise InvalidPartitionsError("Number of partitions must be larger than 0.")
        overrides = {k: str(v) for k, v in (overrides or {}).items()}
        config = self._config_for(overrides)
        info = TopicInfo(name, topic_id or uuid.uuid4(), num_partitions, overrides, config)
        self._topics[name] = info
        try:
            self._open_partitions(info, _hosted_of(range(num_partitions), hosted))
        except KafkaStorageError:
            del self._topics[name]
            raise
        return info

    def delete_topic(self, name: str) -> None:
        info = self._require(name)
        for p in range(info.num_partitions):
            self.abort_move((name, p))
            log = self._release((name, p))
            self._unplace((name, p))
            if log is not None:
                self._delete_dir(log)
                self._stale_in_checkpoints.add((name, p))
        del self._topics[name]
        self.changes.deleted(name)
        self._save_topics()

    def drop_partition(self, name: str, partition: int) -> None:
        """Delete one partition's log (a replica moved off this broker: the directory goes as
        a deleted topic's does); the topic stays."""
        self._require(name)
        self.abort_move((name, partition))
        log = self._release((name, partition))
        self._unplace((name, partition))
        if log is not None:
            self._delete_dir(log)
            self._stale_in_checkpoints.add((name, partition))

    def host_partition(self, name: str, partition: int) -> Log:
        """The partition's log, made empty if this broker had none (a replica assigned to
        it). Raises ``KafkaStorageError`` as ``create_topic`` does."""
        log = self._logs.get((name, partition))
        if log is None:
            self._open_partitions(self._require(name), (partition,))
            log = self._logs[(name, partition)]
        return log

    def _delete_dir(self, log: Log) -> None:
        for seg in log.segments:
            seg.close()
        log.closed = True
        log.fetch_state_changed()
        # Kafka's name for a deleted log's directory: a random 32-digit hex id, "-delete"
        # (here from ``random``: uuid4 reads the OS's entropy, a system call per partition).
        doomed = f"{log.directory}.{random.getrandbits(128):032x}-delete"
        try:
            os.replace(log.directory, doomed)
        except OSError:
            # Not renamed: remove it now, or a later rmtree could hit a partition made again
            # under the same name.
            shutil.rmtree(log.directory, ignore_errors=True)
            return
        self.dir_remover.remove(doomed)

    # -- moving replicas between log dirs (storage.log_move) ---------------------------------
    def check_log_dir(self, path: str) -> str:
        """``path`` as one of this broker's log dirs (absolute), as Kafka's
        ``isLogDirOnline``: ``LogDirNotFoundError`` when it is not in ``log.dirs``,
        ``KafkaStorageError`` when it is offline."""
        log_dir = os.path.abspath(path)
        if log_dir not in self.log_dirs:
            raise LogDirNotFoundError(f"Log dir {path} is not found in the config.")
        if self.failures.is_offline(log_dir):
            raise KafkaStorageError(f"Log directory {log_dir} is offline", log_dir)
        return log_dir

    def prefer_log_dir(self, tp: tuple[str, int], log_dir: str) -> None:
        """Kafka's ``maybeUpdatePreferredLogDir``: remember ``log_dir`` for the partition's
        next log unless its current or future log is there already."""
        log = self._logs.get(tp)
        move = self.moves.get(tp)
        if (log is None or log.log_dir != log_dir) and (
            move is None or move.destination != log_dir
        ):
            self.preferred_dirs[tp] = log_dir

    def move_log(self, tp: tuple[str, int], destination: str) -> LogMove | None:
        """Start moving the partition's log to ``destination`` (a checked log dir, see
        ``check_log_dir``) by making its future log there (Kafka's ``maybeCreateFutureReplica``).
        A move elsewhere under way is given up first; a move to where the log is, or to
        where it is moving already, does nothing (None). ``KafkaStorageError`` when the
        future log cannot be made."""
        log = self._logs[tp]
        move = self.moves.get(tp)
        if move is not None and move.destination != destination:
            self.abort_move(tp)
            move = None
        self.preferred_dirs.pop(tp, None)
        if move is not None or log.log_dir == destination:
            return None
        directory = os.path.join(destination, future_dir_name(*tp))
        info = self._require(tp[0])
        try:
            future = self._create_log(info, destination, directory)
            if log.log_start_offset > 0:
                future.truncate_fully_and_start_at(log.log_start_offset)
        except KafkaStorageError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        move = self.moves[tp] = LogMove(log, future, destination)
        logger.info("Created the future log for %s-%d in %s", tp[0], tp[1], destination)
        return move

    def complete_move(self, tp: tuple[str, int]) -> None:
        """Swap in the caught-up future log (``LogMove.swap``) and record the partition's
        new dir; the old log's dir is removed in the background."""
        move = self.moves[tp]
        try:
            doomed = move.swap()
        except KafkaStorageError:
            self.abort_move(tp)
            raise
        del self.moves[tp]
        self._place(tp, move.destination)
        self._flush_watch.add(move.current)
        self.dir_remover.remove(doomed)
        # The checkpoints of the old dir still name the partition until they are rewritten.
        self.checkpoint()

    def abort_move(self, tp: tuple[str, int]) -> None:
        """Give up the partition's move, if any, removing its future log."""
        move = self.moves.pop(tp, None)
        if move is not None:
            self._delete_dir(move.future)

    def add_partitions(
        self, name: str, new_total: int, hosted: Collection[int] | None = None
    ) -> TopicInfo:
        """Raise the topic's partition count to ``new_total``, with logs for the new
        partitions (those in ``hosted`` only, when given)."""
        info = self._require(name)
        if new_total <= info.num_partitions:
            raise InvalidPartitionsError(
                f"Topic currently has {info.num_partitions} partitions, which is higher than "
                f"or equal to the requested {new_total}."
            )
        old, info = info, replace(info, num_partitions=new_total)
        self._topics[name] = info
        try:
            new = range(
                old.num_partitions if hosted is not None else self._count_partitions(name),
                new_total,
            )
            self._open_partitions(info, _hosted_of(new, hosted))
        except KafkaStorageError:
            self._topics[name] = old
            raise
        return info

    def _count_partitions(self, name: str) -> int:
        return sum(1 for (t, _) in self._logs if t == name)

    def alter_topic_config(self, name: str, overrides: Mapping[str, str]) -> TopicInfo:
        """Replace a topic's config overrides (the full set, as AlterConfigs does)."""
        info = self._require(name)
        overrides = {k: str(v) for k, v in overrides.items()}
        config = self._config_for(overrides)
        info = replace(info, overrides=overrides, config=config)
        self._topics[name] = info
        for p in range(info.num_partitions):
            log = self._logs.get((name, p))
            if log is not None:
                log.config = config
                self._flush_watch.add(log)  # flush.ms / flush.messages may have changed
        self._save_topics()
        return info

    def update_broker_defaults(self, broker_defaults: Mapping[str, Any]) -> None:
        """New broker-level defaults (dynamic broker config): recompute every topic's config."""
        self.broker_defaults = dict(broker_defaults)
        for name, info in list(self._topics.items()):
            config = self._config_for(info.overrides)
            self._topics[name] = replace(info, config=config)
            for p in range(info.num_partitions):
                log = self._logs.get((name, p))
                if log is not None:
                    log.config = config
                    self._flush_watch.add(log)

    def _require(self, name: str) -> TopicInfo:
        try:
            return self._topics[name]
        except KeyError:
            raise UnknownTopicError(f"Unknown topic: {name}") from None

    # -- persistence -----------------------------------------------------------------------
    @contextlib.contextmanager
    def saving_topics_once(self) -> Iterator[None]:
        """Within the block, the topic changes save the topics file once, when it ends: a
        DeleteTopics of many topics rewrote and fsynced the whole file once per topic (about
        2 ms each, a third of deleting a hundred topics of a hundred partitions)."""
        self._deferred_saves += 1
        try:
            yield
        finally:
            self._deferred_saves -= 1
            if not self._deferred_saves and self._save_owed:
                self._save_owed = False
                self._save_topics()

    def _save_topics(self) -> None:
        if self._deferred_saves:
            self._save_owed = True
            return
        self._generation += 1
        doc = {
            "version": 1,
            "generation": self._generation,
            "topics": [
                {
                    "name": t.name,
                    "topic_id": str(t.topic_id),
                    "num_partitions": t.num_partitions,
                    "overrides": dict(t.overrides),
                }
                for t in sorted(self._topics.values(), key=lambda t: t.name)
            ],
        }
        for d in self.live_log_dirs:
            with self.failures.guard(d, f"Error while writing topics to dir {d}"):
                os.makedirs(d, exist_ok=True)
                ckpt.write_json(os.path.join(d, TOPICS_FILE), doc)

    def _read_topics(self) -> list[dict]:
        best: dict | None = None
        for d in self.log_dirs:
            path = os.path.join(d, TOPICS_FILE)
            if not os.path.exists(path):
                continue
            try:
                doc = ckpt.read_json(path)
            except (OSError, ValueError):
                continue
            if best is None or doc.get("generation", 0) > best.get("generation", 0):
                best = doc
        if best is None:
            return []
        self._generation = int(best.get("generation", 0))
        return list(best.get("topics", []))

    def load(self) -> None:
        """Lock the log dirs (LogDirInUseError when another broker holds one), open every
        partition log found in them, recovering the logs of any dir without a clean-shutdown
        marker, then remove the markers."""
        for d in self.log_dirs:
            os.makedirs(d, exist_ok=True)
        try:
            for lock in self.dir_locks:
                lock.acquire()
        except BaseException:
            self.release_dirs()
            raise
        declared = {t["name"]: t for t in self._read_topics()}
        found: dict[tuple[str, int], str] = {}
        futures: list[tuple[tuple[str, int], str, str]] = []  # (partition, dir, path)
        for d in self.log_dirs:
            self.clean_shutdown[d] = os.path.exists(os.path.join(d, ckpt.CLEAN_SHUTDOWN_MARKER))
            for name in sorted(os.listdir(d)):
                path = os.path.join(d, name)
                if not os.path.isdir(path):
                    continue
                if name.endswith("-delete"):
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                try:
                    if name.endswith("-future"):
                        futures.append((parse_future_dir(name), d, path))
                        continue
                    topic, partition = parse_partition_dir(name)
                except ValueError:
                    continue
                if (topic, partition) in found:
                    continue
                found[(topic, partition)] = d
        resumed = self._promote_futures(futures, found)
        # Topics: the declared ones, plus any found on disk without a declaration.
        for name, entry in declared.items():
            overrides, config = self._stored_config(
                name, {k: str(v) for k, v in entry.get("overrides", {}).items()}
            )
            self._topics[name] = TopicInfo(
                name, uuid.UUID(entry["topic_id"]), int(entry["num_partitions"]), overrides, config
            )
        for (topic, partition), d in found.items():
            if topic in self._topics:
                continue
            try:
                validate_topic_name(topic)
            except InvalidTopicError:
                continue
            topic_id = _stored_topic_id(os.path.join(d, f"{topic}-{partition}"))
            count = 1 + max(p for (t, p) in found if t == topic)
            self._topics[topic] = TopicInfo(
                topic, topic_id or uuid.uuid4(), count, {}, self._config_for({})
            )
        checkpoints = {d: self._read_checkpoints(d) for d in self.log_dirs}
        for (topic, partition), d in found.items():
            info = self._topics.get(topic)
            if info is None:
                continue
            tp = (topic, partition)
            rp, ls, hw = checkpoints[d]
            directory = os.path.join(d, f"{topic}-{partition}")
            log = self._open_log(
                directory,
                info,
                recover=not self.clean_shutdown[d],
                recovery_point=rp.get(tp, 0),
                log_start_offset=ls.get(tp),
                high_watermark=hw.get(tp),
            )
            if _stored_topic_id(directory) != info.topic_id:
                ckpt.write_partition_metadata(directory, info.topic_id)
            self._adopt(tp, log)
            self._place(tp, d)
        # Partitions declared but missing on disk (a crash while creating them); a cluster
        # broker makes its replicas' logs from ZooKeeper's assignment instead.
        for info in list(self._topics.values()) if self.hosts_every_partition else ():
            for p in range(info.num_partitions):
                if (info.name, p) not in self._logs:
                    self._open_partition(info, p)
        for tp, d, path in resumed:
            self._resume_move(tp, d, path)
        self._save_topics()
        self.checkpoint()
        for d in self.log_dirs:
            marker = os.path.join(d, ckpt.CLEAN_SHUTDOWN_MARKER)
            if os.path.exists(marker):
                os.unlink(marker)
                ckpt.fsync_dir(d)
        self.loaded = True

    def _promote_futures(
        self, futures: list[tuple[tuple[str, int], str, str]], found: dict[tuple[str, int], str]
    ) -> list[tuple[tuple[str, int], str, str]]:
        """The future logs found by ``load`` (``storage.log_move``): one whose partition has
        no current log is a swap a crash cut between its two renames, and becomes the
        partition's log (added to ``found``); the others are moves to resume, returned."""
        resumed = []
        for tp, d, path in futures:
            if tp in found:
                if any(t == tp for t, _, _ in resumed):
                    shutil.rmtree(path, ignore_errors=True)  # one future log a partition
                else:
                    resumed.append((tp, d, path))
                continue
            final = os.path.join(d, f"{tp[0]}-{tp[1]}")
            logger.warning("Completing the interrupted move of %s-%d to %s", tp[0], tp[1], d)
            os.replace(path, final)
            ckpt.fsync_dir(d)
            found[tp] = d
        return resumed

    def _resume_move(self, tp: tuple[str, int], d: str, path: str) -> None:
        """Carry on with a move a restart interrupted, from what its future log holds (re-
        scanned, as after a crash: its recovery point is in no checkpoint)."""
        log = self._logs.get(tp)
        info = self._topics.get(tp[0])
        if log is None or info is None or log.log_dir == d:
            shutil.rmtree(path, ignore_errors=True)
            return
        future = self._open_log(path, info, recover=True)
        self.moves[tp] = LogMove(log, future, d)
        logger.info("Resuming the move of %s-%d to %s", tp[0], tp[1], d)

    def _read_checkpoints(self, d: str) -> tuple[dict, dict, dict]:
        out = []
        for name in (
            ckpt.RECOVERY_POINT_CHECKPOINT,
            ckpt.LOG_START_OFFSET_CHECKPOINT,
            ckpt.REPLICATION_OFFSET_CHECKPOINT,
        ):
            try:
                out.append(ckpt.read_offsets(os.path.join(d, name)))
            except (ckpt.CheckpointError, OSError):
                out.append({})  # a damaged checkpoint means a full re-scan, as in Kafka
        return out[0], out[1], out[2]

    def checkpoint(self) -> None:
        """Write the recovery point, log start offset and high watermark checkpoints of each
        live log dir. A dir failing now is reported and goes offline; the others are still
        written (Kafka logs "Disk error while writing ... checkpoint" and carries on)."""
        self._stale_in_checkpoints.clear()  # a dir failing now goes offline: never read again
        for d in self.live_log_dirs:
            try:
                self._checkpoint_dir(d)
            except KafkaStorageError:
                pass

    def _checkpoint_dir(self, d: str) -> None:
        mine = {tp: log for tp, log in self._logs.items() if self._dir_of.get(tp) == d}
        with self.failures.guard(d, f"Error while writing checkpoints in dir {d}"):
            ckpt.write_offsets(
                os.path.join(d, ckpt.RECOVERY_POINT_CHECKPOINT),
                {tp: log.recovery_point for tp, log in mine.items()},
            )
            ckpt.write_offsets(
                os.path.join(d, ckpt.LOG_START_OFFSET_CHECKPOINT),
                {tp: log.log_start_offset for tp, log in mine.items()},
            )
            ckpt.write_offsets(
                os.path.join(d, ckpt.REPLICATION_OFFSET_CHECKPOINT),
                {tp: log.high_watermark for tp, log in mine.items()},
            )

    # -- housekeeping ----------------------------------------------------------------------
    def apply_retention(self, now_ms: int | None = None) -> int:
        """Run retention on every log; returns the number of segments deleted."""
        now = self._now_ms() if now_ms is None else now_ms
        return sum(log.apply_retention(now) for _, log in self.logs())

    def remove_expired_producers(
        self, now_ms: int | None = None, expiration_ms: int | None = None
    ) -> int:
        """Forget idempotent producers idle for ``producer.id.expiration.ms`` in every log
        (Kafka checks every ``producer.id.expiration.check.interval.ms``)."""
        now = self._now_ms() if now_ms is None else now_ms
        if expiration_ms is not None:
            self.producer_id_expiration_ms = expiration_ms
        return sum(
            log.producer_state.remove_expired(now, self.producer_id_expiration_ms)
            for _, log in self.logs()
        )

    def logs_due_for_flush(self, now_ms: int | None = None) -> list[Log]:
        """The logs whose ``flush.ms`` / ``flush.messages`` or a rolled segment call for an
        fsync now. Walks only the logs appended to since they were last found unable to become
        due, so an idle broker's tick costs nothing per partition under Kafka's defaults."""
        now = self._now_ms() if now_ms is None else now_ms
        due: list[Log] = []
        for log in list(self._flush_watch):
            if self._logs.get((log.topic, log.partition)) is not log:
                self._flush_watch.discard(log)  # deleted, or its dir went offline
            elif log.flush_due(now):
                due.append(log)
            elif not log.may_become_due():
                self._flush_watch.discard(log)
        return due

    def flush_all(self) -> None:
        for _, log in self.logs():
            log.flush()

    def close(self) -> None:
        """Flush and close every log, write the checkpoints and the clean-shutdown markers.
        A dir that is offline, or fails now, gets no marker: its logs are recovered on the
        next start."""
        for _, log in self.logs():
            try:
                log.close(durable=False)
            except KafkaStorageError:
                pass  # reported, and its dir offline
        for move in self.moves.values():
            try:
                move.future.close(durable=False)
            except KafkaStorageError:
                pass
        for d in self.live_log_dirs:
            try:
                with self.failures.guard(d, f"Error while syncing log dir {d}"):
                    ckpt.sync_file_system(d)
            except KafkaStorageError:
                pass  # offline: no checkpoint and no clean-shutdown marker for it
        self.checkpoint()
        try:
            self._save_topics()
        except KafkaStorageError:
            pass
        for d in self.live_log_dirs:
            marker = os.path.join(d, ckpt.CLEAN_SHUTDOWN_MARKER)
            try:
                with self.failures.guard(d, f"Error while writing {marker}"):
                    ckpt.atomic_write(marker, b"")
            except KafkaStorageError:
                pass
        self.dir_remover.join()
        self.open_files.close()
        self.release_dirs()

    def close_files(self) -> None:
        """Close every file without writing anything (a halt: no flush, no checkpoint, no
        clean-shutdown marker), so the next start recovers the logs."""
        for log in [log for _, log in self.logs()] + [m.future for m in self.moves.values()]:
            for seg in log.segments:
                seg.close(write=False)
            log.closed = True
            log.fetch_state_changed()
        self.dir_remover.join()
        self.open_files.close()
        self.release_dirs()

    def release_dirs(self) -> None:
        """Unlock the log dirs, for another broker to use them."""
        for lock in self.dir_locks:
            lock.release()


def _hosted_of(partitions: range, hosted: Collection[int] | None) -> Iterable[int]:
    """The partitions of ``partitions`` this broker keeps logs for: all, or those in
    ``hosted``."""
    return partitions if hosted is None else [p for p in partitions if p in hosted]
