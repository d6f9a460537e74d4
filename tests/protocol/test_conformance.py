"""Every API and version we advertise exists, with the same fields, in Apache Kafka's own
message definitions: those the reference release's ``kafka-clients`` jar carries as
``common/message/*.json`` (the jar ``compat_tests.reference`` resolves from Maven Central for the
compatibility suite; nothing outside the repository is read). Our side of each comparison is
kafka-python's bundled copy, or, for the messages kafka-python lacks, the schema
protocol/messages_extra.py writes."""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
import zipfile

import pytest

from compat_tests.reference import ReferenceUnavailable, must_not_skip
from compat_tests.reference.resolve import KAFKA_VERSION, ResolutionError, resolve
from wireserver.protocol.messages_extra import DEFINED_HERE
from wireserver.protocol.served import SERVED


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


@functools.cache
def reference_definitions() -> zipfile.ZipFile:
    """The reference release's kafka-clients jar (Maven resolves it on first use)."""
    try:
        lib = resolve()
    except (ResolutionError, ReferenceUnavailable) as exc:
        if must_not_skip():
            pytest.fail(f"Kafka {KAFKA_VERSION}'s kafka-clients jar is unavailable: {exc}")
        pytest.skip(f"no kafka-clients {KAFKA_VERSION} jar: {exc}")
    return zipfile.ZipFile(lib / f"kafka-clients-{KAFKA_VERSION}.jar")


def load_reference(name: str) -> dict:
    return parse_json(reference_definitions().read(f"common/message/{name}.json").decode())


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


CASES = [
    (spec, version, kind)
    for spec in SERVED
    for version in range(spec.min_version, spec.max_version + 1)
    for kind in ("request", "response")
]


@pytest.mark.parametrize(
    "spec,version,kind", CASES, ids=[f"{s.name}-v{v}-{k}" for s, v, k in CASES]
)
def test_served_version_matches_kafka_definition(spec, version, kind):
    message_class = spec.request_class if kind == "request" else spec.response_class
    if message_class in DEFINED_HERE:
        ours = message_class.json
    else:
        ours = load_kafka_python_copy(message_class.name)
    reference = load_reference(message_class.name)
    assert reference["apiKey"] == spec.key == ours["apiKey"]
    reference_range = parse_versions(reference["validVersions"])
    assert reference_range[0] <= version <= reference_range[1], (
        f"Kafka {KAFKA_VERSION} does not define {message_class.name} v{version}"
    )
    assert shape(ours, version) == shape(reference, version)
    assert (parse_versions(ours["flexibleVersions"]) or (99, 99))[0] == (
        parse_versions(reference["flexibleVersions"]) or (99, 99)
    )[0]
