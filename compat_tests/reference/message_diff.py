"""What changed in Kafka's protocol between two releases, against what wireserver serves.

Reads ``common/message/*Request.json`` / ``*Response.json`` from the two releases'
kafka-clients jars (resolved like every reference jar, see resolve.py) and prints, per API
key, the versions the newer release adds or makes stable, the ``// Version N ...`` comments
that say what each brings, the fields that appear at those versions, field changes at versions
both define, and the range wireserver serves (protocol/served.py)::

    python -m compat_tests.reference.message_diff 4.1.1 4.4.0 > table.md

docs/kafka-4.4-gap.md was started from its output.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from dataclasses import dataclass

from wireserver.protocol.served import SERVED

from .resolve import resolve

TOP = 2**15 - 1
_VERSION_NOTE = re.compile(r"^\s*//\s*Ver(?:si|is)ons?\s+(\d+)(?:\s*(?:-|to|and)\s*(\d+))?\b(.*)$")


def versions(text: str | None) -> tuple[int, int] | None:
    if not text or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), TOP
    low, _, high = text.partition("-")
    return int(low), int(high or low)


@dataclass
class Message:
    name: str
    key: int
    kind: str  # "request" or "response"
    valid: tuple[int, int]
    unstable: bool  # the latest valid version is not advertised by default
    listeners: tuple[str, ...]
    notes: dict[int, list[str]]
    fields: list[dict]
    common: dict[str, list[dict]]

    @property
    def stable(self) -> tuple[int, int]:
        low, high = self.valid
        return (low, high - 1) if self.unstable else (low, high)


def _notes(text: str) -> dict[int, list[str]]:
    """``// Version N ...`` comments (a sentence may run over following comment lines)."""
    notes: dict[int, list[list[str]]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _VERSION_NOTE.match(line)
        if match:
            first, last = int(match.group(1)), int(match.group(2) or match.group(1))
            current = [line.strip().removeprefix("//").strip()]
            for version in range(first, last + 1):
                notes.setdefault(version, []).append(current)
            continue
        stripped = line.strip()
        if current is not None and stripped.startswith("//") and stripped != "//":
            rest = stripped.removeprefix("//").strip()
            if not rest.startswith(("-", "Supported errors", "Version")):
                current.append(rest)
                continue
        current = None
    return {v: [" ".join(parts) for parts in lists] for v, lists in notes.items()}


def load(jar: zipfile.ZipFile) -> dict[str, Message]:
    out = {}
    for entry in jar.namelist():
        if not (
            entry.startswith("common/message/")
            and entry.endswith(("Request.json", "Response.json"))
        ):
            continue
        text = jar.read(entry).decode()
        spec = json.loads(re.sub(r"^\s*//.*$|\s//[^\"\n]*$", "", text, flags=re.M))
        if (
            spec.get("type") not in ("request", "response")
            or versions(spec["validVersions"]) is None
        ):
            continue  # data records, or an API removed in both releases (validVersions "none")
        out[spec["name"]] = Message(
            name=spec["name"],
            key=spec["apiKey"],
            kind=spec["type"],
            valid=versions(spec["validVersions"]),
            unstable=bool(spec.get("latestVersionUnstable", False)),
            listeners=tuple(spec.get("listeners", ())),
            notes=_notes(text),
            fields=spec.get("fields", []),
            common={c["name"]: c["fields"] for c in spec.get("commonStructs", [])},
        )
    return out


def field_rows(fields: list[dict], common: dict, prefix: str = "") -> dict[str, tuple]:
    """Every field by dotted path -> (type, versions, nullable, tagged versions)."""
    rows = {}
    for field in fields:
        path = f"{prefix}{field['name']}"
        rows[path] = (
            field["type"],
            field.get("versions"),
            field.get("nullableVersions"),
            field.get("taggedVersions"),
        )
        children = field.get("fields") or common.get(field["type"].removeprefix("[]"))
        if children:
            rows.update(field_rows(children, common, path + "."))
    return rows


def _at(row: tuple, version: int) -> bool:
    span = versions(row[1])
    return bool(span and span[0] <= version <= span[1])


def describe(old: Message | None, new: Message, stable: tuple[int, int]) -> dict:
    """What ``new`` adds to ``old``: versions, their notes and fields, and changed fields.

    ``stable`` is the old and the new release's highest stable version of the API (as its
    request declares them; responses do not say)."""
    new_rows = field_rows(new.fields, new.common)
    if old is None:
        added = list(range(new.valid[0], new.valid[1] + 1))
        return {"added": added, "notes": new.notes, "fields": {}, "changed": [], "renamed": []}
    old_rows = field_rows(old.fields, old.common)
    # Versions past the old release's stable (advertised) range: new ones, or ones that were
    # defined but unstable there.
    added = list(range(max(stable[0], new.valid[0] - 1) + 1, stable[1] + 1))
    fields = {}
    for v in added:
        came = sorted(p for p, row in new_rows.items() if _at(row, v) and not _at(row, v - 1))
        outermost = [p for p in came if p.rpartition(".")[0] not in came]
        fields[v] = outermost if v > new.valid[0] else []
    shared = range(max(old.valid[0], new.valid[0]), old.valid[1] + 1)
    changed, renamed = [], []
    for v in shared:
        before = {p: r[:1] + r[2:] for p, r in old_rows.items() if _at(r, v)}
        after = {p: r[:1] + r[2:] for p, r in new_rows.items() if _at(r, v)}
        if before != after:
            gone, came = sorted(set(before) - set(after)), sorted(set(after) - set(before))
            if gone and came and len(gone) == len(came):
                renamed.append((v, list(zip(gone, came, strict=True))))
            else:
                diff = [
                    p for p in sorted(set(before) | set(after)) if before.get(p) != after.get(p)
                ]
                changed.append((v, diff))
    notes = {v: new.notes.get(v, []) for v in added}
    for v in added:
        if v <= old.valid[1]:
            notes[v] = [*notes[v], "(defined, unstable and not advertised in the older release)"]
    return {
        "added": added,
        "notes": notes,
        "fields": fields,
        "changed": changed,
        "renamed": renamed,
    }


def _span(span: tuple[int, int] | None) -> str:
    if span is None:
        return "-"
    if span[1] < span[0]:
        return "none"
    return str(span[0]) if span[0] == span[1] else f"{span[0]}-{span[1]}"


def _stable(message: Message | None) -> str:
    if message is None:
        return "new"
    unstable = f" (+v{message.valid[1]} unstable)" if message.unstable else ""
    return _span(message.stable) + unstable


def report(old_version: str, new_version: str) -> str:
    jars = {}
    for version in (old_version, new_version):
        lib = resolve(version)
        jars[version] = load(zipfile.ZipFile(lib / f"kafka-clients-{version}.jar"))
    old, new = jars[old_version], jars[new_version]
    served = {spec.key: (spec.min_version, spec.max_version) for spec in SERVED}
    lines = [
        f"| key | API | {old_version} stable | {new_version} stable | listeners | wireserver serves |",
        "| ---: | --- | --- | --- | --- | --- |",
    ]
    details = []
    requests = sorted((m for m in new.values() if m.kind == "request"), key=lambda m: m.key)
    for request in requests:
        response = new[request.name.removesuffix("Request") + "Response"]
        before = old.get(request.name)
        before_resp = old.get(response.name)
        stable = (before.stable[1] if before else -1, request.stable[1])
        changes = [describe(before, request, stable), describe(before_resp, response, stable)]
        stable_changed = before is None or before.stable != request.stable
        shape_changed = any(c["changed"] or c["renamed"] for c in changes)
        if not (stable_changed or shape_changed or changes[0]["added"] or changes[1]["added"]):
            continue
        api = request.name.removesuffix("Request")
        lines.append(
            f"| {request.key} | {api} | {_stable(before)} | {_stable(request)} "
            f"| {', '.join(request.listeners)} | {_span(served.get(request.key))} |"
        )
        details.append(f"\n### {request.key} {api}\n")
        for message, change in zip((request, response), changes, strict=True):
            for v in change["added"]:
                notes = " ".join(change["notes"].get(v, [])) or "(no version comment)"
                fields = ", ".join(change["fields"].get(v, [])) if change["fields"] else ""
                details.append(
                    f"- {message.kind} v{v}: {notes}"
                    + (f" New fields: {fields}." if fields else "")
                )
            for v, pairs in change["renamed"]:
                details.append(
                    f"- {message.kind} v{v} renames "
                    + ", ".join(f"{a} -> {b}" for a, b in pairs)
                    + " (same wire layout)"
                )
            for v, paths in change["changed"]:
                details.append(f"- {message.kind} v{v} changes fields: {', '.join(paths)}")
    return "\n".join(lines + details) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    old_version, new_version = (args + ["4.1.1", "4.4.0"][len(args) :])[:2]
    sys.stdout.write(report(old_version, new_version))


if __name__ == "__main__":
    main()
