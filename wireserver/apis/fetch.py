"""Fetch (key 1), v4-18.

- Long-poll: when fewer than ``min_bytes`` are ready and nothing is in error, the request waits
  in the purgatory until an append to one of its partitions (re-reading then: see
  ``LongPoll``) or ``max_wait_ms``.
- Size limits: ``max_bytes`` for the response and ``partition_max_bytes`` per partition, with
  KIP-74's rule that the first batch of the first non-empty partition comes whole even when it is
  larger than either limit, so a consumer can always make progress.
- Fetch sessions (KIP-227), full and incremental, by Kafka's rules: see ``FetchPlan`` and
  ``wireserver.fetch_sessions``.
- Topic ids from v13 (UNKNOWN_TOPIC_ID for an id we don't know).
- OFFSET_OUT_OF_RANGE below the log start or above the log end; consumers never see past the
  high watermark.
- isolation_level read_committed (1): reads stop at the last stable offset (the first offset of
  the oldest open transaction, or the high watermark), and ``aborted_transactions`` lists the
  aborted transactions (producer id, first offset) overlapping the returned batches, from the
  segments' ``.txnindex``, so the client drops their records. ``last_stable_offset`` is
  reported for both isolation levels, as Kafka does.

A consumer under a ``consumer_byte_rate`` quota (``wireserver.quotas``) gets no more bytes
than the quota allows in one window, and the bytes it gets count against the quota; a fetch
that would go over is answered empty with ``throttle_time_ms`` (its bytes not counted), as
Kafka's ``getThrottledResponse``; followers are exempt.

Epochs are fenced against the partition's leader epoch (0 on one node;
``wireserver.replica``). A follower's fetch (``replica_id`` >= 0) and a consumer's Fetch
before v11 must reach the leader (NOT_LEADER_OR_FOLLOWER elsewhere). A follower's fetch reads
up to the log end offset rather than the high watermark or LSO, and its fetch offset tells the
leader the follower's log end offset (high watermark, ISR expansion:
``Partition.follower_fetched``).

Fetch from the nearest replica (KIP-392): a consumer's Fetch v11+ carries client metadata (its
rack, ``client.rack``), and then, as in Kafka, any replica serves it: a follower reads up to
its own high watermark (or its last stable offset, read_committed: followers replay producer
state and markers as the leader does), answers an offset between that and its log end with no
records and one past its log end OFFSET_OUT_OF_RANGE (the consumer then goes back to the
leader). With ``replica.selector.class`` set, the leader names a better replica for the
client's rack in ``preferred_read_replica`` (``wireserver.replica.selector``) and sends no
records for that partition; the answer is not held back for ``min_bytes``.

From v16 a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries the leader
and leader epoch this broker knows (``current_leader``) and the response that leader's endpoint
(``node_endpoints``): KIP-951 leader discovery, as Kafka.

Skipped (later issues): divergence checks against ``last_fetched_epoch`` (followers truncate
with OffsetForLeaderEpoch first).
"""

from __future__ import annotations

import bisect
import collections
import uuid
from collections.abc import Callable, Mapping

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.apis.metadata import leader_hints
from wireserver.context import RequestContext
from wireserver.fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, CachedPartition, FetchSession
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.fetch_response import (
    FLEXIBLE_FROM,
    FetchPartition,
    FetchTopic,
    keep_encoded,
    keep_encoded_topic,
)
from wireserver.protocol.messages import fetch_replica_id
from wireserver.protocol.metadata_response import PartitionEntries
from wireserver.quotas import quota_user
from wireserver.quotas.rates import QuotaManager
from wireserver.security import checks
from wireserver.storage.errors import KafkaStorageError, OffsetOutOfRange

API_KEY = 1
ZERO_UUID = uuid.UUID(int=0)
UNKNOWN = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID)
# Errors that come with KIP-951 leader hints from v16 (Kafka's handleFetchRequest).
LEADER_MOVED = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)
# ErrorCode.NONE once: an enum member's lookup on its class costs several times a global's,
# and the per-partition loops below compare against it for every partition of a wide fetch.
NO_ERROR = ErrorCode.NONE


class FetchPlan:
    """The partitions one Fetch request reads, in response order, and how it answers.

    Kafka's ``FetchManager.newContext``, on arrival: a full fetch (epoch 0 or -1) first closes
    the session it names; with epoch 0 a session is opened when the answer is built, if the
    cache has room (else the answer carries session id 0). An incremental fetch must name a
    cached session (else FETCH_SESSION_ID_NOT_FOUND), carry its epoch (else
    INVALID_FETCH_SESSION_EPOCH) and use topic ids as the session's first request did (else
    FETCH_SESSION_TOPIC_ID_ERROR); those answers change nothing. A valid one updates the
    session and advances its epoch at once, before any long-poll wait, so the client's next
    request is accepted even if this one is still waiting; if another request of the session
    came meanwhile, this one is answered INVALID_FETCH_SESSION_EPOCH when it completes. An
    incremental fetch that forgets every partition closes the session and is answered
    without one.
    """

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.version = ctx.version
        #: the session of an incremental fetch (None for a full one)
        self.session: FetchSession | None = None
        self.new_session = False  # a full fetch with epoch 0: open a session when answering
        #: the session's epoch this incremental fetch left it at
        self.expected_epoch: int | None = None
        self.error = NO_ERROR
        #: the most bytes this client's ``consumer_byte_rate`` lets one answer carry (Kafka's
        #: ``maxValueInQuotaWindow``), None without a quota
        self.quota_bytes: float | None = None
        self.partitions: list[CachedPartition] = []
        #: a sessionless consumer fetch's request topics, in order (``CaughtUpMemo.plan``);
        #: None when the memo is not used, and once every partition is read again
        #: (``LongPoll``)
        self.runs: list[TopicRun] | None = None
        #: with ``runs``: the partitions, each kept topic in place of its own
        self.items: list = []

    def build(self) -> None:
        body, version = self.ctx.body, self.version
        cache = self.ctx.services.fetch_sessions
        session_id = body.session_id if version >= 7 else 0
        epoch = body.session_epoch if version >= 7 else FINAL_EPOCH
        names = self._topic_names()
        if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
            if session_id:
                cache.remove(session_id)
            self.new_session = epoch == INITIAL_EPOCH
            memo = CaughtUpMemo.usable(self.ctx, self, *consumer_reads(self.ctx, version))
            if memo is not None:
                memo.plan(self, names)
            else:
                self.partitions = self.requested(names)
            return
        requested = self.requested(names)
        session = cache.get(session_id)
        if session is None:
            self.error = ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            return
        if session.epoch != epoch:
            self.error = ErrorCode.INVALID_FETCH_SESSION_EPOCH
            return
        if session.uses_topic_ids != (version >= 13):
            self.error = ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
            return
        for cached in requested:
            key = self.key(cached)
            known = session.partitions.get(key)
            if known is None:
                session.partitions[key] = cached
            else:
                known.fetch_offset = cached.fetch_offset
                known.max_bytes = cached.max_bytes
                known.current_leader_epoch = cached.current_leader_epoch
                known.log_start_offset = cached.log_start_offset
        for forgotten in body.forgotten_topics_data or []:
            topic = forgotten.topic_id if version >= 13 else forgotten.topic
            for partition in forgotten.partitions:
                session.partitions.pop((topic, partition), None)
        if not session.partitions:
            cache.remove(session.id)
            self.partitions = requested
            return
        cache.touch(session, self.ctx.services.now_ms())
        session.advance()
        for cached in session.partitions.values():
            if cached.topic is None and version >= 13:
                # A topic id the session could not name before may exist by now.
                cached.topic = names.get(cached.topic_id)
        self.session = session
        self.expected_epoch = session.epoch
        self.partitions = list(session.partitions.values())

    def key(self, cached: CachedPartition):
        return (cached.topic_id if self.version >= 13 else cached.topic, cached.partition)

    def _topic_names(self) -> Mapping:
        """Topic id -> name (v13+ requests name topics by id)."""
        if self.version < 13:
            return {}
        return self.ctx.services.logs.topic_names_by_id

    def topic_name(self, topic, by_id: Mapping) -> str | None:
        """A request topic's name; None for a topic id this broker does not know."""
        return by_id.get(topic.topic_id) if self.version >= 13 else topic.topic

    def requested(self, by_id: Mapping) -> list[CachedPartition]:
        requested: list[CachedPartition] = []
        for topic in self.ctx.body.topics:
            requested.extend(self.topic_partitions(topic, self.topic_name(topic, by_id)))
        return requested

    def topic_partitions(self, topic, name: str | None) -> list[CachedPartition]:
        """A request topic's partitions, ``name`` being the topic's name (None: unknown)."""
        version = self.version
        topic_id = topic.topic_id if version >= 13 else None
        # Positional: one per partition of every full fetch, and a dataclass's keyword call
        # costs twice a positional one.
        return [
            CachedPartition(
                name,  # topic
                topic_id,
                p.partition,
                p.fetch_offset,
                p.partition_max_bytes,  # max_bytes
                p.current_leader_epoch if version >= 9 else -1,
                p.log_start_offset if version >= 5 else -1,
            )
            for p in topic.partitions
        ]


class PartitionResult:
    """One partition's answer; an errored one carries -1 for every offset, as Kafka's does."""

    __slots__ = (
        "cached",
        "error",
        "records",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "aborted",
        "preferred_read_replica",
        "answer",
    )

    def __init__(
        self,
        cached,
        error,
        records=b"",
        hw=-1,
        lso=-1,
        log_start=-1,
        aborted=None,
        preferred_read_replica=-1,
        answer=None,
    ):
        self.cached = cached
        self.error = error
        self.records = records
        self.high_watermark = hw
        self.last_stable_offset = lso
        self.log_start_offset = log_start
        self.aborted = aborted
        self.preferred_read_replica = preferred_read_replica
        #: the answer's entry (a ``FetchPartition``) made once and sent again
        #: (``CaughtUpMemo``); None otherwise
        self.answer = answer


class TopicRun:
    """One topic of a sessionless consumer fetch, as the request names it: its partitions
    are the plan's ``partitions[start:end]``; ``kept`` is its answer kept whole
    (``KeptTopic``), or None when its partitions are read one by one; ``key`` is what the
    memo keeps it under, ``raw`` the bytes the request names its partitions with (None: not
    to keep), ``name`` its name (None: an unknown topic id)."""

    __slots__ = ("start", "end", "kept", "key", "raw", "name")

    def __init__(
        self,
        start: int,
        end: int,
        kept: KeptTopic | None,
        key: tuple,
        raw: bytes | None,
        name: str | None,
    ) -> None:
        self.start = start
        self.end = end
        self.kept = kept
        self.key = key
        self.raw = raw
        self.name = name


class CaughtUpMemo:
    """The answers one connection's sessionless consumer fetches got for partitions read to
    their end, kept to be sent again while nothing they are made of has changed.

    A client without fetch sessions (librdkafka) names every partition in every Fetch, and
    a consumer following thousands of partitions is caught up on nearly all of them: each
    one's entry is its offsets and no records, as in the previous answer. Kafka builds them
    again every time, cheaply on the JVM; here that pass was the cost of such a fetch
    (about 3 µs a partition) and, once longer than the time between two records, the
    latency of every record. A kept entry is sent again when the request asks the same
    offset with the same leader epoch, the log is still open and still the one its
    partition serves, the partition is led here under the same leadership (the same
    ``LeaderState`` and epoch), and the log's (high watermark, last stable offset, log
    start) are the kept ones: everything a caught-up partition's answer is made of. The
    topic's ACL is checked per request before it, as for every partition (for a topic kept
    whole, in ``plan``: a denied one is read partition by partition and answered the
    denial), and a request arriving while a log dir is offline reads every partition
    (``usable``).

    A topic all of whose partitions were answered so is also kept whole (``KeptTopic``):
    while the request names its partitions with the same bytes and the broker's change
    journal (``storage.changes``) has nothing newer for the topic, its partitions are not
    looked at one by one at all: the fetch takes the kept partitions, results and the
    topic's answer entry, encoded once. The journal is stamped by everything the checks
    above read, and by appends.

    One per connection, version and isolation level (the entries' bytes differ), in the
    connection's ``RequestContext.connection_cache``; it goes with the connection. What it
    keeps of a topic goes when the topic is deleted (``forget_deleted``, on the next request
    that uses the memo), so that a long-lived connection does not hold the logs of every topic
    it ever read.
    """

    __slots__ = ("tables", "topics", "deletions")

    def __init__(self, deletions: int = 0) -> None:
        #: the change journal's count of deleted topics when this memo last looked
        self.deletions = deletions
        #: topic -> partition -> (fetch offset, current leader epoch, log, partition,
        #: leader state, leader epoch, (hw, lso, log start), result)
        self.tables: dict[str, dict[int, tuple]] = {}
        #: (the request's key of a topic (its id from v13, else its name), how many times the
        #: request named it before) -> the topic kept
        self.topics: dict = {}

    def plan(self, plan: FetchPlan, by_id: Mapping) -> None:
        """Make ``plan``'s partitions and runs: a kept topic's partitions as kept, the
        others' from the request (``FetchPlan.topic_partitions``)."""
        version = plan.version
        ctx = plan.ctx
        changes = ctx.services.logs.changes
        partitions: list[CachedPartition] = []
        items: list = []
        runs: list[TopicRun] = []
        # A topic may be named more than once (librdkafka starts each fetch one partition
        # further along its list, which is not in topic order): each time is kept apart,
        # under the topic's key and how many times it came before in the request. Named
        # twice in a row, both are read partition by partition, as their answer is one entry
        # (``build_response``).
        times: dict = {}
        previous = None
        for topic in ctx.body.topics:
            key = topic.topic_id if version >= 13 else topic.topic
            name = plan.topic_name(topic, by_id)
            # (kafka-python's entries have no ``raw``; None: neither kept nor to keep)
            raw = getattr(topic, "raw", None)
            if key == previous and runs:
                raw = None
                first = runs[-1]
                if first.kept is not None:
                    items.pop()
                    items.extend(first.kept.partitions)
                first.kept = None
                first.raw = None
            previous = key
            count = times.get(key, 0)
            times[key] = count + 1
            key = (key, count)
            start = len(partitions)
            kept = self.topics.get(key)
            if (
                kept is not None
                and raw is not None
                and kept.name == name
                and kept.raw == raw
                and changes.unchanged_since(kept.name, kept.sequence)
                and checks.fetch_topic(ctx, kept.name) is None
            ):
                partitions.extend(kept.partitions)
                items.append(kept)
            else:
                kept = None
                read = plan.topic_partitions(topic, name)
                partitions.extend(read)
                items.extend(read)
            runs.append(TopicRun(start, len(partitions), kept, key, raw, name))
        plan.partitions = partitions
        plan.items = items
        plan.runs = runs

    def keep_topics(self, plan: FetchPlan, results: list[PartitionResult], sequence: int):
        """Keep whole each topic of a first read whose partitions all have kept answers,
        as of change ``sequence``."""
        assert plan.runs is not None
        for run in plan.runs:
            start, end, name, raw = run.start, run.end, run.name, run.raw
            if run.kept is not None or raw is None or name is None or start == end:
                continue
            chunk = results[start:end]
            if any(result.answer is None for result in chunk):
                continue
            self.topics[run.key] = KeptTopic(
                raw, name, sequence, plan.partitions[start:end], chunk, plan.version
            )

    @staticmethod
    def usable(ctx, plan: FetchPlan, follower: bool, select: bool) -> CaughtUpMemo | None:
        """The memo this request may use and fill, or None: only a consumer's sessionless
        fetch (a session sends unchanged partitions not at all), in a flexible version (the
        entries are kept encoded), without a replica selector (the preferred replica
        depends on more than the partition) and with every log dir online."""
        cache = ctx.connection_cache
        if (
            cache is None
            or follower
            or select
            or plan.session is not None
            or plan.new_session
            or plan.version < FLEXIBLE_FROM
            or ctx.services.logs.failures.offline_dirs
        ):
            return None
        key = ("fetch caught up", plan.version, ctx.body.isolation_level)
        changes = ctx.services.logs.changes
        memo = cache.get(key)
        if memo is None:
            memo = cache[key] = CaughtUpMemo(changes.deletions)
        elif memo.deletions != changes.deletions:
            memo.forget_deleted(ctx.services.logs.topics, changes.deletions)
        return memo

    def forget_deleted(self, topics: Mapping, deletions: int) -> None:
        """Drop what is kept of topics no longer in ``topics`` (deleted since the memo last
        looked; the journal's count of deletions is now ``deletions``)."""
        for name in [name for name in self.tables if name not in topics]:
            del self.tables[name]
        for key in [key for key, kept in self.topics.items() if kept.name not in topics]:
            del self.topics[key]
        self.deletions = deletions

    @staticmethod
    def keep(
        table: dict,
        cached: CachedPartition,
        partition,
        result: PartitionResult,
        version: int,
        read_committed: bool,
    ) -> None:
        """Keep a caught-up partition's result, with its answer entry encoded once."""
        answer = FetchPartition(
            cached.partition,
            NO_ERROR,
            result.high_watermark,
            result.last_stable_offset,
            result.log_start_offset,
            [] if read_committed else None,
            b"",
        )
        if not keep_encoded(answer, version):
            return
        result.answer = answer
        table[cached.partition] = (
            cached.fetch_offset,
            cached.current_leader_epoch,
            partition.log,
            partition,
            partition.leader,
            partition.leader_epoch,
            (result.high_watermark, result.last_stable_offset, result.log_start_offset),
            result,
        )


class KeptTopic:
    """A request topic whose partitions were all answered caught up, kept whole
    (``CaughtUpMemo``): the partitions' bytes in the request, the topic's name, the change
    journal's sequence number when read, the plan's partitions and results, their purgatory
    keys and the topic's answer entry, encoded once.

    It stands in a plan's ``TopicRun`` for its partitions, and in ``read_partitions``' loop for
    all of them at once: it has no ``topic`` (None) so that the loop tells it from a
    partition in its check for an unknown topic, without a test of its own per partition."""

    __slots__ = ("raw", "name", "sequence", "partitions", "results", "keys", "answer")
    topic = None

    def __init__(
        self,
        raw: bytes,
        name: str,
        sequence: int,
        partitions: list[CachedPartition],
        results: list[PartitionResult],
        version: int,
    ) -> None:
        self.raw = raw
        self.name = name
        self.sequence = sequence
        self.partitions = partitions
        self.results = results
        #: what a fetch waits on for the topic: any append to it (``Purgatory.notify``)
        self.keys = [("append", name)]
        self.answer = FetchTopic(
            name,
            partitions[0].topic_id or ZERO_UUID,
            PartitionEntries(result.answer for result in results),
        )
        keep_encoded_topic(self.answer, version)


def pieces(plan: FetchPlan, items: list) -> list:
    """``items`` (the plan's partitions or their results) in the plan's runs: each kept
    topic as itself (``KeptTopic``), the others as slices; all of them as one slice when the
    plan has no runs."""
    runs = plan.runs
    if runs is None:
        return [items]
    return [run.kept if run.kept is not None else items[run.start : run.end] for run in runs]


def consumer_reads(ctx, version: int) -> tuple[bool, bool]:
    """(whether the request is a follower's, whether a replica selector picks the replica
    it should read from)."""
    follower = replica_id(ctx) >= 0
    # Kafka's FetchParams.fetchOnlyFromLeader: a consumer's v11+ request carries client
    # metadata, and any replica may serve it (KIP-392).
    leader_only = follower or version < 11
    return follower, not leader_only and ctx.services.replicas.replica_selector is not None


def replica_id(ctx) -> int:
    return fetch_replica_id(ctx.body, ctx.version)


def rack_lookup(ctx: RequestContext) -> Callable[[int], tuple[bool, str | None]]:
    """broker id -> (reachable on the request's listener, rack), for the replica selector
    (Kafka offers it ``Node.noNode()`` for a replica without an endpoint there)."""
    metadata = ctx.services.metadata
    known: dict[int, tuple[bool, str | None]] = {}

    def rack_of(broker: int) -> tuple[bool, str | None]:
        found = known.get(broker)
        if found is None:
            endpoint = metadata.broker_endpoint(broker, ctx.listener_name)
            found = known[broker] = (True, endpoint.rack) if endpoint is not None else (False, None)
        return found

    return rack_of


def read_partitions(
    ctx, plan: FetchPlan, partitions: list[CachedPartition] | None = None
) -> list[PartitionResult]:
    """Read ``partitions`` (all of the plan's by default) in order, sharing the request's
    byte limits among them."""
    body = ctx.body
    replicas = ctx.services.replicas
    follower, select = consumer_reads(ctx, plan.version)
    leader_only = follower or plan.version < 11
    rack_of = rack_lookup(ctx) if select else None
    remaining = body.max_bytes
    if plan.quota_bytes is not None:
        remaining = min(remaining, int(plan.quota_bytes))
    min_one = True
    read_committed = body.isolation_level == 1
    # the reassignment throttle applies to followers' fetches; checked once per request
    throttle = ctx.services.replication_quotas.leader if follower else None
    throttle_exceeded: bool | None = None
    results: list[PartitionResult] = []
    denials: dict[str, ErrorCode | None] = {}  # per topic, once per request
    memo = CaughtUpMemo.usable(ctx, plan, follower, select)
    table: dict | None = None  # the memo's table of ``table_topic``
    table_topic: str | None = None
    sequence = ctx.services.logs.changes.sequence
    items: list = plan.partitions if partitions is None else partitions
    if partitions is None and plan.runs is not None:
        items = plan.items
    for cached in items:
        if cached.topic is None:
            if cached.__class__ is KeptTopic:  # a kept topic (its ``topic`` is None), whose
                results.extend(cached.results)  # ACL ``CaughtUpMemo.plan`` checked
                continue
            error = (
                ErrorCode.UNKNOWN_TOPIC_ID
                if plan.version >= 13
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            results.append(PartitionResult(cached, error))
            continue
        denied = denials.get(cached.topic, False)
        if denied is False:
            denied = denials[cached.topic] = checks.fetch_topic(ctx, cached.topic)
        if denied:
            results.append(PartitionResult(cached, denied))
            continue
        if memo is not None:
            if cached.topic != table_topic:
                table_topic = cached.topic
                table = memo.tables.get(table_topic)
                if table is None:
                    table = memo.tables[table_topic] = {}
            kept = table.get(cached.partition)  # type: ignore[union-attr]
            if kept is not None:
                (
                    offset,
                    leader_epoch,
                    kept_log,
                    kept_partition,
                    leader,
                    epoch,
                    offsets,
                    kept_result,
                ) = kept
                if (
                    offset == cached.fetch_offset
                    and leader_epoch == cached.current_leader_epoch
                    and not kept_log.closed
                    and kept_log.replica is kept_partition
                    and kept_partition.leader is leader
                    and kept_partition.leader_epoch == epoch
                    and kept_log.fetch_offsets() == offsets
                ):
                    results.append(kept_result)
                    continue
        partition = replicas.partition(cached.topic, cached.partition)
        if partition is None:  # no log here
            error = replicas.missing_error(cached.topic, cached.partition)
            results.append(PartitionResult(cached, error))
            continue
        log = partition.log
        hw, lso, log_start = log.fetch_offsets()
        error, _ = replicas.check_partition_leader(
            partition, cached.current_leader_epoch, leader_only
        )
        if error is not None:
            results.append(PartitionResult(cached, error))
            continue
        if select:
            preferred = replicas.preferred_read_replica(
                cached.topic, cached.partition, cached.fetch_offset, body.rack_id, rack_of
            )
            if preferred >= 0:
                # Kafka skips the read: the client fetches from the preferred replica next.
                results.append(
                    PartitionResult(cached, NO_ERROR, b"", hw, lso, log_start, None, preferred)
                )
                continue
        if throttle is not None and leader_throttled(ctx, throttle, cached, log):
            if throttle_exceeded is None:
                throttle_exceeded = throttle.exceeded()
            if throttle_exceeded:
                # Kafka's shouldLeaderThrottle: the follower gets no records this time.
                results.append(PartitionResult(cached, NO_ERROR, b"", hw, lso, log_start))
                continue
        bound = None if follower else (lso if read_committed else hw)
        if bound is not None and cached.fetch_offset == bound and bound >= log_start:
            # Caught up: nothing to read. A consumer following thousands of partitions has
            # most of them here on every fetch.
            result = PartitionResult(cached, NO_ERROR, b"", hw, lso, log_start)
            if table is not None and partition.leader is not None:
                CaughtUpMemo.keep(table, cached, partition, result, plan.version, read_committed)
            results.append(result)
            continue
        limit = max(0, min(cached.max_bytes, remaining))
        try:
            read = log.read(
                cached.fetch_offset,
                limit,
                upper_bound=bound,
                min_one_batch=min_one,
                zero_copy=ctx.zero_copy,
            )
        except OffsetOutOfRange:
            results.append(PartitionResult(cached, ErrorCode.OFFSET_OUT_OF_RANGE))
            continue
        except KafkaStorageError:  # an I/O error reading: the log dir is offline now
            results.append(PartitionResult(cached, ErrorCode.KAFKA_STORAGE_ERROR))
            continue
        if read.data:
            min_one = False
            remaining = max(0, remaining - len(read.data))
        aborted = None
        if read_committed and read.data:
            aborted = log.collect_aborted(cached.fetch_offset, read.next_offset)
        results.append(PartitionResult(cached, NO_ERROR, read.data, hw, lso, log_start, aborted))
    if memo is not None and partitions is None and plan.runs is not None:
        memo.keep_topics(plan, results, sequence)
    return results


def leader_throttled(ctx, throttle, cached: CachedPartition, partition_log) -> bool:
    """Whether the follower's fetch of this partition counts against the leader throttle:
    the topic lists it for this broker in ``leader.replication.throttled.replicas`` and the
    follower is not in the ISR (Kafka throttles only replicas catching up)."""
    if not throttle.is_throttled(partition_log, cached.partition):
        return False
    partition = ctx.services.replicas.partitions.get((cached.topic, cached.partition))
    return partition is None or replica_id(ctx) not in partition.isr


def record_leader_throttled(ctx, results: list[PartitionResult]) -> None:
    """Count the bytes a follower gets of throttled partitions against the leader throttle
    (Kafka's ``quotas.leader.record(sizeOfThrottledPartitions)``)."""
    throttle = ctx.services.replication_quotas.leader
    logs = ctx.services.logs
    size = 0
    for result in results:
        cached = result.cached
        if not result.records or cached.topic is None:
            continue
        partition_log = logs.get_log(cached.topic, cached.partition)
        if partition_log is not None and throttle.is_throttled(partition_log, cached.partition):
            size += len(result.records)
    throttle.record(size)


def ready(ctx, results: list[PartitionResult], plan: FetchPlan | None = None) -> bool:
    """Answer now: enough bytes, an error to report, or no wait asked for. With ``plan``,
    ``results`` are its partitions' and its kept topics are skipped (nothing in them)."""
    if ctx.body.max_wait_ms <= 0:
        return True
    size = 0
    for piece in pieces(plan, results) if plan is not None else (results,):
        if piece.__class__ is KeptTopic:
            continue
        for result in piece:  # one pass: a wide consumer's fetch runs this on every wake
            if result.error != NO_ERROR or result.preferred_read_replica >= 0:
                return True
            size += len(result.records)
    return size >= max(1, ctx.body.min_bytes)


def build_response(ctx, plan: FetchPlan, results: list[PartitionResult]):
    """The answer; for an incremental fetch only the partitions with news (records, an error,
    a new high watermark, LSO or log start), and those that sent records go to the back of
    the session, so the next fetch reads the others first (Kafka's fairness rotation). A full
    fetch with epoch 0 opens its session here, with every partition of the answer."""
    session = plan.session
    if session is not None and session.epoch != plan.expected_epoch:
        # Another request of this session was accepted while this one waited (Kafka: "possible
        # duplicate request"); the session now expects that one's successor.
        return error_response(ctx, ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id)
    response_class = ctx.request.spec.response_class
    topic_class = response_class.FetchableTopicResponse
    partition_class = topic_class.PartitionData
    aborted_class = partition_class.AbortedTransaction
    read_committed = ctx.body.isolation_level == 1
    topics: list = []
    moved = []  # (topic, partition, response entry) answered with a leader-moved error
    metrics = ctx.services.metrics
    # a follower's reads are replication, not BytesOut
    count_meters = metrics.enabled and replica_id(ctx) < 0
    known = ctx.services.logs.topics
    metered: set = set()
    meters = None
    # The topic ``meters`` counts (partitions come by topic); None also stands for an
    # unknown topic id, which has no meters.
    meters_topic: str | None = None
    # What the client was last sent matters to a session, or to the one this fetch opens.
    track_sent = session is not None or plan.new_session
    entry = None  # the topic entry of the previous partition
    for piece in pieces(plan, results):
        if piece.__class__ is KeptTopic:  # its answer entry as kept (a sessionless fetch)
            if count_meters and piece.name in known and piece.name not in metered:
                metered.add(piece.name)
                metrics.topic(piece.name).fetch_requests += 1
            topics.append(piece.answer)
            entry = None
            continue
        for result in piece:
            cached = result.cached
            if count_meters:
                if cached.topic != meters_topic:
                    meters_topic = cached.topic
                    meters = metrics.topic(cached.topic) if cached.topic in known else None
                    if meters is not None and cached.topic not in metered:
                        metered.add(cached.topic)
                        meters.fetch_requests += 1
                if meters is not None:
                    if result.records:
                        meters.bytes_out += len(result.records)
                    if result.error != NO_ERROR:
                        meters.failed_fetch_requests += 1
            if track_sent:
                changed = (
                    result.records
                    or result.error != NO_ERROR
                    or result.preferred_read_replica >= 0
                    or result.high_watermark != cached.sent_high_watermark
                    or result.last_stable_offset != cached.sent_last_stable_offset
                    or result.log_start_offset != cached.sent_log_start_offset
                )
                cached.sent_high_watermark = result.high_watermark
                cached.sent_last_stable_offset = result.last_stable_offset
                cached.sent_log_start_offset = result.log_start_offset
                if session is not None:
                    if not changed:
                        continue
                    if result.records:
                        session.partitions.move_to_end(plan.key(cached))
            if (
                entry is None
                or cached.topic != entry.topic
                or (cached.topic is None and cached.topic_id != entry.topic_id)
            ):
                # Consecutive partitions of one topic share an entry, as in Kafka's answer
                # (``FetchResponse.toMessage`` keeps the request's order): a topic named
                # again further on gets another. (An unknown topic has no name: its id.)
                entry = topic_class(
                    topic=cached.topic, topic_id=cached.topic_id or ZERO_UUID, partitions=[]
                )
                topics.append(entry)
            if result.answer is not None:  # made once, sent again (CaughtUpMemo)
                entry.partitions.append(result.answer)
                continue
            if result.aborted:
                aborted = [
                    aborted_class(producer_id=txn.producer_id, first_offset=txn.first_offset)
                    for txn in result.aborted
                ]
            elif read_committed or result.error in UNKNOWN:
                # Kafka answers a partition it doesn't know with an empty (not null) list.
                aborted = []
            else:
                aborted = None
            entry.partitions.append(
                FetchPartition(
                    cached.partition,
                    result.error,
                    result.high_watermark,
                    result.last_stable_offset,
                    result.log_start_offset,
                    aborted,
                    result.records,
                    result.preferred_read_replica,
                )
            )
            if result.error in LEADER_MOVED and plan.version >= 16:
                moved.append((cached.topic, cached.partition, entry.partitions[-1]))
    session_id = session.id if session is not None else 0
    if plan.new_session:
        opened = ctx.services.fetch_sessions.maybe_create(
            ctx.services.now_ms(),
            privileged=replica_id(ctx) >= 0,
            uses_topic_ids=plan.version >= 13,
            partitions=collections.OrderedDict((plan.key(r.cached), r.cached) for r in results),
        )
        session_id = opened.id if opened is not None else 0
    endpoints = (
        leader_hints(ctx, moved, partition_class.LeaderIdAndEpoch, response_class.NodeEndpoint)
        if moved
        else []
    )
    return ctx.response(
        throttle_time_ms=0,
        error_code=NO_ERROR,
        session_id=session_id,
        responses=topics,
        node_endpoints=endpoints,
    )


def error_response(ctx, code: ErrorCode, session_id: int = 0):
    return ctx.response(throttle_time_ms=0, error_code=code, session_id=session_id, responses=[])


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    plan = FetchPlan(ctx)
    plan.build()
    if plan.error != NO_ERROR:
        return error_response(ctx, plan.error)
    return LongPoll(ctx, plan).start()


class LongPoll:
    """One Fetch from its first read to its answer: read every partition; if that is not
    ``ready``, wait in the purgatory on an append to any of them until ``max_wait_ms`` passes,
    read again when woken, and answer once ready, at the deadline or when the wait timed out.

    Woken by an append when the first read found no records at all (``min_bytes`` 1, a
    consumer's default), only the partition appended to is read again: every append wakes the
    fetch as it happens, so the others are as the first read left them, and a consumer
    following thousands of partitions costs one read of them per record, not two (a change
    that comes without an append, a log start moved by retention, is reported by the next
    fetch; the wait is at most ``max_wait_ms``). A topic the caught-up memo answered whole
    (``KeptTopic``) is waited on as a whole, in one key that any append to it notifies
    (``Purgatory.notify``); woken by it, the fetch reads that topic's partitions again, and
    answers the other kept topics with their kept entries. At the deadline every partition is
    read again, as Kafka's ``DelayedFetch.onComplete`` does, kept topics included.

    A state object with callbacks rather than an ``inlineCallbacks`` generator: the answer is
    returned at once when the first read is ready (no Deferred), and the module can be
    compiled (Twisted drives only the interpreter's generators). A failure after a wait
    fails the handler's Deferred, as an exception on arrival fails the request.
    """

    def __init__(self, ctx: RequestContext, plan: FetchPlan):
        self.ctx = ctx
        self.plan = plan
        self.services = ctx.services
        self.deadline = self.services.reactor.seconds() + ctx.body.max_wait_ms / 1000.0
        self.follower = replica_id(ctx)
        self.quota: QuotaManager | None = None
        self.user = ""
        self.client_id = ""
        self.results: list[PartitionResult] = []
        #: the purgatory keys this fetch waits on, made at its first wait
        self.keys: list[tuple] | None = None
        #: (topic, partition) -> its indexes in the plan, made at the first partial re-read
        self.positions: dict[tuple[str | None, int], list[int]] | None = None
        #: the results so far hold no records: a wake re-reads only the partition appended to
        self.partial = False
        self.answered: defer.Deferred | None = None

    def start(self) -> HandlerResult:
        ctx, plan, services = self.ctx, self.plan, self.services
        if self.follower >= 0:
            for cached in plan.partitions:
                # Only a replica allowed CLUSTER_ACTION moves the ISR and the high watermark.
                if cached.topic is not None and checks.fetch_topic(ctx, cached.topic) is None:
                    services.replicas.follower_fetched(
                        (cached.topic, cached.partition),
                        self.follower,
                        cached.fetch_offset,
                        cached.log_start_offset,
                    )
        quotas = services.quotas.fetch
        if self.follower < 0 and quotas.active:
            self.quota = quotas
            self.user, self.client_id = quota_user(ctx.security), ctx.client_id or ""
            plan.quota_bytes = quotas.max_value_in_window(self.user, self.client_id)
        self.results = read_partitions(ctx, plan)
        if ready(ctx, self.results, plan):
            return self.answer()
        self.keys = []
        for piece in pieces(plan, plan.partitions):
            if piece.__class__ is KeptTopic:
                self.keys.extend(piece.keys)
                continue
            self.keys.extend(
                ("append", cached.topic, cached.partition)
                for cached in piece
                if cached.topic is not None
            )
        if not self.keys or not self.wait():
            return self.answer()
        # Not ready with min_bytes 1: no partition had a record (or an error).
        self.partial = ctx.body.min_bytes <= 1
        self.answered = defer.Deferred()
        return self.answered

    def wait(self) -> bool:
        """Wait for an append or the deadline; False when the deadline has passed."""
        remaining = self.deadline - self.services.reactor.seconds()
        if remaining <= 0:
            return False
        assert self.keys is not None
        self.services.purgatory.watch(self.keys, remaining).addCallback(self.woken)
        return True

    def woken(self, key: tuple | bool) -> None:
        """An append to one of the partitions (its purgatory key) or the timeout (False)."""
        assert self.answered is not None
        try:
            if key and self.partial:
                assert isinstance(key, tuple)
                # a partition's key, or a kept topic's (``KeptTopic.keys``): all of it
                fresh = self.reread(key[1], key[2] if len(key) == 3 else None)
            else:
                # Every partition read again: the kept topics' answers, as they were when
                # the fetch arrived, no longer stand for theirs.
                self.plan.runs = None
                fresh = self.results = read_partitions(self.ctx, self.plan)
            # After a partial re-read the other partitions are still empty and without
            # errors, so whether the fresh ones are ready is whether the whole answer is.
            if key and not ready(self.ctx, fresh) and self.wait():
                return
            response = self.answer()
        except Exception:  # noqa: BLE001 - the request fails as on arrival, the broker serves on
            self.answered.errback()
            return
        self.answered.callback(response)

    def reread(self, topic: str, index: int | None) -> list[PartitionResult]:
        """Read again the partition appended to (each place it has in the request), or
        every partition of ``topic`` (``index`` None), keeping the other results; returns
        the fresh ones. The kept topics they are in are answered from their results now."""
        plan = self.plan
        partitions = plan.partitions
        runs = plan.runs
        if index is None:
            if runs is not None:
                indexes = [
                    i for run in runs if run.name == topic for i in range(run.start, run.end)
                ]
            else:
                indexes = [i for i, cached in enumerate(partitions) if cached.topic == topic]
        else:
            if self.positions is None:
                self.positions = {}
                for i, cached in enumerate(partitions):
                    self.positions.setdefault((cached.topic, cached.partition), []).append(i)
            indexes = self.positions.get((topic, index), [])
        fresh = read_partitions(self.ctx, plan, [partitions[i] for i in indexes])
        for i, result in zip(indexes, fresh):
            self.results[i] = result
        if runs is not None and indexes:
            starts = [run.start for run in runs]
            for i in indexes:
                runs[bisect.bisect_right(starts, i) - 1].kept = None
        return fresh

    def answer(self) -> HandlerResult:
        ctx, plan, results = self.ctx, self.plan, self.results
        if self.follower >= 0:
            record_leader_throttled(ctx, results)
        if self.quota is not None:
            throttled = throttled_response(
                ctx, plan, results, self.quota, self.user, self.client_id
            )
            if throttled is not None:
                return throttled
        return build_response(ctx, plan, results)


def throttled_response(ctx, plan: FetchPlan, results, quota, user: str, client_id: str):
    """Kafka's answer to a consumer over its ``consumer_byte_rate``: the bytes it would have
    had count against the quota, but are taken back and the answer is empty (the records are
    read again after the throttle); None when within the quota. Fetch sessions stay as the
    request left them (an incremental fetch keeps its session id, a full one gets none)."""
    size = sum(len(result.records) for result in results)
    now_ms = ctx.services.now_ms()
    throttle_ms = quota.record(user, client_id, size, now_ms)
    if throttle_ms <= 0:
        return None
    quota.unrecord(user, client_id, size, now_ms)
    ctx.throttle_ms = throttle_ms
    return ctx.response(
        throttle_time_ms=throttle_ms,
        error_code=NO_ERROR,
        session_id=plan.session.id if plan.session is not None else 0,
        responses=[],
    )
