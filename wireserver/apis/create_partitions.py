"""CreatePartitions (key 37), v0-3.

Raises a topic's partition count, as Kafka's controller does: the new count must be larger
(INVALID_PARTITIONS otherwise, with Kafka's messages); a manual assignment must give one
replica list per new partition, each non-empty, without repeats, on registered brokers, with
the topic's replication factor (INVALID_REPLICATION_ASSIGNMENT); a topic named twice gets
INVALID_REQUEST; an unknown topic UNKNOWN_TOPIC_OR_PARTITION. ``validate_only`` changes
nothing.

Each topic needs ALTER (TOPIC_AUTHORIZATION_FAILED, before any other check but duplicates).

Skipped: ``timeout_ms`` (synchronous).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from storage.errors import InvalidPartitionsError
from wireserver.apis import handles
from wireserver.security import checks
from wireserver.topics import MAX_PARTITIONS, TopicError

API_KEY = 37
REPLICATION_FACTOR = 1  # every topic of a single node has one replica


def check(broker, topic) -> None:
    """Raise TopicError when ``topic`` (a request entry) cannot be applied."""
    info = broker.logs.topics.get(topic.name)
    if info is None:
        raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"Topic '{topic.name}' does not exist.")
    current = info.num_partitions
    if topic.count == current:
        raise TopicError(ErrorCode.INVALID_PARTITIONS,
                         f"Topic already has {current} partition(s).")
    if topic.count < current:
        raise TopicError(ErrorCode.INVALID_PARTITIONS,
                         f"The topic {topic.name} currently has {current} partition(s); "
                         f"{topic.count} would not be an increase.")
    if topic.count > MAX_PARTITIONS:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, "Too many partitions.")
    additional = topic.count - current
    if topic.assignments is None:
        return
    if len(topic.assignments) != additional:
        raise TopicError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                         f"Attempted to add {additional} additional partition(s), but only "
                         f"{len(topic.assignments)} assignment(s) were specified.")
    for assignment in topic.assignments:
        replicas = list(assignment.broker_ids)
        if not replicas:
            raise TopicError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
        seen = set()
        for replica in replicas:
            if replica in seen:
                raise TopicError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                 f"The manual partition assignment includes the broker "
                                 f"{replica} more than once.")
            seen.add(replica)
            if replica != broker.node_id:
                raise TopicError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                 f"The manual partition assignment includes broker {replica}, "
                                 "but no such broker is registered.")
        if len(replicas) != REPLICATION_FACTOR:
            raise TopicError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                             f"The manual partition assignment includes a partition with "
                             f"{len(replicas)} replica(s), but this is not consistent with "
                             f"previous partitions, which have {REPLICATION_FACTOR} replica(s).")


@handles(API_KEY)
def handle(ctx):
    broker, body = ctx.broker, ctx.body
    result_class = ctx.request.spec.response_class.CreatePartitionsTopicResult
    counts: dict[str, int] = {}
    for topic in body.topics:
        counts[topic.name] = counts.get(topic.name, 0) + 1
    results = []
    reported: set[str] = set()
    for topic in body.topics:
        if counts[topic.name] > 1:
            if topic.name not in reported:
                reported.add(topic.name)
                results.append(result_class(name=topic.name, error_code=ErrorCode.INVALID_REQUEST,
                                            error_message="Duplicate topic name."))
            continue
        if checks.alter_topic(ctx, topic.name):  # ALTER on the topic
            results.append(result_class(name=topic.name,
                                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                        error_message=None))
            continue
        try:
            check(broker, topic)
            if not body.validate_only:
                try:
                    broker.logs.add_partitions(topic.name, topic.count)
                except InvalidPartitionsError as exc:
                    raise TopicError(ErrorCode.INVALID_PARTITIONS, str(exc)) from None
        except TopicError as exc:
            results.append(result_class(name=topic.name, error_code=exc.code,
                                        error_message=exc.message))
            continue
        results.append(result_class(name=topic.name, error_code=ErrorCode.NONE,
                                    error_message=None))
    return ctx.response(throttle_time_ms=0, results=results)
