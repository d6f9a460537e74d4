"""Idempotent producers of real clients against a real broker: every record stored exactly
once and in order — plainly, when a Produce response is lost (the client retries), and when the
broker stops (SIGTERM) or dies (SIGKILL) after appending but before the client got the answer,
and comes back on the same data dir and port."""

from __future__ import annotations

import time

import pytest

from tests.idempotence.conftest import create_topic, read_all

CLIENTS = ["kafka-python", "confluent-kafka"]
COUNT = 400


class KafkaPythonProducer:
    def __init__(self, bootstrap: str):
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            enable_idempotence=True,
            acks="all",
            batch_size=512,
            linger_ms=5,
            max_in_flight_requests_per_connection=5,
            retry_backoff_ms=100,
            reconnect_backoff_ms=100,
            request_timeout_ms=30000,
            delivery_timeout_ms=60000,
        )
        self.futures = []

    def send(self, topic: str, values: list[bytes]) -> None:
        for value in values:
            self.futures.append(self.producer.send(topic, value=value, partition=0))

    def finish(self, timeout: float = 60) -> list:
        self.producer.flush(timeout)
        errors = []
        for future in self.futures:
            try:
                future.get(timeout)
            except Exception as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
        self.producer.close(5)
        return errors


class ConfluentProducer:
    def __init__(self, bootstrap: str):
        from confluent_kafka import Producer

        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "batch.num.messages": 20,
                "retry.backoff.ms": 100,
                "reconnect.backoff.ms": 100,
                "reconnect.backoff.max.ms": 500,
                "message.timeout.ms": 60000,
            }
        )
        self.errors: list = []
        self.delivered = 0

    def _report(self, err, _msg) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.delivered += 1

    def send(self, topic: str, values: list[bytes]) -> None:
        for value in values:
            self.producer.produce(topic, value=value, partition=0, on_delivery=self._report)
            self.producer.poll(0)

    def finish(self, timeout: float = 60) -> list:
        deadline = time.monotonic() + timeout
        while len(self.producer) and time.monotonic() < deadline:
            self.producer.flush(1)
        if len(self.producer):
            self.errors.append(f"{len(self.producer)} messages undelivered")
        return self.errors


def make_producer(client: str, bootstrap: str):
    return (
        KafkaPythonProducer(bootstrap) if client == "kafka-python" else ConfluentProducer(bootstrap)
    )


def values_for(client: str) -> list[bytes]:
    return [f"{client}-{i:05d}".encode() for i in range(COUNT)]


def wait_for(event, timeout: float = 20) -> None:
    assert event.wait(timeout), "the proxy saw no Produce response to drop"


@pytest.mark.parametrize("client", CLIENTS)
def test_exactly_once_in_order(broker, topic_name, client):
    create_topic(broker.bootstrap, topic_name)
    producer = make_producer(client, broker.bootstrap)
    expected = values_for(client)
    producer.send(topic_name, expected)
    assert producer.finish() == []
    assert read_all(broker.bootstrap, topic_name) == expected


@pytest.mark.parametrize("client", CLIENTS)
def test_lost_produce_response_is_deduplicated(proxied, topic_name, client):
    broker, proxy = proxied
    create_topic(broker.bootstrap, topic_name)
    producer = make_producer(client, broker.bootstrap)
    expected = values_for(client)
    proxy.drop_next_produce_response()
    producer.send(topic_name, expected)
    wait_for(proxy.intercepted)
    assert producer.finish() == []
    assert proxy.dropped == 1
    assert read_all(broker.bootstrap, topic_name) == expected, broker.log()[-3000:]


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
@pytest.mark.parametrize("client", CLIENTS)
def test_restart_between_append_and_retry(proxied, topic_name, client, how):
    broker, proxy = proxied
    create_topic(broker.bootstrap, topic_name)
    producer = make_producer(client, broker.bootstrap)
    expected = values_for(client)
    proxy.drop_next_produce_response(hold=True)
    producer.send(topic_name, expected)
    wait_for(proxy.intercepted)  # the broker appended; the client has no answer
    if how == "sigterm":
        broker.stop()
    else:
        broker.kill()
    broker.start()
    proxy.release()
    assert producer.finish() == []
    assert read_all(broker.bootstrap, topic_name) == expected, broker.log()[-3000:]
