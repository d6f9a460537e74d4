"""``kafka_broker`` as a project's tests see it, driven with kafka-python: each test starts
with no topics, a fresh broker per test in thread mode (one shared broker when asked, and in
subprocess mode), and ``@pytest.mark.wireserver`` giving a test a broker of its own with the
settings it names, closed after it."""

from __future__ import annotations

import os
import socket
import textwrap

import pytest

from tests.testing.userrun import NOTE, read_notes, run_user_tests
from wireserver.testing.plugin import BrokerWish, parse_fresh, read_marker

ISOLATION_TESTS = (
    NOTE
    + """
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient


def test_first_leaves_records_and_a_group(kafka_broker, kafka_bootstrap):
    note("brokers", kafka_bootstrap)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    for value in (b"a", b"b", b"c"):
        producer.send("orders", value).get(10)
    producer.close()
    consumer = KafkaConsumer(
        "orders", bootstrap_servers=kafka_bootstrap, group_id="billing",
        auto_offset_reset="earliest", consumer_timeout_ms=10000,
    )
    assert [next(consumer).value for _ in range(3)] == [b"a", b"b", b"c"]
    consumer.commit()
    consumer.close()
    assert kafka_broker.topics() == ["orders"]


def test_second_starts_with_no_topics(kafka_broker, kafka_bootstrap):
    note("brokers", kafka_bootstrap)
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    note("topics", [name for name in admin.list_topics() if not name.startswith("__")])
    note("groups", sorted(group["group_id"] for group in admin.list_groups()))
    admin.close()
    assert kafka_broker.topics() == []


def test_the_session_broker(kafka_broker_session):
    note("session", kafka_broker_session.bootstrap_servers)
"""
)


@pytest.mark.parametrize(
    "args, fresh",
    [
        ((), True),
        (("--wireserver-fresh=false",), False),
        (("--wireserver-mode=subprocess",), False),
        (("--wireserver-mode=subprocess", "--wireserver-fresh"), True),
    ],
    ids=["thread", "thread-shared", "subprocess", "subprocess-fresh"],
)
def test_each_test_starts_clean(pytester, args, fresh):
    result = run_user_tests(pytester, ISOLATION_TESTS, *args)
    result.assert_outcomes(passed=3)
    notes = read_notes(pytester)
    first, second = notes["brokers"]
    assert notes["topics"] == [[]]  # kafka-python's own view
    if fresh:
        assert first != second  # a broker of its own each
        assert notes["session"] != [first]
        assert notes["groups"] == [[]]  # its consumer group went with its broker
    else:
        assert first == second == notes["session"][0]


def test_fresh_as_the_ini_says(pytester):
    pytester.makeini("[pytest]\nwireserver_fresh = false\n")
    result = run_user_tests(pytester, ISOLATION_TESTS)
    result.assert_outcomes(passed=3)
    first, second = read_notes(pytester)["brokers"]
    assert first == second


MARKED_TESTS = (
    NOTE
    + """
import os

import pytest
from kafka import KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient


def partitions_of_a_new_topic(bootstrap):
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send("auto-created", b"x").get(10)
    count = len(producer.partitions_for("auto-created"))
    producer.close()
    return count


def broker_setting(broker, key):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    resource = ConfigResource(ConfigResourceType.BROKER, str(broker.node_id), {key: None})
    found = admin.describe_configs([resource], config_filter="all")
    admin.close()
    return found["broker"][str(broker.node_id)][key]["value"]


@pytest.mark.wireserver(overrides={"num.partitions": 7, "log.retention.ms": 123456})
def test_marked(kafka_broker, kafka_bootstrap, kafka_broker_session):
    note("marked", kafka_bootstrap)
    assert kafka_bootstrap != kafka_broker_session.bootstrap_servers
    assert broker_setting(kafka_broker, "log.retention.ms") == "123456"
    assert broker_setting(kafka_broker, "num.partitions") == "7"
    assert partitions_of_a_new_topic(kafka_bootstrap) == 7


def test_unmarked(kafka_broker, kafka_bootstrap, kafka_broker_session):
    assert kafka_bootstrap == kafka_broker_session.bootstrap_servers
    assert broker_setting(kafka_broker, "num.partitions") == "1"
    assert partitions_of_a_new_topic(kafka_bootstrap) == 1


@pytest.mark.wireserver(mode="subprocess", overrides={"num.partitions": 2})
def test_marked_subprocess(kafka_broker, kafka_bootstrap):
    assert kafka_broker.mode == "subprocess" and kafka_broker.pid != os.getpid()
    note("subprocess", [kafka_bootstrap, kafka_broker.pid])
    assert partitions_of_a_new_topic(kafka_bootstrap) == 2


@pytest.mark.wireserver(overrides={"num.partitions": 3})
class TestMarkedClass:
    def test_one(self, kafka_broker, kafka_bootstrap):
        note("class", kafka_bootstrap)
        assert partitions_of_a_new_topic(kafka_bootstrap) == 3

    def test_two(self, kafka_broker, kafka_bootstrap):
        note("class", kafka_bootstrap)
        assert kafka_broker.topics() == []
"""
)


def refused(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_a_marked_test_has_its_own_broker_with_its_settings(pytester):
    """Shared mode, so that the unmarked test's broker is the session's and the marked ones'
    are not; each marked broker is gone once its test is over."""
    result = run_user_tests(pytester, MARKED_TESTS, "--wireserver-fresh=false")
    result.assert_outcomes(passed=5)
    notes = read_notes(pytester)
    [marked] = notes["marked"]
    [[subprocess_bootstrap, pid]] = notes["subprocess"]
    assert len(set(notes["class"])) == 2  # the class's marker: a broker per test
    for bootstrap in (marked, subprocess_bootstrap, *notes["class"]):
        assert refused(bootstrap)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


OFFSETS_TOPIC = """
import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient


def offsets_topic_partitions(bootstrap):
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send("t", b"x").get(10)
    producer.close()
    consumer = KafkaConsumer("t", bootstrap_servers=bootstrap, group_id="g",
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    next(consumer)
    consumer.commit()
    consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    [topic] = admin.describe_topics(["__consumer_offsets"])
    admin.close()
    return len(topic["partitions"])


def test_options(kafka_bootstrap):
    assert offsets_topic_partitions(kafka_bootstrap) == EXPECTED


@pytest.mark.wireserver(overrides={"offsets.topic.num.partitions": 2})
def test_marker_wins(kafka_bootstrap):
    assert offsets_topic_partitions(kafka_bootstrap) == 2
"""


@pytest.mark.parametrize(
    "args, expected",
    [((), 1), (("--wireserver-override=offsets.topic.num.partitions=3",), 3)],
    ids=["fixture-default", "option"],
)
def test_settings_of_the_fixtures_brokers(pytester, args, expected):
    """The fixtures' brokers have one ``__consumer_offsets`` partition (``FIXTURE_DEFAULTS``),
    unless ``--wireserver-override`` says otherwise; a marker's ``overrides`` win over both."""
    result = run_user_tests(pytester, f"EXPECTED = {expected}\n" + OFFSETS_TOPIC, *args)
    result.assert_outcomes(passed=2)


BAD_MARKERS = """
import pytest

@pytest.mark.wireserver(brokrs=3)
def test_typo(kafka_broker):
    pass

@pytest.mark.wireserver(brokers=3)
def test_many_brokers_as_one(kafka_broker):
    pass

@pytest.mark.wireserver({"num.partitions": 2})
def test_positional(kafka_broker):
    pass

@pytest.mark.wireserver(mode="fork")
def test_bad_mode(kafka_broker):
    pass
"""


def test_a_bad_marker_errors_the_test_naming_what_is_wrong(pytester):
    result = run_user_tests(pytester, BAD_MARKERS)
    result.assert_outcomes(errors=4)
    # Each test's section of the errors report, header then message (the one-line summary
    # is cut to the terminal's width, which differs between a shell and CI).
    for test, message in (
        ("test_typo", "*unknown argument(s) brokrs*"),
        ("test_many_brokers_as_one", "*kafka_broker is one broker: take kafka_cluster*"),
        ("test_positional", "*keyword arguments only*"),
        ("test_bad_mode", "*mode must be one of*'fork'*"),
    ):
        result.stdout.fnmatch_lines([f"*ERROR at setup of {test} *", message])


def test_a_bad_option_is_a_usage_error(pytester):
    pytester.makepyfile(test_user="def test_nothing():\n    pass\n")
    fresh = pytester.runpytest_subprocess("--wireserver-fresh=sometimes")
    assert fresh.ret == pytest.ExitCode.USAGE_ERROR
    fresh.stderr.fnmatch_lines(["*--wireserver-fresh must be true or false, not 'sometimes'*"])
    override = pytester.runpytest_subprocess("--wireserver-override=num.partitions")
    assert override.ret == pytest.ExitCode.USAGE_ERROR
    override.stderr.fnmatch_lines(["*'num.partitions' is not KEY=VALUE*"])


def test_marked_tests_against_a_running_broker_skip(pytester):
    """``--kafka-bootstrap`` runs the suite against a broker the plugin did not start: a test
    that needs a broker of its own is skipped, saying why; the others run there."""
    from wireserver.testing import EmbeddedBroker

    with EmbeddedBroker() as running:
        result = run_user_tests(
            pytester,
            NOTE
            + textwrap.dedent(
                """
                import pytest

                @pytest.mark.wireserver(overrides={"num.partitions": 2})
                def test_marked(kafka_broker):
                    pass

                def test_unmarked(kafka_bootstrap):
                    note("bootstrap", kafka_bootstrap)
                """
            ),
            f"--kafka-bootstrap={running.bootstrap_servers}",
        )
        result.assert_outcomes(passed=1, skipped=1)
        result.stdout.fnmatch_lines(["*asks for a broker of its own; --kafka-bootstrap*"])
        assert read_notes(pytester)["bootstrap"] == [running.bootstrap_servers]


def test_read_marker():
    assert read_marker((), {}) == BrokerWish()
    assert read_marker((), {"overrides": {"a.b": 1}, "brokers": 2, "mode": "subprocess"}) == (
        BrokerWish({"a.b": 1}, 2, "subprocess")
    )
    for kwargs, message in [
        ({"brokers": 0}, "brokers must be an int >= 1, not 0"),
        ({"brokers": True}, "brokers must be an int >= 1, not True"),
        ({"overrides": ["a=b"]}, "overrides must be a dict of broker config keys"),
        ({"overrides": {1: "x"}}, "overrides must be a dict of broker config keys"),
        ({"mode": "Thread"}, "mode must be one of ('thread', 'subprocess'), not 'Thread'"),
        ({"brokers": 2, "size": 3}, "unknown argument(s) size"),
    ]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            read_marker((), kwargs)


def test_parse_fresh():
    assert [parse_fresh(text, "x") for text in ("", " ", "true", "Yes", "0", "off")] == [
        None,
        None,
        True,
        True,
        False,
        False,
    ]
    with pytest.raises(ValueError, match="ini wireserver_fresh must be true or false, not 'y'"):
        parse_fresh("y", "ini wireserver_fresh")
