"""The Java producer (idempotent by default in Kafka 4.x) through ``kafka-verifiable-producer``:
through the proxy that closes the connection once after the broker appended a Produce (the
client never gets that answer and retries on a new connection), every record is stored exactly
once and in order."""

from __future__ import annotations

import json

import pytest

from compat_tests.reference import require_tools, run_tool
from tests.idempotence.conftest import create_topic, read_all

COUNT = 600


@pytest.fixture(scope="module", autouse=True)
def kafka_tools():
    """The jars the tool runs from: fetched once, and a failure (never a skip) under CI."""
    require_tools()


def verifiable_producer(bootstrap: str, topic: str, tmp_path) -> dict:
    """Run the tool to completion; return its acked and failed sends."""
    config = tmp_path / "producer.properties"
    # The tool sets retries=0, which silently turns the Java producer's default idempotence
    # off (a lost answer then fails its records, or duplicates them with acks=1): the
    # properties file, applied after that, turns retries and idempotence back on. Small
    # batches and a short linger: many Produce requests, several in flight at once, so the
    # retried batch is followed by others that must not overtake it.
    config.write_text(
        "enable.idempotence=true\nretries=2147483647\n"
        "linger.ms=5\nbatch.size=1024\nmax.in.flight.requests.per.connection=5\n"
        "retry.backoff.ms=100\nreconnect.backoff.ms=100\n"
        "delivery.timeout.ms=60000\nrequest.timeout.ms=30000\n"
    )
    proc = run_tool(
        "kafka-verifiable-producer",
        [
            "--topic",
            topic,
            "--max-messages",
            str(COUNT),
            "--acks",
            "-1",
            "--value-prefix",
            "7",
            "--producer.config",
            str(config),
        ],
        bootstrap=bootstrap,
        timeout=120,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {
        "exit": proc.returncode,
        "acked": [e for e in events if e.get("name") == "producer_send_success"],
        "failed": [e for e in events if e.get("name") == "producer_send_error"],
        "stderr": proc.stderr[-3000:],
    }


def test_plain_run_stores_every_record_once(broker, topic_name, tmp_path):
    create_topic(broker.bootstrap, topic_name)
    result = verifiable_producer(broker.bootstrap, topic_name, tmp_path)
    assert result["failed"] == [] and len(result["acked"]) == COUNT, result["stderr"]
    assert read_all(broker.bootstrap, topic_name) == [f"7.{i}".encode() for i in range(COUNT)]


def test_lost_produce_response_is_deduplicated(proxied, topic_name, tmp_path):
    broker, proxy = proxied
    create_topic(broker.bootstrap, topic_name)
    proxy.drop_next_produce_response()
    result = verifiable_producer(broker.bootstrap, topic_name, tmp_path)
    assert proxy.dropped == 1, "the proxy dropped no Produce response"
    assert result["exit"] == 0, result["stderr"]
    assert result["failed"] == [], result["failed"][:3]
    assert len(result["acked"]) == COUNT
    # every acked offset is distinct and within the log: nothing was written twice
    offsets = sorted(e["offset"] for e in result["acked"])
    assert offsets == list(range(COUNT)), offsets[:20]
    values = read_all(broker.bootstrap, topic_name)
    assert values == [f"7.{i}".encode() for i in range(COUNT)], broker.log()[-3000:]
