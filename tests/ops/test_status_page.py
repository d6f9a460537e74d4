"""The status page in headless Chromium against a live 3-broker cluster: it shows the topic's
partitions fully replicated, and after one broker is killed with SIGKILL, the page (left open,
redrawing itself from /api/ every second) shows that broker dead and the partitions
under-replicated, highlighted. Screenshots before and after go to the test artifacts
(``$WIRESERVER_ARTIFACTS``, else ``test-artifacts/`` at the repository's root)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kafka import KafkaProducer

from tests.cluster.conftest import Cluster, zookeeper  # noqa: F401 - the fixture, for this module
from tests.ops.chromium import Chromium, find_binary
from tests.ops.conftest import get_json
from wireserver.testing import wait_for

pytestmark = pytest.mark.integration

REPOSITORY = Path(__file__).resolve().parents[2]
TOPIC = "page-rf3"
#: One replica per partition, spread over the three brokers.
SINGLE = "page-rf1"


def artifacts_dir() -> Path:
    path = Path(os.environ.get("WIRESERVER_ARTIFACTS") or REPOSITORY / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def chromium_binary():
    binary = find_binary()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (scripts/test installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return binary


@pytest.fixture
def cluster(zookeeper):  # noqa: F811 - the fixture imported above
    instance = Cluster(zookeeper, 3, "/ops-page", {"metrics.listeners": "HTTP://:0"})
    try:
        yield instance.start()
    finally:
        instance.close()


def partitions_of(url: str, topic: str) -> list[dict]:
    topics = get_json(url, "/api/topics")["topics"]
    return [p for t in topics if t["name"] == topic for p in t["partitions"]]


def fully_replicated(url: str) -> bool:
    partitions = partitions_of(url, TOPIC)
    return len(partitions) == 3 and all(len(p["isr"]) == 3 for p in partitions)


#: The topic's partition rows as the page drew them:
#: [[partition, classes, ISR cell, high watermark cell], ...].
ROWS = f"""Array.from(
    document.querySelectorAll('#partitions tr.partition[data-topic="{TOPIC}"]'))
  .map(tr => [Number(tr.dataset.partition), tr.className, tr.cells[4].textContent,
              tr.cells[6].textContent])"""


def test_the_page_shows_under_replicated_partitions_after_a_broker_is_killed(
    cluster, chromium_binary, request
):
    cluster.brokers[1].create_topic(TOPIC, partitions=3, replication_factor=3)
    cluster.brokers[1].create_topic(SINGLE, partitions=3, replication_factor=1)
    viewer = cluster.brokers[2]
    wait_for(lambda: fully_replicated(viewer.ops_url), 60, what="ISR of 3 everywhere")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(5):
        producer.send(TOPIC, b"record-%d" % i, partition=0).get(timeout=30)
    producer.close()
    single = partitions_of(viewer.ops_url, SINGLE)
    assert sorted(p["replicas"][0] for p in single) == [1, 2, 3]
    for partition in single:  # offsets where broker 2 holds the replica, null elsewhere
        here = partition["replicas"] == [2]
        assert partition["hosted_here"] is here
        assert (partition["high_watermark"] == 0) if here else (partition["high_watermark"] is None)
        assert (partition["size_bytes"] is None) is not here
    out = artifacts_dir()
    before, after = out / f"{request.node.name}-before.png", out / f"{request.node.name}-after.png"
    for stale in (before, after):
        stale.unlink(missing_ok=True)

    with Chromium(chromium_binary) as browser:
        browser.open(viewer.ops_url + "/?refresh=1")
        browser.wait_for(
            f"{ROWS}.length === 3 && "
            "document.getElementById('under-replicated-count').textContent === '0'",
            30,
            "three healthy rows",
        )
        rows = browser.evaluate(ROWS)
        assert [r[0] for r in rows] == [0, 1, 2]
        assert all(r[1] == "partition" for r in rows), rows  # no highlight
        assert all(sorted(r[2].split(", ")) == ["1", "2", "3"] for r in rows), rows
        # Broker 2 holds a replica of each: their offsets are shown.
        assert [r[3] for r in rows] == ["5", "0", "0"], rows
        assert browser.evaluate("document.querySelectorAll('#brokers tr.dead').length") == 0
        browser.screenshot(str(before))
        # A mark on this page: still there later proves the page was not reloaded.
        browser.evaluate("window.beforeKill = Number(document.body.dataset.refreshes); true")

        cluster.brokers[3].kill()

        browser.wait_for(
            f"{ROWS}.length === 3 && {ROWS}.every("
            "r => r[1].split(' ').includes('under-replicated'))",
            90,
            "the three rows highlighted as under-replicated",
        )
        rows = browser.evaluate(ROWS)
        assert all("3" not in r[2].split(", ") for r in rows), rows
        assert (
            int(browser.evaluate("document.getElementById('under-replicated-count').textContent"))
            >= 3
        )
        assert (
            browser.evaluate("document.getElementById('card-under-replicated').className")
            == "card warn"
        )
        dead = browser.wait_for(
            "Array.from(document.querySelectorAll('#brokers tr.dead')).map(tr => tr.dataset.broker)",
            30,
            "broker 3 listed as dead",
        )
        assert dead == ["3"]
        # The single-replica partition on broker 3 has no leader left: offline, in red.
        (on_three,) = [p["partition"] for p in single if p["replicas"] == [3]]
        offline = browser.evaluate(
            f"""document.querySelector('#partitions tr[data-topic="{SINGLE}"]'"""
            f"""+ '[data-partition="{on_three}"]').className"""
        )
        assert "offline" in offline.split(), offline
        assert int(browser.evaluate("document.getElementById('offline-count').textContent")) >= 1
        # Redrawn by its own script, not reloaded.
        assert browser.evaluate("Number(document.body.dataset.refreshes) > window.beforeKill")
        browser.screenshot(str(after))

    # Every live broker tells the same story of the cluster.
    seen = [get_json(cluster.brokers[i].ops_url, "/api/cluster") for i in (1, 2)]
    for view in seen:
        assert [(b["id"], b["alive"]) for b in view["brokers"]] == [
            (1, True),
            (2, True),
            (3, False),
        ]
        assert view["controller_id"] == seen[0]["controller_id"] in (1, 2)
        assert view["clustered"] is True
    for i in (1, 2):
        (gone,) = [
            p for p in partitions_of(cluster.brokers[i].ops_url, SINGLE) if p["replicas"] == [3]
        ]
        assert gone["leader"] == -1 and gone["offline"] and gone["offline_replicas"] == [3]

    for shot in (before, after):
        data = shot.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000, shot
