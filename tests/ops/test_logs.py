"""The logs an operator reads: Kafka's request log (``kafka.request.logger``), off unless
turned on by ``--log-level kafka.request.logger=DEBUG`` or a ``--log-config`` file, and
DeleteRecords as the partition log words it.

The state changes of the other areas are asserted where those areas are tested: rolls and
retention in tests/integration/test_storage_lifecycle.py, the cleaner in
tests/integration/test_log_cleaner.py, group rebalances in tests/groups/, elections, ISR
changes and truncation in tests/cluster/test_leadership.py and test_failures.py.
"""

from __future__ import annotations

import json
import logging
import re

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.integration.raw import ensure_topic, fetch, produce, produce_errors, v2_batch
from wireserver import cli, request_log
from wireserver.metrics import request_times_ms
from wireserver.protocol.messages import decode_request
from wireserver.protocol.served import SERVED
from wireserver.testing import EmbeddedBroker, KafkaWire, wait_for

pytestmark = pytest.mark.integration

SECRET = b"secret-value-never-logged"
COMPLETED = re.compile(r"Completed request:(\{.*\})$", re.M)
TIMINGS = {
    "totalTimeMs": 2.5,
    "requestQueueTimeMs": 0.1,
    "localTimeMs": 1.2,
    "remoteTimeMs": 0.9,
    "throttleTimeMs": 0,
    "responseQueueTimeMs": 0.2,
    "sendTimeMs": 0.1,
}


@pytest.fixture
def logging_state():
    """Put back what configure_logging changes in this process: levels and root handlers."""
    root = logging.getLogger()
    request = logging.getLogger(request_log.REQUEST_LOGGER_NAME)
    saved = (root.level, list(root.handlers), request.level, request.propagate)
    yield
    root.setLevel(saved[0])
    root.handlers[:] = saved[1]
    request.setLevel(saved[2])
    request.propagate = saved[3]


def decoded(request, correlation_id=7, client_id="logs-test"):
    """A kafka-python request as the server decodes it from the wire."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return decode_request(memoryview(request.encode(header=True)), SERVED)


def completed_lines(text: str) -> list[dict]:
    return [json.loads(m.group(1)) for m in COMPLETED.finditer(text)]


# -- the request log over a real broker ---------------------------------------------------------


def produce_one(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    delivered = []
    producer.produce(topic, SECRET, key=b"k", on_delivery=lambda err, _: delivered.append(err))
    producer.flush(10)
    assert delivered == [None]


def test_the_request_log_is_off_by_default():
    """A broker started as usual (even at DEBUG) writes no request line for a produce."""
    with EmbeddedBroker("subprocess", log_level="DEBUG") as broker:
        produce_one(broker.bootstrap_servers, "quiet")
        log = broker.log_text()
    assert "Leader quiet-0 with topic id" in log  # the broker did log
    assert "kafka.request.logger" not in log and "Completed request:" not in log


def test_the_request_log_turned_on_by_the_cli_logs_each_request_without_records():
    with EmbeddedBroker("subprocess", log_level=["INFO", "kafka.request.logger=DEBUG"]) as broker:
        produce_one(broker.bootstrap_servers, "loud")
        lines = wait_for(
            lambda: [
                line
                for line in completed_lines(broker.log_text())
                if line["requestHeader"]["requestApiKeyName"] == "PRODUCE"
            ],
            10,
            what="the produce's request line",
        )
        log = broker.log_text()
    line = lines[0]
    assert set(request_log.TIMING_NAMES) <= set(line)
    assert line["listener"] == "PLAINTEXT" and line["securityProtocol"] == "PLAINTEXT"
    assert line["principal"] == "User:ANONYMOUS"
    assert SECRET.decode() not in log


# -- what one request line says -----------------------------------------------------------------


def test_a_completed_request_in_kafkas_json(caplog):
    caplog.set_level(logging.DEBUG, logger=request_log.REQUEST_LOGGER_NAME)
    request = decoded(produce("t", {0: v2_batch([SECRET, SECRET, b"x"])}, acks=-1))
    request_log.log_completed(
        request,
        "127.0.0.1:50000",
        "PLAINTEXT",
        "User:ANONYMOUS",
        TIMINGS,
        client_information=("librdkafka", "2.6.0"),
        connection="127.0.0.1:9092-127.0.0.1:50000-3",
    )
    (record,) = caplog.records
    assert record.name == "kafka.request.logger" and record.levelno == logging.DEBUG
    (line,) = completed_lines(record.getMessage())
    assert line == {
        "isForwarded": False,
        "requestHeader": {
            "requestApiKey": 0,
            "requestApiVersion": request.api_version,
            "correlationId": 7,
            "clientId": "logs-test",
            "requestApiKeyName": "PRODUCE",
        },
        # at DEBUG, as in Kafka's log4j setup, no bodies
        "request": "",
        "response": "",
        "connection": "127.0.0.1:9092-127.0.0.1:50000-3",
        **TIMINGS,
        "securityProtocol": "PLAINTEXT",
        "principal": "User:ANONYMOUS",
        "listener": "PLAINTEXT",
        "clientInformation": {"softwareName": "librdkafka", "softwareVersion": "2.6.0"},
    }


def test_at_trace_the_bodies_are_there_but_never_record_data(caplog):
    caplog.set_level(request_log.TRACE, logger=request_log.REQUEST_LOGGER_NAME)
    with EmbeddedBroker("thread") as broker:
        wire = KafkaWire(broker.bootstrap_servers)
        try:
            batch = v2_batch([SECRET, SECRET, b"x"])
            produce_request = produce("t", {0: batch}, acks=-1)
            ensure_topic(wire, "t")
            assert produce_errors(wire.request(produce_request)) == {0: 0}
            wire.request(fetch("t", 0, 0))
        finally:
            wire.close()
    # the broker's own lines (the server logs every request it answered)
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "kafka.request.logger")
    assert SECRET.decode() not in text
    lines = completed_lines(text)
    produce_line = next(
        line for line in lines if line["requestHeader"]["requestApiKeyName"] == "PRODUCE"
    )
    fetch_line = next(
        line for line in lines if line["requestHeader"]["requestApiKeyName"] == "FETCH"
    )
    (topic,) = produce_line["request"]["topicData"]
    assert topic["name"] == "t"
    assert topic["partitionData"] == [
        {"index": 0, "recordsSizeInBytes": len(batch), "recordCount": 3}
    ]
    assert produce_line["request"]["acks"] == -1
    assert fetch_line["request"]["topics"][0]["topic"] == "t"
    (fetched,) = fetch_line["response"]["responses"][0]["partitions"]
    assert fetched["partitionIndex"] == 0 and fetched["highWatermark"] == 3
    assert fetched["recordsSizeInBytes"] == len(batch) and "records" not in fetched


def test_sensitive_config_values_are_hidden(caplog):
    """As Kafka's ``loggableRequest``: a password's value (and any unknown key's) reads
    ``[hidden]``; a known topic config shows."""
    caplog.set_level(request_log.TRACE, logger=request_log.REQUEST_LOGGER_NAME)
    cls = SERVED.get(44).request_class
    resource, config = cls.AlterConfigsResource, cls.AlterConfigsResource.AlterableConfig
    request = cls(
        version=1,
        resources=[
            resource(
                resource_type=ConfigResource.Type.BROKER.value,
                resource_name="1",
                configs=[
                    config(name="ssl.keystore.password", config_operation=0, value="hunter2"),
                    config(name="log.retention.ms", config_operation=0, value="1000"),
                ],
            ),
            resource(
                resource_type=ConfigResource.Type.TOPIC.value,
                resource_name="t",
                configs=[
                    config(name="retention.ms", config_operation=0, value="5000"),
                    config(name="made.up", config_operation=0, value="hunter3"),
                ],
            ),
        ],
        validate_only=False,
    )
    request_log.log_completed(decoded(request), "h:1", "PLAINTEXT", "User:ANONYMOUS", {})
    (line,) = completed_lines(caplog.records[0].getMessage())
    values = {c["name"]: c["value"] for r in line["request"]["resources"] for c in r["configs"]}
    assert values == {
        "ssl.keystore.password": "[hidden]",
        "log.retention.ms": "1000",
        "retention.ms": "5000",
        "made.up": "[hidden]",
    }
    assert "hunter" not in caplog.records[0].getMessage()


def test_timings_are_kafkas_from_the_servers_clock_readings():
    """The server's perf_counter readings (seconds) become Kafka's times in ms."""
    times = request_log.timings_ms(request_times_ms(10.0, 10.001, 10.003, 10.010, 10.012, 10.0125))
    assert {name: round(value, 3) for name, value in times.items()} == {
        "totalTimeMs": 12.5,
        "requestQueueTimeMs": 1.0,
        "localTimeMs": 2.0,
        "remoteTimeMs": 7.0,
        "throttleTimeMs": 0,
        "responseQueueTimeMs": 2.0,
        "sendTimeMs": 0.5,
    }
    assert list(times) == list(request_log.TIMING_NAMES)


def test_off_means_one_cheap_check_and_nothing_logged(caplog):
    caplog.set_level(logging.INFO)  # the root at INFO: the request logger stays at WARNING
    assert not request_log.enabled()
    request_log.log_completed(decoded(produce("t", {0: v2_batch([b"a"])})), "h:1", "L", "P", {})
    assert not [r for r in caplog.records if r.name == "kafka.request.logger"]


# -- turning it on ---------------------------------------------------------------------------


def test_log_level_takes_a_root_level_and_logger_levels(logging_state):
    args = cli.build_parser().parse_args(
        ["serve", "--log-level", "warning", "--log-level", "kafka.request.logger=debug"]
    )
    assert args.log_level == [("", "WARNING"), ("kafka.request.logger", "DEBUG")]
    cli.configure_logging(args.log_level)
    assert logging.getLogger().level == logging.WARNING
    assert request_log.enabled() and not request_log.request_logger.isEnabledFor(request_log.TRACE)
    cli.configure_logging([("kafka.request.logger", "TRACE")])
    assert request_log.request_logger.isEnabledFor(request_log.TRACE)
    cli.configure_logging([("", "DEBUG")])  # a DEBUG root does not turn the request log on
    assert not request_log.enabled()


def test_a_bad_level_is_a_usage_error(capsys):
    assert cli.main(["serve", "--log-level", "kafka.request.logger=LOUD"]) == 2
    assert "--log-level" in capsys.readouterr().err


def test_a_log_config_file_turns_the_request_log_on(tmp_path, logging_state):
    path = tmp_path / "logging.ini"
    path.write_text(
        "[loggers]\nkeys=root,request\n\n"
        "[handlers]\nkeys=stderr\n\n"
        "[formatters]\nkeys=plain\n\n"
        "[logger_root]\nlevel=INFO\nhandlers=stderr\n\n"
        "[logger_request]\nlevel=DEBUG\nhandlers=\npropagate=1\nqualname=kafka.request.logger\n\n"
        "[handler_stderr]\nclass=StreamHandler\nformatter=plain\nargs=(sys.stderr,)\n\n"
        "[formatter_plain]\nformat=%(asctime)s %(levelname)s %(name)s: %(message)s\n"
    )
    cli.configure_logging([], str(path))
    assert request_log.enabled()
    cli.configure_logging([("kafka.request.logger", "WARNING")], str(path))  # flags win
    assert not request_log.enabled()


def test_the_documented_log_config_file_turns_the_request_log_on(logging_state):
    cli.configure_logging([], "config/logging.ini")
    assert request_log.enabled()
    assert logging.getLogger().level == logging.INFO


# -- DeleteRecords, as the partition log words it -----------------------------------------------


def test_delete_records_moves_the_log_start_in_kafkas_words(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    with EmbeddedBroker(
        "thread", data_dir=str(tmp_path), overrides={"log.retention.check.interval.ms": 200}
    ) as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("trimmed", 1, 1, config={"internal.segment.bytes": "200"})])[
            "trimmed"
        ].result(10)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        for _ in range(6):
            producer.produce("trimmed", b"z" * 100, partition=0)
            producer.flush(10)  # a batch each: a segment each
        wire = KafkaWire(bootstrap)
        try:
            cls = SERVED.get(21).request_class
            topic = cls.DeleteRecordsTopic
            response = wire.request(
                cls(
                    version=2,
                    topics=[
                        topic(
                            name="trimmed",
                            partitions=[topic.DeleteRecordsPartition(partition_index=0, offset=4)],
                        )
                    ],
                    timeout_ms=10000,
                )
            )
        finally:
            wire.close()
        assert response.topics[0].partitions[0].low_watermark == 4
        ident = f"[UnifiedLog partition=trimmed-0, dir={tmp_path}]"
        lines = wait_for(
            lambda: (
                (
                    m := [
                        r.getMessage() for r in caplog.records if r.name == "wireserver.storage.log"
                    ]
                )
                and any("Deleting segments due to log start offset 4 breach" in line for line in m)
                and m
            ),
            10,
            what="the segments below the new log start to go",
        )
    assert (
        f"{ident} Incremented log start offset to 4 due to client delete records request" in lines
    )
    segment = r"LogSegment\(baseOffset=(\d+), size=\d+, lastModifiedTime=\d+, largestRecordTimestamp=\d+\)"
    (deleted,) = [
        m
        for line in lines
        if (
            m := re.fullmatch(
                rf"{re.escape(ident)} Deleting segments due to log start offset 4 breach: "
                rf"({segment}(,{segment})*)",
                line,
            )
        )
    ]
    assert re.findall(r"baseOffset=(\d+)", deleted.group(1)) == ["0", "1", "2", "3"]
