"""The example programs of docs/examples/controls (Java, Go, JavaScript, curl) run against a
subprocess broker's /controls: each adds an ``error`` control for Produce, lists the active
controls and undoes it, and what each prints is what the broker answered. The KafkaJS example
(docs/examples/controls/kafkajs, installed here with ``npm ci`` from its lock file) produces
through two injected errors. A missing JDK, go, node, npm or curl skips its example, except
under CI=true, where it fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from wireserver.testing import EmbeddedBroker

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "controls"

#: example → (the tool it needs, its command line, run in EXAMPLES). ``java Example.java``
#: compiles the file in memory with the JDK's compiler, which a JRE lacks: javac tells a JDK.
COMMANDS = {
    "java": ("javac", ["java", "Example.java"]),
    "go": ("go", ["go", "run", "main.go"]),
    "javascript": ("node", ["node", "example.mjs"]),
    "curl": ("curl", ["bash", "example.sh"]),
}

ANSWER = re.compile(r"^(?P<method>POST|GET|DELETE) (?P<url>\S+) (?P<status>\d{3}) ", re.M)


def require(tool: str) -> None:
    if shutil.which(tool) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{tool} is not installed (scripts/test installs it)")
        pytest.skip(f"{tool} is not installed")


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(mode="subprocess") as kafka:
        yield kafka


def run_example(command: list[str], cwd: Path, **environment: str) -> str:
    """Run an example with the environment variables it reads; what it printed."""
    run = subprocess.run(
        command,
        cwd=cwd,
        env=dict(os.environ, **environment),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def answers(output: str) -> list[tuple[str, str, int, dict]]:
    """The (method, url, status, body) lines an example printed; a body may span lines."""
    decoder = json.JSONDecoder()
    found = []
    for match in ANSWER.finditer(output):
        body, _ = decoder.raw_decode(output, match.end())
        found.append((match["method"], match["url"], int(match["status"]), body))
    return found


@pytest.mark.parametrize("example", sorted(COMMANDS))
def test_example_adds_lists_and_undoes_an_error_control(broker, example):
    tool, command = COMMANDS[example]
    require(tool)
    controls_url = broker.ops_url + "/controls"
    output = run_example(
        command, EXAMPLES, WIRESERVER_CONTROLS_URL=controls_url, GOTOOLCHAIN="local"
    )
    printed = answers(output)
    assert [method for method, *_ in printed] == ["POST", "GET", "DELETE"], output
    post, listed, deleted = printed

    method, url, status, added = post
    assert (method, url, status) == ("POST", controls_url, 201)
    assert (added["control"], added["api"], added["error"]) == (
        "error",
        "Produce",
        "NOT_LEADER_OR_FOLLOWER",
    )
    assert added["remaining"] == 3
    control_id = added["id"]

    method, url, status, active = listed
    assert (method, url, status) == ("GET", controls_url, 200)
    assert [control["id"] for control in active["controls"]] == [control_id]

    method, url, status, undone = deleted
    assert (method, url, status) == ("DELETE", f"{controls_url}/{control_id}", 200)
    assert undone["id"] == control_id
    assert broker.controls.active() == []


def test_kafkajs_producer_retries_the_injected_errors(broker):
    """KafkaJS meets NOT_LEADER_OR_FOLLOWER twice on Produce, retries, and its three messages
    are stored once (offsets 0-2, high watermark 3); the control, used up, left the list."""
    require("node")
    require("npm")
    project = EXAMPLES / "kafkajs"
    if not (project / "node_modules" / "kafkajs").is_dir():
        install = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert install.returncode == 0, install.stderr
    output = run_example(
        ["node", "retry.mjs"],
        project,
        WIRESERVER_CONTROLS_URL=broker.ops_url + "/controls",
        WIRESERVER_BOOTSTRAP=broker.bootstrap_servers,
    )
    (_, _, added_status, added), (_, _, listed_status, listed) = answers(output)
    assert added_status == 201 and added["remaining"] == 2
    assert listed_status == 200 and listed["controls"] == []
    sent = json.loads(re.search(r"^SENT (.*)$", output, re.M)[1])
    assert [
        (result["partition"], result["errorCode"], result["baseOffset"]) for result in sent
    ] == [(0, 0, "0")]
    stored = json.loads(re.search(r"^OFFSETS (.*)$", output, re.M)[1])
    assert [(offsets["low"], offsets["high"]) for offsets in stored] == [("0", "3")]
