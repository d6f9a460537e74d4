"""The code's habits, checked where the tests run: ruff's lint rules and its formatting, and
mypy over the typed parts (the request context, the API handlers, the partition layer, batch
validation). Their settings are in pyproject.toml.

No test module imports another test module: importing one runs its module-level code and makes
pytest's collection order matter, so helpers that several test modules share live in helper
modules beside them (tests/cluster/topics.py, tests/txn/helpers.py, ...).

mypy reads packages from folders, and ``wireserver.protocol`` / ``wireserver.storage`` live
beside ``wireserver/`` in the repository: it checks a copy of the tree laid out as installed."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")
TEST_FOLDERS = ("tests", "compat_tests")


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


def is_test_module(dotted: str) -> bool:
    """Whether ``dotted`` names a ``test_*.py`` file in the repository."""
    parts = dotted.split(".")
    return parts[-1].startswith("test_") and ROOT.joinpath(*parts).with_suffix(".py").is_file()


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module the file at ``path`` imports, with its line; relative imports resolved
    against the file's package, and ``from package import name`` counted as importing
    ``package.name`` too (the name may be a module)."""
    package = path.relative_to(ROOT).parent.parts
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def test_no_test_module_imports_another_test_module():
    offending = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for folder in TEST_FOLDERS
        for path in sorted((ROOT / folder).rglob("test_*.py"))
        for line, module in imported_modules(path)
        if is_test_module(module)
    ]
    assert not offending, "\n".join(offending)
