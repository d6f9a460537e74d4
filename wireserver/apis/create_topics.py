"""CreateTopics (key 19), v2-7.

Every topic is checked the way Kafka's controller checks it (``wireserver.topics``): a legal
name that is not taken, partitions and replication factor (-1 = ``num.partitions`` /
``default.replication.factor``) or a manual replica assignment (not both), known config keys
with non-null valid values. Each topic gets its own error code and message (v1+). A name that
appears more than once in one request gets INVALID_REQUEST "Duplicate topic name." and is not
created, as in Kafka. ``validate_only`` runs every check and creates nothing.

From v5 a successful result carries the partition count, replication factor and the topic's
effective configuration (value, source, read-only, sensitive, as DescribeConfigs reports them);
from v7 the topic id. As in Kafka, a validate-only result carries a fresh id that is not kept.

Cluster mode: the topic is written to ZooKeeper and the response waits (up to ``timeout_ms``)
until every partition has a leader in this broker's view, as Kafka's ZooKeeper-era
DelayedCreatePartitions did; REQUEST_TIMED_OUT otherwise.

Authorization (``ControllerApis.createTopics``): CREATE on the cluster or on the topic, else
TOPIC_AUTHORIZATION_FAILED "Authorization failed."; without DESCRIBE_CONFIGS on a created topic
the result has ``topic_config_error_code`` TOPIC_AUTHORIZATION_FAILED and no configs, partition
count or replication factor.

Under a ``controller_mutation_rate`` quota (``wireserver.quotas.MutationBudget``) each
created topic's partitions count against it; from v6 a topic asked for while the quota is
exhausted is refused THROTTLING_QUOTA_EXCEEDED, as in Kafka (KIP-599).

Skipped: ``timeout_ms`` in one-node mode (creation is synchronous there), CreateTopicPolicy.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from twisted.internet import defer

from wireserver.admin import ZERO_UUID, topic_config_rows
from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.quotas import THROTTLED, THROTTLED_MESSAGE, mutation_budget
from wireserver.security import checks
from wireserver.storage.log_config import LogConfig
from wireserver.topics import (
    INTERNAL_TOPICS,
    TopicError,
    create_topic,
    resolve_creation,
    wait_for_topics,
)

API_KEY = 19
#: KIP-599: from this version a topic over the client's controller_mutation_rate is refused
STRICT_FROM = 6


def _replication_factor(services, replication_factor: int, assignments) -> int:
    if assignments:
        return len(next(iter(assignments.values())))
    if replication_factor == -1:
        return services.config["default.replication.factor"]
    return replication_factor


def _result(result_class, name, code=ErrorCode.NONE, message=None):
    return result_class(
        name=name,
        topic_id=ZERO_UUID,
        error_code=code,
        error_message=message,
        topic_config_error_code=ErrorCode.NONE,
        num_partitions=-1,
        replication_factor=-1,
        configs=[],
    )


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    services, body = ctx.services, ctx.body
    validate_only = bool(body.validate_only)
    # one save of the topics file for the whole request, not one per topic
    with services.logs.saving_topics_once():
        results = create_each(ctx, validate_only)
    if services.metadata.propagates and not validate_only and body.timeout_ms > 0:
        created = [
            r for r in results if r.error_code == ErrorCode.NONE and r.name not in INTERNAL_TOPICS
        ]
        if created:
            return wait_for_leaders(ctx, created, results)
    return ctx.response(throttle_time_ms=0, topics=results)


def create_each(ctx: RequestContext, validate_only: bool) -> list:
    """Each topic's result, the topic created unless ``validate_only`` or refused."""
    services, version, body = ctx.services, ctx.version, ctx.body
    result_class = ctx.request.spec.response_class.CreatableTopicResult
    config_class = result_class.CreatableTopicConfigs
    budget = None if validate_only else mutation_budget(ctx, STRICT_FROM)
    seen: dict[str, int] = {}
    for topic in body.topics:
        seen[topic.name] = seen.get(topic.name, 0) + 1
    results = []
    reported: set[str] = set()
    for topic in body.topics:
        name = topic.name
        if seen[name] > 1:
            if name not in reported:
                reported.add(name)
                results.append(
                    _result(result_class, name, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
                )
            continue
        if checks.create_topic(ctx, name):  # CREATE on the cluster or the topic
            results.append(
                _result(
                    result_class,
                    name,
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "Authorization failed.",
                )
            )
            continue
        assignments = {a.partition_index: list(a.broker_ids) for a in topic.assignments or []}
        configs = {c.name: c.value for c in topic.configs or []}
        overrides: Mapping[str, str]
        request = (name, topic.num_partitions, topic.replication_factor, configs, assignments)
        try:
            if validate_only or budget is not None:
                # the checks alone; with a controller_mutation_rate, the partition count
                # to take from it before creating
                partitions, overrides = resolve_creation(services, *request)
            if validate_only:
                topic_id = uuid.uuid4()
                log_config = LogConfig.from_values(services.logs.broker_defaults, overrides)
            else:
                if budget is not None and not budget.take(partitions):
                    raise TopicError(THROTTLED, THROTTLED_MESSAGE)
                info = create_topic(services, *request)
                partitions, overrides = info.num_partitions, info.overrides
                topic_id, log_config = info.topic_id, info.config
        except TopicError as exc:
            results.append(_result(result_class, name, exc.code, exc.message))
            continue
        result = _result(result_class, name)
        hidden = checks.describe_topic_configs(ctx, name)  # configs need DESCRIBE_CONFIGS
        if hidden:
            result.topic_config_error_code = hidden
        elif version >= 5:
            result.num_partitions = partitions
            result.replication_factor = _replication_factor(
                services, topic.replication_factor, assignments
            )
            result.configs = [
                config_class(
                    name=row.name,
                    value=row.value,
                    read_only=row.read_only,
                    config_source=row.source_id,
                    is_sensitive=row.sensitive,
                )
                for row in topic_config_rows(services, overrides, log_config)
            ]
        if version >= 7:
            result.topic_id = topic_id
        results.append(result)
    return results


@defer.inlineCallbacks
def wait_for_leaders(ctx, created, results):
    pending = yield wait_for_topics(
        ctx.services,
        [r.name for r in created],
        ctx.services.metadata.has_leaders,
        ctx.body.timeout_ms,
    )
    for result in created:
        if result.name in pending:
            result.error_code = ErrorCode.REQUEST_TIMED_OUT
            result.error_message = "Timed out waiting for the topic's leaders."
    return ctx.response(throttle_time_ms=0, topics=results)
