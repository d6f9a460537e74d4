"""What the share coordinator's state RPCs (InitializeShareGroupState 83, ReadShareGroupState
84, WriteShareGroupState 85, DeleteShareGroupState 86, ReadShareGroupStateSummary 87) do alike:
CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED on every partition otherwise, as
Kafka's ``KafkaApis``), then one answer per share-partition from ``wireserver.share.state``
(NOT_COORDINATOR when this broker does not lead its ``__share_group_state`` partition,
COORDINATOR_LOAD_IN_PROGRESS while it loads it), in the request's order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from wireserver.groups.api import message
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.share.state import ShareState, ShareStateStore, StateKey

#: (key, the request's partition data) -> a Deferred of (error, the result's other fields)
PartitionAnswer = Callable[[StateKey, Any], defer.Deferred]


@defer.inlineCallbacks
def state_response(ctx: Any, answer: PartitionAnswer, defaults: dict[str, Any] | None = None):
    """The response: ``answer`` for each share-partition of the request, or
    ``defaults`` with the authorization error for each."""
    response_class = ctx.request.spec.response_class
    (results_name,) = [n for n in response_class.__dict__ if n.endswith("Result")]
    result_class = getattr(response_class, results_name)
    partition_class = result_class.PartitionResult
    denied = checks.cluster_action(ctx)
    group_id = ctx.body.group_id
    results = []
    for topic in ctx.body.topics:
        partitions = []
        for data in topic.partitions:
            if denied:
                error, fields = denied, dict(defaults or {})
            else:
                error, fields = yield answer((group_id, topic.topic_id, data.partition), data)
            partitions.append(
                partition_class(
                    partition=data.partition,
                    error_code=error,
                    error_message=message(error),
                    **fields,
                )
            )
        results.append(result_class(topic_id=topic.topic_id, partitions=partitions))
    return ctx.response(results=results)


def no_fields(error: Any) -> tuple[ErrorCode, dict]:
    return ErrorCode.NONE if error is None else error, {}


def store(ctx: Any) -> ShareStateStore:
    return ctx.services.share.store


def read_answer(ctx: Any, key: StateKey) -> tuple[ErrorCode, ShareState | None]:
    """(error, state) of ``key`` at this coordinator: an unknown key has no state."""
    state_store = store(ctx)
    error = state_store.coordinator_error(key)
    if error is not None:
        return error, None
    return ErrorCode.NONE, state_store.read(key)


def written(deferred: defer.Deferred) -> defer.Deferred:
    """A write's answer without further fields."""
    return deferred.addCallback(lambda error: (error, {}))
