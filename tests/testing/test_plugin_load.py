"""Having wireserver installed costs a project's unrelated tests nothing: pytest loads the
plugin in every session, and loading it imports no Twisted, no Kafka client and no broker;
neither does a session whose tests use none of its fixtures. Only a test that takes a broker
pulls them in (checked too, so that the check itself can fail)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.testing.userrun import run_user_tests

#: Top-level packages and modules a session that starts no broker must not import.
HEAVY = ("twisted", "kafka", "confluent_kafka", "aiokafka", "kazoo", "prometheus_client")
HEAVY_MODULES = ("wireserver.broker", "wireserver.server", "wireserver.config")

#: ``heavy_modules()``: which of those this process has imported.
HEAVY_CHECK = f"""
import json, sys

def heavy_modules():
    return sorted(
        name for name in sys.modules
        if name.split(".")[0] in {HEAVY!r} or name in {HEAVY_MODULES!r}
    )
"""

#: A user's conftest writing down, as the session ends, what it imported.
RECORDING_CONFTEST = (
    HEAVY_CHECK
    + """
def pytest_sessionfinish(session):
    with open("loaded.json", "w") as out:
        json.dump({"heavy": heavy_modules(),
                   "plugin": "wireserver.testing.plugin" in sys.modules}, out)
"""
)


def test_importing_the_plugin_imports_nothing_heavy():
    code = HEAVY_CHECK + "import wireserver.testing.plugin\nprint(json.dumps(heavy_modules()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


UNRELATED_TESTS = """
import pytest

@pytest.mark.parametrize("word", ["kafka", "broker"])
def test_words(word, tmp_path):
    (tmp_path / "w").write_text(word)
    assert (tmp_path / "w").read_text() == word
"""


def test_a_session_using_no_fixture_imports_nothing_heavy(pytester):
    pytester.makeconftest(RECORDING_CONFTEST)
    result = run_user_tests(pytester, UNRELATED_TESTS)
    result.assert_outcomes(passed=2)
    loaded = json.loads((pytester.path / "loaded.json").read_text())
    assert loaded == {"heavy": [], "plugin": True}


def test_a_session_taking_a_broker_does_import_it(pytester):
    """The same recording, in a session that starts a broker: the check sees the imports."""
    pytester.makeconftest(RECORDING_CONFTEST)
    result = run_user_tests(
        pytester,
        """
        def test_topic(kafka_broker):
            kafka_broker.create_topic("seen")
            assert kafka_broker.topics() == ["seen"]
        """,
    )
    result.assert_outcomes(passed=1)
    heavy = json.loads((pytester.path / "loaded.json").read_text())["heavy"]
    assert {"twisted", "kafka", "wireserver.broker"} <= set(heavy)


def test_the_marker_is_registered(pytester):
    result = pytester.runpytest_subprocess("--markers")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["@pytest.mark.wireserver(overrides=*brokers=N*"])
