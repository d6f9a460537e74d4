"""A consumer fetching thousands of partitions at once (librdkafka has no fetch sessions, so
every Fetch names them all) does not keep ``wireserver serve``'s garbage collector busy: the
objects one such request holds while it is answered are not enough to start a collection,
and so are never moved to the old generation whose full collections scan every partition's
objects. Read from the collections the broker reports on ``/metrics``."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.fetch import FetchRequest

from tests.prometheus_scrape import matching, scrape
from wireserver.testing import EmbeddedBroker

pytestmark = pytest.mark.integration

TOPICS = 20
PARTITIONS = 100  # per topic: 2,000 in all
FETCHES = 30


def collections(ops_url: str) -> dict[str, float]:
    """Collections so far per generation (``jvm_gc_collection_seconds_count``)."""
    samples = scrape(ops_url)
    return {
        generation: sum(matching(samples, "jvm_gc_collection_seconds_count", gc=generation))
        for generation in ("generation0", "generation1", "generation2")
    }


def wide_fetch(topics: list[str]) -> FetchRequest:
    """A read_committed Fetch v12 of every partition from offset 0, answered at once."""
    partition = FetchRequest.FetchTopic.FetchPartition
    return FetchRequest(
        version=12,
        cluster_id=None,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 24,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    partition(
                        partition=index,
                        current_leader_epoch=-1,
                        fetch_offset=0,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    )
                    for index in range(PARTITIONS)
                ],
            )
            for topic in topics
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def test_fetches_of_two_thousand_partitions_set_off_no_collection():
    with EmbeddedBroker(
        "subprocess", overrides={"metrics.listeners": "HTTP://127.0.0.1:0"}
    ) as broker:
        topics = [f"wide-{i}" for i in range(TOPICS)]
        for topic in topics:
            broker.create_topic(topic, partitions=PARTITIONS)
        request = wide_fetch(topics)
        with broker.wire() as wire:
            wire.request(request)  # the first answer: every partition known and empty
            before = collections(broker.ops_url)
            for _ in range(FETCHES):
                response = wire.request(request)
            after = collections(broker.ops_url)
        answered = [p for topic in response.responses for p in topic.partitions]
        assert len(answered) == TOPICS * PARTITIONS
        assert all(p.error_code == 0 and p.high_watermark == 0 for p in answered)
        started = {generation: after[generation] - before[generation] for generation in after}
        # The scrapes themselves allocate a little; with CPython's default threshold (700) the
        # fetches set off hundreds of young collections and some full ones.
        assert started["generation2"] == 0, started
        assert started["generation0"] + started["generation1"] <= 2, started
