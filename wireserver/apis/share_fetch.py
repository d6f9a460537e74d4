"""ShareFetch (key 78), v1-2: a share group member (KIP-932) acquires records of the
partitions in its share session, and acknowledges those it got before (piggy-backed
acknowledgements), in one request. The share-partitions and sessions are
``wireserver.share``'s.

- The share session (``SharePartitionManager.session_for``): epoch 0 opens it with the
  request's partitions (acknowledgements are INVALID_REQUEST then), -1 applies the
  acknowledgements, closes it and releases what the member holds, any other epoch must be the
  next one and adds the request's partitions and drops ``ForgottenTopicsData``.
- Acknowledgements are applied per partition, all or nothing
  (``AcknowledgeErrorCode``: INVALID_RECORD_STATE for a record the member does not hold).
- Then every partition of the session acquires up to ``MaxRecords`` records in all (whole
  batches; v2 ``ShareAcquireMode`` 1, record_limit, cuts at exactly ``MaxRecords``) and
  ``MaxBytes``; the stored batches go out as they are, the acquired offsets in
  ``AcquiredRecords``. With nothing acquired the request waits up to ``MaxWaitMs`` for an
  append or a released record. v2 ``IsRenewAck``: the acknowledgements may renew locks (type
  4) and nothing is fetched.

Each share-partition lives on its partition's leader (NOT_LEADER_OR_FOLLOWER elsewhere) and is
made there from its share coordinator's state (``SharePartitionManager.load``); the answer
waits until the acknowledgements' state is persisted (replicated, in a cluster), and an
acknowledgement the share coordinator did not take answers its error.

Authorization: READ on the group, READ on each topic (TOPIC_AUTHORIZATION_FAILED on its
partitions).
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.share.manager import FINAL_EPOCH, INITIAL_EPOCH
from wireserver.share.requests import ShareRequest

API_KEY = 78
RECORD_LIMIT = 1


def _acquire(req: ShareRequest, strict: bool) -> bool:
    """Acquire for every partition of the session; True if anything was acquired or failed."""
    body = req.body
    remaining_records = body.max_records if body.max_records > 0 else 2**31 - 1
    remaining_bytes = body.max_bytes
    isolation = req.services.group_configs.value(req.group_id, "share.isolation.level")
    found = False
    assert req.session is not None
    for tp in req.session.partitions:
        answer = req.answer(tp)
        error, share_partition, log = req.partition(tp)
        if error is not None:
            answer.error = error
            found = True
            continue
        if remaining_records <= 0 or remaining_bytes <= 0:
            continue
        acquired = share_partition.acquire(
            req.member_id,
            log,
            remaining_records,
            remaining_bytes,
            read_committed=isolation == "read_committed",
            strict=strict,
        )
        if acquired.ranges:
            answer.records = acquired.records
            answer.acquired = acquired.ranges
            remaining_records -= sum(last - first + 1 for first, last, _ in acquired.ranges)
            remaining_bytes -= len(acquired.records)
            found = True
    return found


def _partition(partition_class, tp, answer, leader):
    return partition_class(
        partition_index=tp[1],
        error_code=answer.error,
        error_message=answer.message,
        acknowledge_error_code=answer.ack_error,
        acknowledge_error_message=answer.ack_message,
        current_leader=leader,
        records=answer.records,
        acquired_records=[
            partition_class.AcquiredRecords(
                first_offset=first, last_offset=last, delivery_count=count
            )
            for first, last, count in answer.acquired
        ],
    )


def _response(ctx, req: ShareRequest):
    return req.response(ctx.request.spec.response_class.ShareFetchableTopicResponse, _partition)


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    req = ShareRequest(ctx)
    if not req.check():
        return _response(ctx, req)
    acks = any(p.acknowledgement_batches for t in body.topics for p in t.partitions)
    if req.epoch == INITIAL_EPOCH and acks:
        req.error = ErrorCode.INVALID_REQUEST
        req.message = "Acknowledge data present in initial fetch request."
        return _response(ctx, req)
    added = [(t.topic_id, p.partition_index) for t in body.topics for p in t.partitions]
    forgotten = [(t.topic_id, p) for t in body.forgotten_topics_data for p in t.partitions]
    if not req.open(added, [] if req.epoch == FINAL_EPOCH else forgotten):
        return _response(ctx, req)
    renew = version >= 2 and body.is_renew_ack
    yield req.load(body.topics)
    yield req.acknowledge(body.topics, renew)
    if req.close_if_final() or renew:
        return _response(ctx, req)
    strict = version >= 2 and body.share_acquire_mode == RECORD_LIMIT
    services = ctx.services
    deadline = services.reactor.seconds() + body.max_wait_ms / 1000.0
    while not _acquire(req, strict):
        remaining = deadline - services.reactor.seconds()
        if remaining <= 0 or req.session is None:
            break
        keys = []
        for topic_id, index in req.session.partitions:
            name = req.names.get(topic_id)
            if name is not None:
                keys += [("append", name, index), ("share", req.group_id, name, index)]
        if not keys:
            break
        woken = yield services.purgatory.watch(keys, remaining)
        if not woken:
            _acquire(req, strict)
            break
    return _response(ctx, req)
