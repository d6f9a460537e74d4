"""The follower side of replication: one ``ReplicaFetcher`` per leader broker (Kafka's
``ReplicaFetcherThread``, as a Twisted loop on the reactor).

For each partition it follows, the fetcher first truncates (KIP-101/KIP-279): it asks the leader
with OffsetForLeaderEpoch for the end offset of its own latest leader epoch and cuts its log
there (where the leader answers an older epoch, to the smaller of the leader's end offset and
its own end offset for that epoch; where the leader knows no epoch, to its high watermark).
Then it fetches from its log end offset with ``replica_id`` set to its broker id, appends what
comes with ``append_as_follower`` (offsets and leader epochs as the leader wrote them), and
takes the leader's high watermark, capped at its own log end offset, and its log start offset
(records deleted on the leader go here too). The fetch offset is how the leader learns the
follower's log end offset. OFFSET_OUT_OF_RANGE sends the fetcher to the leader's log start
(ListOffsets earliest): a log end below it restarts the log there; otherwise it truncates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet import defer, task

from wireserver.cluster.client import InterBrokerAuthenticationFailed, connect_to_broker
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.served import SERVED
from wireserver.storage.batches import iter_headers

if TYPE_CHECKING:
    from wireserver.cluster import zkdata as zd
    from wireserver.config import BrokerConfig
    from wireserver.quotas.replication import ReplicationQuotas
    from wireserver.storage.manager import LogManager

log = logging.getLogger(__name__)

FETCH_VERSION = 12
LIST_OFFSETS_VERSION = 7
EARLIEST_TIMESTAMP = -2
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
UNDEFINED = -1


@dataclass
class FetchState:
    leader_epoch: int
    needs_truncation: bool = True
    out_of_range: bool = False  # the leader answered OFFSET_OUT_OF_RANGE to our log end
    #: the leader's high watermark less our log end at the last fetch (None: not fetched yet);
    #: 0 is Kafka's ``isReplicaInSync``, which the follower throttle leaves alone
    lag: int | None = None


class FetcherHost(Protocol):
    """What a fetcher uses of the broker it fetches for: its id, reactor and config, the logs
    it appends to, the purgatory where consumers' fetches wait, and the background flush of
    those that are due."""

    node_id: int
    reactor: Any
    config: BrokerConfig
    logs: LogManager
    purgatory: Any
    replication_quotas: ReplicationQuotas

    def flush_in_background(self, due: list) -> defer.Deferred | None: ...


class ReplicaFetcher:
    def __init__(
        self,
        broker: FetcherHost,
        live_brokers: Callable[[], dict[int, zd.BrokerInfo]],
        leader_id: int,
    ):
        """``live_brokers``: the registrations of the live brokers now (where the leader is
        reached, read at each connection)."""
        self.broker = broker
        self.live_brokers = live_brokers
        self.reactor = broker.reactor
        self.leader_id = leader_id
        # Kafka's ReplicaFetcherThread log prefix; one fetcher per leader here, so fetcherId=0.
        self.log_prefix = (
            f"[ReplicaFetcher replicaId={broker.node_id}, leaderId={leader_id}, fetcherId=0] "
        )
        self.partitions: dict[tuple[str, int], FetchState] = {}
        self.running = False
        self.connection: Any = None
        self._last_refusal = ""  # the last login refusal logged
        self._wakeup: defer.Deferred | None = None
        self._done: defer.Deferred | None = None
        config = broker.config
        self.wait_ms = config["replica.fetch.wait.max.ms"]
        self.min_bytes = config["replica.fetch.min.bytes"]
        self.max_bytes = config["replica.fetch.response.max.bytes"]
        self.partition_max_bytes = config["replica.fetch.max.bytes"]
        self.backoff_s = min(config["replica.fetch.backoff.ms"], 1000) / 1000.0

    # -- partitions ------------------------------------------------------------------------
    def add(self, tp: tuple[str, int], leader_epoch: int) -> None:
        self.partitions[tp] = FetchState(leader_epoch)
        self._wake()

    def remove(self, tp: tuple[str, int]) -> None:
        self.partitions.pop(tp, None)

    def _wake(self) -> None:
        wakeup, self._wakeup = self._wakeup, None
        if wakeup is not None and not wakeup.called:
            wakeup.callback(None)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if not self.running:
            self.running = True
            self._done = self._run()

    def stop(self) -> None:
        self.running = False
        self._wake()
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def drain(self) -> defer.Deferred:
        """Stop, but only after the request in flight (if any) is answered, then close: fires
        when the leader has seen this replica's last fetch. A controlled shutdown leaves the
        ISRs after that, so a fetch already on the wire cannot reach the leader later and add
        the departing replica back (KIP-841's point, without a fenced-broker registry). Bounded
        by ``replica.fetch.wait.max.ms`` plus a second: a silent leader is not waited for."""
        self.running = False
        self._wake()
        drained: defer.Deferred = defer.Deferred()
        if self._done is not None and not self._done.called:

            def finished(result: Any) -> Any:
                if not drained.called:
                    drained.callback(None)
                return result

            self._done.addBoth(finished)
            drained.addTimeout(
                self.wait_ms / 1000.0 + 1.0, self.reactor, onTimeoutCancel=lambda *_: None
            )
        else:
            drained.callback(None)
        drained.addBoth(lambda _: self.stop())
        return drained

    def _sleep(self, seconds: float) -> defer.Deferred:
        return task.deferLater(self.reactor, seconds, lambda: None)

    @defer.inlineCallbacks
    def _run(self):
        while self.running:
            if not self.partitions:
                self._wakeup = defer.Deferred()
                self._wakeup.addTimeout(1.0, self.reactor, onTimeoutCancel=lambda *_: None)
                yield self._wakeup
                continue
            try:
                if self.connection is None or self.connection.closed:
                    self.connection = yield self._connect()
                behind = [tp for tp, st in self.partitions.items() if st.out_of_range]
                if behind:
                    yield self._handle_out_of_range(behind)
                truncating = [tp for tp, st in self.partitions.items() if st.needs_truncation]
                if truncating:
                    yield self._truncate(truncating)
                fetching = [tp for tp, st in self.partitions.items() if not st.needs_truncation]
                if fetching:
                    yield self._fetch(fetching)
                elif truncating:
                    yield self._sleep(self.backoff_s)
            except InterBrokerAuthenticationFailed as exc:
                # Misconfigured credentials do not heal by retrying: say so loudly, once.
                if self.running and str(exc) != self._last_refusal:
                    log.warning("broker %d refused this replica fetcher: %s", self.leader_id, exc)
                self._last_refusal = str(exc)
                self.connection = None
                if self.running:
                    yield self._sleep(self.backoff_s)
            except Exception as exc:  # noqa: BLE001 - any failure: reconnect after a pause
                if self.running:
                    log.info("fetching from broker %d failed: %s", self.leader_id, exc)
                if self.connection is not None:
                    self.connection.close()
                    self.connection = None
                if self.running:
                    yield self._sleep(self.backoff_s)

    def _connect(self) -> defer.Deferred:
        return connect_to_broker(
            self.reactor,
            self.live_brokers(),
            self.leader_id,
            self.broker.config.inter_broker_security,
            f"replica-fetcher-{self.broker.node_id}",
        )

    # -- truncation ------------------------------------------------------------------------
    @defer.inlineCallbacks
    def _truncate(self, tps: list[tuple[str, int]]):
        request_class = SERVED.get(23).request_class
        topic_class = request_class.OffsetForLeaderTopic
        partition_class = topic_class.OffsetForLeaderPartition
        asked: dict[tuple[str, int], tuple[int, int]] = {}
        by_topic: dict[str, list] = {}
        for tp in tps:
            partition_log = self.broker.logs.get_log(*tp)
            if partition_log is None:
                continue
            epoch = partition_log.latest_epoch
            epoch = UNDEFINED if epoch is None else epoch
            state = self.partitions[tp]
            asked[tp] = (epoch, state.leader_epoch)
            by_topic.setdefault(tp[0], []).append(
                partition_class(
                    partition=tp[1], current_leader_epoch=state.leader_epoch, leader_epoch=epoch
                )
            )
        if not by_topic:
            return
        request = request_class(
            version=OFFSET_FOR_LEADER_EPOCH_VERSION,
            replica_id=self.broker.node_id,
            topics=[topic_class(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )
        response = yield self.connection.request(request)
        for topic in response.topics:
            for result in topic.partitions:
                tp = (topic.topic, result.partition)
                state = self.partitions.get(tp)
                if state is None or tp not in asked or asked[tp][1] != state.leader_epoch:
                    continue
                if result.error_code != ErrorCode.NONE:
                    log.info(
                        "%sRetrying leaderEpoch request for partition %s-%d as the leader "
                        "reported an error: %s",
                        self.log_prefix,
                        tp[0],
                        tp[1],
                        ErrorCode(result.error_code).name,
                    )
                    continue
                self._truncate_one(tp, asked[tp][0], result.leader_epoch, result.end_offset)
                state.needs_truncation = False

    def _truncate_one(self, tp, our_epoch: int, leader_epoch: int, leader_end: int) -> None:
        partition_log = self.broker.logs.get_log(*tp)
        leo = partition_log.log_end_offset
        if our_epoch == UNDEFINED or leader_epoch == UNDEFINED or leader_end == UNDEFINED:
            target = partition_log.high_watermark
        elif leader_epoch == our_epoch:
            target = min(leader_end, leo)
        else:
            _, our_end = partition_log.end_offset_for_epoch(leader_epoch)
            target = min(leader_end, our_end if our_end >= 0 else partition_log.high_watermark)
        state = f"TruncationState(offset={target}, completed=true)"
        if our_epoch == UNDEFINED or leader_epoch == UNDEFINED or leader_end == UNDEFINED:
            log.info(
                "%sTruncating partition %s-%d with %s due to local high watermark %d",
                self.log_prefix,
                tp[0],
                tp[1],
                state,
                target,
            )
        else:
            log.info(
                "%sTruncating partition %s-%d with %s due to leader epoch and offset "
                "EpochEndOffset(errorCode=0, partition=%d, leaderEpoch=%d, endOffset=%d)",
                self.log_prefix,
                tp[0],
                tp[1],
                state,
                tp[1],
                leader_epoch,
                leader_end,
            )
        if target < leo:
            high_watermark = partition_log.high_watermark
            partition_log.truncate_to(target)
            if target < high_watermark:
                log.warning(
                    "%sTruncating %s-%d to offset %d below high watermark %d",
                    self.log_prefix,
                    tp[0],
                    tp[1],
                    target,
                    high_watermark,
                )

    @defer.inlineCallbacks
    def _handle_out_of_range(self, tps: list[tuple[str, int]]):
        """Kafka's ``handleOutOfRangeError``: a log end below the leader's log start (this
        replica was away while the leader deleted records, by retention or DeleteRecords) can
        never be fetched from; the log restarts empty at the leader's log start. Otherwise the
        leader's log is shorter than ours: truncate as after a leader change."""
        request_class = SERVED.get(2).request_class
        topic_class = request_class.ListOffsetsTopic
        by_topic: dict[str, list] = {}
        for tp in tps:
            by_topic.setdefault(tp[0], []).append(
                topic_class.ListOffsetsPartition(
                    partition_index=tp[1],
                    current_leader_epoch=self.partitions[tp].leader_epoch,
                    timestamp=EARLIEST_TIMESTAMP,
                )
            )
        response = yield self.connection.request(
            request_class(
                version=LIST_OFFSETS_VERSION,
                replica_id=self.broker.node_id,
                isolation_level=0,
                topics=[topic_class(name=t, partitions=ps) for t, ps in by_topic.items()],
            )
        )
        for topic in response.topics:
            for result in topic.partitions:
                tp = (topic.name, result.partition_index)
                state = self.partitions.get(tp)
                partition_log = self.broker.logs.get_log(*tp)
                if state is None or not state.out_of_range or partition_log is None:
                    continue
                if result.error_code != ErrorCode.NONE:
                    log.info(
                        "ListOffsets %s-%d from broker %d: %s",
                        tp[0],
                        tp[1],
                        self.leader_id,
                        ErrorCode(result.error_code).name,
                    )
                    continue
                state.out_of_range = False
                if result.offset > partition_log.log_end_offset:
                    log.warning(
                        "%sTruncate fully and reset fetch offset for partition %s-%d from %d to "
                        "the current leader's start offset %d because the local replica's end "
                        "offset is smaller than the current leader's start offsets.",
                        self.log_prefix,
                        tp[0],
                        tp[1],
                        partition_log.log_end_offset,
                        result.offset,
                    )
                    partition_log.truncate_fully_and_start_at(result.offset)
                else:
                    state.needs_truncation = True

    # -- fetching --------------------------------------------------------------------------
    @defer.inlineCallbacks
    def _fetch(self, tps: list[tuple[str, int]]):
        request_class = SERVED.get(1).request_class
        topic_class = request_class.FetchTopic
        partition_class = topic_class.FetchPartition
        by_topic: dict[str, list] = {}
        sent: dict[tuple[str, int], tuple[int, int]] = {}
        throttle = self.broker.replication_quotas.follower
        exceeded: bool | None = None
        for tp in tps:
            partition_log = self.broker.logs.get_log(*tp)
            if partition_log is None:
                continue
            state = self.partitions[tp]
            if state.lag != 0 and throttle.is_throttled(partition_log, tp[1]):
                if exceeded is None:
                    exceeded = throttle.exceeded()
                if exceeded:
                    continue  # Kafka's shouldFollowerThrottle: not this time
            latest = partition_log.latest_epoch
            sent[tp] = (partition_log.log_end_offset, state.leader_epoch)
            by_topic.setdefault(tp[0], []).append(
                partition_class(
                    partition=tp[1],
                    current_leader_epoch=state.leader_epoch,
                    fetch_offset=partition_log.log_end_offset,
                    last_fetched_epoch=UNDEFINED if latest is None else latest,
                    log_start_offset=partition_log.log_start_offset,
                    partition_max_bytes=self.partition_max_bytes,
                )
            )
        if not by_topic:
            yield self._sleep(self.backoff_s)
            return
        request = request_class(
            version=FETCH_VERSION,
            replica_id=self.broker.node_id,
            max_wait_ms=self.wait_ms,
            min_bytes=self.min_bytes,
            max_bytes=self.max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[topic_class(topic=t, partitions=ps) for t, ps in by_topic.items()],
            forgotten_topics_data=[],
            rack_id="",
        )
        response = yield self.connection.request(request)
        if response.error_code != ErrorCode.NONE:
            log.info(
                "fetch from broker %d: %s", self.leader_id, ErrorCode(response.error_code).name
            )
            yield self._sleep(self.backoff_s)
            return
        errors = 0
        for topic in response.responses:
            for data in topic.partitions:
                tp = (topic.topic, data.partition_index)
                state = self.partitions.get(tp)
                if state is None or tp not in sent or sent[tp][1] != state.leader_epoch:
                    continue
                if data.error_code != ErrorCode.NONE:
                    errors += 1
                    if data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                        state.out_of_range = True
                    continue
                self._apply(tp, sent[tp][0], data)
        if errors:
            yield self._sleep(self.backoff_s)

    def _apply(self, tp, fetch_offset: int, data: Any) -> None:
        partition_log = self.broker.logs.get_log(*tp)
        if partition_log is None or partition_log.log_end_offset != fetch_offset:
            return
        records = data.records
        if records:
            if not isinstance(records, (bytes, bytearray, memoryview)):
                records = bytes(records)
            records = bytearray(records)
            throttle = self.broker.replication_quotas.follower
            if throttle.is_throttled(partition_log, tp[1]):
                throttle.record(len(records))
            self._start_at_first_batch(partition_log, records)
            partition_log.append_as_follower(records)
            if partition_log.flush_due():
                self.broker.flush_in_background([partition_log])
        high_watermark = partition_log.high_watermark
        partition_log.high_watermark = min(data.high_watermark, partition_log.log_end_offset)
        self._follow_log_start(partition_log, data.log_start_offset)
        state = self.partitions.get(tp)
        if state is not None:
            state.lag = max(0, data.high_watermark - partition_log.log_end_offset)
        if partition_log.high_watermark > high_watermark:
            # Consumers reading from this follower (KIP-392) see records up to its high
            # watermark: their waiting fetches can answer now (Kafka's follower completes its
            # delayed fetches when the high watermark moves).
            self.broker.purgatory.notify(("append", *tp))

    @staticmethod
    def _start_at_first_batch(partition_log: Any, records: bytearray) -> None:
        """An empty log restarted at the leader's log start gets the whole batch that offset
        falls in (DeleteRecords can cut a batch): restart the log at the batch's base offset
        so it can be appended; the log start then moves back up to the leader's
        (``_follow_log_start``). Kafka's follower does the same on an
        ``UnexpectedAppendOffsetException``."""
        first = next(iter_headers(memoryview(records)), None)
        leo = partition_log.log_end_offset
        if (
            first is not None
            and leo == partition_log.log_start_offset
            and first[1].base_offset < leo <= first[1].last_offset
        ):
            partition_log.truncate_fully_and_start_at(first[1].base_offset)

    @staticmethod
    def _follow_log_start(partition_log: Any, leader_log_start: int) -> None:
        """Records deleted on the leader (DeleteRecords, retention) go here too, or they would
        come back when this replica leads (Kafka's follower ``maybeIncrementLogStartOffset``
        with the leader's log start). Never past this replica's own high watermark: the rest
        of its log is not confirmed yet."""
        target = min(leader_log_start, partition_log.high_watermark)
        if target > partition_log.log_start_offset:
            partition_log.delete_records_before(target, reason="leader offset increment")
