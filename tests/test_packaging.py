"""The installed distribution has one top-level import name, ``wireserver``: the repository's
``protocol/`` and ``storage/`` folders install as ``wireserver.protocol`` and
``wireserver.storage``, so a user's own ``protocol.py`` and ``storage.py`` still import.

The wheel is built from this checkout and installed (with its dependencies) into a fresh
virtualenv; the check runs there, in a folder holding the user's two modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHECK = textwrap.dedent("""
    import importlib, pkgutil, sys
    import protocol, storage
    assert protocol.MINE == "user protocol" and storage.MINE == "user storage", (protocol, storage)

    import wireserver
    names = [m.name for m in pkgutil.walk_packages(wireserver.__path__, "wireserver.")]
    for name in names:
        importlib.import_module(name)   # a stray top-level 'protocol' import would fail here
    assert {"wireserver.protocol.records", "wireserver.storage.log",
            "wireserver.testing.plugin"} <= set(names), names
    assert sys.modules["protocol"].MINE == "user protocol"

    from wireserver.testing import EmbeddedBroker
    with EmbeddedBroker() as kafka:
        kafka.create_topic("packaged", partitions=2)
        assert kafka.topics() == ["packaged"]
    print("imported", len(names), "modules")
""")


def test_pyproject_lists_every_package():
    """The wheel's packages are listed by hand (two of them are mapped from other folders): a
    package added to the tree must be added there too."""
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(("wireserver", *init.parent.relative_to(ROOT / "wireserver").parts))
        for init in (ROOT / "wireserver").rglob("__init__.py")
    }
    found |= {"wireserver.protocol", "wireserver.storage"}
    assert listed == found


def run(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.integration
def test_wheel_installs_one_import_name_beside_users_protocol_and_storage(tmp_path):
    # Built from a copy: setuptools keeps a build/ folder beside the sources, and a module
    # deleted since an earlier build would still be in it.
    source = tmp_path / "source"
    for part in ("wireserver", "protocol", "storage"):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, source / part)
    wheels = tmp_path / "wheels"
    run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(source)
    )
    (wheel,) = wheels.glob("wireserver-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", str(venv))
    python = venv / "bin" / "python"
    run(str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel))
    top_level = run(
        str(python),
        "-c",
        "import importlib.metadata as m; "
        "print(m.distribution('wireserver').read_text('top_level.txt') or '')",
    )
    assert top_level.split() in ([], ["wireserver"])

    app = tmp_path / "app"
    app.mkdir()
    (app / "protocol.py").write_text('MINE = "user protocol"\n')
    (app / "storage.py").write_text('MINE = "user storage"\n')
    out = run(str(python), "-c", CHECK, cwd=app)
    assert out.startswith("imported")
    assert run(str(venv / "bin" / "wireserver"), "--help").count("serve") >= 1
