"""Kafka's fetch session rules: the cache (FetchSessionCacheShard: 8 shards taken in turn, a
new session evicts only a stale one, or a less valuable one that is not recently created, and
is otherwise declined) on explicit times, and the Fetch handler on a fake clock (sessions
opened by full fetches compete for slots; the epoch moves when a request arrives)."""

from __future__ import annotations

import collections

import pytest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from twisted.internet.testing import MemoryReactorClock

from tests.wireserver.connection import connect, responses, send
from wireserver.broker import Broker
from wireserver.config import BrokerConfig
from wireserver.fetch_sessions import EVICTION_MS, INT32_MAX, SHARDS, FetchSessionCache, next_epoch

CONSUMER, FOLLOWER = False, True
NONE, INVALID_FETCH_SESSION_EPOCH = 0, 71  # error codes


def partitions(count: int):
    return collections.OrderedDict((("t", p), None) for p in range(count))


def fill(
    cache: FetchSessionCache,
    count: int,
    now_ms: int = 0,
    privileged: bool = CONSUMER,
    size: int = 1,
) -> list:
    sessions = [
        cache.maybe_create(now_ms, privileged, False, partitions(size)) for _ in range(count)
    ]
    assert None not in sessions
    return sessions


def test_epochs_follow_kafkas_next_epoch():
    assert [next_epoch(0), next_epoch(1), next_epoch(INT32_MAX), next_epoch(-1)] == [1, 2, 1, -1]


def test_a_new_session_expects_epoch_1_and_sessions_take_the_shards_in_turn():
    cache = FetchSessionCache(16)
    sessions = fill(cache, 16)
    assert {s.epoch for s in sessions} == {1}
    assert [cache.shards.index(cache._shard(s.id)) for s in sessions] == [
        n % SHARDS for n in range(16)
    ]
    assert all(cache.get(s.id) is s for s in sessions) and len(cache) == 16


def test_fewer_slots_than_shards_means_no_session_at_all():
    cache = FetchSessionCache(SHARDS - 1)
    assert [cache.maybe_create(0, CONSUMER, False, partitions(1)) for _ in range(SHARDS)] == [
        None
    ] * SHARDS


@pytest.mark.parametrize("session_id", [0, -1, INT32_MAX])
def test_ids_outside_every_shard_are_unknown(session_id):
    cache = FetchSessionCache()
    fill(cache, 8)
    assert cache.get(session_id) is None
    cache.remove(session_id)
    assert len(cache) == 8


def test_a_full_shard_declines_a_new_session_rather_than_evict_a_young_one():
    cache = FetchSessionCache(SHARDS)  # one slot per shard
    old = fill(cache, SHARDS)
    assert cache.maybe_create(EVICTION_MS, CONSUMER, False, partitions(50)) is None
    assert all(cache.get(s.id) is s for s in old)


def test_a_session_idle_longer_than_the_eviction_time_gives_way():
    cache = FetchSessionCache(SHARDS)
    old = fill(cache, SHARDS)
    new = cache.maybe_create(EVICTION_MS + 1, CONSUMER, False, partitions(1))
    assert new is not None and cache.get(new.id) is new
    assert cache.get(old[0].id) is None
    assert all(cache.get(s.id) is s for s in old[1:])


def test_an_old_but_busy_session_gives_way_only_to_a_bigger_one():
    cache = FetchSessionCache(SHARDS)
    old = fill(cache, SHARDS, size=2)
    busy = EVICTION_MS + 1000
    for session in old:
        cache.touch(session, busy)  # used just now, created more than EVICTION_MS ago
    assert cache.maybe_create(busy, CONSUMER, False, partitions(2)) is None  # shard 0
    assert cache.maybe_create(busy, CONSUMER, False, partitions(3)) is not None  # shard 1
    assert cache.get(old[0].id) is old[0] and cache.get(old[1].id) is None


def test_a_follower_session_evicts_a_consumer_session_at_once():
    cache = FetchSessionCache(SHARDS)
    consumers = fill(cache, SHARDS)
    follower = cache.maybe_create(1000, FOLLOWER, False, partitions(1))
    assert follower is not None and follower.privileged
    assert cache.get(consumers[0].id) is None


def test_a_young_follower_session_is_safe_from_everyone():
    cache = FetchSessionCache(SHARDS)
    fill(cache, SHARDS, privileged=FOLLOWER)
    assert cache.maybe_create(1000, FOLLOWER, False, partitions(100)) is None
    assert cache.maybe_create(1000, CONSUMER, False, partitions(100)) is None


# ------------------------------------------------------------------ the handler, on a fake clock


@pytest.fixture
def broker(tmp_path):
    config = BrokerConfig.load(
        None,
        {
            "log.dirs": str(tmp_path),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "max.incremental.fetch.session.cache.slots": str(SHARDS),
        },
    )
    instance = Broker(config, MemoryReactorClock())
    instance.start()
    instance.logs.create_topic("orders", 1)
    yield instance
    instance.logs.close()


def fetch(session_id: int, epoch: int, max_wait_ms: int = 0) -> FetchRequest:
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=1 << 20
    )
    topics = [FetchRequest.FetchTopic(topic="orders", partitions=[partition])] if epoch <= 0 else []
    return FetchRequest(
        version=12,
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=topics,
        forgotten_topics_data=[],
        rack_id="",
    )


def answers(transport) -> list[tuple[int, int]]:
    """(error code, session id) of each response waiting on ``transport``."""
    decoded = [
        FetchResponse.decode(bytes(frame), version=12, header=True)
        for frame in responses(transport)
    ]
    return [(r.error_code, r.session_id) for r in decoded]


def test_full_fetches_get_a_session_while_a_slot_is_free_or_stale(broker):
    connection, transport = connect(broker)
    for n in range(SHARDS):
        send(connection, fetch(0, 0), n)
    opened = answers(transport)
    assert [error for error, _ in opened] == [NONE] * SHARDS
    assert 0 not in {sid for _, sid in opened}
    broker.reactor.advance(EVICTION_MS / 1000)  # idle exactly the eviction time: not stale
    send(connection, fetch(0, 0), 10)
    assert answers(transport) == [(NONE, 0)]
    broker.reactor.advance(1)
    send(connection, fetch(0, 0), 11)
    [(error, new_id)] = answers(transport)
    assert error == NONE and new_id not in (0, *{sid for _, sid in opened})


def test_the_epoch_moves_when_the_request_arrives_not_when_it_is_answered(broker):
    connection, transport = connect(broker)
    send(connection, fetch(0, 0), 1)
    [(_, session_id)] = answers(transport)
    waiting, waiting_transport = connect(broker)
    send(waiting, fetch(session_id, 1, max_wait_ms=5000), 2)  # offset 0 of an empty log
    assert answers(waiting_transport) == []
    send(connection, fetch(session_id, 2), 3)
    assert answers(transport) == [(NONE, session_id)]
    broker.reactor.advance(5)
    assert answers(waiting_transport) == [(INVALID_FETCH_SESSION_EPOCH, session_id)]
    send(connection, fetch(session_id, 3), 4)
    assert answers(transport) == [(NONE, session_id)]
