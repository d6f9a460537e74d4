"""The machinery the group and transaction coordinators share (Kafka's ``CoordinatorRuntime``),
written once: each coordinator keeps only its own records and state machines.

A coordinator persists its state in an internal topic (``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``) whose partitions split its keys (group ids, transactional ids). The
runtime of one such topic knows:

- **key -> partition**: Kafka's ``Utils.abs(key.hashCode) % partitions`` (``partition_for``), so
  a stock client's FindCoordinator and ours agree on where a key lives;
- **the topic**: created on first use (through ZooKeeper in a cluster), refused while its
  replication factor exceeds the live brokers, as Kafka does (``ensure_topic``);
- **who coordinates a key**: on one node this broker coordinates every key; in a cluster, the
  keys of the partitions it leads and has loaded (NOT_COORDINATOR otherwise,
  COORDINATOR_LOAD_IN_PROGRESS while it loads) (``ensure_ready``, ``coordinator_error``);
- **appends**: a batch of (key, value) records, optionally transactional (producer id and
  epoch), appended as the partition's leader at its leader epoch through the replica manager
  (``append``); the coordinator answers its client once the high watermark has passed it
  (``replicated``), as Kafka appends coordinator records with acks=-1;
- **loading**: a partition's batches read back in chunks of ``LOAD_CHUNK_BYTES`` up to the high
  watermark or the log end (``batches``), every partition at start-up on one node (``start``),
  and in a cluster the partitions as this broker becomes their leader: the runtime listens for
  leadership of its topic (``ReplicaManager.add_leadership_listener``) and calls the
  coordinator's ``load_partition`` / ``unload_partition`` (``on_election``,
  ``on_resignation``). Given a reactor, the runtime loads in the background, as Kafka does:
  the broker serves at once, partitions load one after another in slices of the reactor's
  time (a ``Cooperator``), and their keys are answered COORDINATOR_LOAD_IN_PROGRESS until
  their partition is loaded. A start-up then does not wait for a history of commits, however
  long (benchmarks/results.md, the compaction section). Without a reactor a load runs to its
  end before the call returns.

The runtime imports nothing of the broker: it is handed a ``CoordinatorHost`` (the broker, or
in tests a few real parts of one) and a function that creates a topic, so it is tested on a
``Clock`` with real logs.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from twisted.internet import defer, task

from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.records import RecordBatch, RecordBatchBuilder, iter_batches
from wireserver.storage.errors import InvalidProducerEpoch, KafkaStorageError

log = logging.getLogger(__name__)

#: The internal topics, named here only.
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_STATE_TOPIC})

#: How much of a partition one read takes while loading it (Kafka's
#: ``offsets.load.buffer.size`` / ``transaction.state.log.load.buffer.size`` default).
LOAD_CHUNK_BYTES = 1 << 20

#: How long a coordinator's append may wait for the high watermark when its topic has no
#: setting of its own (Kafka's ``request.timeout.ms`` default, which its transaction
#: coordinator and WriteTxnMarkers use).
REQUEST_TIMEOUT_MS = 30_000


# -- key -> partition ----------------------------------------------------------------------------


def java_string_hashcode(text: str) -> int:
    """``java.lang.String.hashCode``: over UTF-16 code units, 32-bit signed arithmetic."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Integer.MIN_VALUE`` maps to 0, not to itself."""
    return 0 if n == -(1 << 31) else abs(n)


@functools.lru_cache(maxsize=100_000)
def partition_for(key: str, num_partitions: int) -> int:
    """The partition of an internal topic that holds ``key`` (a group id or a transactional
    id), as Kafka computes it, so clients and every broker agree on its coordinator. Kept
    for next time: every commit asks, and the hash walks the key in Python."""
    return kafka_abs(java_string_hashcode(key)) % num_partitions


# -- what the runtime is given ------------------------------------------------------------------


class CoordinatorHost(Protocol):
    """What the runtime uses of the broker: its config, logs (``LogManager``), replica manager,
    cluster metadata (``wireserver.metadata``) and clock. A Protocol, so that the runtime need not import
    ``Broker`` (and a test can hand it real logs and a replica manager alone)."""

    config: Any
    logs: Any
    replicas: Any
    metadata: Any

    def now_ms(self) -> int: ...


#: What ``next`` gives for a load that has ended.
_DONE = object()

#: A partition's load, step by step: it yields between batches (where a background load may
#: give the reactor back) and returns how many keys it loaded.
Load = Generator[None, None, int]


class CoordinatorShard(Protocol):
    """What a coordinator provides the runtime: loading the keys of one partition of its topic
    into memory (a ``Load``: nothing of it is visible before it returns, or, for a coordinator
    that applies records as it reads them, before the runtime marks the partition loaded) and
    forgetting them."""

    def load_partition(self, partition: int, to_log_end: bool = False) -> Load: ...

    def unload_partition(self, partition: int) -> int: ...


#: Creates an internal topic (name, partitions, replication factor, topic configs): None once
#: it exists, else the error the coordinator answers (COORDINATOR_NOT_AVAILABLE).
TopicCreator = Callable[[str, int, int, dict[str, str]], ErrorCode | None]


@dataclass(frozen=True)
class InternalTopic:
    """How a coordinator's internal topic is made: its name, the broker settings of its
    partition count and replication factor, its topic configs (from the broker config), the
    setting that bounds how long an append waits to be committed (None: REQUEST_TIMEOUT_MS),
    and what its keys are called in the log."""

    name: str
    partitions_config: str
    replication_config: str
    topic_configs: Callable[[Any], dict[str, str]]
    commit_timeout_config: str | None = None
    keys: str = "key(s)"


# -- the runtime --------------------------------------------------------------------------------


class CoordinatorRuntime:
    """One internal topic's partitions as a coordinator sees them (see the module docstring).

    ``reload_on_reelection``: what an election for a partition already owned does. Kafka's
    transaction coordinator reloads it (its coordinator epoch changed); its group coordinator
    keeps what it has. ``reactor``: loads run in the background on it (None: at once)."""

    def __init__(
        self,
        host: CoordinatorHost,
        topic: InternalTopic,
        shard: CoordinatorShard,
        create_topic: TopicCreator,
        reload_on_reelection: bool = False,
        reactor: Any = None,
    ):
        self.host = host
        self.topic = topic
        self.name = topic.name
        self.shard = shard
        self.create_topic = create_topic
        self.reload_on_reelection = reload_on_reelection
        # Whether leadership moves (a cluster): then the runtime follows it, partition by
        # partition; on one node every partition is led here from the start.
        self.clustered = not host.replicas.local_leadership
        # Cluster mode: the partitions this broker leads (loaded or loading) and the leader
        # epoch of each (Kafka's coordinator epoch). Either mode: the partitions still
        # loading, and those whose load failed (NOT_COORDINATOR until loaded again).
        self.owned: set[int] = set()
        self.coordinator_epochs: dict[int, int] = {}
        self.loading: set[int] = set()
        self.failed: set[int] = set()
        # Background loads: the partitions waiting (in order, with their to_log_end), the one
        # being loaded, and the task that loads them (None while there is nothing to load).
        self._cooperator = (
            None
            if reactor is None
            else task.Cooperator(scheduler=lambda step: reactor.callLater(0, step))
        )
        self._queued: dict[int, bool] = {}
        self._current: int | None = None
        self._loader: task.CooperativeTask | None = None
        #: Records read back from the topic since start (loading replays the whole log: with
        #: compaction that is the live keys, not the history).
        self.replayed_records = 0

    def start(self) -> None:
        """Load every partition (one node, where this broker leads them all), or, in a cluster,
        follow the leadership of the topic's partitions: each is loaded as this broker becomes
        its leader and unloaded when it stops."""
        if self.clustered:
            self.host.replicas.add_leadership_listener(
                self.name, self.on_election, self.on_resignation
            )
        else:
            self.load_all()

    def stop(self) -> None:
        """Stop loading (the broker is stopping): what is left unloaded stays so."""
        self._queued.clear()
        self._current = None
        if self._loader is not None:
            self._loader.stop()
            self._loader = None

    # -- partitions and keys ------------------------------------------------------------------

    def num_partitions(self) -> int:
        """The topic's partition count: what it has once it exists, else what it will be
        created with (so a key's partition does not change when the topic appears)."""
        info = self.host.logs.topics.get(self.name)
        if info is not None:
            return info.num_partitions
        return self.host.config[self.topic.partitions_config]

    def partition_for(self, key: str) -> int:
        """The partition of the topic that holds ``key``."""
        return partition_for(key, self.num_partitions())

    def partition_log(self, partition: int) -> Any:
        """The log of ``partition`` of the topic here, or None."""
        return self.host.logs.get_log(self.name, partition)

    # -- readiness ----------------------------------------------------------------------------

    def ensure_ready(self, key: str | None = None) -> ErrorCode | None:
        """Create the topic on first use (``ensure_topic``). With a key, in cluster mode:
        NOT_COORDINATOR unless this broker leads the key's partition; COORDINATOR_LOAD_IN_PROGRESS
        while it loads it (either mode). None when the request may go on."""
        error = self.ensure_topic()
        if error is not None or key is None:
            return error
        return self.coordinator_error(self.partition_for(key))

    def coordinator_error(self, partition: int) -> ErrorCode | None:
        """Whether this broker coordinates the keys of ``partition``: None on one node and for a
        partition it leads and has loaded, COORDINATOR_LOAD_IN_PROGRESS while it loads it,
        NOT_COORDINATOR otherwise (the client asks FindCoordinator again), as for a partition
        whose load failed."""
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition in self.failed:
            return ErrorCode.NOT_COORDINATOR
        if not self.clustered:
            return None
        if partition not in self.owned or not self.host.replicas.is_leader(self.name, partition):
            return ErrorCode.NOT_COORDINATOR
        return None

    def loading_error(self) -> ErrorCode | None:
        """COORDINATOR_LOAD_IN_PROGRESS while any partition loads: what Kafka answers a
        request about every key (ListGroups), None otherwise."""
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.loading else None

    def ensure_topic(self) -> ErrorCode | None:
        """Create the topic on first use (through ZooKeeper in a cluster). None once it exists
        here; COORDINATOR_NOT_AVAILABLE while it cannot be created (as Kafka: its replication
        factor exceeds the live brokers) or, in a cluster, until its partitions reach this
        broker. Clients retry COORDINATOR_NOT_AVAILABLE."""
        host, name = self.host, self.name
        metadata = host.metadata
        if metadata.registered(name):
            return None if name in host.logs.topics else ErrorCode.COORDINATOR_NOT_AVAILABLE
        replication_key = self.topic.replication_config
        replication = host.config[replication_key]
        live_brokers = len(metadata.live_broker_ids())
        if replication > live_brokers:
            log.warning(
                "cannot create %s: %s=%d but %d live broker(s)",
                name,
                replication_key,
                replication,
                live_brokers,
            )
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self.create_topic(
            name,
            host.config[self.topic.partitions_config],
            replication,
            self.topic.topic_configs(host.config),
        )
        if error is not None:
            return error
        if metadata.propagates:
            # Its partitions get leaders (and their coordinators load) shortly.
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return None

    # -- appends ------------------------------------------------------------------------------

    def append(
        self,
        key: str,
        entries: Sequence[tuple[bytes, bytes | None]],
        producer: tuple[int, int] | None = None,
    ) -> ErrorCode:
        """Append ``entries`` (record key, value; None is a tombstone) to the partition of
        ``key`` as its leader, at its leader epoch, in one batch. NONE once they are in the
        log (committed on one node; in a cluster see ``replicated``). ``producer`` (id, epoch)
        makes the batch transactional (TxnOffsetCommit): its sequence is not checked, and an
        old epoch is INVALID_PRODUCER_EPOCH. NOT_COORDINATOR when this broker does not lead
        the partition or its log dir failed (KAFKA_STORAGE_ERROR, as Kafka maps it); other
        storage failures are COORDINATOR_NOT_AVAILABLE, which clients retry."""
        if not entries:
            return ErrorCode.NONE
        error = self.ensure_ready()
        if error is not None:
            return error
        partition = self.partition_for(key)
        partition_log = self.partition_log(partition)
        if partition_log is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error, leader_epoch = self.host.replicas.check_leader(self.name, partition)
        if error is not None:
            return ErrorCode.NOT_COORDINATOR
        now = self.host.now_ms()
        if producer is None:
            builder = RecordBatchBuilder()
        else:
            builder = RecordBatchBuilder(
                producer_id=producer[0], producer_epoch=producer[1], is_transactional=True
            )
        for record_key, value in entries:
            builder.append(now, record_key, value)
        try:
            partition_log.append(
                builder.build(),
                leader_epoch=leader_epoch,
                now_ms=now,
                check_sequences=producer is None,
            )
        except InvalidProducerEpoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        except KafkaStorageError:
            return ErrorCode.NOT_COORDINATOR
        except Exception:  # noqa: BLE001 - storage failures become a retriable error
            log.exception("append to %s-%d failed", self.name, partition)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        self.host.replicas.after_append(self.name, partition)
        return ErrorCode.NONE

    def commit_timeout_ms(self) -> int:
        """How long an append may wait to be committed before its client is answered
        COORDINATOR_NOT_AVAILABLE."""
        setting = self.topic.commit_timeout_config
        return REQUEST_TIMEOUT_MS if setting is None else self.host.config[setting]

    def wait_committed(
        self, partition: int, last_offset: int, timeout_ms: int | None = None
    ) -> defer.Deferred:
        """Fires with NONE once the high watermark of ``partition`` (led here) has passed
        ``last_offset``, else with Kafka's error for an acks=-1 append that did not make it:
        NOT_LEADER_OR_FOLLOWER (leadership moved), NOT_ENOUGH_REPLICAS_AFTER_APPEND (the ISR
        is below ``min.insync.replicas``), REQUEST_TIMED_OUT."""
        if timeout_ms is None:
            timeout_ms = self.commit_timeout_ms()
        d = self.host.replicas.wait_for_replication(
            [(self.name, partition, last_offset)], timeout_ms
        )
        return d.addCallback(lambda results: results[(self.name, partition)])

    def replicated(self, key: str) -> defer.Deferred:
        """Fires with NONE once everything appended so far to the partition of ``key`` is below
        the high watermark (at once on one node, where appended is committed), else with the
        error its client gets: Kafka's mapping of a failed coordinator append, lost
        leadership NOT_COORDINATOR, anything else COORDINATOR_NOT_AVAILABLE (retried)."""
        if not self.clustered:
            return defer.succeed(ErrorCode.NONE)
        partition = self.partition_for(key)
        partition_log = self.partition_log(partition)
        if partition_log is None:
            return defer.succeed(ErrorCode.NOT_COORDINATOR)

        def answer(status: ErrorCode) -> ErrorCode:
            if status == ErrorCode.NONE:
                return ErrorCode.NONE
            if status in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
                return ErrorCode.NOT_COORDINATOR
            return ErrorCode.COORDINATOR_NOT_AVAILABLE

        return self.wait_committed(partition, partition_log.log_end_offset - 1).addCallback(answer)

    # -- loading ------------------------------------------------------------------------------

    def batches(
        self, partition: int, to_log_end: bool = False
    ) -> Iterator[tuple[RecordBatch, int]]:
        """The batches of ``partition`` from its log start up to the high watermark (or the log
        end, for a new leader, whose whole log is to be committed), read in chunks of
        ``LOAD_CHUNK_BYTES``: (batch, offset) where ``offset`` is the first not yet replayed (a
        chunk may start inside a batch; its records below ``offset`` were seen already).
        Nothing when the partition has no log here. The end is read again for each chunk, so
        a background load also replays what was appended while it ran (a transaction's marker
        written to a partition still loading), as Kafka's loader does."""
        partition_log = self.partition_log(partition)
        if partition_log is None:
            return
        position = partition_log.log_start_offset
        while True:
            end = partition_log.log_end_offset if to_log_end else partition_log.high_watermark
            # Retention or DeleteRecords may have moved the start meanwhile.
            position = max(position, partition_log.log_start_offset)
            if position >= end:
                return
            result = partition_log.read(position, LOAD_CHUNK_BYTES, upper_bound=end)
            if not result.data:
                return
            advanced = position
            for batch in iter_batches(result.data):
                advanced = batch.next_offset
                self.replayed_records += batch.record_count
                yield batch, position
            if advanced <= position:
                return
            position = advanced

    def records(
        self, partition: int, to_log_end: bool = False
    ) -> Iterator[tuple[bytes, bytes | None]]:
        """(key, value) of each keyed record of the partition's data batches, once each, as
        ``batches`` reads them (a None value is a tombstone)."""
        for batch, position in self.batches(partition, to_log_end):
            if batch.is_control:
                continue
            for record in batch.records():
                if record.offset >= position and record.key is not None:
                    yield record.key, record.value

    def load_all(self) -> None:
        """Load every partition of the topic (one node, at start-up)."""
        info = self.host.logs.topics.get(self.name)
        if info is not None:
            for partition in range(info.num_partitions):
                self._load(partition, to_log_end=False)

    def on_election(self, partition: int, coordinator_epoch: int) -> None:
        """This broker became leader of ``partition`` at leader epoch ``coordinator_epoch``
        (Kafka's coordinator epoch): load its keys up to the log end (Kafka's ``onElection``),
        answering COORDINATOR_LOAD_IN_PROGRESS meanwhile. The partition is owned while it
        loads, so what the load starts (a transaction coordinator finishing prepared
        transactions) sees itself as coordinator; a load that fails leaves it unowned
        (NOT_COORDINATOR)."""
        if partition in self.owned:
            if not self.reload_on_reelection:
                return
            self.on_resignation(partition)
        self.coordinator_epochs[partition] = coordinator_epoch
        self.owned.add(partition)
        self._load(partition, to_log_end=True)

    def on_resignation(self, partition: int) -> None:
        """This broker no longer leads ``partition``: a load under way stops and the coordinator
        forgets its keys (Kafka's ``onResignation``); requests for them get NOT_COORDINATOR."""
        if partition not in self.owned:
            return
        self.owned.discard(partition)
        self.coordinator_epochs.pop(partition, None)
        self._queued.pop(partition, None)
        if self._current == partition:
            self._current = None  # the loader drops it at its next step
        self.loading.discard(partition)
        count = self.shard.unload_partition(partition)
        log.info(
            "no longer coordinator of %s-%d: unloaded %d %s",
            self.name,
            partition,
            count,
            self.topic.keys,
        )

    def _load(self, partition: int, to_log_end: bool) -> None:
        """Load ``partition``: at once without a reactor (a failure raises), else after the
        partitions queued before it, in the background."""
        self.loading.add(partition)
        self.failed.discard(partition)
        if self._cooperator is None:
            for _ in self._load_steps(partition, to_log_end):
                pass
            return
        self._queued[partition] = to_log_end
        if self._loader is None:
            self._loader = self._cooperator.cooperate(self._run_queue())
            self._loader.whenDone().addErrback(lambda failure: failure.trap(task.TaskStopped))

    def _run_queue(self) -> Iterator[None]:
        """The background loader: the queued partitions one after another. Between two steps
        of a load the reactor runs, and a partition may stop being wanted there
        (``on_resignation``, ``stop``): so it is checked before each step, and a load given up
        runs none of its code again (a last step would apply what it read). A load that fails
        is logged and leaves its partition failed; the others go on."""
        while self._queued:
            partition = next(iter(self._queued))
            to_log_end = self._queued.pop(partition)
            self._current = partition
            steps = self._load_steps(partition, to_log_end)
            try:
                while True:
                    if self._current != partition:
                        steps.close()
                        break
                    if next(steps, _DONE) is _DONE:
                        break
                    yield
            except Exception:  # noqa: BLE001 - one partition's failure must not stop the others
                log.exception("loading %s-%d failed", self.name, partition)
            self._current = None
        self._loader = None

    def _load_steps(self, partition: int, to_log_end: bool) -> Iterator[None]:
        """The coordinator's load of ``partition``, then the partition is loaded (or, when the
        load raised, failed and no longer owned)."""
        started = self.host.now_ms()
        try:
            count = yield from self.shard.load_partition(partition, to_log_end)
        except Exception:
            self.loading.discard(partition)
            self.failed.add(partition)
            self.owned.discard(partition)
            self.coordinator_epochs.pop(partition, None)
            raise
        self.loading.discard(partition)
        if count or self.clustered:
            log.info(
                "%s-%d%s: loaded %d %s in %d ms",
                self.name,
                partition,
                f" (coordinator epoch {self.coordinator_epochs.get(partition, -1)})"
                if self.clustered
                else "",
                count,
                self.topic.keys,
                self.host.now_ms() - started,
            )
