"""TxnOffsetCommit (key 28), v0-6.

Offsets a transactional producer commits for a group: the producer must be the current one of
its transactional id (epoch check; the group's offsets partition must be in its open
transaction, INVALID_TXN_STATE otherwise), and, from v3 (KIP-447), the generation (v3+'s
``GenerationIdOrMemberEpoch``), member id and instance id are checked when given. The offsets
stay pending until EndTxn (see ``wireserver.groups.coordinator``). From v5 (transaction
protocol v2, KIP-890) the producer sends no AddOffsetsToTxn: the request first adds the group's
offsets partition to the transaction through its coordinator. v6 (KIP-1319) names topics by
id (an unknown id is UNKNOWN_TOPIC_ID) and answers GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH
where v3-5 answer ILLEGAL_GENERATION. A share group's id answers GROUP_ID_NOT_FOUND on every
partition in all versions, as Kafka's ``ShareGroup.validateOffsetCommit``. In cluster mode the group's coordinator is usually not
the transaction's, so the check against the open transaction is left out (the offsets
partition's producer state still refuses an older producer epoch).

Authorization: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on
the group (GROUP_AUTHORIZATION_FAILED) for every partition, then READ on each topic
(TOPIC_AUTHORIZATION_FAILED for its partitions; the others are committed).
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.coordinator_runtime import OFFSETS_TOPIC
from wireserver.groups.offsets import OffsetCommit
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 28
#: v5: transaction protocol v2, no AddOffsetsToTxn before; v6: topics by id (KIP-1319).
IMPLICIT_ADD_OFFSETS, TOPIC_IDS = 5, 6


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    services = ctx.services
    names = topic_names(ctx)
    commits = [
        OffsetCommit(
            name,
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch if version >= 2 else -1,
            p.committed_metadata,
        )
        for name, t in zip(names, body.topics, strict=True)
        if name is not None
        for p in t.partitions
    ]
    # WRITE on the transactional id, READ on the group, READ on each topic (KafkaApis)
    error = (
        checks.write_transactional_id(ctx, body.transactional_id)
        or checks.read_group(ctx, body.group_id)
        or services.groups.ensure_ready(body.group_id)
    )
    denied = {c.topic: checks.read_topic(ctx, c.topic) for c in commits}
    filtered = error is None and any(denied.values())
    if filtered:
        commits = [c for c in commits if not denied[c.topic]]
    if error is None and version >= IMPLICIT_ADD_OFFSETS:
        # Transaction protocol v2: this request adds the group's offsets partition itself.
        refused = yield services.txn.add_implicitly(
            body.transactional_id,
            body.producer_id,
            body.producer_epoch,
            [(OFFSETS_TOPIC, services.groups.partition_for(body.group_id))],
        )
        error = next(iter(refused.values()), None)
    if error is None:  # where this broker can tell (one node): the offsets partition was added
        error = services.txn.verify_produce(
            body.producer_id,
            body.producer_epoch,
            OFFSETS_TOPIC,
            services.groups.partition_for(body.group_id),
            version >= 4,  # TRANSACTION_ABORTABLE from v4 (KIP-890)
        )
        if error == ErrorCode.INVALID_PRODUCER_ID_MAPPING:
            error = ErrorCode.INVALID_TXN_STATE
    if error is not None:
        results = {(c.topic, c.partition): error for c in commits}
    elif version >= 3:
        results = services.groups.offsets.txn_offset_commit(
            body.group_id,
            body.producer_id,
            body.producer_epoch,
            body.generation_id_or_member_epoch,
            body.member_id,
            body.group_instance_id,
            commits,
            version,
        )
    else:
        results = services.groups.offsets.txn_offset_commit(
            body.group_id, body.producer_id, body.producer_epoch, -1, "", None, commits
        )
    if ErrorCode.NONE in results.values():
        replicated = yield services.groups.replicated(body.group_id)
        if replicated != ErrorCode.NONE:
            results = {
                key: replicated if code == ErrorCode.NONE else code for key, code in results.items()
            }
    topic_class = ctx.request.spec.response_class.TxnOffsetCommitResponseTopic
    partition_class = topic_class.TxnOffsetCommitResponsePartition
    topics = []
    for name, topic in zip(names, body.topics, strict=True):
        codes = [ErrorCode.UNKNOWN_TOPIC_ID] * len(topic.partitions)
        if name is not None:
            codes = [
                (filtered and denied[name]) or results[(name, p.partition_index)]
                for p in topic.partitions
            ]
        partitions = [
            partition_class(partition_index=p.partition_index, error_code=code)
            for p, code in zip(topic.partitions, codes, strict=True)
        ]
        topics.append(topic_class(name=topic.name, topic_id=topic.topic_id, partitions=partitions))
    return ctx.response(throttle_time_ms=0, topics=topics)


def topic_names(ctx: RequestContext) -> list[str | None]:
    """The name of each topic of the request: v6 names them by id (None for an unknown id,
    UNKNOWN_TOPIC_ID)."""
    if ctx.version < TOPIC_IDS:
        return [t.name for t in ctx.body.topics]
    by_id = ctx.services.logs.topic_names_by_id
    return [by_id.get(t.topic_id) for t in ctx.body.topics]
