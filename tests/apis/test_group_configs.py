"""Group configs (the GROUP config resource, type 32) through confluent-kafka's and
kafka-python's admin clients and Kafka's kafka-configs tool: described with the broker's
defaults, set and checked as Kafka 4.1 checks them, kept across a restart, and used by the
consumer-protocol coordinator for a real KIP-848 consumer."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigSource, NewTopic

from tests.apis.configs import GROUP, alter, describe, op, raw_describe, raw_group_alter
from tests.apis.conftest import RunningBroker

SESSION, HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
KEYS = {  # what Kafka 4.4 describes for a group (its internal keys left out)
    SESSION,
    HEARTBEAT,
    "consumer.assignment.interval.ms",
    "errors.deadletterqueue.copy.record.enable",
    "errors.deadletterqueue.topic.name",
    "share.session.timeout.ms",
    "share.heartbeat.interval.ms",
    "share.record.lock.duration.ms",
    "share.delivery.count.limit",
    "share.partition.max.record.locks",
    "share.assignment.interval.ms",
    "share.auto.offset.reset",
    "share.isolation.level",
    "share.renew.acknowledge.enable",
    "streams.session.timeout.ms",
    "streams.heartbeat.interval.ms",
    "streams.num.standby.replicas",
    "streams.initial.rebalance.delay.ms",
    "streams.assignment.interval.ms",
    "streams.assignor.name",
    "streams.rack.aware.assignment.tags",
}


def group_name() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


def values(configs) -> dict:
    return {name: (entry.value, entry.source) for name, entry in configs.items()}


def error(result) -> tuple[str, str]:
    return result.args[0].name(), result.args[0].str()


def test_group_configs_through_the_admin_clients(broker, cadmin, raw):
    group = group_name()
    configs = describe(cadmin, "group", group)  # no such group: the defaults
    assert set(configs) == KEYS
    assert values(configs)[SESSION] == ("45000", ConfigSource.DEFAULT_CONFIG.value)
    assert values(configs)["share.auto.offset.reset"] == (
        "latest",
        ConfigSource.DEFAULT_CONFIG.value,
    )
    assert not any(entry.is_read_only for entry in configs.values())

    assert alter(cadmin, "group", group, [op(SESSION, "50000"), op(HEARTBEAT, "6000")]) is None
    configs = values(describe(cadmin, "group", group))
    assert configs[SESSION] == ("50000", ConfigSource.GROUP_CONFIG.value)
    assert configs[HEARTBEAT] == ("6000", ConfigSource.GROUP_CONFIG.value)
    assert configs["share.session.timeout.ms"] == ("45000", ConfigSource.DEFAULT_CONFIG.value)

    refused = [
        error(alter(cadmin, "group", group, ops))
        for ops in (
            [op(SESSION, "5000")],
            [op(HEARTBEAT, "20000")],
            [op("no.such.key", "1")],
            [op(SESSION, "soon")],
            [op("share.auto.offset.reset", "sometimes")],
            [op(SESSION, "1", AlterConfigOpType.APPEND)],
        )
    ]
    assert refused == [  # Kafka 4.4.0's answers
        (
            "INVALID_CONFIG",
            "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        (
            "INVALID_CONFIG",
            "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
        ("INVALID_CONFIG", "Unknown group config name: no.such.key"),
        (
            "INVALID_CONFIG",
            "Invalid value soon for configuration consumer.session.timeout.ms: "
            "Not a number of type INT",
        ),
        (
            "INVALID_CONFIG",
            "Invalid value sometimes for configuration share.auto.offset.reset: "
            "Invalid value `sometimes` for configuration share.auto.offset.reset. "
            "The value must be either 'earliest', 'latest' or of the format "
            "'by_duration:<PnDTnHnMn.nS>'.",
        ),
        (
            "INVALID_CONFIG",
            "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.",
        ),
    ]
    assert values(describe(cadmin, "group", group))[SESSION][0] == "50000"  # unchanged

    # kafka-python sets and reads them too
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        result = kadmin.alter_configs(
            [ConfigResource(ConfigResourceType.GROUP, group, {HEARTBEAT: "7000"})],
            raise_on_unknown=False,
        )
        assert result == {"group": {group: "OK"}}, result
        described = kadmin.describe_configs([ConfigResource(ConfigResourceType.GROUP, group)])
    finally:
        kadmin.close()
    entries = described["group"][group]
    assert [
        (entries[key]["value"], entries[key]["config_source"]) for key in (SESSION, HEARTBEAT)
    ] == [("50000", "DYNAMIC_GROUP_CONFIG"), ("7000", "DYNAMIC_GROUP_CONFIG")]

    # the legacy AlterConfigs replaces the group's whole set
    assert (
        alter(cadmin, "group", group, {"share.session.timeout.ms": "50000"}, incremental=False)
        is None
    )
    configs = values(describe(cadmin, "group", group))
    assert configs["share.session.timeout.ms"] == ("50000", ConfigSource.GROUP_CONFIG.value)
    assert configs[SESSION] == ("45000", ConfigSource.DEFAULT_CONFIG.value)

    assert (
        alter(
            cadmin, "group", group, [op("share.session.timeout.ms", None, AlterConfigOpType.DELETE)]
        )
        is None
    )
    assert (
        values(describe(cadmin, "group", group))["share.session.timeout.ms"][1]
        == ConfigSource.DEFAULT_CONFIG.value
    )
    # no default group resource
    assert raw_group_alter(raw, "", SESSION, "50000") == (
        42,
        "Default group resources are not allowed.",
    )
    raw_describe(raw, "", expect_error=42, kind=GROUP)


def test_group_configs_survive_a_restart(tmp_path):
    group = group_name()
    running = RunningBroker(tmp_path)
    try:
        admin = AdminClient({"bootstrap.servers": running.bootstrap})
        assert alter(admin, "group", group, [op(SESSION, "55000")]) is None
    finally:
        running.stop()
    running = RunningBroker(tmp_path)  # the same log dirs
    try:
        admin = AdminClient({"bootstrap.servers": running.bootstrap})
        assert values(describe(admin, "group", group))[SESSION] == (
            "55000",
            ConfigSource.GROUP_CONFIG.value,
        )
    finally:
        running.stop()


CONSUMER = """
import sys
from confluent_kafka import Consumer
consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                     "group.protocol": "consumer"})
consumer.subscribe([sys.argv[3]])
while True:
    consumer.poll(0.2)
"""


def members(admin, group) -> int:
    found = admin.describe_consumer_groups([group])[group].result(timeout=15)
    return len(found.members)


def wait_members(admin, group, count, timeout) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if members(admin, group) == count:
            return time.monotonic() - start
        time.sleep(0.2)
    raise AssertionError(f"{group} did not get to {count} members in {timeout} s")


@pytest.mark.integration
def test_a_groups_session_timeout_removes_a_dead_consumer(tmp_path):
    """A KIP-848 consumer killed without leaving is removed after the group's
    consumer.session.timeout.ms (3 s), not the broker's group.consumer.session.timeout.ms
    (45 s)."""
    running = RunningBroker(
        tmp_path,
        [
            "offsets.topic.replication.factor=1",
            "group.consumer.min.session.timeout.ms=1000",
            "group.consumer.min.heartbeat.interval.ms=500",
        ],
    )
    process = None
    try:
        admin = AdminClient({"bootstrap.servers": running.bootstrap})
        admin.create_topics([NewTopic("dead", 1, 1)])["dead"].result(timeout=30)
        group = group_name()
        assert alter(admin, "group", group, [op(SESSION, "3000"), op(HEARTBEAT, "500")]) is None
        process = subprocess.Popen(
            [sys.executable, "-c", CONSUMER, running.bootstrap, group, "dead"]
        )
        wait_members(admin, group, 1, timeout=30)
        process.kill()
        process.wait()
        assert wait_members(admin, group, 0, timeout=20) < 20
    finally:
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        running.stop()


def test_a_group_whose_configs_are_deleted_is_no_longer_listed(raw):
    """ListConfigResources lists a group with configs and, as Kafka 4.4, forgets it once its
    last config is deleted (kafka-configs --describe then says it doesn't exist)."""
    from kafka.protocol.admin.configs import (
        ListConfigResourcesRequest,
        ListConfigResourcesResponse,
    )

    def listed() -> set[str]:
        answer = raw.send(
            ListConfigResourcesRequest, ListConfigResourcesResponse, 1, resource_types=[GROUP]
        )
        return {entry.resource_name for entry in answer.config_resources}

    name = group_name()
    assert raw_group_alter(raw, name, SESSION, "50000") == (0, None)
    assert name in listed()
    assert raw_group_alter(raw, name, SESSION, None, operation=1) == (0, None)
    assert name not in listed()
