"""Running a user's test file in its own pytest, as a project with wireserver installed would:
the plugin comes from the ``pytest11`` entry point, with no conftest."""

from __future__ import annotations

import json
import textwrap
from typing import Any

#: Every inner run: no cache dir, markers checked (the plugin registers its own), output short.
BASE_ARGS = ("-p", "no:cacheprovider", "--strict-markers", "-q", "-rA")


def run_user_tests(pytester: Any, source: str, *args: str, timeout: float = 240) -> Any:
    """Write ``source`` as ``test_user.py`` and run pytest on it in a new process (a broker's
    reactor thread and ``sys.modules`` are the process's own); the ``RunResult``."""
    pytester.makepyfile(test_user=textwrap.dedent(source))
    return pytester.runpytest_subprocess(*BASE_ARGS, *args, timeout=timeout)


def read_notes(pytester: Any) -> dict[str, Any]:
    """What the user's tests wrote to ``notes.json`` (see ``NOTE``)."""
    return json.loads((pytester.path / "notes.json").read_text())


#: Lets a user test file write down what it saw, for the outer test to compare across tests
#: (``note("brokers", kafka_bootstrap)`` appends to a list in ``notes.json``).
NOTE = """
import json, pathlib

def note(key, value):
    path = pathlib.Path(__file__).with_name("notes.json")
    notes = json.loads(path.read_text()) if path.exists() else {}
    notes.setdefault(key, []).append(value)
    path.write_text(json.dumps(notes))
"""
