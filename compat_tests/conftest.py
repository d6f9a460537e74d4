"""Fixtures of the compatibility suite, and the report.

``compat_targets`` (session): starts the reference Kafka and wireserver on first use, each
with auto-create on and off as scenarios ask (see targets.py), and stops them at the end.

Every compat test records a row (scenario, client, Kafka's status, wireserver's status,
result). At the end of the session the rows are printed as a table and, with
``--compat-report PATH`` (``scripts/compat`` passes ``compat_tests/report.md``), written as
Markdown along with the raw-protocol differential and the ApiVersions comparison.

Without a reference Kafka (no Java/Maven jars, no Docker, no
``WIRESERVER_REFERENCE_BOOTSTRAP``) the tests skip, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from compat_tests.reference import ReferenceUnavailable, must_not_skip
from compat_tests.targets import Targets

_ROWS: list[dict] = []
_EXTRA: dict[str, object] = {}
_STARTED = time.monotonic()


def pytest_addoption(parser):
    parser.addoption(
        "--compat-report",
        default=None,
        metavar="PATH",
        help="write the compatibility report (Markdown) to PATH",
    )


@pytest.fixture(scope="session")
def compat_targets():
    targets = Targets()
    original = targets.get

    def get(name, auto_create=True):
        try:
            return original(name, auto_create)
        except ReferenceUnavailable as exc:
            if must_not_skip():
                pytest.fail(f"CI=true and no reference Kafka: {exc}")
            pytest.skip(f"no reference Kafka: {exc}")

    targets.get = get
    yield targets
    _EXTRA["targets"] = [
        {
            "target": t.name,
            "auto_create": t.auto_create,
            "kind": t.kind,
            "startup_seconds": round(t.startup_seconds, 1),
            **t.info,
        }
        for t in targets.started()
    ]
    targets.close()


@pytest.fixture
def compat_record(request):
    """Record this test's row for the report: compat_record(scenario=..., client=..., ...)."""

    def record(**row):
        request.node.user_properties.append(("compat", row))

    return record


@pytest.fixture(scope="session")
def compat_extra():
    """A dict whose entries go into the report (the raw-protocol differential uses it)."""
    return _EXTRA


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call":
        return
    for key, row in item.user_properties:
        if key != "compat":
            continue
        row = dict(row)
        row["outcome"] = _outcome(report)
        row["duration"] = round(report.duration, 1)
        _ROWS.append(row)


def _outcome(report) -> str:
    return report.outcome


def _result(row: dict) -> str:
    if row["kafka"] != "ok":
        return "BROKEN on kafka"
    if row.get("known_difference"):
        return "known difference" if not row["same"] else "STALE known difference"
    return "same" if row["same"] else "DIFFERS"


def _short(status: str) -> str:
    return "ok" if status == "ok" else ("check failed" if status.startswith("check") else "error")


def _table(rows: list[dict]) -> list[str]:
    lines = ["| scenario | client | kafka | wireserver | result |", "|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['scenario']} | {row['client']} | {_short(row['kafka'])} | "
            f"{_short(row['wireserver'])} | {_result(row)} |"
        )
    return lines


#: scenario name prefixes of the "applications and tools" table
TOOL_PREFIXES = ("tool-", "app-")


def _tools_table(rows: list[dict]) -> list[str]:
    """The "applications and tools" table: scenarios named ``tool-<tool>[variant]`` and
    ``app-<application>[variant]`` (compat_tests/scenarios_tools.py, scenarios_apps.py)."""
    mine = [row for row in rows if row["scenario"].startswith(TOOL_PREFIXES)]
    if not mine:
        return []
    lines = [
        "",
        "## Applications and tools",
        "",
        "| tool or application | scenario | kafka | wireserver | result |",
        "|---|---|---|---|---|",
    ]
    for row in sorted(mine, key=lambda r: r["scenario"]):
        name = row["scenario"].split("-", 1)[1]
        scenario = row["scenario"]
        if "->" in row["client"]:  # MirrorMaker 2: the direction tells the runs apart
            scenario += f" ({row['client']})"
        lines.append(
            f"| {name.split('[')[0]} | {scenario} | {_short(row['kafka'])} | "
            f"{_short(row['wireserver'])} | {_result(row)} |"
        )
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _ROWS and not _EXTRA.get("raw"):
        return
    tr = terminalreporter
    tr.section("compatibility: scenario × client × target")
    width = max((len(r["scenario"]) for r in _ROWS), default=10)
    tr.write_line(f"{'scenario':<{width}}  {'client':<16} {'kafka':<13} {'wireserver':<13} result")
    for row in _ROWS:
        tr.write_line(
            f"{row['scenario']:<{width}}  {row['client']:<16} "
            f"{_short(row['kafka']):<13} {_short(row['wireserver']):<13} "
            f"{_result(row)}"
        )
    raw = _EXTRA.get("raw_summary")
    if raw:
        tr.write_line("")
        for line in raw:
            tr.write_line(line)
    path = config.getoption("--compat-report")
    if path:
        Path(path).write_text(_markdown())
        tr.write_line(f"\nreport written to {path}")


def _markdown() -> str:
    rows = _ROWS
    counts: dict[str, int] = {}
    for row in rows:
        counts[_result(row)] = counts.get(_result(row), 0) + 1
    out = [
        "# Compatibility report: wireserver vs Apache Kafka",
        "",
        f"Generated by `scripts/compat` in {time.monotonic() - _STARTED:.0f} s. "
        "Same scenario, same client, both brokers; observations compared after "
        "normalization (see compat_tests/scenarios.py).",
        "",
    ]
    for t in _EXTRA.get("targets", []):
        out.append(
            f"- target `{t['target']}` (auto-create {'on' if t['auto_create'] else 'off'})"
            f": {t['kind']}"
            + (f", Kafka {t['version']}" if t.get("version") else "")
            + f", started in {t['startup_seconds']} s"
        )
    out += ["", "Results: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), ""]
    out += _table(rows)
    out += _tools_table(rows)
    differing = [r for r in rows if _result(r) in ("DIFFERS", "known difference")]
    if differing:
        out += ["", "## Observations that differ", ""]
        for row in differing:
            out += [f"### {row['scenario']} / {row['client']} ({_result(row)})", ""]
            if row.get("known_difference"):
                out.append(f"Known difference: {row['known_difference']}")
            out += [
                "",
                "```",
                "kafka:      " + json.dumps(row["kafka_observation"], sort_keys=True),
                "wireserver: " + json.dumps(row["wireserver_observation"], sort_keys=True),
                f"wireserver status: {row['wireserver']}",
                "```",
                "",
            ]
    raw = _EXTRA.get("raw_markdown")
    if raw:
        out += ["", *raw]
    return "\n".join(out) + "\n"
