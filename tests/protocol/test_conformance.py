"""Every API and version we advertise exists, with the same fields, in Apache Kafka's own
message definitions (../shared/kafka-protocol/message/), or — for versions newer than that
snapshot — in the newer copies kafka-python ships (or, for the messages kafka-python lacks, in
the schemas protocol/messages_extra.py writes)."""

from __future__ import annotations

import importlib.resources
import json
import os
import re
from pathlib import Path

import pytest

from wireserver.protocol.messages_extra import DEFINED_HERE
from wireserver.protocol.served import SERVED

UPSTREAM = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-protocol" / "message"


def parse_versions(text: str | None) -> tuple[int, int] | None:
    if not text or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), 2**15 - 1
    if "-" in text:
        lo, hi = text.split("-")
        return int(lo), int(hi)
    return int(text), int(text)


def parse_json(text: str) -> dict:
    return json.loads(re.sub(r"^\s*//.*$|\s//[^\"\n]*$", "", text, flags=re.M))


def load_upstream(name: str) -> dict:
    return parse_json((UPSTREAM / f"{name}.json").read_text())


def load_kafka_python_copy(name: str) -> dict:
    """kafka-python's bundled definition as shipped (its classes patch some field types)."""
    resources = importlib.resources.files("kafka.protocol.schemas.resources")
    return parse_json((resources / f"{name}.json").read_text())


def fields_at(fields: list[dict], version: int, common: dict[str, list]) -> list:
    """(name, type, nullable, tag, nested) for each field present at ``version``."""
    out = []
    for field in fields:
        versions = parse_versions(field.get("versions"))
        if versions is None or not versions[0] <= version <= versions[1]:
            continue
        nullable = parse_versions(field.get("nullableVersions"))
        is_nullable = bool(nullable and nullable[0] <= version <= nullable[1])
        tagged = parse_versions(field.get("taggedVersions"))
        tag = field.get("tag") if tagged and tagged[0] <= version <= tagged[1] else None
        children = field.get("fields")
        type_name = field["type"].removeprefix("[]")
        if children is None and type_name in common:
            children = common[type_name]
        nested = fields_at(children, version, common) if children else None
        out.append((field["name"], field["type"], is_nullable, tag, nested))
    return out


def shape(message: dict, version: int) -> list:
    common = {c["name"]: c["fields"] for c in message.get("commonStructs", [])}
    return fields_at(message["fields"], version, common)


#: Messages Kafka renamed after the snapshot, by their new name (KIP-1142 made
#: ListClientMetricsResources v0 the ListConfigResources API): same wire layout, new names.
RENAMED = {"ListConfigResourcesRequest": "ListClientMetricsResourcesRequest",
           "ListConfigResourcesResponse": "ListClientMetricsResourcesResponse"}


def wire_layout(fields: list) -> list:
    """A shape without field or struct names: what the bytes look like."""
    out = []
    for _, type_, nullable, tag, nested in fields:
        if nested:  # a struct or an array of them: its name is not on the wire
            type_ = "[]struct" if type_.startswith("[]") else "struct"
        out.append((type_, nullable, tag, wire_layout(nested) if nested else nested))
    return out


def upstream_or_fail(name: str) -> dict | None:
    if not UPSTREAM.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"Apache Kafka's message definitions are missing at {UPSTREAM}")
        pytest.skip(f"no {UPSTREAM}")
    return load_upstream(RENAMED.get(name, name))


CASES = [(spec, version, kind) for spec in SERVED
         for version in range(spec.min_version, spec.max_version + 1)
         for kind in ("request", "response")]


@pytest.mark.parametrize("spec,version,kind", CASES,
                         ids=[f"{s.name}-v{v}-{k}" for s, v, k in CASES])
def test_served_version_matches_kafka_definition(spec, version, kind):
    message_class = spec.request_class if kind == "request" else spec.response_class
    if message_class in DEFINED_HERE:
        ours = message_class.json
    else:
        ours = load_kafka_python_copy(message_class.name)
    upstream = upstream_or_fail(message_class.name)
    assert upstream["apiKey"] == spec.key == ours["apiKey"]
    upstream_range = parse_versions(upstream["validVersions"])
    ours_range = parse_versions(ours["validVersions"])
    if upstream_range[0] <= version <= upstream_range[1]:
        reference = upstream
    else:
        # Newer than the 2024 snapshot: kafka-python's newer copy must define it.
        assert ours_range[0] <= version <= ours_range[1], (
            f"{message_class.name} v{version} is in neither definition")
        reference = ours
    if reference is upstream and message_class.name in RENAMED:
        assert wire_layout(shape(ours, version)) == wire_layout(shape(reference, version))
    else:
        assert shape(ours, version) == shape(reference, version)
    assert (parse_versions(ours["flexibleVersions"]) or (99, 99))[0] == \
        (parse_versions(reference["flexibleVersions"]) or (99, 99))[0]
