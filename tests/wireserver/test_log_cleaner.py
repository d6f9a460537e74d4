"""The log cleaner's throttle (``log.cleaner.io.max.bytes.per.second``) on an injected clock,
and the cleaner's on/off switches on a running broker."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from wireserver.log_cleaner import CleaningCancelled, Throttler
from wireserver.testing import EmbeddedBroker, wait_for


class FakeTime:
    """A clock that only moves when the throttle sleeps or the test says so."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_throttle_holds_the_threads_to_the_rate():
    clock = FakeTime()
    throttle = Throttler(lambda: 1000.0, clock=lambda: clock.now, sleep=clock.sleep)
    for _ in range(40):  # 100 bytes every 0.05 s: 2000 B/s, twice the rate
        throttle(100)
        clock.now += 0.05
    # 4000 bytes at 1000 B/s take 4 s; the bytes since the last check (at most one check
    # interval's worth) are not slept for yet.
    assert 4.0 - Throttler.CHECK_INTERVAL_S <= clock.now <= 4.0 + 0.05
    assert clock.slept


def test_the_default_rate_never_sleeps_and_a_cancelled_throttle_raises():
    clock = FakeTime()
    throttle = Throttler(lambda: 1.7976931348623157e308, clock=lambda: clock.now, sleep=clock.sleep)
    for _ in range(100):
        throttle(1 << 20)
        clock.now += 0.01
    assert clock.slept == []
    throttle.cancelled = True
    with pytest.raises(CleaningCancelled):
        throttle(1)


def keyed_duplicates(bootstrap: str, topic: str) -> None:
    """A compacted topic with small segments holding three records of each of four keys, in
    segments the cleaner may clean."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {
        "cleanup.policy": "compact",
        "internal.segment.bytes": "1024",
        "min.cleanable.dirty.ratio": "0.01",
    }
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for n in range(3):
        for key in (b"a", b"b", b"c", b"d"):
            producer.produce(topic, key=key, value=b"%d" % n * 300)
            assert producer.flush(10) == 0  # a batch each: segments roll between them
    producer.produce(topic, key=b"last", value=b"x" * 1000)
    assert producer.flush(10) == 0


def records_on_disk(broker: EmbeddedBroker, topic: str) -> int:
    partition_log = broker.broker.logs.get_log(topic, 0)
    try:  # read from the test's thread: a segment swapped out meanwhile means "not yet"
        return sum(
            header.record_count for seg in list(partition_log.segments) for _, header in seg.walk()
        )
    except (OSError, ValueError):
        return 1 << 62


@pytest.mark.parametrize("switch", ["log.cleaner.enable", "log.cleaner.threads"])
def test_a_cleaner_switched_off_cleans_nothing_until_switched_on(switch):
    off = {"log.cleaner.enable": "false"} if switch == "log.cleaner.enable" else {switch: "0"}
    with EmbeddedBroker(overrides={"log.cleaner.backoff.ms": 50, **off}) as broker:
        keyed_duplicates(broker.bootstrap_servers, "off")
        partition_log = broker.broker.logs.get_log("off", 0)
        assert len(partition_log.segments) > 2  # something to clean
        time.sleep(1.0)  # twenty looks of a cleaner that was on
        assert records_on_disk(broker, "off") == 13
        assert broker.broker.cleaner.cleanings == 0
        if switch == "log.cleaner.threads":  # dynamic, as in Kafka: one thread starts
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            resource = ConfigResource(
                ConfigResource.Type.BROKER, str(broker.broker.node_id), {switch: "1"}
            )
            admin.alter_configs([resource])[resource].result(10)
            wait_for(lambda: records_on_disk(broker, "off") < 13, 20, 0.1, what="a cleaning")
