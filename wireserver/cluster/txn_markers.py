"""The transaction coordinator's marker channel in a cluster (Kafka's
``TransactionMarkerChannelManager``): WriteTxnMarkers requests to the leaders of the partitions of
a transaction, wherever they are.

``TxnMarkerSender.send`` groups the partitions by their current leader (the broker's ZooKeeper
view of partition state), sends each leader one WriteTxnMarkers v2 request (with the transaction version) over a connection
kept per broker (``wireserver.cluster.client``), and sends again what is not written yet after
``RETRY_BACKOFF_MS``, reading the leaders afresh: a partition answers NOT_LEADER_OR_FOLLOWER
when leadership moved, has no live leader for a while, or its leader's connection fails. It
finishes when every marker is written, and stops early when the caller says it is no longer the
coordinator. As in Kafka, a partition of a deleted topic is dropped, and a marker refused for a
newer producer epoch (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED) counts as done:
a newer coordinator or producer has moved past this transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from twisted.internet import defer, task

from wireserver.cluster.client import BrokerChannel
from wireserver.metadata import NO_LEADER
from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.served import SERVED

if TYPE_CHECKING:
    from wireserver.cluster.metadata import ZkMetadata

log = logging.getLogger(__name__)

TP = tuple[str, int]
WRITE_TXN_MARKERS_KEY = 27
ADD_PARTITIONS_TO_TXN_KEY = 24
ADD_PARTITIONS_TO_TXN_VERSION = 5
#: v2 (KIP-1228) carries the transaction version, for v2's strict marker epoch check.
WRITE_TXN_MARKERS_VERSION = 2
#: Kafka's ``retry.backoff.ms`` default, the marker channel's pause before resending.
RETRY_BACKOFF_MS = 100
#: Answers after which a partition needs no more markers from this coordinator.
FINAL = frozenset(
    {ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED}
)


def _by_topic(partitions: Iterable[TP]) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return by_topic


class TxnMarkerSender(BrokerChannel):
    """Given what it uses rather than the broker: the reactor, this broker's node id (in its
    client id), the inter-broker security (``BrokerConfig.inter_broker_security``) and
    the cluster ``metadata`` (who leads each partition, where each broker listens)."""

    def __init__(self, reactor: Any, node_id: int, security: Any, metadata: ZkMetadata):
        super().__init__(reactor, node_id, security, metadata, f"txn-marker-sender-{node_id}")

    @defer.inlineCallbacks
    def send(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[TP],
        still_wanted: Callable[[], bool],
        transaction_version: int = 0,
    ):
        """Fires (with None) once every partition has its marker, or when ``still_wanted()``
        turns false or the broker stops."""
        remaining = set(partitions)
        attempt = 0
        while remaining and still_wanted() and not self.stopped:
            metadata = self.metadata
            remaining = {tp for tp in remaining if metadata.registered(tp[0])}
            by_leader: dict[int, list[TP]] = {}
            for tp in sorted(remaining):
                leader = metadata.leader(*tp)
                if leader != NO_LEADER:
                    by_leader.setdefault(leader, []).append(tp)
            answers = yield defer.gatherResults(
                [
                    self._send_to(
                        leader,
                        tps,
                        producer_id,
                        producer_epoch,
                        commit,
                        coordinator_epoch,
                        transaction_version,
                    )
                    for leader, tps in by_leader.items()
                ]
            )
            for results in answers:
                for tp, error in results.items():
                    if error in FINAL:
                        if error != ErrorCode.NONE:
                            log.warning(
                                "marker for producer %d on %s-%d refused: %s; not sending it again",
                                producer_id,
                                tp[0],
                                tp[1],
                                error.name,
                            )
                        remaining.discard(tp)
                    elif error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and not metadata.registered(
                        tp[0]
                    ):
                        remaining.discard(tp)
            if remaining and still_wanted() and not self.stopped:
                attempt += 1
                if attempt % 50 == 0:
                    log.info(
                        "markers for producer %d still unwritten on %s after %d attempts",
                        producer_id,
                        sorted(remaining),
                        attempt,
                    )
                yield task.deferLater(self.reactor, RETRY_BACKOFF_MS / 1000.0, lambda: None)

    @defer.inlineCallbacks
    def _send_to(
        self,
        leader: int,
        tps: list[TP],
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        transaction_version: int,
    ):
        """{partition: error} from one leader; every partition NOT_LEADER_OR_FOLLOWER when the
        request fails (the caller reads the leaders again and retries)."""
        request_class = SERVED.get(WRITE_TXN_MARKERS_KEY).request_class
        marker_class = request_class.WritableTxnMarker
        topic_class = marker_class.WritableTxnMarkerTopic
        by_topic = _by_topic(tps)
        request = request_class(
            version=WRITE_TXN_MARKERS_VERSION,
            markers=[
                marker_class(
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    transaction_result=commit,
                    topics=[
                        topic_class(name=t, partition_indexes=ps) for t, ps in by_topic.items()
                    ],
                    coordinator_epoch=coordinator_epoch,
                    transaction_version=transaction_version,
                )
            ],
        )
        response = yield self._exchange(leader, request)
        if response is None:
            return {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in tps}
        results = {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in tps}
        for marker in response.markers:
            for topic in marker.topics:
                for result in topic.partitions:
                    results[(topic.name, result.partition_index)] = ErrorCode(result.error_code)
        return results

    @defer.inlineCallbacks
    def add_partitions(
        self,
        coordinator: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TP],
    ):
        """Transaction protocol v2's implicit add, as a partition leader asks the id's
        coordinator (Kafka's AddPartitionsToTxnManager): AddPartitionsToTxn v5 with
        ``verify_only`` false, over the same connections. Fires with {partition: error};
        NETWORK_EXCEPTION for all when the coordinator cannot be reached (the producer
        retries), INVALID_TXN_STATE for a top-level refusal, as Kafka."""
        request_class = SERVED.get(ADD_PARTITIONS_TO_TXN_KEY).request_class
        transaction_class = request_class.AddPartitionsToTxnTransaction
        topic_class = request_class.AddPartitionsToTxnTopic
        by_topic = _by_topic(partitions)
        request = request_class(
            version=ADD_PARTITIONS_TO_TXN_VERSION,
            transactions=[
                transaction_class(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    verify_only=False,
                    topics=[topic_class(name=t, partitions=ps) for t, ps in by_topic.items()],
                )
            ],
        )
        response = yield self._exchange(coordinator, request)
        if response is None:
            return dict.fromkeys(partitions, ErrorCode.NETWORK_EXCEPTION)
        if response.error_code != ErrorCode.NONE:
            return dict.fromkeys(partitions, ErrorCode.INVALID_TXN_STATE)
        results = dict.fromkeys(partitions, ErrorCode.NONE)
        for result in response.results_by_transaction:
            for topic in result.topic_results:
                for answer in topic.results_by_partition:
                    error = ErrorCode(answer.partition_error_code)
                    results[(topic.name, answer.partition_index)] = error
        return results
