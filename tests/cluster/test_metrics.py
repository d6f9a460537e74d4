"""/metrics of a three-broker cluster, scraped over HTTP from every broker as Prometheus would,
while a broker dies and comes back: the figures a Kafka dashboard alerts on move as Kafka's
do, and each broker answers for its share (summed over brokers, everything counts once)."""

from __future__ import annotations

import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import Cluster
from tests.prometheus_scrape import Samples, matching
from tests.prometheus_scrape import scrape as scrape_url


def scrape(broker) -> Samples:
    return scrape_url(broker.ops_url)


def total(scrapes: list[Samples], name: str, **labels: str) -> float:
    """``name`` summed over brokers and over the samples matching ``labels``, as a
    dashboard's ``sum(name{labels})`` is."""
    return sum(sum(matching(samples, name, **labels)) for samples in scrapes)


def running(cluster: Cluster) -> list:
    return [broker for broker in cluster.brokers.values() if broker.running]


def until(cluster: Cluster, check, timeout: float = 30.0) -> list[Samples]:
    deadline = time.monotonic() + timeout
    while True:
        scrapes = [scrape(broker) for broker in running(cluster)]
        if check(scrapes) or time.monotonic() > deadline:
            return scrapes
        time.sleep(0.25)


def test_a_dead_broker_shows_as_under_replicated_offline_and_shrunk_isr(zookeeper):
    cluster = Cluster(
        zookeeper,
        3,
        "/metrics",
        {
            "metrics.listeners": "HTTP://127.0.0.1:0",
            "min.insync.replicas": "2",
            # the leaders notice the dead follower (replica.lag.time.max.ms, 3 s) before the
            # controller does (the session): the ISR shrink is the leaders' own
            "zookeeper.session.timeout.ms": "8000",
        },
    ).start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for future in admin.create_topics(
            [NewTopic("rf3", 2, replication_factor=3), NewTopic("rf1", 3, replication_factor=1)]
        ).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(20):
            producer.produce("rf3", value=b"x" * 50, partition=i % 2)
        assert producer.flush(30) == 0

        healthy = until(
            cluster,
            lambda s: (
                total(s, "kafka_topic_partitions", topic="rf3") == 2
                and total(s, "kafka_topic_partition_current_offset", topic="rf3") == 20
            ),
        )
        assert total(healthy, "kafka_controller_kafkacontroller_activecontrollercount") == 1
        assert total(healthy, "kafka_topic_partitions", topic="rf3") == 2
        assert total(healthy, "kafka_topic_partitions", topic="rf1") == 3
        assert total(healthy, "kafka_server_replicamanager_underreplicatedpartitions") == 0
        assert total(healthy, "kafka_topic_partition_current_offset", topic="rf3") == 20
        assert total(healthy, "kafka_server_brokertopicmetrics_messagesin_total", topic="rf3") == 20
        # each rf3 partition is reported by its leader only, each replica's log by its broker
        assert total(healthy, "kafka_cluster_partition_replicascount", topic="rf3") == 6
        assert total(healthy, "kafka_log_log_logendoffset", topic="rf3") == 60
        assert total(healthy, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0

        metadata = admin.list_topics(timeout=10).topics["rf1"].partitions
        victim = metadata[0].leader
        cluster.brokers[victim].kill()

        degraded = until(
            cluster,
            lambda s: (
                total(s, "kafka_cluster_partition_underreplicated", topic="rf3") == 2
                and total(s, "kafka_controller_kafkacontroller_offlinepartitionscount") >= 1
            ),
        )
        assert total(degraded, "kafka_cluster_partition_underreplicated", topic="rf3") == 2
        assert total(degraded, "kafka_server_replicamanager_underreplicatedpartitions") >= 2
        assert total(degraded, "kafka_server_replicamanager_isrshrinks_total") >= 1
        assert total(degraded, "kafka_cluster_partition_atminisr", topic="rf3") == 2
        assert total(degraded, "kafka_cluster_partition_underminisr", topic="rf3") == 0
        # the rf1 partition that lived on the dead broker has no leader
        assert total(degraded, "kafka_controller_kafkacontroller_offlinepartitionscount") >= 1
        assert total(degraded, "kafka_controller_kafkacontroller_activecontrollercount") == 1

        cluster.brokers[victim].start()
        recovered = until(
            cluster,
            lambda s: (
                total(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0
                and total(s, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
            ),
        )
        assert total(recovered, "kafka_server_replicamanager_underreplicatedpartitions") == 0
        assert total(recovered, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
        assert total(recovered, "kafka_server_replicamanager_isrexpands_total") >= 1
    finally:
        cluster.close()
