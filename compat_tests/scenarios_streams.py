"""Kafka Streams on the Streams group protocol (KIP-1071), registered with
``compat_tests.scenarios.scenario`` like the others: a word-count application
(``compat_tests/apps/WordCountApp.java``, ``group.protocol=streams``) whose two
instances share the tasks, one leaves, the other takes them all, and the counts are exact;
and ``kafka-streams-groups --list`` / ``--describe``.

Observations are what a user can rely on whatever the broker: which tasks exist, how many
each instance runs (sorted: which instance gets which task is the broker's business), the
internal topics the broker created, the final count of every word, and the tool's columns
that carry no member or process id.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

from compat_tests.clients import Client
from compat_tests.scenarios import scenario

PARTITIONS = 4
LINES = [
    "the quick brown fox jumps over the lazy dog",
    "a stitch in time saves nine",
    "the early bird catches the worm",
    "all that glitters is not gold",
]
#: subtopology 0 splits the lines, subtopology 1 counts: 2 x PARTITIONS tasks
ALL_TASKS = sorted(f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS))
SETTLE_TIMEOUT = 120.0


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def create_topics(bootstrap: str, *specs: tuple[str, int]) -> None:
    from confluent_kafka.admin import NewTopic

    admin = _admin(bootstrap)  # kept until the futures are done: librdkafka needs its handle
    futures = admin.create_topics([NewTopic(n, p, 1) for n, p in specs])
    for future in futures.values():
        future.result(timeout=30)


def produce_lines(bootstrap: str, topic: str, rounds: range) -> Counter:
    """Every line of LINES once per round, keyed by round and line; the words produced."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    words: Counter = Counter()
    for r in rounds:
        for i, line in enumerate(LINES):
            producer.produce(topic, key=f"{r}-{i}".encode(), value=line.encode())
            words.update(line.split())
    assert producer.flush(30) == 0
    return words


def read_counts(bootstrap: str, topic: str, expected: Counter, timeout: float) -> dict[str, int]:
    """The last count of every word in the output topic, once it reaches ``expected`` (or
    the timeout passed)."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    counts: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and counts != dict(expected):
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            counts[message.key().decode()] = int.from_bytes(message.value(), "big", signed=True)
    finally:
        consumer.close()
    return counts


def internal_topics(bootstrap: str, app_id: str) -> list[str]:
    admin = _admin(bootstrap)
    names = admin.list_topics(timeout=30).topics
    return sorted(n.replace(app_id, "<app>") for n in names if n.startswith(app_id))


def _running(tasks: dict, names: tuple[str, ...]) -> bool:
    if set(tasks) != set(names) or any(state != "RUNNING" for state, _ in tasks.values()):
        return False
    owned = [t for _, ts in tasks.values() for t in ts]
    return sorted(owned) == ALL_TASKS and all(ts for _, ts in tasks.values())


@contextlib.contextmanager
def wordcount(bootstrap: str, rounds: range) -> Iterator[tuple[Any, str, str, str, Counter]]:
    """A word count over fresh topics, ``rounds`` of LINES already produced, its first
    instance "a" running every task: (app, application id, source, sink, words produced)."""
    from compat_tests.streams_app import WordCountApp

    run = uuid.uuid4().hex[:8]
    app_id, source, sink = f"wordcount-{run}", f"lines-{run}", f"counts-{run}"
    create_topics(bootstrap, (source, PARTITIONS), (sink, 1))
    expected = produce_lines(bootstrap, source, rounds)
    app = WordCountApp(bootstrap, app_id, source, sink)
    try:
        app.start("a")
        app.wait_for(lambda t: _running(t, ("a",)), SETTLE_TIMEOUT)
        yield app, app_id, source, sink, expected
    finally:
        app.stop()


def wordcount_handover(bootstrap: str) -> dict:
    """The application alone, then two instances, then the second alone again."""
    with wordcount(bootstrap, range(0, 3)) as (app, app_id, source, sink, expected):
        alone = app.tasks()
        app.start("b")
        shared = app.wait_for(lambda t: _running(t, ("a", "b")), SETTLE_TIMEOUT)
        expected += produce_lines(bootstrap, source, range(3, 6))
        app.close("a")
        after = app.wait_for(lambda t: _running(t, ("b",)), SETTLE_TIMEOUT)
        expected += produce_lines(bootstrap, source, range(6, 9))
        counts = read_counts(bootstrap, sink, expected, SETTLE_TIMEOUT)
    return {
        "alone": alone["a"][1],
        "shared": sorted(len(tasks) for _, tasks in shared.values()),
        "after_leave": after["b"][1],
        "internal_topics": internal_topics(bootstrap, app_id),
        "counts_exact": counts == dict(expected),
        "counts": dict(sorted(counts.items())),
    }


def _check_handover(obs: dict) -> None:
    assert obs["alone"] == ALL_TASKS, obs
    assert obs["shared"] == [PARTITIONS, PARTITIONS], obs
    assert obs["after_leave"] == ALL_TASKS, obs
    assert obs["counts_exact"], obs


@scenario("streams-group-wordcount", clients=("java",), check=lambda o: _check_handover(o))
def streams_group_wordcount(bootstrap: str, client: Client) -> dict:
    """A Kafka Streams 4.4 word count with group.protocol=streams: two instances share its
    eight tasks four and four, one leaves and the other runs all eight, every count exact."""
    return wordcount_handover(bootstrap)


_VOLATILE = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"[A-Za-z0-9_-]{22}"), "<id>"),
    (re.compile(r"/?[\w.-]+:\d{2,5}( \(\d+\))?"), "<host>"),
    (re.compile(r"/127\.0\.0\.1"), "<client-host>"),
)


def streams_groups(bootstrap: str, app_id: str, *args: str) -> list[str]:
    """kafka-streams-groups' output lines, sorted, with ids, hosts and the run's name neutral."""
    from compat_tests.reference import run_tool

    proc = run_tool("kafka-streams-groups", list(args), bootstrap=bootstrap, timeout=90)
    lines = []
    for line in (proc.stdout + proc.stderr).splitlines():
        line = line.replace(app_id, "<app>").replace(app_id.rsplit("-", 1)[1], "<run>")
        for pattern, replacement in _VOLATILE:
            line = pattern.sub(replacement, line)
        if line.strip() and ("<app>" in line or line.split()[0].isupper()):
            lines.append(" ".join(line.split()))
    return sorted(lines)


def _check_tool(obs: dict) -> None:
    assert any("<app>" in line for line in obs["list"]), obs
    assert obs["describe"], obs


@scenario("streams-groups-tool", clients=("java",), check=lambda o: _check_tool(o))
def streams_groups_tool(bootstrap: str, client: Client) -> dict:
    """kafka-streams-groups --list, --describe, --describe --members and --describe --state
    for a running word count (one instance)."""
    with wordcount(bootstrap, range(0, 2)) as (app, app_id, source, sink, expected):
        read_counts(bootstrap, sink, expected, SETTLE_TIMEOUT)
        time.sleep(1.0)  # a commit interval (200 ms) and more: the offsets are committed
        return {
            "list": streams_groups(bootstrap, app_id, "--list"),
            "describe": streams_groups(bootstrap, app_id, "--describe", "--group", app_id),
            "members": streams_groups(
                bootstrap, app_id, "--describe", "--members", "--group", app_id
            ),
            "state": streams_groups(bootstrap, app_id, "--describe", "--state", "--group", app_id),
        }
