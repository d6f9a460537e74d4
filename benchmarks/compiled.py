"""wireserver's compiled build (setup.py, ``WIRESERVER_COMPILE=1``) for a broker started from
this checkout: the wheel built with mypyc and unpacked into a folder of its own, which a broker
process imports from instead of the checkout when that folder leads its ``PYTHONPATH``.

The folder is kept under ``~/.cache/wireserver/compiled/`` by a digest of the sources, so a
second benchmark or test run on the same code reuses it (a build takes about a minute of one
core) and a change to any source builds it again. The build runs with this interpreter and its
installed mypy and setuptools (``--no-build-isolation``): the test extras pin the mypy that
checks the code, and that is the one that compiles it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "wireserver" / "compiled"
#: what the build reads: the package's sources and the files that say how to build it
SOURCES = ("wireserver", "protocol", "storage")
BUILD_FILES = ("setup.py", "pyproject.toml", "README.md")


def source_digest() -> str:
    """A digest of every file the build reads (names and contents)."""
    digest = hashlib.sha256(sys.version.encode())
    files = [REPO / name for name in BUILD_FILES]
    for folder in SOURCES:
        files += sorted(p for p in (REPO / folder).rglob("*") if p.is_file() and _is_source(p))
    for path in files:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _is_source(path: Path) -> bool:
    return "__pycache__" not in path.parts and path.suffix not in (".pyc", ".so")


def compiled_tree() -> Path:
    """The folder holding the compiled build of the current sources, built if missing."""
    tree = CACHE / source_digest()
    if (tree / "wireserver" / "__init__.py").is_file():
        return tree
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="wireserver-compile-") as scratch:
        # From a copy: setuptools and mypyc write build/ folders beside the sources.
        source = Path(scratch, "source")
        for folder in SOURCES:
            shutil.copytree(
                REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
            )
        for name in BUILD_FILES:
            shutil.copy(REPO / name, source / name)
        wheels = Path(scratch, "wheels")
        done = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
            + ["--no-build-isolation", "--disable-pip-version-check", "-w", str(wheels), "."],
            cwd=source,
            env={**os.environ, "WIRESERVER_COMPILE": "1"},
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the compiled build failed:\n{done.stdout}\n{done.stderr}")
        (wheel,) = wheels.glob("wireserver-*.whl")
        unpacked = Path(tempfile.mkdtemp(prefix=f"{tree.name}.", dir=CACHE))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(unpacked)
        for member in unpacked.rglob("*.so"):
            member.chmod(0o755)
    try:
        unpacked.rename(tree)
    except OSError:  # another process built it meanwhile
        shutil.rmtree(unpacked, ignore_errors=True)
    return tree


def compiled_environment() -> dict[str, str]:
    """Environment variables under which a ``python -m wireserver.cli`` imports the compiled
    build: its folder first on the path, and not the working directory (``-m`` would put
    that first, and a process started in the checkout would import the sources)."""
    return {"PYTHONPATH": str(compiled_tree()), "PYTHONSAFEPATH": "1"}


if __name__ == "__main__":
    print(compiled_tree())
