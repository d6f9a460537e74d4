"""The repository is self-contained: a fresh clone anywhere runs its tests, so no code or test
reads files beside the checkout (such as a ``shared`` folder next to it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\.\./shared|parents\[\d\]\.parent|\"shared\"\s*/|/\s*\"shared\"")


SKIPPED_DIRS = {".venv", ".git", "build", "dist", "__pycache__", ".pytest_cache"}


def project_code() -> list[Path]:
    """Python files, the scripts and the CI entry point (virtualenvs and build output aside)."""
    found = [*ROOT.glob("scripts/*"), *ROOT.glob(".ci/*")]
    found += [
        path
        for path in ROOT.rglob("*.py")
        if not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts)
    ]
    return [path for path in found if path.is_file()]


def test_no_code_reads_outside_the_repository():
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in project_code()
        if path.name != "test_repository.py"
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert offenders == []
