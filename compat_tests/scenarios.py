"""The compatibility scenarios: each is ``fn(bootstrap, client) -> observation``.

An observation is a JSON-able dict of normalized facts a user would see (records read back
in order with their keys, values, headers, partitions and offsets; error names; config values
and sources; partition counts). The test module runs every scenario against the reference
Kafka and against wireserver with the same client and asserts the two observations are equal,
after each passed the scenario's own ``check`` (so a scenario that observes nothing on both
sides still fails).

Known differences (scenario → reason) are in :data:`DIFFERENCES`: there the observations must
still differ, so an entry has to go the day wireserver starts behaving as Kafka.
"""

from __future__ import annotations

import concurrent.futures
import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compat_tests import admin_clients as admin
from compat_tests import neutral
from compat_tests.clients import CLIENTS, CODECS, Client, ClientError, Unsupported, record

ALL_CLIENTS = tuple(CLIENTS)


@dataclass
class Scenario:
    name: str
    fn: Callable[[str, Client], dict]
    clients: tuple[str, ...]
    check: Callable[[dict], None]
    auto_create: bool = True
    doc: str = ""


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    name: str,
    clients=ALL_CLIENTS,
    *,
    check: Callable[[dict], None],
    auto_create: bool = True,
    registry: dict[str, Scenario] = SCENARIOS,
):
    """Register ``fn`` as scenario ``name`` in ``registry`` (the shared one unless a module
    keeps its own, as the security scenarios do: they need brokers set up differently)."""

    def register(fn):
        if name in registry:
            raise ValueError(f"scenario {name} twice")
        registry[name] = Scenario(
            name,
            fn,
            tuple(clients),
            check,
            auto_create,
            (fn.__doc__ or "").strip(),
        )
        return fn

    return register


#: (scenario, client or "*") -> why wireserver differs on purpose. The test asserts these
#: still differ, so an entry that no longer applies fails and gets removed.
MIN_ISR_SOURCE = (
    "min.insync.replicas reads DYNAMIC_DEFAULT_BROKER_CONFIG on Kafka 4.1: its controller writes "
    "a cluster-level value when it bootstraps a cluster with eligible leader replicas (KIP-966); "
    "wireserver has no such record, so the key reads DEFAULT_CONFIG with the same value"
)

DIFFERENCES: dict[tuple[str, str], str] = {
    ("describe-configs", "*"): MIN_ISR_SOURCE,
}


def known_difference(
    name: str, client: str, differences: dict[tuple[str, str], str] = DIFFERENCES
) -> str | None:
    return differences.get((name, client)) or differences.get((name, "*"))


class WireserverDiffers(AssertionError):
    """wireserver's observation is not Kafka's, or a known difference stopped differing."""


def run_once(scenario: Scenario, client: Any, target: Any) -> dict:
    """{"status": "ok" | "check failed: ..." | "error: ...", "observation": ...}. ``target``
    is what the scenario takes: a bootstrap address, or a richer object for modules with
    their own registry."""
    try:
        observation = json.loads(json.dumps(scenario.fn(target, client)))
    except Exception as exc:
        return {
            "status": f"error: {type(exc).__name__}: {exc}"[:300],
            "observation": None,
            "traceback": traceback.format_exc(),
        }
    try:
        scenario.check(observation)
    except Exception as exc:  # an assertion, or a TypeError on a malformed observation
        return {"status": f"check failed: {exc!r}"[:300], "observation": observation}
    return {"status": "ok", "observation": observation}


def run_both(scenario: Scenario, client: Any, kafka_target: Any, wireserver_target: Any):
    """The scenario against both brokers at once (two threads; they are separate
    processes): (Kafka's result, wireserver's result)."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        kafka = pool.submit(run_once, scenario, client, kafka_target)
        wire = pool.submit(run_once, scenario, client, wireserver_target)
        return kafka.result(), wire.result()


def compare(name: str, client_name: str, kafka: dict, wire: dict, difference: str | None) -> None:
    """Kafka's observation must pass the scenario's check; then a known difference must
    still differ, and anything else must be equal (else :class:`WireserverDiffers`)."""
    same = kafka["observation"] == wire["observation"] and kafka["status"] == wire["status"]
    assert kafka["status"] == "ok", (
        f"the scenario is broken against Kafka itself: {kafka['status']}\n"
        f"{kafka.get('traceback', '')}observation: {kafka['observation']}"
    )
    if difference:
        assert not same, f"listed as a known difference but now the same: {difference}"
        return
    if not same:
        raise WireserverDiffers(
            f"wireserver differs from Kafka in {name} with {client_name}\n"
            f"kafka:      {json.dumps(kafka['observation'], sort_keys=True)}\n"
            f"wireserver: {json.dumps(wire['observation'], sort_keys=True)}\n"
            f"wireserver status: {wire['status']}\n{wire.get('traceback', '')}"
        )


def record_and_compare(
    compat_record,
    scenario: Scenario,
    client_name: str,
    kafka: dict,
    wire: dict,
    difference: str | None,
) -> None:
    """File the report row for this scenario and client, then :func:`compare`."""
    compat_record(
        scenario=scenario.name,
        client=client_name,
        kafka=kafka["status"],
        wireserver=wire["status"],
        same=kafka["observation"] == wire["observation"] and kafka["status"] == wire["status"],
        known_difference=difference,
        kafka_observation=kafka["observation"],
        wireserver_observation=wire["observation"],
    )
    compare(scenario.name, client_name, kafka, wire, difference)


# ------------------------------------------------------------------------------ helpers

BASE_TS = neutral.BASE_TS


def sample_records(client: Client, n: int, partitions: int, tag: str) -> list[dict]:
    """``n`` keyed records with headers, spread over ``partitions`` where the client can
    choose a partition, with CreateTime timestamps where the client can set one."""
    out = []
    for i in range(n):
        headers = [("trace", f"t{i}"), ("h", "x")] if client.per_record_headers else [("h", "x")]
        out.append(
            record(
                value=f"{tag}-{i}-" + "payload" * (5 + i),
                key=f"key-{i}",
                headers=headers,
                partition=(i % partitions) if client.per_record_partition else None,
                timestamp=(BASE_TS + i * 1000) if client.per_record_timestamps else None,
            )
        )
    return out


def normalize_records(records: list[dict], sent_timestamps: bool) -> list[dict]:
    """Drop what is volatile: a broker-given or producer-clock timestamp becomes "now"."""
    out = []
    now = time.time() * 1000
    for r in records:
        r = dict(r)
        if not sent_timestamps and isinstance(r.get("timestamp"), int):
            r["timestamp"] = "now" if abs(r["timestamp"] - now) < 600_000 else r["timestamp"]
        out.append(r)
    return out


def read_all(
    bootstrap: str, client: Client, topic: str, partitions: int, total: int, sent_timestamps: bool
) -> dict[str, list]:
    ends = neutral.wait_for_end_offsets(bootstrap, topic, partitions, total)
    out = {}
    for p in range(partitions):
        got = client.consume(bootstrap, topic, p, ends[p]) if ends[p] else []
        out[str(p)] = normalize_records(got, sent_timestamps)
    return out


def _error(fn, *args, **kwargs) -> str:
    try:
        fn(*args, **kwargs)
        return "ok"
    except ClientError as exc:
        return exc.name


# ------------------------------------------------------------------------------ round trips


def _roundtrip(codec: str, acks: str):
    def fn(bootstrap: str, client: Client) -> dict:
        topic = neutral.create_topic(bootstrap, f"rt-{codec}", partitions=3)
        records = sample_records(client, 12, 3, codec)
        reports = client.produce(bootstrap, topic, records, acks=acks, compression=codec)
        if acks == "0":
            reports = [{"partition": r["partition"], "offset": "n/a"} for r in reports]
        return {
            "reports": reports,
            "read": read_all(
                bootstrap, client, topic, 3, len(records), client.per_record_timestamps
            ),
        }

    fn.__doc__ = (
        f"produce 12 keyed records with headers (and partitions, CreateTime where "
        f"the client can set them), codec {codec}, acks={acks}; read every "
        f"partition back with the same client"
    )
    return fn


def _check_roundtrip(obs: dict) -> None:
    records = [r for part in obs["read"].values() for r in part]
    assert len(records) == 12, f"read {len(records)} of 12 records"
    for part in obs["read"].values():
        offsets = [r["offset"] for r in part]
        assert offsets == list(range(len(part))), offsets
        indexes = [int(r["key"].split("-")[1]) for r in part]
        assert indexes == sorted(indexes), "order within a partition"


for _codec in CODECS:
    scenario(f"roundtrip[{_codec}]", check=_check_roundtrip)(_roundtrip(_codec, "all"))
for _acks in ("0", "1"):
    # acks other than all: the Java and kafka-python producers leave idempotence off
    scenario(f"acks[{_acks}]", check=_check_roundtrip)(_roundtrip("none", _acks))


@scenario("consume", check=lambda o: _check_consume(o))
def consume(bootstrap: str, client: Client) -> dict:
    """confluent-kafka writes (gzip, CreateTime, headers, a null key, an empty value); the
    client reads both partitions from the start and one from offset 2"""
    topic = neutral.create_topic(bootstrap, "consume", partitions=2)
    records = [
        record(
            value=f"v{i}" if i != 3 else "",
            key=None if i == 1 else f"k{i}",
            headers=[("n", str(i))] if i % 2 else [],
            partition=i % 2,
            timestamp=BASE_TS + 500 * i,
        )
        for i in range(8)
    ]
    neutral.write(bootstrap, topic, records, compression="gzip")
    return {
        "p0": client.consume(bootstrap, topic, 0, 4),
        "p1": client.consume(bootstrap, topic, 1, 4),
        "p0_from_2": client.consume(bootstrap, topic, 0, 2, offset=2),
    }


def _check_consume(obs: dict) -> None:
    assert len(obs["p0"]) == 4 and len(obs["p1"]) == 4, obs
    assert [r["offset"] for r in obs["p0_from_2"]] == [2, 3]
    assert obs["p0"][0]["timestamp"] == BASE_TS


# ------------------------------------------------------------------------------ errors


@scenario(
    "unknown-topic[auto-create off]", auto_create=False, check=lambda o: _check_unknown_off(o)
)
def unknown_topic_off(bootstrap: str, client: Client) -> dict:
    """produce to a topic that does not exist on a broker with auto-create off"""
    topic = neutral.topic_name("missing")
    config = {
        "kafka-python": {"max_block_ms": 3000},
        "aiokafka": {"request_timeout_ms": 3000},
        "confluent-kafka": {"message.timeout.ms": 3000},
        "kcat": {"message.timeout.ms": 3000},
        "java": {"max.block.ms": 3000},
    }[client.name]
    error = _error(client.produce, bootstrap, topic, [record("x", key="k")], config=config)
    return {"produce": error, "metadata_error": neutral.metadata(bootstrap, topic)[0]}


def _check_unknown_off(obs: dict) -> None:
    assert obs["produce"] != "ok"
    assert obs["metadata_error"] == 3  # UNKNOWN_TOPIC_OR_PARTITION


@scenario("unknown-topic[auto-create on]", check=lambda o: _check_unknown_on(o))
def unknown_topic_on(bootstrap: str, client: Client) -> dict:
    """produce to a topic that does not exist with auto-create on: num.partitions=3"""
    topic = neutral.topic_name("autocreate")
    records = [record(f"v{i}", key=f"k{i}") for i in range(6)]
    produced = _error(client.produce, bootstrap, topic, records)
    partitions = neutral.wait_for_topic(bootstrap, topic, 3)
    ends = neutral.wait_for_end_offsets(bootstrap, topic, 3, 6) if partitions else None
    return {"produce": produced, "partitions": partitions, "records": sum(ends) if ends else None}


def _check_unknown_on(obs: dict) -> None:
    assert obs == {"produce": "ok", "partitions": 3, "records": 6}, obs


INVALID_NAMES = {"space": "bad name", "dots": "..", "too-long": "t" * 250, "slash": "bad/slash"}


@scenario("invalid-topic-name", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_invalid(o))
def invalid_topic_name(bootstrap: str, client: Client) -> dict:
    """create topics with invalid names through the client's admin API"""
    return {
        label: admin.create_topic(client.name, bootstrap, name, 1)
        for label, name in INVALID_NAMES.items()
    }


def _check_invalid(obs: dict) -> None:
    assert all(v != "ok" for v in obs.values()), obs


@scenario("message-too-large", check=lambda o: _check_too_large(o))
def message_too_large(bootstrap: str, client: Client) -> dict:
    """a 6000-byte record to a topic with max.message.bytes=2048, then a small one"""
    topic = neutral.create_topic(bootstrap, "too-large", configs={"max.message.bytes": 2048})
    big = _error(
        client.produce,
        bootstrap,
        topic,
        [record("".join(chr(97 + (i * 7919) % 26) for i in range(6000)), key="big")],
    )
    small = _error(client.produce, bootstrap, topic, [record("small", key="small")])
    return {"big": big, "small": small, "end": neutral.list_offsets(bootstrap, topic, 1)}


def _check_too_large(obs: dict) -> None:
    assert obs["big"] != "ok" and obs["small"] == "ok" and obs["end"] == [1], obs


LINGER = {
    "kafka-python": {"linger_ms": 500},
    "aiokafka": {"linger_ms": 500},
    "confluent-kafka": {"linger.ms": 500},
    "java": {"linger.ms": 500},
}


@scenario("compacted-topic-keyless", clients=tuple(LINGER), check=lambda o: _check_keyless(o))
def compacted_topic_keyless(bootstrap: str, client: Client) -> dict:
    """cleanup.policy=compact,delete; one batch (gzip, linger 500 ms) of three records whose
    middle one has no key, then a keyed record; the client reports the first record's error"""
    topic = neutral.create_topic(
        bootstrap, "compact-nokey", configs={"cleanup.policy": "compact,delete"}
    )
    mixed = _error(
        client.produce,
        bootstrap,
        topic,
        [record("a", key="ka"), record("no key"), record("c", key="kc")],
        compression="gzip",
        config=LINGER[client.name],
    )
    keyed = _error(client.produce, bootstrap, topic, [record("keyed", key="k")])
    return {
        "mixed": mixed,
        "keyed": keyed,
        "end": neutral.list_offsets(bootstrap, topic, 1),
        "read": [r["value"] for r in client.consume(bootstrap, topic, 0, 1)],
    }


def _check_keyless(obs: dict) -> None:
    assert obs["mixed"] != "ok" and obs["keyed"] == "ok", obs
    assert obs["end"] == [1] and obs["read"] == ["keyed"], obs


@scenario("offset-out-of-range", check=lambda o: _check_out_of_range(o))
def offset_out_of_range(bootstrap: str, client: Client) -> dict:
    """five records; the client starts at offset 50 with auto.offset.reset earliest
    (reads from 0) and latest (reads nothing)"""
    topic = neutral.create_topic(bootstrap, "oor")
    neutral.write(bootstrap, topic, [record(f"v{i}", key=f"k{i}") for i in range(5)])
    earliest = client.consume(bootstrap, topic, 0, 5, offset=50, reset="earliest")
    latest = client.consume(bootstrap, topic, 0, 1, offset=50, reset="latest", timeout=3)
    return {"earliest": [r["offset"] for r in earliest], "latest": [r["offset"] for r in latest]}


def _check_out_of_range(obs: dict) -> None:
    assert obs["earliest"] == [0, 1, 2, 3, 4] and obs["latest"] == [], obs


@scenario("list-offsets-by-time", check=lambda o: _check_by_time(o))
def list_offsets_by_time(bootstrap: str, client: Client) -> dict:
    """CreateTime 1000 ms apart; offsets for times before, between, at and after them"""
    topic = neutral.create_topic(bootstrap, "bytime")
    neutral.write(
        bootstrap,
        topic,
        [record(f"v{i}", key=f"k{i}", timestamp=BASE_TS + 1000 * i) for i in range(5)],
    )
    probes = {
        "before": BASE_TS - 5000,
        "exact": BASE_TS + 2000,
        "between": BASE_TS + 2500,
        "after": BASE_TS + 60000,
    }
    return {label: client.offsets_for_time(bootstrap, topic, 0, ts) for label, ts in probes.items()}


def _check_by_time(obs: dict) -> None:
    assert obs == {"before": 0, "exact": 2, "between": 3, "after": None}, obs


@scenario(
    "delete-records",
    clients=("kafka-python", "aiokafka", "confluent-kafka", "java"),
    check=lambda o: _check_delete_records(o),
)
def delete_records(bootstrap: str, client: Client) -> dict:
    """ten records; DeleteRecords before offset 4 through the client; read from earliest"""
    topic = neutral.create_topic(bootstrap, "delrec")
    neutral.write(bootstrap, topic, [record(f"v{i}", key=f"k{i}") for i in range(10)])
    deleted = admin.delete_records(client.name, bootstrap, topic, 0, 4)
    got = client.consume(bootstrap, topic, 0, 6)
    return {
        "delete": deleted,
        "low_watermark": neutral.list_offsets(bootstrap, topic, 1, -2),
        "read": [r["offset"] for r in got],
    }


def _check_delete_records(obs: dict) -> None:
    assert obs == {"delete": "ok", "low_watermark": [4], "read": [4, 5, 6, 7, 8, 9]}, obs


@scenario(
    "produce-to-missing-partition",
    clients=("kafka-python", "aiokafka", "confluent-kafka", "kcat"),
    check=lambda o: _check_missing_partition(o),
)
def produce_to_missing_partition(bootstrap: str, client: Client) -> dict:
    """a one-partition topic; the client sends to partition 5"""
    topic = neutral.create_topic(bootstrap, "nopart")
    config = {
        "kafka-python": {"max_block_ms": 3000},
        "aiokafka": {"request_timeout_ms": 3000},
        "confluent-kafka": {"message.timeout.ms": 3000},
        "kcat": {"message.timeout.ms": 3000},
    }[client.name]
    try:
        error = _error(
            client.produce, bootstrap, topic, [record("x", key="k", partition=5)], config=config
        )
    except (AssertionError, ValueError) as exc:  # a client-side check
        error = type(exc).__name__
    return {"produce": error, "end": neutral.list_offsets(bootstrap, topic, 1)}


def _check_missing_partition(obs: dict) -> None:
    assert obs["produce"] != "ok" and obs["end"] == [0], obs


# ------------------------------------------------------------------------------ topic admin

CONFIG_KEYS = [
    "retention.ms",
    "cleanup.policy",
    "max.message.bytes",
    "segment.bytes",
    "min.insync.replicas",
    "compression.type",
    "message.timestamp.type",
]


@scenario("create-topic", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_create(o))
def create_topic(bootstrap: str, client: Client) -> dict:
    """validate-only create, real create with configs, a duplicate create"""
    name = neutral.topic_name("create")
    obs: dict[str, Any] = {}
    try:
        obs["validate_only"] = admin.create_topic(
            client.name, bootstrap, name, 4, {"retention.ms": "3600000"}, validate_only=True
        )
        obs["exists_after_validate"] = neutral.topic_exists(bootstrap, name)
    except Unsupported:
        pass
    obs["create"] = admin.create_topic(
        client.name, bootstrap, name, 4, {"retention.ms": "3600000", "cleanup.policy": "compact"}
    )
    obs["partitions"] = neutral.wait_for_topic(bootstrap, name, 4)
    obs["duplicate"] = admin.create_topic(client.name, bootstrap, name, 4)
    obs["bad_config"] = admin.create_topic(
        client.name, bootstrap, name + "-b", 1, {"retention.ms": "soon"}
    )
    obs["zero_partitions"] = (
        admin.create_topic(client.name, bootstrap, name + "-z", 0)
        if client.name != "java"
        else "n/a"
    )
    return obs


def _check_create(obs: dict) -> None:
    assert obs["create"] == "ok" and obs["partitions"] == 4, obs
    assert obs["duplicate"] != "ok" and obs["bad_config"] != "ok", obs
    if "validate_only" in obs:
        assert obs["validate_only"] == "ok" and obs["exists_after_validate"] is False, obs


@scenario("describe-configs", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_describe(o))
def describe_configs(bootstrap: str, client: Client) -> dict:
    """values and sources of a handful of topic keys, one of them set on the topic"""
    topic = neutral.create_topic(bootstrap, "cfg", configs={"retention.ms": "3600000"})
    return admin.describe_topic_configs(client.name, bootstrap, topic, CONFIG_KEYS)


def _check_describe(obs: dict) -> None:
    assert obs["retention.ms"] == ["3600000", "DYNAMIC_TOPIC_CONFIG"], obs
    assert obs["cleanup.policy"] is not None, obs


@scenario("alter-configs", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_alter(o))
def alter_configs(bootstrap: str, client: Client) -> dict:
    """incremental SET and DELETE, an invalid value, and (not Java) a legacy AlterConfigs"""
    topic = neutral.create_topic(bootstrap, "alter", configs={"retention.ms": "3600000"})
    keys = ["retention.ms", "cleanup.policy", "max.message.bytes"]
    obs: dict[str, Any] = {}
    obs["set"] = admin.alter_topic_config(
        client.name, bootstrap, topic, {"max.message.bytes": "4096"}, ["retention.ms"]
    )
    obs["after_set"] = admin.describe_topic_configs(client.name, bootstrap, topic, keys)
    obs["invalid"] = admin.alter_topic_config(
        client.name, bootstrap, topic, {"cleanup.policy": "sometimes"}
    )
    if client.name != "java":
        obs["legacy"] = admin.alter_topic_config(
            client.name, bootstrap, topic, {"cleanup.policy": "compact"}, incremental=False
        )
        obs["after_legacy"] = admin.describe_topic_configs(client.name, bootstrap, topic, keys)
    return obs


def _check_alter(obs: dict) -> None:
    assert obs["set"] == "ok", obs
    assert obs["after_set"]["max.message.bytes"] == ["4096", "DYNAMIC_TOPIC_CONFIG"], obs
    assert obs["after_set"]["retention.ms"][0] != "3600000", obs
    assert obs["invalid"] != "ok", obs


@scenario(
    "authorized-operations",
    clients=("kafka-python", "confluent-kafka"),
    check=lambda o: _check_authorized_operations(o),
)
def authorized_operations(bootstrap: str, client: Client) -> dict:
    """a topic, the cluster and a classic group described with authorized operations
    included: no authorizer, so every operation Kafka supports on each (KIP-430)"""
    topic = neutral.create_topic(bootstrap, "authops")
    group = neutral.topic_name("authops-group")
    neutral.commit_offset(bootstrap, group, topic)
    return admin.authorized_operations(client.name, bootstrap, topic, group)


def _check_authorized_operations(obs: dict) -> None:
    assert len(obs["topic"]) == 8 and len(obs["cluster"]) == 7 and len(obs["group"]) == 5, obs


@scenario(
    "describe-unknown-group", clients=("kafka-python",), check=lambda o: _check_unknown_group(o)
)
def describe_unknown_group(bootstrap: str, client: Client) -> dict:
    """DescribeGroups (v6) of a group that does not exist, as the admin client shows it
    (after another group's commit: a just-started Kafka has no group coordinator yet)"""
    topic = neutral.create_topic(bootstrap, "no-group")
    neutral.commit_offset(bootstrap, topic + "-other", topic)
    group = neutral.topic_name("no-group")
    described = admin.describe_groups(client.name, bootstrap, group)
    return {key: str(value).replace(group, "<group>") for key, value in described.items()}


def _check_unknown_group(obs: dict) -> None:
    assert "GroupIdNotFound" in obs["error"], obs


SEGMENT_KEYS = ["segment.bytes", "internal.segment.bytes"]


@scenario(
    "segment-bytes-minimum", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_segment_bytes(o)
)
def segment_bytes_minimum(bootstrap: str, client: Client) -> dict:
    """segment.bytes under 1 MiB is refused by CreateTopics and (legacy) AlterConfigs;
    internal.segment.bytes, Kafka 4.1's test-only key, is taken at any size, described
    where set and gone once deleted"""
    name = neutral.topic_name("segbytes")
    obs: dict[str, Any] = {
        "create_small": admin.create_topic(
            client.name, bootstrap, name + "-s", 1, {"segment.bytes": "1048575"}
        ),
        "create": admin.create_topic(
            client.name,
            bootstrap,
            name,
            1,
            {"segment.bytes": "1048576", "internal.segment.bytes": "200"},
        ),
    }
    neutral.wait_until_served(bootstrap, name, 1)
    obs["alter_small"] = admin.alter_topic_config(
        client.name, bootstrap, name, {"segment.bytes": "1048575"}
    )
    if client.name != "java":
        obs["legacy_small"] = admin.alter_topic_config(
            client.name, bootstrap, name, {"segment.bytes": "1048575"}, incremental=False
        )
    obs["described"] = admin.describe_topic_configs(client.name, bootstrap, name, SEGMENT_KEYS)
    obs["delete_internal"] = admin.alter_topic_config(
        client.name, bootstrap, name, {}, ["internal.segment.bytes"]
    )
    obs["after_delete"] = admin.describe_topic_configs(client.name, bootstrap, name, SEGMENT_KEYS)
    return obs


def _check_segment_bytes(obs: dict) -> None:
    assert obs["create_small"] != "ok" and obs["alter_small"] != "ok", obs
    assert obs["create"] == "ok" and obs["described"]["internal.segment.bytes"] == [
        "200",
        "DYNAMIC_TOPIC_CONFIG",
    ], obs
    assert obs["after_delete"]["internal.segment.bytes"] is None, obs


def settled_configs(
    client: Client, bootstrap: str, kind: str, name: str, keys: list[str], expect: dict[str, str]
) -> dict:
    """The configs of a resource once ``expect``'s values show (15 s at most): Kafka's broker
    applies a change shortly after answering (KRaft metadata), so read as a user would."""
    deadline = time.monotonic() + 15
    while True:
        found = admin.describe_configs(client.name, bootstrap, kind, name, keys)
        if (
            all(found[k] and found[k][0] == v for k, v in expect.items())
            or time.monotonic() > deadline
        ):
            return found
        time.sleep(0.2)


#: Kafka broker keys wireserver accepts without acting on them (one dynamic per broker, one
#: cluster-wide, one read-only, one sensitive), none set by either broker's own config
UNUSED_BROKER_KEYS = [
    "sasl.kerberos.min.time.before.relogin",
    "background.threads",
    "sasl.kerberos.kinit.cmd",
    "delegation.token.secret.key",
]


@scenario("broker-configs", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_broker_cfg(o))
def broker_configs(bootstrap: str, client: Client) -> dict:
    """a Kafka broker key wireserver does not use, set on the broker and read back, refusals of
    a read-only key and a bad value, (not Java) a legacy AlterConfigs, then deleted again"""
    node = str(neutral.node_id(bootstrap))
    key = UNUSED_BROKER_KEYS[0]

    def settled(expect: dict[str, str]) -> dict:
        return settled_configs(client, bootstrap, "broker", node, UNUSED_BROKER_KEYS, expect)

    obs: dict[str, Any] = {}
    obs["set"] = admin.alter_configs(client.name, bootstrap, "broker", node, {key: "70000"})
    obs["after_set"] = settled({key: "70000"})
    obs["read_only"] = admin.alter_configs(
        client.name, bootstrap, "broker", node, {"process.roles": "broker"}
    )
    obs["bad_value"] = admin.alter_configs(client.name, bootstrap, "broker", node, {key: "soon"})
    if client.name != "java":
        obs["legacy"] = admin.alter_configs(
            client.name,
            bootstrap,
            "broker",
            node,
            {key: "80000", "background.threads": "5"},
            incremental=False,
        )
        obs["after_legacy"] = settled({key: "80000", "background.threads": "5"})
    # (kafka-configs refuses to delete a key that is not set: background.threads is only
    # set by the legacy AlterConfigs)
    obs["delete"] = admin.alter_configs(
        client.name,
        bootstrap,
        "broker",
        node,
        {},
        [key] + (["background.threads"] if client.name != "java" else []),
    )
    obs["after_delete"] = settled({key: "60000", "background.threads": "10"})
    return obs


def _check_broker_cfg(obs: dict) -> None:
    assert obs["set"] == "ok" and obs["delete"] == "ok", obs
    assert obs["after_set"][UNUSED_BROKER_KEYS[0]] == ["70000", "DYNAMIC_BROKER_CONFIG"], obs
    assert obs["after_delete"][UNUSED_BROKER_KEYS[0]] == ["60000", "DEFAULT_CONFIG"], obs
    assert obs["read_only"] != "ok" and obs["bad_value"] != "ok", obs


GROUP_KEYS = [
    "consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms",
    "share.auto.offset.reset",
    "streams.num.standby.replicas",
]


@scenario("group-configs", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_group_cfg(o))
def group_configs(bootstrap: str, client: Client) -> dict:
    """the GROUP config resource: a group's defaults, a change read back, refusals (below the
    broker's minimum, an unknown key), (not Java) the legacy AlterConfigs replacing the set,
    and a deletion"""
    group = neutral.topic_name("group-cfg")
    session, heartbeat = GROUP_KEYS[:2]

    def settled(expect: dict[str, str]) -> dict:
        return settled_configs(client, bootstrap, "group", group, GROUP_KEYS, expect)

    obs: dict[str, Any] = {
        "defaults": admin.describe_configs(client.name, bootstrap, "group", group, GROUP_KEYS)
    }
    obs["set"] = admin.alter_configs(
        client.name, bootstrap, "group", group, {session: "50000", heartbeat: "6000"}
    )
    obs["after_set"] = settled({session: "50000", heartbeat: "6000"})
    obs["below_min"] = admin.alter_configs(
        client.name, bootstrap, "group", group, {session: "5000"}
    )
    obs["unknown_key"] = admin.alter_configs(
        client.name, bootstrap, "group", group, {"no.such.key": "1"}
    )
    set_keys = [session, heartbeat]
    if client.name != "java":
        obs["legacy"] = admin.alter_configs(
            client.name,
            bootstrap,
            "group",
            group,
            {"share.auto.offset.reset": "earliest"},
            incremental=False,
        )
        obs["after_legacy"] = settled({"share.auto.offset.reset": "earliest"})
        if obs["after_legacy"][session][0] == "50000":
            set_keys.append("share.auto.offset.reset")  # kafka-python's legacy form keeps them
        else:
            set_keys = ["share.auto.offset.reset"]
    obs["delete"] = admin.alter_configs(client.name, bootstrap, "group", group, {}, set_keys)
    obs["after_delete"] = settled({session: "45000", "share.auto.offset.reset": "latest"})
    return obs


def _check_group_cfg(obs: dict) -> None:
    assert obs["defaults"]["consumer.session.timeout.ms"] == ["45000", "DEFAULT_CONFIG"], obs
    assert obs["set"] == "ok" and obs["delete"] == "ok", obs
    assert obs["after_set"]["consumer.session.timeout.ms"][0] == "50000", obs
    assert obs["below_min"] != "ok" and obs["unknown_key"] != "ok", obs
    assert obs["after_delete"] == obs["defaults"], obs


@scenario("create-partitions", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_parts(o))
def create_partitions(bootstrap: str, client: Client) -> dict:
    """grow a topic from 1 to 3 partitions, then try to shrink it to 2"""
    topic = neutral.create_topic(bootstrap, "parts")
    grow = admin.create_partitions(client.name, bootstrap, topic, 3)
    count = neutral.wait_for_topic(bootstrap, topic, 3)
    shrink = admin.create_partitions(client.name, bootstrap, topic, 2)
    missing = admin.create_partitions(client.name, bootstrap, topic + "-missing", 2)
    return {"grow": grow, "partitions": count, "shrink": shrink, "missing": missing}


def _check_parts(obs: dict) -> None:
    assert obs["grow"] == "ok" and obs["partitions"] == 3 and obs["shrink"] != "ok", obs


@scenario("delete-topic", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_delete(o))
def delete_topic(bootstrap: str, client: Client) -> dict:
    """delete a topic, then delete it again"""
    topic = neutral.create_topic(bootstrap, "del")
    first = admin.delete_topic(client.name, bootstrap, topic)
    deadline = time.monotonic() + 10
    while neutral.topic_exists(bootstrap, topic) and time.monotonic() < deadline:
        time.sleep(0.1)
    return {
        "delete": first,
        "exists": neutral.topic_exists(bootstrap, topic),
        "again": admin.delete_topic(client.name, bootstrap, topic),
    }


def _check_delete(obs: dict) -> None:
    assert obs["delete"] == "ok" and obs["exists"] is False and obs["again"] != "ok", obs


@scenario("describe-cluster", clients=admin.ADMIN_CLIENTS, check=lambda o: _check_cluster(o))
def describe_cluster(bootstrap: str, client: Client) -> dict:
    """broker count and whether the controller is one of the brokers"""
    return admin.describe_cluster(client.name, bootstrap)


def _check_cluster(obs: dict) -> None:
    assert obs["brokers"] == 1, obs


@scenario("describe-log-dirs", clients=("kafka-python", "java"), check=lambda o: _check_log_dirs(o))
def describe_log_dirs(bootstrap: str, client: Client) -> dict:
    """a two-partition topic's partitions in DescribeLogDirs"""
    topic = neutral.create_topic(bootstrap, "logdirs", partitions=2)
    return admin.describe_log_dirs(client.name, bootstrap, topic)


def _check_log_dirs(obs: dict) -> None:
    assert obs["partitions"] == ["0", "1"] and obs["log_dirs"] >= 1, obs


# ------------------------------------------------------------------------------ groups


def consumer_groups_tool(bootstrap: str, args: list[str]) -> str:
    from compat_tests.reference import run_tool

    proc = run_tool("kafka-consumer-groups", args, bootstrap=bootstrap, timeout=90)
    return proc.stdout


@scenario(
    "group-consume-commit",
    clients=("kafka-python", "aiokafka", "confluent-kafka", "java"),
    check=lambda o: _check_group(o),
)
def group_consume_commit(bootstrap: str, client: Client) -> dict:
    """a consumer group reads a 2-partition topic, commits and leaves; kafka-consumer-groups
    then lists the group and describes its committed offsets and lag"""
    topic = neutral.create_topic(bootstrap, "grp", partitions=2)
    neutral.write(bootstrap, topic, [record(f"g{i}", key=f"k{i}") for i in range(12)])
    group = neutral.topic_name("group")
    values = client.consume_group(bootstrap, topic, group, 12)
    listed = consumer_groups_tool(bootstrap, ["--list"]).split()
    describe = consumer_groups_tool(bootstrap, ["--describe", "--group", group])
    rows = []
    for line in describe.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == topic:
            rows.append(fields[2:6])  # partition, current offset, log end offset, lag
    neutral.write(bootstrap, topic, [record("late", key="k0")])
    lag = consumer_groups_tool(bootstrap, ["--describe", "--group", group])
    total_lag = sum(
        int(line.split()[5])
        for line in lag.splitlines()
        if len(line.split()) >= 6 and line.split()[1] == topic
    )
    return {
        "values": sorted(values),
        "listed": group in listed,
        "offsets": sorted(rows),
        "lag_after_one_more": total_lag,
    }


def _check_group(obs: dict) -> None:
    assert obs["values"] == sorted(f"g{i}" for i in range(12)), obs
    assert obs["listed"] and obs["lag_after_one_more"] == 1, obs
    assert sum(int(row[1]) for row in obs["offsets"]) == 12, obs
