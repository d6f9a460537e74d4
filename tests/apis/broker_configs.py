"""A broker config changed at run time, as the dynamic-config tests check it: the config they
change (message.max.bytes) and whether a produce of a given size is refused at the limit."""

from __future__ import annotations

from confluent_kafka import Producer

from wireserver.testing import EmbeddedBroker

KEY = "message.max.bytes"


def produce(bootstrap: str, topic: str, size: int) -> str | None:
    """Produce one record of ``size`` bytes: None once acknowledged, else the error's name
    (a retriable one, after 10 s of retries, when the leader is not there)."""
    outcome = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 0, "message.timeout.ms": 10000}
    )
    producer.produce(topic, b"x" * size, on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(30)
    if not outcome:
        return "no delivery report"
    return outcome[0].name() if outcome[0] is not None else None


def limit_in_force(broker: EmbeddedBroker, topic: str, limit: int) -> bool:
    """Records a little under ``limit`` are accepted and a little over refused."""
    bootstrap = broker.bootstrap_servers
    return (
        produce(bootstrap, topic, limit - 500) is None
        and produce(bootstrap, topic, limit + 500) == "MSG_SIZE_TOO_LARGE"
    )
