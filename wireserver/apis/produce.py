"""Produce (key 0), v3-13 (v0-2 are advertised but refused, as Kafka 4 does).

Each partition is checked and appended on its own, by the partition layer
(``wireserver.replica``: leadership, ``min.insync.replicas``, the batch checks of
``wireserver.storage.validation``, the append, the high watermark): a bad batch fails its
partition with Kafka's error and nothing else in the request is harmed. Batch headers are read,
records are not, except on a compacted topic, where every record needs a key.

acks=0 gets no response. acks=-1 waits in the purgatory until the high watermark passes the
batch (every ISR member has it; at once when the ISR is this broker alone, as on one node),
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
producer id) is INVALID_TXN_STATE. Where the coordinator is another broker (a cluster) the
check is skipped (Kafka asks the coordinator with AddPartitionsToTxn ``verify_only``; we do not
yet): the partition's producer state still fences older epochs.

From v12 (transaction protocol v2, KIP-890 part 2) the producer sends no AddPartitionsToTxn:
the partitions of a transactional request are first added to its transaction through the
coordinator (``TransactionCoordinator.add_before_produce``, AddPartitionsToTxn v5 to another
broker in a cluster), then appended.
"""

from __future__ import annotations

from collections.abc import Mapping

from wireserver.apis import HandlerResult, handles
from wireserver.apis.metadata import leader_hints
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.produce_response import ProduceAnswer, ProducePartition, ProduceTopic
from wireserver.protocol.records import ATTR_TRANSACTIONAL_MASK, HEADER_SIZE, RecordBatch
from wireserver.security import checks
from wireserver.storage.validation import BatchError
from wireserver.topics import TopicError, check_name

API_KEY = 0
ATTRIBUTES_LOW_BYTE = 22  # the low byte of the int16 attributes of a v2 batch header
VALID_ACKS = (-1, 0, 1)
#: From Produce v12 a transactional producer relies on the partition leader to add partitions
#: to its transaction (transaction protocol v2, KIP-890 part 2).
IMPLICIT_ADD = 12
#: From Produce v11 a partition outside the transaction is TRANSACTION_ABORTABLE (KIP-890).
ABORTABLE = 11
#: Errors whose batch counts in BytesRejectedPerSec, as Kafka's.
TOO_LARGE = (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE)


def produce_partition(ctx, topic: str, partition: int, records, acks: int):
    """Append one partition's records as its leader (``wireserver.replica``); returns the
    ``AppendResult`` or raises ``BatchError`` with the partition's error."""
    if acks not in VALID_ACKS:
        raise BatchError(ErrorCode.INVALID_REQUIRED_ACKS)
    info = ctx.services.logs.topics.get(topic)
    if info is None or not 0 <= partition < info.num_partitions:
        raise BatchError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
        )
    txn = ctx.services.txn

    def verify_transaction(buf):
        if not buf[ATTRIBUTES_LOW_BYTE] & ATTR_TRANSACTIONAL_MASK:
            return None
        batch = RecordBatch(memoryview(buf))
        return txn.verify_produce(
            batch.producer_id, batch.producer_epoch, topic, partition, ctx.version >= ABORTABLE
        )

    return ctx.services.replicas.append_records(
        topic, partition, records, acks, info.config, verify_transaction
    )


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    if ctx.version >= IMPLICIT_ADD and ctx.body.transactional_id:
        return add_then_produce(ctx)
    return produce(ctx, {})


def add_then_produce(ctx: RequestContext) -> HandlerResult:
    """Transaction protocol v2: add the request's partitions to the producer's transaction
    (through its coordinator) before appending; a partition the coordinator refuses fails
    with its error. Partitions that fail anyway (authorization, unknown) are not added."""
    services = ctx.services
    if checks.produce_transactional_id(ctx):
        return produce(ctx, {})
    partitions: list[tuple[str, int]] = []
    producer_id = producer_epoch = -1
    by_id = topics_by_id(ctx)
    for topic_data in ctx.body.topic_data:
        name = topic_data.name if by_id is None else by_id.get(topic_data.topic_id)
        info = None if name is None else services.logs.topics.get(name)
        if name is None or info is None or checks.produce_topic(ctx, name):
            continue
        for data in topic_data.partition_data:
            records = data.records
            if 0 <= data.index < info.num_partitions and records and len(records) >= HEADER_SIZE:
                if records[ATTRIBUTES_LOW_BYTE] & ATTR_TRANSACTIONAL_MASK:
                    batch = RecordBatch(memoryview(records))
                    producer_id, producer_epoch = batch.producer_id, batch.producer_epoch
                    if not in_transaction(ctx, name, data.index, producer_id, producer_epoch):
                        partitions.append((name, data.index))
    if not partitions:
        return produce(ctx, {})
    added = services.txn.add_before_produce(
        ctx.body.transactional_id, producer_id, producer_epoch, partitions
    )
    return added.addCallback(lambda refused: produce(ctx, refused))


def in_transaction(ctx: RequestContext, topic: str, partition: int, pid: int, epoch: int) -> bool:
    """Does the partition hold an open transaction of this producer at this epoch already?
    Then it was added before, and Kafka asks the coordinator nothing."""
    log = ctx.services.logs.get_log(topic, partition)
    entry = None if log is None else log.producer_state.entry(pid)
    return (
        entry is not None and entry.producer_epoch == epoch and entry.current_txn_first_offset >= 0
    )


def topics_by_id(ctx: RequestContext) -> Mapping | None:
    """Topic id -> name from v13 (topics by id), else None."""
    if ctx.version < 13:
        return None
    return ctx.services.logs.topic_names_by_id


def produce(ctx: RequestContext, refused: dict) -> HandlerResult:
    """The Produce answer; the partitions in ``refused`` fail with their error."""
    body = ctx.body
    response_class = ctx.request.spec.response_class
    record_error_class = (
        response_class.TopicProduceResponse.PartitionProduceResponse.BatchIndexAndErrorMessage
    )
    by_id = topics_by_id(ctx)
    responses = []
    txn_denied = checks.produce_transactional_id(ctx)
    replicating = []  # acks=-1: (topic, partition, last offset, response entry)
    moved = []  # NOT_LEADER_OR_FOLLOWER: (topic, partition, response entry), for leader hints
    topics = ctx.services.logs.topics
    metrics = ctx.services.metrics
    for topic_data in body.topic_data:
        name = topic_data.name
        unknown_id = False
        if by_id is not None:
            name = by_id.get(topic_data.topic_id)
            unknown_id = name is None
        # Kafka's BrokerTopicMetrics, kept for topics that exist (no meters made up by a
        # client naming topics at random)
        meters = metrics.topic(name) if metrics.enabled and name in topics else None
        if meters is not None:
            meters.produce_requests += 1
        partitions = []
        for data in topic_data.partition_data:
            try:
                if unknown_id:
                    raise BatchError(ErrorCode.UNKNOWN_TOPIC_ID)
                denied = txn_denied or checks.produce_topic(ctx, name)
                denied = denied or refused.get((name, data.index))
                if denied:
                    raise BatchError(denied)
                try:
                    check_name(name)
                except TopicError as exc:
                    raise BatchError(exc.code, exc.message) from None
                result = produce_partition(ctx, name, data.index, data.records, body.acks)
            except BatchError as exc:
                if meters is not None:
                    meters.failed_produce_requests += 1
                    if exc.code in TOO_LARGE and data.records:
                        meters.bytes_rejected += len(data.records)
                partitions.append(
                    ProducePartition(
                        index=data.index,
                        error_code=exc.code,
                        base_offset=-1,
                        log_append_time_ms=-1,
                        log_start_offset=exc.log_start_offset,
                        record_errors=[record_error_class(*e) for e in exc.record_errors],
                        error_message=exc.message,
                    )
                )
                if exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    moved.append((name, data.index, partitions[-1]))
            else:
                if meters is not None and result.last_offset >= result.base_offset >= 0:
                    meters.messages_in += result.last_offset - result.base_offset + 1
                    meters.bytes_in += len(data.records)
                partitions.append(
                    ProducePartition(
                        index=data.index,
                        error_code=ErrorCode.NONE,
                        base_offset=result.base_offset,
                        log_append_time_ms=result.log_append_time,
                        log_start_offset=result.log_start_offset,
                        record_errors=[],
                        error_message=None,
                    )
                )
                if body.acks == -1:
                    replicating.append((name, data.index, result.last_offset, partitions[-1]))
        responses.append(
            ProduceTopic(
                name=topic_data.name, topic_id=topic_data.topic_id, partition_responses=partitions
            )
        )
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
        leader_class = response_class.TopicProduceResponse.PartitionProduceResponse.LeaderIdAndEpoch
        endpoints = leader_hints(ctx, moved, leader_class, response_class.NodeEndpoint)
    return ProduceAnswer(ctx.version, responses, 0, endpoints)


def await_replication(ctx, waiting, responses, moved):
    """acks=-1: the response once every ISR member has each partition's batch (Kafka's
    DelayedProduce), or after the request's timeout; at once when the ISR is this broker."""
    replicas = ctx.services.replicas
    appended = [(name, index, last_offset) for name, index, last_offset, _ in waiting]
    done, still = replicas.replication_settled(appended)

    def answer(results):
        for name, index, _, entry in waiting:
            code = results[(name, index)]
            if code != ErrorCode.NONE:
                entry.error_code = code
                if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    moved.append((name, index, entry))
        return respond(ctx, responses, moved)

    if not still:
        return answer(done)
    return replicas.wait_for_replication(appended, ctx.body.timeout_ms).addCallback(answer)
