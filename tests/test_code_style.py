"""The code's habits, checked where the tests run: ruff's lint rules and its formatting, and
mypy over the typed parts (the request context, the API handlers, the partition layer, batch
validation). Their settings are in pyproject.toml.

mypy reads packages from folders, and ``wireserver.protocol`` / ``wireserver.storage`` live
beside ``wireserver/`` in the repository: it checks a copy of the tree laid out as installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_ruff_finds_nothing():
    done = run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_is_formatted_as_ruff_formats_it():
    done = run("ruff", "format", "--check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing_in_the_typed_parts(tmp_path):
    installed = tmp_path / "wireserver"
    shutil.copytree(ROOT / "wireserver", installed, ignore=IGNORED)
    shutil.copytree(ROOT / "protocol", installed / "protocol", ignore=IGNORED)
    shutil.copytree(ROOT / "storage", installed / "storage", ignore=IGNORED)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    done = run("mypy", "--config-file", "pyproject.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
