"""DeleteTopics (key 20), v1-6.

Topics are named (v1-5: ``topic_names``; v6: ``topics`` with a name or a topic id). As in
Kafka's controller: with ``delete.topic.enable=false`` every topic fails with
TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3); a name or id given twice fails with
INVALID_REQUEST; a v6 entry with both a name and an id fails with INVALID_REQUEST; unknown
names get UNKNOWN_TOPIC_OR_PARTITION and unknown ids UNKNOWN_TOPIC_ID. Error messages from v5.

One node: the topic is gone when the response leaves (its partition directories renamed
``-delete``; a thread removes them, as Kafka's ``asyncDelete``). Fetches waiting on a deleted partition are woken, re-read, and answer
UNKNOWN_TOPIC_OR_PARTITION; fetch sessions simply find the log gone.

Cluster mode (Kafka's ZooKeeper era): the topic is marked for deletion
(``/admin/delete_topics/<t>``), the controller deletes its znodes, and every broker drops its
replicas and logs from its watch; the response waits (up to ``timeout_ms``) until the topic is
gone from this broker's metadata, REQUEST_TIMED_OUT otherwise. A topic already marked is waited
for like a new request (as ``ZkAdminManager``).

Authorization as ``ControllerApis.deleteTopics``: DELETE on the cluster, or DELETE on the topic;
a topic the principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED whether or not it exists
(an unknown one it may describe stays UNKNOWN_TOPIC_OR_PARTITION); by id, an unauthorized topic
is named only when describable.

Under a ``controller_mutation_rate`` quota (``wireserver.quotas.MutationBudget``) the
deleted topic's partitions count against it; from v5 a topic asked for while the quota is exhausted is
refused THROTTLING_QUOTA_EXCEEDED, as in Kafka (KIP-599).

Skipped: ``timeout_ms`` on one node. Internal topics are not protected (Kafka's
``kafka-topics`` tool refuses them on the client side).
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.admin import ZERO_UUID
from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.quotas import THROTTLED, THROTTLED_MESSAGE, mutation_budget
from wireserver.security import checks
from wireserver.topics import wait_for_topics

API_KEY = 20
#: KIP-599: from this version a topic over the client's controller_mutation_rate is refused
STRICT_FROM = 5


@defer.inlineCallbacks
def wait_until_gone(ctx, deleted: dict, results):
    """Answer once every deleted topic (name -> topic id) left this broker's metadata."""
    metadata = ctx.services.metadata

    def gone(name):
        return metadata.topic_id(name) != deleted[name]

    pending = yield wait_for_topics(ctx.services, list(deleted), gone, ctx.body.timeout_ms)
    for result in results:
        if result.error_code == ErrorCode.NONE and result.name in pending:
            result.error_code = ErrorCode.REQUEST_TIMED_OUT
            if ctx.version >= 5:
                result.error_message = "Timed out waiting for the topic to be deleted."
    return ctx.response(throttle_time_ms=0, responses=results)


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    services, version, body = ctx.services, ctx.version, ctx.body
    result_class = ctx.request.spec.response_class.DeletableTopicResult
    metadata = services.metadata
    topics = metadata.topic_ids()
    if version >= 6:
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in body.topic_names]
    wanted = [(name, topic_id if topic_id is not None else ZERO_UUID) for name, topic_id in wanted]

    def result(name, topic_id, code=ErrorCode.NONE, message=None):
        return result_class(
            name=name,
            topic_id=topic_id,
            error_code=code,
            error_message=message if version >= 5 else None,
        )

    if not services.config["delete.topic.enable"]:
        code = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
        return ctx.response(
            throttle_time_ms=0,
            responses=[
                result(name, topic_id, code, "Topic deletion is disabled.")
                for name, topic_id in wanted
            ],
        )
    name_counts: dict[str, int] = {}
    id_counts: dict = {}
    for name, topic_id in wanted:
        if name is not None:
            name_counts[name] = name_counts.get(name, 0) + 1
        elif topic_id != ZERO_UUID:
            id_counts[topic_id] = id_counts.get(topic_id, 0) + 1
    by_id = {topic_id: name for name, topic_id in topics.items()}
    budget = mutation_budget(ctx, STRICT_FROM)

    def take(name: str) -> bool:
        """Count the topic's partitions against the client's controller_mutation_rate."""
        if budget is None:
            return True
        info = services.logs.topics.get(name)
        return budget.take(info.num_partitions if info is not None else 1)

    deleted: dict = {}  # in cluster mode: name -> topic id, to wait for
    results = []
    # one save of the topics file for the whole request, not one per topic
    with services.logs.saving_topics_once():
        for name, topic_id in wanted:
            if name is not None and topic_id != ZERO_UUID:
                results.append(
                    result(
                        name,
                        topic_id,
                        ErrorCode.INVALID_REQUEST,
                        "You may not specify both topic name and topic id.",
                    )
                )
            elif name is not None and name_counts[name] > 1:
                results.append(
                    result(name, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
                )
            elif name is None and id_counts.get(topic_id, 0) > 1:
                results.append(
                    result(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
                )
            elif name is None:
                found = by_id.get(topic_id)
                if found is None:
                    results.append(
                        result(
                            None,
                            topic_id,
                            ErrorCode.UNKNOWN_TOPIC_ID,
                            "This server does not host this topic ID.",
                        )
                    )
                elif checks.delete_topic_by_name(ctx, found, True):  # name only if describable
                    results.append(
                        result(
                            None if checks.describe_topic(ctx, found) else found,
                            topic_id,
                            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            checks.message(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                        )
                    )
                elif not take(found):
                    results.append(result(found, topic_id, THROTTLED, THROTTLED_MESSAGE))
                else:
                    shared = metadata.shared(found)
                    metadata.delete_topic(found)
                    if shared:  # removed through ZooKeeper: wait for it
                        deleted[found] = topic_id
                    results.append(result(found, topic_id))
            elif denied := checks.delete_topic_by_name(ctx, name, name in topics):
                results.append(result(name, ZERO_UUID, denied, checks.message(denied)))
            elif name not in topics:
                results.append(
                    result(
                        name,
                        ZERO_UUID,
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        "This server does not host this topic-partition.",
                    )
                )
            elif not take(name):
                results.append(result(name, ZERO_UUID, THROTTLED, THROTTLED_MESSAGE))
            else:
                found_id = topics[name]
                shared = metadata.shared(name)
                metadata.delete_topic(name)
                if shared:  # removed through ZooKeeper: wait for it
                    deleted[name] = found_id
                results.append(result(name, found_id))
    if deleted and body.timeout_ms > 0:  # Kafka answers at once for a timeout of 0
        return wait_until_gone(ctx, deleted, results)
    return ctx.response(throttle_time_ms=0, responses=results)
