"""The build, as pyproject.toml describes it, plus an optional compiled one.

With ``WIRESERVER_COMPILE=1`` in the environment the modules a Produce or a Fetch passes
through (``COMPILED``) are compiled with mypyc into extension modules that the wheel carries
beside their sources, which Python imports first. mypyc turns each module's annotated Python
into C; a request then spends about two fifths less time in the interpreter (the figures are
in benchmarks/results.md). Without the variable the build is pure Python, as an editable
install needs: an extension module built in place would hide later edits of its source.

mypyc enforces a compiled module's annotations at run time (a value of another type raises
``TypeError`` where the interpreter would go on), so only modules whose annotations hold are
listed, and the tests run against the compiled build too (tests/test_compiled_build.py).

mypy finds modules by their folders, and ``wireserver.protocol`` / ``wireserver.storage`` live
beside ``wireserver/`` in the repository: the compiled modules are compiled from a copy of the
tree laid out as installed (``build/mypyc-src``).
"""

from __future__ import annotations

import os
import shutil

from setuptools import setup

#: Every module of the Produce and Fetch paths: socket to segment and back.
COMPILED = [
    "wireserver/server.py",
    "wireserver/zero_copy.py",
    "wireserver/metrics.py",
    "wireserver/purgatory.py",
    "wireserver/apis/produce.py",
    "wireserver/apis/fetch.py",
    "wireserver/fetch_sessions.py",
    "wireserver/replica/partition.py",
    "wireserver/replica/manager.py",
    "wireserver/protocol/encoding.py",
    "wireserver/protocol/framing.py",
    "wireserver/protocol/messages.py",
    "wireserver/protocol/records.py",
    "wireserver/protocol/produce_request.py",
    "wireserver/protocol/fetch_request.py",
    "wireserver/protocol/produce_response.py",
    "wireserver/protocol/fetch_response.py",
    "wireserver/storage/batches.py",
    "wireserver/storage/epochs.py",
    "wireserver/storage/index.py",
    "wireserver/storage/log.py",
    "wireserver/storage/open_files.py",
    "wireserver/storage/producer_state.py",
    "wireserver/storage/segment.py",
    "wireserver/storage/validation.py",
]

#: The mypy that compiles them: the one the test extras pin, which checks the code too.
MYPY = "mypy==2.4.1"

LAYOUT = os.path.join("build", "mypyc-src")


def lay_out_installed() -> None:
    """Copy the sources into ``LAYOUT`` as they install (``protocol/`` and ``storage/`` inside
    ``wireserver/``), with pyproject.toml for mypy's settings."""
    shutil.rmtree(LAYOUT, ignore_errors=True)
    ignored = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so")
    shutil.copytree("wireserver", os.path.join(LAYOUT, "wireserver"), ignore=ignored)
    for folder in ("protocol", "storage"):
        shutil.copytree(folder, os.path.join(LAYOUT, "wireserver", folder), ignore=ignored)
    shutil.copy("pyproject.toml", os.path.join(LAYOUT, "pyproject.toml"))


def compiled_extensions() -> list:
    try:
        from mypyc.build import mypycify
    except ImportError:
        raise SystemExit(
            f"WIRESERVER_COMPILE=1 compiles with mypyc, which comes with mypy: install "
            f"{MYPY}, setuptools and wheel, then build with pip's --no-build-isolation"
        ) from None
    lay_out_installed()
    here = os.getcwd()
    os.chdir(LAYOUT)
    try:
        extensions = mypycify(
            ["--config-file", "pyproject.toml", *COMPILED],
            opt_level="3",
            target_dir=os.path.join(here, "build", "mypyc-c"),
        )
    finally:
        os.chdir(here)
    return extensions


setup(ext_modules=compiled_extensions() if os.environ.get("WIRESERVER_COMPILE") == "1" else [])
