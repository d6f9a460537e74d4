"""benchmarks.compare.write_section: the one writer of benchmarks/results.md's sections."""

from __future__ import annotations

from benchmarks.compare import write_section


def test_rewriting_a_section_replaces_it_and_keeps_the_spacing(tmp_path):
    path = tmp_path / "results.md"
    path.write_text("# Results\n\nintro\n\n## A\n\nold a\n\n\n\n## B\n\nb\n")
    write_section(path, "## A", ["new a", "", "more"])
    once = path.read_text()
    assert once == "# Results\n\nintro\n\n## A\n\nnew a\n\nmore\n\n## B\n\nb\n"
    write_section(path, "## A", ["new a", "", "more"])
    write_section(path, "## B", ["b"])
    assert path.read_text() == once  # no blank line gained per run
    write_section(path, "## C", ["c"])
    assert path.read_text() == once + "\n## C\n\nc\n"


def test_the_comparison_keeps_the_other_sections_and_their_spacing_run_after_run(tmp_path):
    import datetime

    from benchmarks.compare import DEFAULT, Pinning, write_results

    path = tmp_path / "results.md"
    path.write_text("# old table\n\n## A\n\na\n\n\n## B\n\nb\n")

    def run() -> str:
        write_results(
            path,
            ["x"],
            datetime.datetime(2026, 12, 5, tzinfo=datetime.UTC),
            1.0,
            Pinning(None, None),
            DEFAULT,
            False,
            ["| t |"],
            [],
            "0.1",
        )
        return path.read_text()

    once = run()
    assert once.endswith("\n## A\n\na\n\n## B\n\nb\n")
    assert "# old table" not in once
    assert run() == once  # no blank line gained per run
