"""Raw-protocol differential and ApiVersions comparison (see raw_protocol.py).

* ``test_api_versions``: for every API both advertise, the version ranges must be equal.
  What Kafka serves and wireserver does not is listed in the report (not a failure).
* ``test_raw_differential[<api>]``: every version both serve, the same requests, the decoded
  responses equal after normalization — except the entries of :data:`RAW_DIFFERENCES`, which
  must still differ.
"""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.api_key import ApiKey

from compat_tests import raw_protocol as raw
from compat_tests.targets import KAFKA, WIRESERVER
from wireserver.testing import KafkaWire

pytestmark = pytest.mark.integration

#: (api name, request label) -> (first version it applies to, why the answers differ on
#: purpose). Asserted to still differ, so a stale entry fails.
RAW_DIFFERENCES: dict[tuple[str, str], tuple[int, str]] = {
    ("ApiVersions", "plain"): (
        3,
        "wireserver advertises only the features it implements (no "
        "metadata.version, kraft.version, share.version or "
        "eligible.leader.replicas.version: docs/compatibility.md) and "
        "its own finalized epoch",
    ),
    ("CreateTopics", "validate-only"): (
        5,
        "the min.insync.replicas source in the returned "
        "configs (see compat_tests.scenarios.MIN_ISR_SOURCE)",
    ),
}


def _api_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return f"api-{key}"


@pytest.fixture(scope="module")
def raw_pair(compat_targets, compat_extra):
    kafka = compat_targets.get(KAFKA, auto_create=False)
    wire = compat_targets.get(WIRESERVER, auto_create=False)
    run = uuid.uuid4().hex[:8]
    topic, compacted = f"compat-raw-{run}", f"compat-raw-compacted-{run}"
    for target in (kafka, wire):
        with KafkaWire(target.bootstrap, client_id="compat-raw") as w:
            w.create_topic(topic, partitions=2)
            w.create_topic(compacted, partitions=1, configs={"cleanup.policy": "compact"})
        from compat_tests.neutral import commit_offset, wait_until_served

        wait_until_served(target.bootstrap, topic, 2)
        wait_until_served(target.bootstrap, compacted, 1)
        # the group coordinator ready, for the group APIs' requests (Kafka answers
        # NOT_COORDINATOR until __consumer_offsets is made and loaded)
        commit_offset(target.bootstrap, f"compat-raw-ready-{run}", topic)
    pair = {
        "kafka": (kafka.bootstrap, raw.context(kafka.bootstrap, topic, compacted, run)),
        "wireserver": (wire.bootstrap, raw.context(wire.bootstrap, topic, compacted, run)),
        "versions": {
            KAFKA: raw.api_versions(kafka.bootstrap),
            WIRESERVER: raw.api_versions(wire.bootstrap),
        },
    }
    compat_extra.setdefault("raw_rows", [])
    yield pair
    _summarize(pair, compat_extra)


def _summarize(pair, extra) -> None:
    kv, wv = pair["versions"][KAFKA], pair["versions"][WIRESERVER]
    missing = sorted(set(kv) - set(wv))
    extra_keys = sorted(set(wv) - set(kv))
    differ = sorted(k for k in set(kv) & set(wv) if kv[k] != wv[k])
    summary = [
        f"ApiVersions: Kafka advertises {len(kv)} APIs, wireserver {len(wv)}; "
        f"{len(missing)} served by Kafka only"
    ]
    md = ["## ApiVersions", "", f"Kafka advertises {len(kv)} APIs, wireserver {len(wv)}.", ""]
    if differ:
        md.append(
            "Different version ranges: "
            + ", ".join(
                f"{_api_name(k)} kafka {kv[k][0]}-{kv[k][1]} / wireserver {wv[k][0]}-{wv[k][1]}"
                for k in differ
            )
        )
        md.append("")
    if extra_keys:
        md += ["Served by wireserver only: " + ", ".join(_api_name(k) for k in extra_keys), ""]
    md += [
        "Served by Kafka, not by wireserver (not a failure):",
        "",
        "| key | API | Kafka versions |",
        "|---|---|---|",
    ]
    md += [f"| {k} | {_api_name(k)} | {kv[k][0]}-{kv[k][1]} |" for k in missing]
    summary.append("  Kafka only: " + ", ".join(f"{_api_name(k)}({k})" for k in missing))
    rows = extra.get("raw_rows", [])
    md += [
        "",
        "## Raw-protocol differential",
        "",
        "| API | versions compared | requests | result |",
        "|---|---|---|---|",
    ]
    for row in rows:
        md.append(f"| {row['api']} | {row['versions']} | {row['requests']} | {row['result']} |")
    diffs = [d for row in rows for d in row.get("diffs", [])]
    if diffs:
        md += ["", "### Differing responses", ""]
        for d in diffs:
            md += [
                f"**{d['api']} v{d['version']} {d['label']}**",
                "",
                "```",
                *d["paths"],
                "```",
                "",
            ]
    summary.append("raw differential: " + ", ".join(f"{r['api']} {r['result']}" for r in rows))
    extra["raw_summary"] = summary
    extra["raw_markdown"] = md


#: API name -> (Kafka's range, ours, why) for version ranges that differ on purpose. Asserted to
#: still differ exactly so, so a stale entry fails.
VERSION_DIFFERENCES = {}


def test_api_versions(raw_pair):
    kv, wv = raw_pair["versions"][KAFKA], raw_pair["versions"][WIRESERVER]
    assert kv, "Kafka advertised no APIs"
    differ = {_api_name(k): (kv[k], wv[k]) for k in set(kv) & set(wv) if kv[k] != wv[k]}
    known = {name: (kafka, ours) for name, (kafka, ours, _) in VERSION_DIFFERENCES.items()}
    assert differ == known, f"version ranges differ: {differ}; known differences: {known}"
    assert not set(wv) - set(kv), f"wireserver advertises APIs Kafka does not: {set(wv) - set(kv)}"


@pytest.mark.parametrize("api_key", sorted(raw.BUILDERS), ids=_api_name)
def test_raw_differential(api_key, raw_pair, compat_extra):
    request_class, build = raw.BUILDERS[api_key]
    name = _api_name(api_key)
    kv, wv = raw_pair["versions"][KAFKA].get(api_key), raw_pair["versions"][WIRESERVER].get(api_key)
    row = {"api": name, "versions": "-", "requests": 0, "result": "", "diffs": []}
    compat_extra["raw_rows"].append(row)
    if kv is None or wv is None:
        row["result"] = "not served by " + ("Kafka" if kv is None else "wireserver")
        return
    low, high = (
        (int(x) for x in request_class.json["validVersions"].split("-"))
        if "-" in request_class.json["validVersions"]
        else (int(request_class.json["validVersions"]),) * 2
    )
    lo, hi = max(low, kv[0], wv[0]), min(high, kv[1], wv[1])
    row["versions"] = f"{lo}-{hi}"
    (kb, kctx), (wb, wctx) = raw_pair["kafka"], raw_pair["wireserver"]
    unexpected, stale = [], []
    for version in range(lo, hi + 1):
        pairs = zip(build(version, kctx), build(version, wctx))
        for (label, kreq), (_, wreq) in pairs:
            row["requests"] += 1
            kres, wres = raw.exchange(kb, kreq), raw.exchange(wb, wreq)
            since, known = RAW_DIFFERENCES.get((name, label), (0, None))
            known = known if version >= since else None
            if kres != wres:
                diff = {
                    "api": name,
                    "version": version,
                    "label": label,
                    "paths": raw.diff_paths(kres, wres),
                }
                row["diffs"].append(diff)
                if not known:
                    unexpected.append(diff)
            elif known:
                stale.append(f"{name} v{version} {label}: {known}")
    row["result"] = f"{len(row['diffs'])} differ" if row["diffs"] else "same"
    assert not stale, f"known differences that no longer differ: {stale}"
    assert not unexpected, "responses differ:\n" + "\n".join(
        f"v{d['version']} {d['label']}:\n    " + "\n    ".join(d["paths"]) for d in unexpected
    )
