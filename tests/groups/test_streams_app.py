"""A Kafka Streams 4.4 application on the Streams group protocol (KIP-1071,
``group.protocol=streams``) against wireserver: a word count with a state store, two
instances that share its tasks, one that leaves, and exact counts. The same run against
Kafka 4.4.0 is the compat scenario ``streams-group-wordcount``."""

from __future__ import annotations

import pytest

from compat_tests.scenarios_streams import ALL_TASKS, PARTITIONS, wordcount_handover
from wireserver.testing import EmbeddedBroker

pytestmark = pytest.mark.integration


def test_two_instances_share_the_tasks_and_the_survivor_takes_them_all():
    with EmbeddedBroker() as broker:
        observed = wordcount_handover(broker.bootstrap_servers)
    assert observed["alone"] == ALL_TASKS
    assert observed["shared"] == [PARTITIONS, PARTITIONS]
    assert observed["after_leave"] == ALL_TASKS
    assert observed["internal_topics"] == ["<app>-counts-changelog", "<app>-counts-repartition"]
    assert observed["counts_exact"], observed["counts"]
