"""CreatePartitions (key 37), v0-3.

Raises a topic's partition count, as Kafka's controller does: the new count must be larger
(INVALID_PARTITIONS otherwise, with Kafka's messages); a manual assignment must give one
replica list per new partition, each non-empty, without repeats, on registered brokers, with
the topic's replication factor (INVALID_REPLICATION_ASSIGNMENT); a topic named twice gets
INVALID_REQUEST; an unknown topic UNKNOWN_TOPIC_OR_PARTITION. ``validate_only`` changes
nothing.

Each topic needs ALTER (TOPIC_AUTHORIZATION_FAILED, before any other check but duplicates).

Cluster mode (Kafka's ZooKeeper era): the topic's assignment in ``/brokers/topics/<t>``
gains the new partitions (a manual assignment, or Kafka's placement continuing the round robin
with the topic's replication factor over the live brokers), the controller creates their state
and every broker opens their logs. The response waits (up to ``timeout_ms``) until every new
partition has a leader in this broker's metadata, REQUEST_TIMED_OUT otherwise.

Under a ``controller_mutation_rate`` quota (``wireserver.quotas.MutationBudget``) the
new partitions count against it; from v3 a topic asked for while the quota is exhausted is
refused THROTTLING_QUOTA_EXCEEDED, as in Kafka (KIP-599).

Skipped: ``timeout_ms`` on one node (synchronous).
"""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.quotas import THROTTLED, THROTTLED_MESSAGE, mutation_budget
from wireserver.security import checks
from wireserver.topics import MAX_PARTITIONS, TopicError, wait_for_topics

API_KEY = 37
#: KIP-599: from this version a topic over the client's controller_mutation_rate is refused
STRICT_FROM = 3


def check(topic, current: int, registered, replication_factor: int) -> None:
    """Raise TopicError when ``topic`` (a request entry) cannot be applied to a topic of
    ``current`` partitions with ``replication_factor``, on the ``registered`` broker ids."""
    if topic.count == current:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if topic.count < current:
        raise TopicError(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {topic.name} currently has {current} partition(s); "
            f"{topic.count} would not be an increase.",
        )
    if topic.count > MAX_PARTITIONS:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, "Too many partitions.")
    additional = topic.count - current
    if topic.assignments is None:
        return
    if len(topic.assignments) != additional:
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(topic.assignments)} assignment(s) were specified.",
        )
    for assignment in topic.assignments:
        replicas = list(assignment.broker_ids)
        if not replicas:
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        seen = set()
        for replica in replicas:
            if replica in seen:
                raise TopicError(
                    ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                    f"The manual partition assignment includes the broker "
                    f"{replica} more than once.",
                )
            seen.add(replica)
            if replica not in registered:
                raise TopicError(
                    ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                    f"The manual partition assignment includes broker {replica}, "
                    "but no such broker is registered.",
                )
        if len(replicas) != replication_factor:
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                f"The manual partition assignment includes a partition with "
                f"{len(replicas)} replica(s), but this is not consistent with "
                f"previous partitions, which have {replication_factor} replica(s).",
            )


@defer.inlineCallbacks
def wait_for_new_leaders(ctx, counts: dict, results):
    """Answer once every extended topic (name -> new count) has leaders for all its
    partitions in this broker's metadata."""
    pending = yield wait_for_topics(
        ctx.services,
        list(counts),
        lambda name: ctx.services.metadata.has_leaders(name, counts[name]),
        ctx.body.timeout_ms,
    )
    for result in results:
        if result.error_code == ErrorCode.NONE and result.name in pending:
            result.error_code = ErrorCode.REQUEST_TIMED_OUT
            result.error_message = "Timed out waiting for the new partitions' leaders."
    return ctx.response(throttle_time_ms=0, results=results)


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    services, body = ctx.services, ctx.body
    result_class = ctx.request.spec.response_class.CreatePartitionsTopicResult
    counts: dict[str, int] = {}
    for topic in body.topics:
        counts[topic.name] = counts.get(topic.name, 0) + 1
    results = []
    extended: dict[str, int] = {}  # cluster mode: topic -> new partition count, to wait for
    reported: set[str] = set()
    budget = None if body.validate_only else mutation_budget(ctx, STRICT_FROM)

    def checked(topic, current: int, registered, replication_factor: int) -> None:
        """``check``, then the new partitions count against the controller_mutation_rate."""
        check(topic, current, registered, replication_factor)
        if budget is not None and not budget.take(topic.count - current):
            raise TopicError(THROTTLED, THROTTLED_MESSAGE)

    for topic in body.topics:
        if counts[topic.name] > 1:
            if topic.name not in reported:
                reported.add(topic.name)
                results.append(
                    result_class(
                        name=topic.name,
                        error_code=ErrorCode.INVALID_REQUEST,
                        error_message="Duplicate topic name.",
                    )
                )
            continue
        if checks.alter_topic(ctx, topic.name):  # ALTER on the topic
            results.append(
                result_class(
                    name=topic.name,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message=None,
                )
            )
            continue
        shared = services.metadata.shared(topic.name)
        try:
            services.metadata.add_partitions(topic, bool(body.validate_only), checked)
        except TopicError as exc:
            results.append(
                result_class(name=topic.name, error_code=exc.code, error_message=exc.message)
            )
            continue
        if shared and not body.validate_only:  # changed through ZooKeeper: wait for it
            extended[topic.name] = topic.count
        results.append(result_class(name=topic.name, error_code=ErrorCode.NONE, error_message=None))
    if extended and body.timeout_ms > 0:  # Kafka answers at once for a timeout of 0
        return wait_for_new_leaders(ctx, extended, results)
    return ctx.response(throttle_time_ms=0, results=results)
