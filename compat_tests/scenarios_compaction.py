"""Log compaction scenarios (issue #15), registered with ``compat_tests.scenarios.scenario``
like the others.

``compaction-keyed``: a compacted one-partition topic that rolls a segment on the first
append a second after the segment's first batch, and that the cleaner takes as soon as a
non-active segment holds anything dirty (``min.cleanable.dirty.ratio=0.01``,
``min.compaction.lag.ms=0``). The client's idempotent producer writes several updates of five
keys, with headers on some records and two tombstones; a segment is rolled (a pause past
``segment.ms``, then a record of a key of its own, ``roll-a``); the client's transactional
producer commits a transaction (an update, a new key, a tombstone) and aborts one (updates,
a tombstone, a key of its own); another roll (``roll-b``). Once the cleaner has run, a full
read from offset 0 at both isolation levels: one record per key, its latest committed value
or tombstone, with that record's headers and offset, and nothing of the aborted transaction
(Kafka's cleaner drops aborted records, so read_uncommitted reads the same). After
``delete.retention.ms`` has passed, more updates and a roll (``roll-c``) make the cleaner run
again: the tombstones are gone from a second full read.

Both brokers run with ``log.cleaner.backoff.ms=1000`` (targets.py), so that a cleaner with
nothing to do looks again after a second rather than Kafka's default 15. The waits for the
cleaner are bounded: a broker that does not compact gives up after :data:`CLEANER_WAIT`
seconds and reports ``cleaned: false``.
"""

from __future__ import annotations

import time
from typing import Any

from compat_tests import neutral
from compat_tests.clients import Client, record
from compat_tests.scenarios import scenario
from compat_tests.scenarios_txn import (
    TXN_CLIENTS,
    TxnProducer,
    _id,
    read_records,
    settled_watermarks,
)

SEGMENT_MS = 1000
#: longer than from the cleaning after roll-a to the one after roll-b (the transactions: a
#: few seconds), so that the first read still holds the tombstones; short enough for CI
DELETE_RETENTION_MS = 15000
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.ms": SEGMENT_MS,
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": 0,
    "delete.retention.ms": DELETE_RETENTION_MS,
    "file.delete.delay.ms": 1000,
}
#: seconds to wait for the cleaner (Kafka with a 1 s backoff needs one or two)
CLEANER_WAIT = 20.0

IDEMPOTENT = {
    "confluent-kafka": {"enable.idempotence": True},
    "kafka-python": {"enable_idempotence": True},
}


def _rec(key: str, value: str | None, **headers: str) -> dict[str, Any]:
    return record(value, key=key, headers=list(headers.items()), partition=0)


#: written by the idempotent producer, then COMMITTED and ABORTED (transactions), then after the
#: first read PHASE_C (idempotent); each followed by a roll
PHASE_A = [
    _rec("k0", "a0.0", src="a"),
    _rec("k1", "a1.0"),
    _rec("k2", "a2.0", src="a"),
    _rec("k3", "a3.0"),
    _rec("k4", "a4.0"),
    _rec("k0", "a0.1"),
    _rec("k1", None),
    _rec("k2", "a2.1", src="a", n="1"),
    _rec("k3", "a3.1"),
    _rec("k0", "a0.2", src="a", n="2"),
    _rec("k4", "a4.1"),
    _rec("k3", None),
]
COMMITTED = [_rec("k0", "b0", txn="commit"), _rec("k5", "b5"), _rec("k4", None)]
ABORTED = [
    _rec("k0", "x0", txn="abort"),
    _rec("k2", None),
    _rec("k6", "x6", txn="abort"),
    _rec("k5", "x5"),
]
PHASE_C = [_rec("k0", "c0"), _rec("k5", "c5", src="c")]


def _roll(client: Client, bootstrap: str, topic: str, name: str) -> None:
    """Pause past segment.ms, then a record of its own key: Kafka rolls the segment before
    appending it, so everything written before lies in non-active segments."""
    time.sleep(SEGMENT_MS / 1000 + 0.5)
    client.produce(bootstrap, topic, [_rec(name, "roll")], config=IDEMPOTENT[client.name])


def _full_read(bootstrap: str, client: Client, topic: str) -> dict[str, Any]:
    return {
        "read_committed": read_records(bootstrap, client.name, topic, "read_committed"),
        "read_uncommitted": read_records(bootstrap, client.name, topic, "read_uncommitted"),
        "log_start": neutral.list_offsets(bootstrap, topic, 1, -2)[0],
        "watermarks": settled_watermarks(bootstrap, topic),
    }


def _wait_until(bootstrap: str, client: Client, topic: str, done) -> bool:
    """Read the partition (read_uncommitted) until ``done(records)`` (True) or
    :data:`CLEANER_WAIT` seconds have passed (False)."""
    deadline = time.monotonic() + CLEANER_WAIT
    while True:
        if done(read_records(bootstrap, client.name, topic, "read_uncommitted")):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def _compacted(records: list[dict]) -> bool:
    keys = [r["key"] for r in records]
    return (
        len(keys) == len(set(keys))
        and not any(r["value"] and r["value"].startswith("x") for r in records)
        and "roll-b" in keys
    )


def _no_tombstones(records: list[dict]) -> bool:
    return "roll-c" in [r["key"] for r in records] and all(r["value"] is not None for r in records)


@scenario(
    "compaction-keyed",
    clients=TXN_CLIENTS,
    check=lambda o: _check_compaction(o),
)
def compaction_keyed(bootstrap: str, client: Client) -> dict:
    """a compacted topic with small segments and an eager cleaner: idempotent keyed updates
    with headers and tombstones, a committed and an aborted transaction, segments rolled;
    full reads (both isolation levels) once the cleaner ran, and again after
    delete.retention.ms and another cleaning (tombstones gone)"""
    topic = neutral.create_topic(bootstrap, "compact", configs=TOPIC_CONFIGS)
    client.produce(bootstrap, topic, PHASE_A, config=IDEMPOTENT[client.name])
    _roll(client, bootstrap, topic, "roll-a")
    producer = TxnProducer(client.name, bootstrap, _id("compact"))
    try:
        for records, end in ((COMMITTED, producer.commit), (ABORTED, producer.abort)):
            producer.begin()
            producer.send_records(topic, records)
            end()
    finally:
        producer.close()
    settled_watermarks(bootstrap, topic)  # the abort marker is written
    _roll(client, bootstrap, topic, "roll-b")

    obs: dict[str, Any] = {"cleaned": _wait_until(bootstrap, client, topic, _compacted)}
    cleaned_at = time.monotonic()
    obs["first"] = _full_read(bootstrap, client, topic)
    if not obs["cleaned"]:
        return obs  # no cleaner: the second cleaning would not come either

    # Every tombstone's delete horizon was set by a cleaning before ``cleaned_at``.
    time.sleep(max(0.0, cleaned_at + DELETE_RETENTION_MS / 1000 + 0.5 - time.monotonic()))
    client.produce(bootstrap, topic, PHASE_C, config=IDEMPOTENT[client.name])
    _roll(client, bootstrap, topic, "roll-c")
    obs["tombstones_gone"] = _wait_until(bootstrap, client, topic, _no_tombstones)
    obs["second"] = _full_read(bootstrap, client, topic)
    return obs


def _latest(*phases: list[dict]) -> dict[str, list]:
    """key -> [value, headers] of its last record in ``phases``."""
    out: dict[str, list] = {}
    for records in phases:
        for r in records:
            out[r["key"]] = [r["value"], r["headers"]]
    return out


ROLL = [_rec(name, "roll") for name in ("roll-a", "roll-b", "roll-c")]


def _check_read(read: dict, expected: dict[str, list]) -> None:
    committed = read["read_committed"]
    assert read["read_uncommitted"] == committed, "the cleaner keeps no aborted record"
    offsets = [r["offset"] for r in committed]
    assert offsets == sorted(set(offsets)), "offsets strictly increasing"
    assert offsets != list(range(offsets[0], offsets[0] + len(offsets))), "holes"
    assert read["log_start"] == 0 and offsets[-1] < read["watermarks"]["high_watermark"]
    keys = [r["key"] for r in committed]
    assert len(keys) == len(set(keys)), f"one record per key: {keys}"
    aborted = {(r["key"], r["value"]) for r in ABORTED}
    assert not aborted & {(r["key"], r["value"]) for r in committed}, "an aborted record"
    assert {r["key"]: [r["value"], r["headers"]] for r in committed} == expected, committed


def _check_compaction(obs: dict) -> None:
    assert obs["cleaned"] and obs["tombstones_gone"], obs
    first = _latest(PHASE_A, ROLL[:1], COMMITTED, ROLL[1:2])
    assert {k for k, (v, _) in first.items() if v is None} == {"k1", "k3", "k4"}
    _check_read(obs["first"], first)
    everything = _latest(PHASE_A, ROLL[:1], COMMITTED, ROLL[1:2], PHASE_C, ROLL[2:])
    second = {k: v for k, v in everything.items() if v[0] is not None}
    _check_read(obs["second"], second)
    assert all(r["value"] is not None for r in obs["second"]["read_committed"])
