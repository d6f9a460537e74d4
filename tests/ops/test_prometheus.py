"""``/metrics`` on a live broker, scraped as Prometheus scrapes it, read by the names Kafka
dashboards query and checked against what real clients did."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.prometheus_scrape import Samples, matching
from tests.prometheus_scrape import scrape as scrape_url
from wireserver.testing import EmbeddedBroker

pytestmark = pytest.mark.integration

#: Every series the Strimzi project's Grafana dashboards for Kafka query (strimzi-kafka.json
#: and strimzi-kafka-exporter.json in strimzi/strimzi-kafka-operator
#: packaging/examples/metrics/grafana-dashboards, commit 8541da1e33), with the labels their
#: queries filter or group by. Left out: the Kubernetes figures they also chart (container_*,
#: kubelet_*), which come from Kubernetes, not from the broker.
DASHBOARD_SERIES: dict[str, set[str]] = {
    # strimzi-kafka.json
    "kafka_server_replicamanager_leadercount": set(),
    "kafka_controller_kafkacontroller_activecontrollercount": set(),
    "kafka_controller_controllerstats_uncleanleaderelections_total": set(),
    "kafka_server_replicamanager_partitioncount": set(),
    "kafka_server_replicamanager_underreplicatedpartitions": set(),
    "kafka_cluster_partition_atminisr": {"topic", "partition"},
    "kafka_cluster_partition_underminisr": {"topic", "partition"},
    "kafka_cluster_partition_replicascount": {"topic", "partition"},
    "kafka_controller_kafkacontroller_offlinepartitionscount": set(),
    "process_open_fds": set(),
    "jvm_memory_used_bytes": set(),
    "jvm_gc_collection_seconds_sum": set(),
    "jvm_gc_collection_seconds_count": set(),
    "jvm_threads_current": set(),
    "kafka_server_brokertopicmetrics_bytesin_total": {"topic"},
    "kafka_server_brokertopicmetrics_bytesout_total": {"topic"},
    "kafka_server_brokertopicmetrics_messagesin_total": {"topic"},
    "kafka_server_brokertopicmetrics_totalproducerequests_total": {"topic"},
    "kafka_server_brokertopicmetrics_failedproducerequests_total": {"topic"},
    "kafka_server_brokertopicmetrics_totalfetchrequests_total": {"topic"},
    "kafka_server_brokertopicmetrics_failedfetchrequests_total": {"topic"},
    "kafka_network_socketserver_networkprocessoravgidle_percent": set(),
    "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent": set(),
    "kafka_server_kafkaserver_linux_disk_write_bytes": set(),
    "kafka_server_kafkaserver_linux_disk_read_bytes": set(),
    "kafka_server_socket_server_metrics_connection_count": {"listener"},
    "kafka_log_log_size": {"topic", "partition"},
    # strimzi-kafka-exporter.json
    "kafka_topic_partitions": {"topic"},
    "kafka_topic_partition_replicas": {"topic"},
    "kafka_topic_partition_in_sync_replica": {"topic"},
    "kafka_topic_partition_under_replicated_partition": {"topic"},
    "kafka_topic_partition_leader_is_preferred": {"topic"},
    "kafka_topic_partition_current_offset": {"topic", "partition"},
    "kafka_topic_partition_oldest_offset": {"topic", "partition"},
    "kafka_consumergroup_current_offset": {"consumergroup", "topic", "partition"},
    "kafka_consumergroup_lag": {"consumergroup", "topic", "partition"},
    "kafka_broker_info": set(),
}

METRICS_ON = {"metrics.listeners": "HTTP://127.0.0.1:0"}


def scrape(broker: EmbeddedBroker) -> Samples:
    return scrape_url(broker.ops_url)


def value(samples: Samples, name: str, **labels: str) -> float:
    """The one sample of ``name`` with ``labels`` (fails when there is none)."""
    found = matching(samples, name, **labels)
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


def eventually(read: Callable[[], Samples], name: str, at_least: float, **labels: str) -> Samples:
    """Scrapes until ``name{labels}`` reaches ``at_least`` (15 s at most); the last scrape,
    checked."""
    deadline = time.monotonic() + 15
    samples = read()
    while value(samples, name, **labels) < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
        samples = read()
    assert value(samples, name, **labels) >= at_least, (name, labels, samples.get(name))
    return samples


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker("thread", overrides=METRICS_ON) as running:
        yield running


def produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, value=b"v" * 100, key=f"k{i}".encode(), partition=partition)
        producer.flush()  # one batch per record: the request counts are known
    producer.flush()


def test_every_series_the_strimzi_dashboards_query_is_served(broker):
    topic = f"dash-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=2)
    produce(broker.bootstrap_servers, topic, 4)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 30
        while got < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                got += 1
        assert got == 4
        consumer.commit(asynchronous=False)
        samples = scrape(broker)
    finally:
        consumer.close()
    missing = [name for name in DASHBOARD_SERIES if not samples.get(name)]
    assert not missing, f"the dashboards query series this broker does not serve: {missing}"
    for name, labels in DASHBOARD_SERIES.items():
        have = set().union(*(set(sample_labels) for sample_labels, _ in samples[name]))
        assert labels <= have, (name, labels, have)


def test_topic_meters_offsets_and_lag_show_what_the_clients_did(broker):
    topic = f"meters-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=1)
    before = scrape(broker)
    produce(broker.bootstrap_servers, topic, 30)
    after = scrape(broker)
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 30
    assert (
        value(after, "kafka_server_brokertopicmetrics_totalproducerequests_total", topic=topic)
        == 30
    )
    bytes_in = value(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic)
    assert bytes_in >= 30 * 100
    # the all-topics meter (no topic) moved by as much
    assert (
        value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic="")
        - value(before, "kafka_server_brokertopicmetrics_messagesin_total", topic="")
        == 30
    )
    key = {"topic": topic, "partition": "0"}
    assert value(after, "kafka_log_log_logendoffset", **key) == 30
    assert value(after, "kafka_log_log_logstartoffset", **key) == 0
    assert value(after, "kafka_topic_partition_current_offset", **key) == 30
    assert value(after, "kafka_log_log_size", **key) >= bytes_in

    group = f"lag-{topic}"
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        read = 0
        deadline = time.monotonic() + 30
        while read < 30 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                read += 1
        assert read == 30
        consumer.commit(offsets=[TopicPartition(topic, 0, 20)], asynchronous=False)
    finally:
        consumer.close()
    done = scrape(broker)
    assert value(done, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) >= bytes_in
    assert value(done, "kafka_server_brokertopicmetrics_totalfetchrequests_total", topic=topic) >= 1
    labels = {"consumergroup": group, "topic": topic, "partition": "0"}
    assert value(done, "kafka_consumergroup_current_offset", **labels) == 20
    assert value(done, "kafka_consumergroup_lag", **labels) == 10
    assert value(done, "kafka_consumergroup_lag_sum", consumergroup=group, topic=topic) == 10


def test_requests_errors_and_their_times_per_request_type(broker):
    topic = f"req-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=1)
    before = scrape(broker)
    produce(broker.bootstrap_servers, topic, 5)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    with pytest.raises(KafkaException):
        admin.delete_topics([f"no-such-{topic}"], operation_timeout=5)[f"no-such-{topic}"].result()
    after = scrape(broker)

    def produced(samples: Samples) -> float:
        return sum(
            v
            for labels, v in samples.get("kafka_network_requestmetrics_requests_total", [])
            if labels["request"] == "Produce"
        )

    assert produced(after) - produced(before) == 5
    missing = "kafka_network_requestmetrics_errors_total"
    assert value(after, missing, request="DeleteTopics", error="UNKNOWN_TOPIC_OR_PARTITION") >= 1
    assert value(after, missing, request="Produce", error="NONE") >= 5
    # Kafka's six request histograms: a count per request type and its percentiles
    for histogram in (
        "totaltimems",
        "requestqueuetimems",
        "localtimems",
        "remotetimems",
        "responsequeuetimems",
        "responsesendtimems",
    ):
        name = f"kafka_network_requestmetrics_{histogram}"
        assert value(after, f"{name}_count", request="Produce") == produced(after)
        quantiles = {
            labels["quantile"]: v for labels, v in after[name] if labels["request"] == "Produce"
        }
        assert sorted(quantiles) == ["0.50", "0.75", "0.95", "0.98", "0.99", "0.999"]
        assert quantiles["0.50"] <= quantiles["0.99"] <= quantiles["0.999"]
    total_p50 = value(
        after, "kafka_network_requestmetrics_totaltimems", request="Produce", quantile="0.50"
    )
    assert total_p50 > 0


def test_connections_and_waiting_fetches_are_counted(broker):
    topic = f"idle-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=1)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"g-{topic}",
            "fetch.wait.max.ms": 5000,
            "auto.offset.reset": "latest",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        samples = eventually(
            lambda: (consumer.poll(0.1), scrape(broker))[1],
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            1,
            delayedOperation="Fetch",
        )
        assert (
            value(
                samples,
                "kafka_server_socket_server_metrics_connection_count",
                listener="PLAINTEXT",
            )
            >= 1
        )
        assert value(samples, "kafka_network_requestchannel_requestqueuesize") >= 1
    finally:
        consumer.close()


def test_failed_authentications_are_counted_per_listener():
    with EmbeddedBroker(
        "thread", overrides=METRICS_ON, sasl="PLAIN", users={"alice": "right"}
    ) as secured:
        listener = next(iter({name for name, *_ in secured.endpoints}))
        bad = AdminClient(
            {
                "bootstrap.servers": secured.bootstrap_servers,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "alice",
                "sasl.password": "wrong",
            }
        )
        with pytest.raises(KafkaException):
            bad.list_topics(timeout=5)
        eventually(
            lambda: scrape(secured),
            "kafka_server_socket_server_metrics_failed_authentication_total",
            1,
            listener=listener,
        )
