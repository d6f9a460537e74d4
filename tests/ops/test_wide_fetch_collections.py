"""A consumer fetching thousands of partitions at once (librdkafka has no fetch sessions, so
every Fetch names them all) does not keep ``wireserver serve``'s garbage collector busy: the
objects one such request holds while it is answered are not enough to start a collection,
and so are never moved to the old generation whose full collections scan every partition's
objects. Read from the collections the broker reports on ``/metrics``."""

from __future__ import annotations

import pytest

from tests.integration import raw
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


def test_fetches_of_two_thousand_partitions_set_off_no_collection():
    with EmbeddedBroker(
        "subprocess", overrides={"metrics.listeners": "HTTP://127.0.0.1:0"}
    ) as broker:
        topics = [f"wide-{i}" for i in range(TOPICS)]
        for topic in topics:
            broker.create_topic(topic, partitions=PARTITIONS)
        # read_committed, answered at once: what librdkafka sends, with every partition
        request = raw.fetch_many(
            {topic: list(range(PARTITIONS)) for topic in topics}, 0, isolation_level=1
        )
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
