"""TxnOffsetCommit (key 28), v0-4.

Offsets a transactional producer commits for a group: the producer must be the current one of
its transactional id (epoch check; the group's offsets partition must be in its open transaction,
INVALID_TXN_STATE otherwise), and, from v3 (KIP-447), the generation, member id and instance id
are checked when given. The offsets stay pending until EndTxn (see
``wireserver.groups.coordinator``). v5 (transaction protocol v2, implicit AddOffsetsToTxn) is
not served. In cluster mode the group's coordinator is usually not the transaction's, so the
check against the open transaction is left out (the offsets partition's producer state still
refuses an older producer epoch).

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


@handles(API_KEY)
@defer.inlineCallbacks
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    services = ctx.services
    commits = [
        OffsetCommit(
            t.name,
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch if version >= 2 else -1,
            p.committed_metadata,
        )
        for t in body.topics
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
    if error is None:  # where this broker can tell (one node): the offsets partition was added
        error = services.txn.verify_produce(
            body.producer_id,
            body.producer_epoch,
            OFFSETS_TOPIC,
            services.groups.partition_for(body.group_id),
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
            body.generation_id,
            body.member_id,
            body.group_instance_id,
            commits,
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
    if filtered:
        results.update(
            {
                (t.name, p.partition_index): denied[t.name]
                for t in body.topics
                for p in t.partitions
                if denied[t.name]
            }
        )
    topic_class = ctx.request.spec.response_class.TxnOffsetCommitResponseTopic
    partition_class = topic_class.TxnOffsetCommitResponsePartition
    by_topic: dict[str, list] = {}
    for (topic, partition), code in results.items():
        by_topic.setdefault(topic, []).append(
            partition_class(partition_index=partition, error_code=code)
        )
    return ctx.response(
        throttle_time_ms=0,
        topics=[topic_class(name=topic, partitions=parts) for topic, parts in by_topic.items()],
    )
