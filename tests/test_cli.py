"""The ``wireserver`` command line: config errors exit 2 before anything starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from wireserver import cli
from wireserver.config import BrokerConfig

ROOT = Path(__file__).resolve().parent.parent


def console_script() -> list[str]:
    """The installed ``wireserver`` script beside this interpreter, else ``python -m``."""
    script = Path(sys.executable).parent / "wireserver"
    if script.exists():
        return [str(script)]
    found = shutil.which("wireserver")
    return [found] if found else [sys.executable, "-m", "wireserver.cli"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [*console_script(), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )


def test_bad_override_value_exits_2_naming_the_key():
    result = run("serve", "--override", "num.partitions=abc")
    assert result.returncode == 2, result.stderr
    assert "wireserver: " in result.stderr
    assert "num.partitions" in result.stderr
    assert "Traceback" not in result.stderr


def test_malformed_override_exits_2():
    result = run("serve", "--override", "num.partitions")
    assert result.returncode == 2
    assert "malformed override 'num.partitions'" in result.stderr


def test_missing_config_file_exits_2(tmp_path):
    missing = tmp_path / "server.properties"
    result = run("serve", "--config", str(missing))
    assert result.returncode == 2
    assert f"wireserver: config file {missing} does not exist" in result.stderr


def test_unknown_replica_selector_class_is_refused_at_start():
    # Kafka's ConfigException for a class it cannot load; the rack-aware selector is the one
    # wireserver has (KIP-392).
    result = run("serve", "--override", "replica.selector.class=com.example.NearestSelector")
    assert result.returncode == 2, result.stderr
    assert (
        "Invalid value com.example.NearestSelector for configuration replica.selector.class: "
        "Class com.example.NearestSelector could not be found." in result.stderr
    )


def test_bad_value_in_config_file_names_the_key(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("# broker\nlisteners=PLAINTEXT://localhost\n")
    result = run("serve", "--config", str(path))
    assert result.returncode == 2
    assert "listeners" in result.stderr and "NAME://host:port" in result.stderr


def test_version_prints():
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("wireserver ")
    assert result.stdout.split()[1][0].isdigit()


def test_no_command_prints_usage():
    assert cli.main([]) == 2


def test_unknown_log_level_is_a_usage_error(capsys):
    assert cli.main(["serve", "--log-level", "LOUD"]) == 2
    assert "--log-level" in capsys.readouterr().err


@pytest.fixture
def fake_broker(monkeypatch):
    """Stand-in for wireserver.broker, recording the config it was handed."""
    module = types.ModuleType("wireserver.broker")
    seen: list[BrokerConfig] = []

    def serve_forever(config: BrokerConfig) -> int:
        seen.append(config)
        return 0

    module.serve_forever = serve_forever
    monkeypatch.setitem(sys.modules, "wireserver.broker", module)
    return seen


def test_serve_hands_the_loaded_config_to_the_broker(tmp_path, fake_broker):
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=3\nlog.dirs=" + str(tmp_path / "data") + "\n")
    code = cli.main(
        [
            "serve",
            "--config",
            str(path),
            "--override",
            "num.partitions=5",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "--log-level",
            "debug",
        ]
    )
    assert code == 0
    (config,) = fake_broker
    assert config["num.partitions"] == 5
    assert config.log_dirs == [str(tmp_path / "data")]
    assert config.listeners[0].port == 0


def test_config_error_is_reported_before_the_broker_is_imported(monkeypatch, capsys):
    class Exploding(types.ModuleType):
        def __getattr__(self, name):
            raise AssertionError("broker must not be touched when the config is bad")

    monkeypatch.setitem(sys.modules, "wireserver.broker", Exploding("wireserver.broker"))
    assert cli.main(["serve", "--override", "log.retention.check.interval.ms=0"]) == 2
    assert "log.retention.check.interval.ms" in capsys.readouterr().err


def test_broken_broker_module_is_reported(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "wireserver.broker", None)  # import raises ImportError
    assert cli.main(["serve"]) == 1
    assert "cannot load the broker" in capsys.readouterr().err


def test_plaintext_serve_process_does_not_load_tls_libraries():
    """A broker process without TLS listeners keeps pyOpenSSL/cryptography out of memory
    (about 13 MB of an idle broker); see ``wireserver.cli._reactor_without_tls``. Without the
    operations listener, whose ``prometheus_client`` imports ``ssl``, libssl stays out too."""
    from wireserver.testing import EmbeddedBroker

    with EmbeddedBroker("subprocess", overrides={"metrics.listeners": ""}) as broker:
        with open(f"/proc/{broker.pid}/maps", encoding="utf-8") as handle:
            mapped = handle.read()
        assert "cryptography" not in mapped
        assert "libssl" not in mapped  # the standard ssl module stays out too


@pytest.mark.parametrize("reactor", cli.REACTORS)
def test_serve_on_each_reactor_round_trips_records(reactor):
    """``serve --reactor``: the broker works the same on Twisted's default (epoll) reactor,
    on asyncio's and on asyncio with uvloop, for a real client producing and consuming."""
    import confluent_kafka

    from wireserver.testing import EmbeddedBroker

    with EmbeddedBroker("subprocess", reactor=reactor) as broker:
        with open(f"/proc/{broker.pid}/maps", encoding="utf-8") as handle:
            assert ("uvloop" in handle.read()) == (reactor == "uvloop")
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
            }
        )
        sent = [f"record {i} on {reactor}".encode() for i in range(500)]
        for value in sent:
            producer.produce("reactor-check", value)
        assert producer.flush(30) == 0
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": f"reactor-{reactor}",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["reactor-check"])
        received = []
        deadline = time.monotonic() + 60
        while len(received) < len(sent) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                received.append((message.offset(), message.value()))
        consumer.close()
        assert received == list(enumerate(sent))


def test_serve_with_an_unknown_reactor_is_a_usage_error():
    done = run("serve", "--reactor", "kqueue")
    assert done.returncode == 2
    assert "--reactor" in done.stderr


def test_a_second_serve_on_a_data_dir_in_use_fails_and_the_first_keeps_its_data():
    """Kafka's ``.lock``: a broker started on a log dir another broker is using (a restart
    begun before the old process finished its clean stop, say) refuses to start with Kafka's
    message and touches nothing; the first keeps serving its records, and once it has stopped
    the dir starts again."""
    import confluent_kafka

    from wireserver.testing import EmbeddedBroker

    with EmbeddedBroker("subprocess") as broker:
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "acks": "all"}
        )
        for i in range(100):
            producer.produce("locked", b"%d" % i)
        assert producer.flush(30) == 0
        second = run(
            "serve",
            "--override",
            f"log.dirs={broker.data_dir}",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
        )
        assert second.returncode == 1
        assert (
            f"Failed to acquire lock on file .lock in {broker.data_dir}. A Kafka instance in "
            "another process or thread is using this directory." in second.stderr
        )
        assert end_offset(broker.bootstrap_servers, "locked") == 100
        broker.stop()
        with EmbeddedBroker("subprocess", data_dir=broker.data_dir) as again:
            assert end_offset(again.bootstrap_servers, "locked") == 100


def end_offset(bootstrap: str, topic: str) -> int:
    """The end offset of ``topic``'s partition 0, as a consumer reads it."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "ends"})
    try:
        return consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0), 30)[1]
    finally:
        consumer.close()
