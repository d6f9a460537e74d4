"""The way to a share coordinator on another broker (Kafka's ``DefaultStatePersister`` over
its ``PersisterStateManager``): the partition leader's ReadShareGroupState v0,
WriteShareGroupState v1 and DeleteShareGroupState v0, and the group coordinator's
InitializeShareGroupState v0, ReadShareGroupStateSummary v1 and DeleteShareGroupState v0
(the share-group offset APIs), to the leader of the share-partition's ``__share_group_state``
partition, one share-partition a request, over a connection kept per broker
(``wireserver.cluster.client.BrokerChannel``). The group coordinator also asks a partition's
leader its high watermark (ListOffsets latest), for the lag it describes, and a share-partition
leader sends dead-letter records to the leader of their DLQ partition (Produce, acks=all), as
Kafka's broker sends itself a Produce. A request that fails on the way answers
NETWORK_EXCEPTION; ``wireserver.share.state.ShareStateStore`` finds the coordinator again and
retries that, as it retries NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS."""

from __future__ import annotations

from typing import Any

from twisted.internet import defer, task

from wireserver.cluster.client import BrokerChannel
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.served import SERVED
from wireserver.share.state import ShareState, StateBatch, StateKey, StateSummary

INITIALIZE, READ, WRITE, DELETE, SUMMARY = 83, 84, 85, 86, 87
WRITE_VERSION = SUMMARY_VERSION = 1
LIST_OFFSETS, LIST_OFFSETS_VERSION, LATEST = 2, 7, -1
PRODUCE, PRODUCE_VERSION = 0, 11
#: How often a dead-letter Produce is tried (Kafka's ``ShareGroupDLQStateManager`` retries)
#: and the pause before the n-th retry, n times this
PRODUCE_ATTEMPTS, PRODUCE_BACKOFF_S = 5, 0.25


def _request(api_key: int, version: int, key: StateKey, **partition_fields: Any) -> Any:
    """A state request for the one share-partition ``key``."""
    request_class = SERVED.get(api_key).request_class
    (topics_field,) = [n for n in request_class.__dict__ if n.endswith("Data")]
    data_class = getattr(request_class, topics_field)
    group_id, topic_id, partition = key
    return request_class(
        version=version,
        group_id=group_id,
        topics=[
            data_class(
                topic_id=topic_id,
                partitions=[data_class.PartitionData(partition=partition, **partition_fields)],
            )
        ],
    )


def _answer(response: Any) -> tuple[ErrorCode | None, Any]:
    """(error or None, the partition's result) of a one-partition state response."""
    if response is None:
        return ErrorCode.NETWORK_EXCEPTION, None
    for topic in response.results:
        for result in topic.partitions:
            error = ErrorCode(result.error_code)
            return (None if error == ErrorCode.NONE else error), result
    return ErrorCode.NETWORK_EXCEPTION, None


class ShareStateChannel(BrokerChannel):
    """Given the reactor, this broker's id, the inter-broker security and the cluster
    metadata, as the transaction marker sender."""

    def __init__(self, reactor: Any, node_id: int, security: Any, metadata: Any):
        super().__init__(reactor, node_id, security, metadata, f"share-persister-{node_id}")

    @defer.inlineCallbacks
    def read(self, broker: int, key: StateKey, leader_epoch: int):
        """(error or None, ShareState or None) from the coordinator ``broker``."""
        response = yield self._exchange(broker, _request(READ, 0, key, leader_epoch=leader_epoch))
        error, result = _answer(response)
        if error is not None:
            return error, None
        if result.start_offset < 0 and not result.state_batches:
            return None, None  # nothing stored for the key
        batches = [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in result.state_batches
        ]
        return None, ShareState(
            result.start_offset, batches, state_epoch=result.state_epoch, leader_epoch=leader_epoch
        )

    @defer.inlineCallbacks
    def write(
        self,
        broker: int,
        key: StateKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: list[StateBatch],
    ):
        """(error or None, None) once the coordinator ``broker`` has the state replicated."""
        batch_class = SERVED.get(WRITE).request_class.WriteStateData.PartitionData.StateBatch
        request = _request(
            WRITE,
            WRITE_VERSION,
            key,
            state_epoch=state_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            delivery_complete_count=-1,
            state_batches=[
                batch_class(
                    first_offset=first,
                    last_offset=last,
                    delivery_state=delivery_state,
                    delivery_count=count,
                )
                for first, last, delivery_state, count in batches
            ],
        )
        response = yield self._exchange(broker, request)
        return _answer(response)[0], None

    @defer.inlineCallbacks
    def delete(self, broker: int, key: StateKey):
        """(error or None, None) once the coordinator ``broker`` deleted the key's state."""
        response = yield self._exchange(broker, _request(DELETE, 0, key))
        return _answer(response)[0], None

    @defer.inlineCallbacks
    def summary(self, broker: int, key: StateKey):
        """(error or None, StateSummary or None) from the coordinator ``broker``."""
        response = yield self._exchange(broker, _request(SUMMARY, SUMMARY_VERSION, key))
        error, result = _answer(response)
        if error is not None or result.start_offset < 0:
            return error, None
        return None, StateSummary(
            result.start_offset,
            result.state_epoch,
            result.leader_epoch,
            result.delivery_complete_count,
        )

    @defer.inlineCallbacks
    def initialize(self, broker: int, key: StateKey, state_epoch: int, start_offset: int):
        """(error or None, None) once the coordinator ``broker`` has the new state
        replicated."""
        request = _request(INITIALIZE, 0, key, state_epoch=state_epoch, start_offset=start_offset)
        response = yield self._exchange(broker, request)
        return _answer(response)[0], None

    @defer.inlineCallbacks
    def high_watermark(self, broker: int, topic: str, partition: int):
        """The partition's high watermark as its leader ``broker`` answers ListOffsets for the
        latest offset (what a consumer may read), None when it cannot."""
        request_class = SERVED.get(LIST_OFFSETS).request_class
        topic_class = request_class.ListOffsetsTopic
        request = request_class(
            version=LIST_OFFSETS_VERSION,
            replica_id=-1,
            isolation_level=0,
            topics=[
                topic_class(
                    name=topic,
                    partitions=[
                        topic_class.ListOffsetsPartition(
                            partition_index=partition, current_leader_epoch=-1, timestamp=LATEST
                        )
                    ],
                )
            ],
        )
        response = yield self._exchange(broker, request)
        if response is None:
            return None
        for answered in response.topics:
            for result in answered.partitions:
                if result.error_code == ErrorCode.NONE:
                    return result.offset
        return None

    @defer.inlineCallbacks
    def produce(self, leader_of: Any, topic: str, partition: int, batch: bytes, timeout_ms: int):
        """Append ``batch`` to ``topic``-``partition`` at its leader (``leader_of(topic,
        partition)``: a broker id, or -1 while it has none), acks=all, retried on any failure
        up to ``PRODUCE_ATTEMPTS`` times; raises ``ProduceFailed`` with the last error."""
        request_class = SERVED.get(PRODUCE).request_class
        topic_class = request_class.TopicProduceData
        request = request_class(
            version=PRODUCE_VERSION,
            transactional_id=None,
            acks=-1,
            timeout_ms=timeout_ms,
            topic_data=[
                topic_class(
                    name=topic,
                    partition_data=[
                        topic_class.PartitionProduceData(index=partition, records=batch)
                    ],
                )
            ],
        )
        error = ErrorCode.LEADER_NOT_AVAILABLE
        for attempt in range(PRODUCE_ATTEMPTS):
            if attempt:
                yield task.deferLater(self.reactor, PRODUCE_BACKOFF_S * attempt, lambda: None)
            leader = leader_of(topic, partition)
            if leader < 0 or self.stopped:
                continue
            response = yield self._exchange(leader, request)
            error = ErrorCode.NETWORK_EXCEPTION
            for answered in response.responses if response is not None else []:
                for result in answered.partition_responses:
                    error = ErrorCode(result.error_code)
            if error == ErrorCode.NONE:
                return None
        raise ProduceFailed(f"{topic}-{partition}: {error.name} after {PRODUCE_ATTEMPTS} attempts")


class ProduceFailed(Exception):
    """A dead-letter Produce was not acknowledged."""
