"""Produce (key 0), v3-13 (v0-2 are advertised but refused, as Kafka 4 does).

Each partition is checked and appended on its own: a bad batch fails its partition with Kafka's
error and nothing else in the request is harmed. The hot path reads batch headers only: it
never decodes individual records (so per-record checks Kafka makes — consecutive offset deltas,
per-record timestamps — are left out; the batch header's counts and timestamps are checked).
The one exception is a compacted topic (``cleanup.policy`` with ``compact``): there, as Kafka's
LogValidator, every record must have a key, so its records are walked up to their keys.

With one node, acks=-1 means the local write, exactly like acks=1. acks=0 gets no response.
In cluster mode (``wireserver.cluster``) only the partition's leader appends
(NOT_LEADER_OR_FOLLOWER elsewhere), stamping its leader epoch; acks=-1 is refused with
NOT_ENOUGH_REPLICAS when the ISR is smaller than ``min.insync.replicas``, and after the append
waits in the purgatory until the high watermark passes the batch (every ISR member has it),
answering NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum meanwhile,
NOT_LEADER_OR_FOLLOWER if leadership moved, REQUEST_TIMED_OUT after the request's timeout.
From v10 a partition answered NOT_LEADER_OR_FOLLOWER carries the leader and leader epoch this
broker knows (``current_leader``) and the response that leader's endpoint (``node_endpoints``):
KIP-951 leader discovery, as Kafka.
Produce never creates topics (Kafka creates them from Metadata requests only).

Idempotent producers (batches with a producer id): between validation and append the
partition's producer state (``storage.producer_state``) checks epoch and sequence from the batch
header alone. A retry of one of the producer's last five batches is answered with the offsets
of the original append (error NONE, log_append_time = the original batch's max timestamp, as
Kafka does) and nothing is written; an older epoch is INVALID_PRODUCER_EPOCH, a sequence gap
OUT_OF_ORDER_SEQUENCE_NUMBER. Producer state changes only after the append succeeded.

Transactional batches are checked like idempotent ones and, first, against the transaction
coordinator (Kafka's KIP-890 part 1 verification, done in-process): the partition must be in
the producer's open transaction at the producer's current epoch. An older epoch is
INVALID_PRODUCER_EPOCH; anything else (no open transaction, partition not added, unknown
producer id) is INVALID_TXN_STATE. In cluster mode the coordinator is usually another broker
and this check is skipped (Kafka asks the coordinator with AddPartitionsToTxn ``verify_only``;
we do not yet): the partition's producer state still fences older epochs.
"""

from __future__ import annotations


from twisted.internet import defer

from wireserver.protocol.errors import (CorruptRecordBatch, DecodeError, ErrorCode, TruncatedRecordBatch,
                             UnsupportedMagic)
from wireserver.protocol.records import ATTR_TRANSACTIONAL_MASK, RecordBatch, iter_batches
from wireserver.storage.producer_state import InvalidProducerEpoch, OutOfOrderSequence
from wireserver.apis import handles
from wireserver.apis.metadata import leader_hints
from wireserver.security import checks
from wireserver.topics import TopicError, check_name

API_KEY = 0
ATTRIBUTES_LOW_BYTE = 22  # the low byte of the int16 attributes of a v2 batch header
VALID_ACKS = (-1, 0, 1)


class PartitionError(Exception):
    """A partition's answer when its batch is refused. ``record_errors`` are (index in the
    batch, message) pairs, KIP-467's per-record errors; Kafka sends them with the partition's
    log start offset, other errors with -1."""

    def __init__(self, code: ErrorCode, message: str | None = None,
                 record_errors: list[tuple[int, str]] = (), log_start_offset: int = -1):
        super().__init__(message or code.name)
        self.code = code
        self.message = message
        self.record_errors = record_errors
        self.log_start_offset = log_start_offset


def check_batches(records: bytearray, config, now_ms: int) -> int:
    """Validate the batches of one partition's records; returns how many there are."""
    count = 0
    try:
        for batch in iter_batches(records):
            count += 1
            if batch.size > config.max_message_bytes:
                raise PartitionError(ErrorCode.MESSAGE_TOO_LARGE,
                                     f"The batch of {batch.size} bytes exceeds max.message.bytes "
                                     f"({config.max_message_bytes}).")
            if not batch.verify_crc():
                raise PartitionError(ErrorCode.CORRUPT_MESSAGE,
                                     "The record batch fails its CRC check.")
            try:
                batch.validate(strict=True)
            except CorruptRecordBatch as exc:
                raise PartitionError(ErrorCode.INVALID_RECORD, str(exc)) from None
            if batch.is_control:
                raise PartitionError(ErrorCode.INVALID_RECORD,
                                     "Clients are not allowed to write control records.")
            if batch.producer_id >= 0 and batch.base_sequence < 0:
                raise PartitionError(ErrorCode.INVALID_RECORD,
                                     f"Invalid sequence number {batch.base_sequence} in record "
                                     f"batch with producerId {batch.producer_id}")
            if config.message_timestamp_type == "CreateTime":
                if (batch.max_timestamp > now_ms + config.message_timestamp_after_max_ms or
                        batch.base_timestamp < now_ms - config.message_timestamp_before_max_ms):
                    raise PartitionError(ErrorCode.INVALID_TIMESTAMP,
                                         "Timestamp of the batch is out of the acceptable range "
                                         "(message.timestamp.before.max.ms / after.max.ms).")
    except UnsupportedMagic as exc:
        raise PartitionError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, str(exc)) from None
    except TruncatedRecordBatch as exc:
        raise PartitionError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    except DecodeError as exc:
        raise PartitionError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    if count == 0:
        raise PartitionError(ErrorCode.INVALID_RECORD, "The produce request has no record batch.")
    if count > 1:
        raise PartitionError(ErrorCode.INVALID_RECORD,
                             "Produce requests with version 3+ may contain exactly one record "
                             "batch per partition.")
    return count


def check_keys(buf, topic: str, partition: int, log_start_offset: int) -> None:
    """A compacted topic refuses records without a key (Kafka's LogValidator.validateKey): the
    whole batch fails with INVALID_RECORD and its record errors name every keyless record,
    with Kafka's texts."""
    try:
        keyless = RecordBatch(memoryview(buf)).keyless_records()
    except CorruptRecordBatch as exc:
        raise PartitionError(ErrorCode.INVALID_RECORD, str(exc),
                             log_start_offset=log_start_offset) from None
    if not keyless:
        return
    reason = (f"Compacted topic cannot accept message without key in topic partition "
              f"{topic}-{partition}")
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{reason}')" for i in keyless[:3])
    raise PartitionError(ErrorCode.INVALID_RECORD,
                         f"One or more records have been rejected due to {len(keyless)} record "
                         f"errors in total, and only showing the first three errors at most: "
                         f"[{shown}]", [(i, reason) for i in keyless], log_start_offset)


def produce_partition(ctx, topic: str, partition: int, records, acks: int):
    """Append one partition's records; returns (error, base_offset, log_append_time, log_start)."""
    broker = ctx.broker
    if acks not in VALID_ACKS:
        raise PartitionError(ErrorCode.INVALID_REQUIRED_ACKS)
    info = broker.logs.topics.get(topic)
    if info is None or not 0 <= partition < info.num_partitions:
        raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             "This server does not host this topic-partition.")
    log = broker.logs.get_log(topic, partition)
    leader_epoch = 0
    cluster = broker.cluster
    if cluster is not None:
        error, leader_epoch = cluster.check_leader(topic, partition)
        if error is not None:
            raise PartitionError(error)
        isr = cluster.partition(topic, partition).isr
        if acks == -1 and len(isr) < info.config.min_insync_replicas:
            raise PartitionError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                 f"The size of the current ISR {set(isr)} is insufficient to "
                                 f"satisfy the min.isr requirement of "
                                 f"{info.config.min_insync_replicas} for partition "
                                 f"{topic}-{partition}")
    if records is None:
        raise PartitionError(ErrorCode.INVALID_RECORD, "The produce request has no records.")
    # Batches are stamped with offsets in place: a writable view of the request frame (one that
    # arrived over several reads, see protocol.framing) is used as it is, anything else copied.
    if isinstance(records, memoryview) and not records.readonly:
        buf = records
    else:
        buf = bytearray(records)
    now = ctx.now_ms()
    check_batches(buf, info.config, now)
    if buf[ATTRIBUTES_LOW_BYTE] & ATTR_TRANSACTIONAL_MASK and cluster is None:
        # One node: the coordinator is here and checks the partition is in the transaction.
        batch = RecordBatch(memoryview(buf))
        error = broker.txn.check_produce(batch.producer_id, batch.producer_epoch, topic,
                                         partition)
        if error is not None:
            raise PartitionError(error)
    if info.config.compact:
        check_keys(buf, topic, partition, log.log_start_offset)
    try:
        result = log.append(buf, leader_epoch=leader_epoch, now_ms=now)
    except (OutOfOrderSequence, InvalidProducerEpoch) as exc:
        raise PartitionError(exc.error_code, str(exc)) from None
    if result.duplicate:
        return result
    if cluster is None:
        log.high_watermark = log.log_end_offset
    broker.appended(topic, partition)
    if cluster is not None:
        cluster.maybe_advance_hw((topic, partition))
    if log.flush_due(now):
        broker.flush_in_background([log])
    return result


@handles(API_KEY)
def handle(ctx):
    body, version = ctx.body, ctx.version
    response_class = ctx.request.spec.response_class
    topic_class = response_class.TopicProduceResponse
    partition_class = topic_class.PartitionProduceResponse
    record_error_class = partition_class.BatchIndexAndErrorMessage
    by_id = None
    if version >= 13:
        by_id = {info.topic_id: info.name for info in ctx.broker.logs.topics.values()}
    responses = []
    txn_denied = checks.produce_transactional_id(ctx)
    replicating = []  # acks=-1 in cluster mode: (topic, partition, last offset, response entry)
    moved = []  # NOT_LEADER_OR_FOLLOWER: (topic, partition, response entry), for leader hints
    for topic_data in body.topic_data:
        name = topic_data.name
        unknown_id = False
        if version >= 13:
            name = by_id.get(topic_data.topic_id)
            unknown_id = name is None
        partitions = []
        for data in topic_data.partition_data:
            try:
                if unknown_id:
                    raise PartitionError(ErrorCode.UNKNOWN_TOPIC_ID)
                denied = txn_denied or checks.produce_topic(ctx, name)
                if denied:
                    raise PartitionError(denied)
                try:
                    check_name(name)
                except TopicError as exc:
                    raise PartitionError(exc.code, exc.message) from None
                result = produce_partition(ctx, name, data.index, data.records, body.acks)
            except PartitionError as exc:
                partitions.append(partition_class(
                    index=data.index, error_code=exc.code, base_offset=-1, log_append_time_ms=-1,
                    log_start_offset=exc.log_start_offset,
                    record_errors=[record_error_class(*e) for e in exc.record_errors],
                    error_message=exc.message))
                if exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    moved.append((name, data.index, partitions[-1]))
            else:
                partitions.append(partition_class(
                    index=data.index, error_code=ErrorCode.NONE, base_offset=result.base_offset,
                    log_append_time_ms=result.log_append_time,
                    log_start_offset=result.log_start_offset, record_errors=[],
                    error_message=None))
                if ctx.broker.cluster is not None and body.acks == -1:
                    replicating.append((name, data.index, result.last_offset, partitions[-1]))
        responses.append(topic_class(name=topic_data.name, topic_id=topic_data.topic_id,
                                     partition_responses=partitions))
    if body.acks == 0:
        return None
    if replicating:
        return await_replication(ctx, replicating, responses, moved)
    return respond(ctx, responses, moved)


def respond(ctx, responses, moved):
    """The response; from v10 with KIP-951 leader hints for the partitions in ``moved``
    (NOT_LEADER_OR_FOLLOWER), as Kafka's ``handleProduceRequest``."""
    response_class = ctx.request.spec.response_class
    endpoints = []
    if moved and ctx.version >= 10:
        leader_class = response_class.TopicProduceResponse.PartitionProduceResponse \
            .LeaderIdAndEpoch
        endpoints = leader_hints(ctx, moved, leader_class, response_class.NodeEndpoint)
    return ctx.response(responses=responses, throttle_time_ms=0, node_endpoints=endpoints)


@defer.inlineCallbacks
def await_replication(ctx, waiting, responses, moved):
    """Cluster mode, acks=-1: hold the response until every ISR member has each partition's
    batch (Kafka's DelayedProduce), or the request's timeout."""
    broker = ctx.broker
    cluster = broker.cluster
    deadline = broker.reactor.seconds() + max(0, ctx.body.timeout_ms) / 1000.0
    while waiting:
        still = []
        for name, index, last_offset, entry in waiting:
            info = broker.logs.topics.get(name)
            min_isr = info.config.min_insync_replicas if info is not None else 1
            status = cluster.replication_status(name, index, last_offset, min_isr)
            if status is None:
                still.append((name, index, last_offset, entry))
            elif status != ErrorCode.NONE:
                entry.error_code = status
                if status == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    moved.append((name, index, entry))
        waiting = still
        if not waiting:
            break
        remaining = deadline - broker.reactor.seconds()
        if remaining <= 0:
            for _, _, _, entry in waiting:
                entry.error_code = ErrorCode.REQUEST_TIMED_OUT
            break
        yield broker.purgatory.watch([("hw", name, index) for name, index, _, _ in waiting],
                                     remaining)
    return respond(ctx, responses, moved)
