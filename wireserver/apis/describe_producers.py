"""DescribeProducers (key 61), v0: the producer state of each partition (Kafka's
``ProducerStateManager.activeProducers``): id, epoch, last sequence, last timestamp,
coordinator epoch and the first offset of its open transaction (-1 when none). Each topic needs
READ (TOPIC_AUTHORIZATION_FAILED).

Any replica answers from its own log, the leader and followers alike (Kafka's
``Partition.activeProducerState``; followers rebuild producer state from what they copy). In
cluster mode a broker that is no replica of an existing partition answers
NOT_LEADER_OR_FOLLOWER (Kafka's ``ReplicaManager.getPartitionOrError``), so that the client
looks the leader up again."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 61


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    logs = ctx.services.logs
    topic_class = ctx.request.spec.response_class.TopicResponse
    partition_class = topic_class.PartitionResponse
    producer_class = partition_class.ProducerState
    topics = []
    for topic in ctx.body.topics:
        partitions = []
        denied = checks.describe_producers(ctx, topic.name)  # READ on the topic
        for index in topic.partition_indexes:
            partition_log = logs.get_log(topic.name, index)
            error = denied
            if not error and partition_log is None:
                error = ctx.services.replicas.missing_error(topic.name, index)
            elif not error and not ctx.services.metadata.hosts_replica(topic.name, index):
                error = ErrorCode.NOT_LEADER_OR_FOLLOWER
            if error or partition_log is None:
                partitions.append(
                    partition_class(
                        partition_index=index,
                        error_code=error,
                        error_message=checks.message(error),
                        active_producers=[],
                    )
                )
                continue
            producers = [
                producer_class(
                    producer_id=entry.producer_id,
                    producer_epoch=entry.producer_epoch,
                    last_sequence=entry.last_seq,
                    last_timestamp=entry.last_timestamp,
                    coordinator_epoch=entry.coordinator_epoch,
                    current_txn_start_offset=entry.current_txn_first_offset,
                )
                for entry in partition_log.producer_state.producers.values()
            ]
            partitions.append(
                partition_class(
                    partition_index=index,
                    error_code=ErrorCode.NONE,
                    error_message=None,
                    active_producers=producers,
                )
            )
        topics.append(topic_class(name=topic.name, partitions=partitions))
    return ctx.response(throttle_time_ms=0, topics=topics)
