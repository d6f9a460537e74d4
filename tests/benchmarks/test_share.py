"""benchmarks.share --quick against a real wireserver process with Kafka's own
KafkaShareConsumer JVMs: the "Share groups" section of the results file gets a figure in every
row, the other sections stay, and the members together saw each record once (the figures
themselves are not judged)."""

from __future__ import annotations

import re

import pytest

from benchmarks.share import QUICK_RECORDS, MemberReport, exactly_once_problem, main

pytestmark = pytest.mark.integration


def report(runs: list[tuple[int, int]], redelivered: int = 0) -> MemberReport:
    records = sum(last - first + 1 for first, last in runs)
    return MemberReport(records, 1, 2, 0, redelivered, 0, runs, [1000])


def test_exactly_once_names_what_is_missing_doubled_or_redelivered():
    assert exactly_once_problem([report([(0, 4)]), report([(5, 9)])], 10) == ""
    assert exactly_once_problem([report([(0, 4)]), report([(4, 8)])], 10) == (
        "1 offsets never seen, 1 offsets seen twice"
    )
    assert exactly_once_problem([report([(0, 9)], redelivered=2)], 10) == ("2 records redelivered")


def test_quick_run_writes_the_share_groups_section_with_figures(tmp_path):
    results = tmp_path / "results.md"
    results.write_text("# Results\n\nintro\n\n## Other\n\nkept\n")

    assert main(["--quick", "--no-pin", "--targets", "wireserver", "--output", str(results)]) == 0

    text = results.read_text()
    assert "## Other\n\nkept\n" in text
    section = text.split("## Share groups\n", 1)[1]
    assert f"{QUICK_RECORDS:,} records of 1 KB" in section
    rows = [line for line in section.splitlines() if line.startswith("| share consume")]
    assert len(rows) == 12, section
    for row in rows:
        wireserver = row.split(" | ")[3]  # workload, unit, Kafka, wireserver, ratio, better
        assert (
            re.match(r"[\d,.]+", wireserver) and float(wireserver.split()[0].replace(",", "")) > 0
        ), row
    (split,) = re.findall(r"records per member: ([\d,/ ]+)\)", section)
    per_member = [int(n.replace(",", "")) for n in split.split(" / ")]
    assert len(per_member) == 4 and sum(per_member) == QUICK_RECORDS
    assert "Failures" not in section
