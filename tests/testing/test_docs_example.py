"""The pytest example in docs/testing.md, run as a user's test file: the page shows what works."""

from __future__ import annotations

import pathlib
import re

from tests.testing.userrun import run_user_tests

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def pytest_example() -> str:
    """The page's first Python block that imports pytest (the "pytest" section)."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    return next(block for block in blocks if block.startswith("import pytest"))


def test_the_documented_pytest_example_passes(pytester):
    result = run_user_tests(pytester, pytest_example())
    result.assert_outcomes(passed=3)
