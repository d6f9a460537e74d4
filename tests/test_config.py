"""wireserver.config: properties parsing, Kafka's keys and precedence, listeners, dynamic configs."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wireserver.config import (
    BROKER_CONFIGS,
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    BrokerConfig,
    ConfigError,
    Listener,
    ReadOnlyConfigError,
    UnknownConfigError,
    broker_synonyms,
    parse_listeners,
    parse_properties,
    reference_markdown,
)
from wireserver.storage.configdef import INT_MAX, LONG_MAX, ConfigValueError
from wireserver.storage.log_config import TOPIC_CONFIGS, LogConfig

DOCS = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


# ---- .properties syntax ----------------------------------------------------------------------


def test_properties_comments_blank_lines_and_separators():
    text = (
        "# a comment\n"
        "   ! another comment\n"
        "\n"
        "   \t\n"
        "a=1\n"
        "b = 2\n"
        "c:3\n"
        "d : 4\n"
        "e 5\n"
        "f\t\t6\n"
        "  g   =   seven  \n"
        "h\n"
        "i=\n"
        "j = = k\n"
        "k  :=x\n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "5",
        "f": "6",
        "g": "seven  ",  # Java keeps trailing whitespace; typed parsing strips it
        "h": "",
        "i": "",
        "j": "= k",
        "k": "=x",
    }


def test_properties_line_continuations():
    text = (
        "listeners=PLAINTEXT://a:1,\\\n"
        "          INTERNAL://b:2\n"
        "path=c:\\\\dir\\\\\n"  # two trailing backslashes: an escaped one, no continuation
        "next=yes\n"
        "# comment \\\n"
        "not.swallowed=by comment\n"
        "last=ends\\"  # continuation at end of file: the backslash is dropped
    )
    assert parse_properties(text) == {
        "listeners": "PLAINTEXT://a:1,INTERNAL://b:2",
        "path": "c:\\dir\\",
        "next": "yes",
        "not.swallowed": "by comment",
        "last": "ends",
    }


def test_properties_continuation_line_that_looks_like_a_comment_is_value():
    assert parse_properties("a=1\\\n  # not a comment\n") == {"a": "1# not a comment"}


def test_properties_escapes_and_line_endings():
    text = "key\\ with\\=odd\\:chars = v\\tx\\ny\\u00e9\\q\r\nwin=1\rmac=2\n"
    assert parse_properties(text) == {
        "key with=odd:chars": "v\tx\ny\u00e9q",
        "win": "1",
        "mac": "2",
    }


def test_properties_surrogate_pair_escape():
    assert parse_properties("emoji=\\uD83D\\uDE00") == {"emoji": "\U0001f600"}


def test_properties_malformed_unicode_escape():
    with pytest.raises(ConfigError, match="uxxxx"):
        parse_properties("a=\\u12x")


def test_properties_later_key_wins():
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


@given(
    st.dictionaries(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1),
        st.text(alphabet=st.characters(blacklist_categories=("Cs",))),
    )
)
def test_properties_round_trip_of_escaped_pairs(pairs):
    def escape(text: str, is_key: bool) -> str:
        out = []
        for index, char in enumerate(text):
            if char in "\\=:#!" or (char == " " and (is_key or index == 0)):
                out.append("\\" + char)
            elif char in "\t\n\r\f":
                out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[char])
            elif ord(char) < 0x20 or ord(char) == 0x7F or not char.isprintable():
                out.extend(f"\\u{unit:04x}" for unit in _utf16_units(char))
            else:
                out.append(char)
        return "".join(out)

    text = "\n".join(f"{escape(k, True)}={escape(v, False)}" for k, v in pairs.items())
    assert parse_properties(text) == pairs


def _utf16_units(char: str) -> list[int]:
    data = char.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


# ---- loading ---------------------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "server.properties"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_defaults_are_typed_and_follow_kafka():
    config = BrokerConfig()
    assert config["num.partitions"] == 1
    assert config["default.replication.factor"] == 1
    assert config["auto.create.topics.enable"] is True
    assert config["delete.topic.enable"] is True
    assert config["socket.request.max.bytes"] == 104857600
    assert config["queued.max.requests"] == 500
    assert config["message.max.bytes"] == 1048588
    assert config["log.segment.bytes"] == 1073741824
    assert config["log.roll.hours"] == 168
    assert config["log.retention.hours"] == 168
    assert config["log.retention.ms"] is None
    assert config["log.retention.minutes"] is None
    assert config["log.retention.bytes"] == -1
    assert config["log.retention.check.interval.ms"] == 300000
    assert config["log.flush.interval.messages"] == LONG_MAX
    assert config["log.cleanup.policy"] == ["delete"]
    assert config["log.message.timestamp.type"] == "CreateTime"
    assert config["compression.type"] == "producer"
    assert config["offsets.topic.num.partitions"] == 50
    assert config["offsets.topic.replication.factor"] == 3
    assert config["offsets.retention.minutes"] == 10080
    assert config["transaction.state.log.num.partitions"] == 50
    assert config["transaction.state.log.replication.factor"] == 3
    assert config["transaction.state.log.min.isr"] == 2
    assert config["group.initial.rebalance.delay.ms"] == 3000
    assert config["group.min.session.timeout.ms"] == 6000
    assert config["group.max.session.timeout.ms"] == 1800000
    assert config["group.max.size"] == INT_MAX
    assert config["replica.lag.time.max.ms"] == 30000
    assert config["fetch.max.bytes"] == 57671680
    assert config["zookeeper.connect"] is None
    assert config["cluster.id"] is None and config.cluster_id is None
    assert config["node.id"] == config["broker.id"] == config.node_id == 0
    assert config.log_dirs == ["/tmp/kafka-logs"]
    assert config.listeners == [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
    assert config.unknown == {}
    for name in BROKER_CONFIGS:
        assert config.source(name) == DEFAULT_CONFIG


def test_returned_lists_are_copies():
    config = BrokerConfig()
    config["log.cleanup.policy"].append("compact")
    assert config["log.cleanup.policy"] == ["delete"]


def test_every_topic_synonym_is_a_dynamic_broker_key():
    for key, tdef in TOPIC_CONFIGS.items():
        if tdef.broker_synonym is None:
            continue
        assert tdef.broker_synonym in BROKER_CONFIGS, key
        assert not BROKER_CONFIGS[tdef.broker_synonym].read_only, tdef.broker_synonym


def test_broker_and_topic_defaults_agree():
    defaults = BrokerConfig().topic_defaults()
    assert set(defaults) == {k for k, d in TOPIC_CONFIGS.items() if d.broker_synonym}
    for key, value in defaults.items():
        assert value == TOPIC_CONFIGS[key].default, key


def test_load_file_then_overrides_win(tmp_path):
    path = write(tmp_path, "num.partitions=3\nlog.dirs=/data/a, /data/b\nbroker.rack=r1\n")
    config = BrokerConfig.load(path, ["num.partitions=7", "auto.create.topics.enable=false"])
    assert config["num.partitions"] == 7
    assert config["auto.create.topics.enable"] is False
    assert config["broker.rack"] == "r1"
    assert config.log_dirs == ["/data/a", "/data/b"]
    assert config.source("num.partitions") == STATIC_BROKER_CONFIG
    assert config.source("log.dir") == DEFAULT_CONFIG


def test_overrides_as_mapping_and_value_with_equals_sign(tmp_path):
    config = BrokerConfig.load(None, {"num.partitions": "4"})
    assert config["num.partitions"] == 4
    config = BrokerConfig.load(None, ["zookeeper.connect=zk:2181/a=b"])
    assert config["zookeeper.connect"] == "zk:2181/a=b"


@pytest.mark.parametrize("item", ["num.partitions", "=3", ""])
def test_malformed_override(item):
    with pytest.raises(ConfigError, match="key=value"):
        BrokerConfig.load(None, [item])


def test_missing_config_file_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope.properties"
    with pytest.raises(ConfigError, match=re.escape(str(missing)) + ".*does not exist"):
        BrokerConfig.load(str(missing))


def test_file_read_as_utf8_with_bom(tmp_path):
    path = tmp_path / "server.properties"
    path.write_bytes("\ufeffbroker.rack=r\u00e9\n".encode("utf-8"))
    assert BrokerConfig.load(str(path))["broker.rack"] == "r\u00e9"


@pytest.mark.parametrize(
    "name, raw",
    [
        ("num.partitions", "abc"),
        ("num.partitions", "0"),
        ("num.partitions", "2147483648"),
        ("auto.create.topics.enable", "yes"),
        ("log.segment.bytes", "1000"),
        ("log.cleanup.policy", "delete,shred"),
        ("compression.type", "brotli"),
        ("offsets.topic.replication.factor", "40000"),
        ("log.roll.hours", "0"),
        ("listener.security.protocol.map", "PLAINTEXT:CLEAR"),
        ("node.id", "-1"),
    ],
)
def test_invalid_value_names_the_key(tmp_path, name, raw):
    path = write(tmp_path, f"{name}={raw}\n")
    with pytest.raises(ConfigValueError) as info:
        BrokerConfig.load(path)
    assert info.value.name == name
    assert name in str(info.value)


def test_unknown_keys_are_warned_and_kept(caplog):
    with caplog.at_level(logging.WARNING, logger="wireserver.config"):
        config = BrokerConfig.load(
            None, ["no.such.key=broker", "retention.ms=5", "num.partitions=2"]
        )
    assert config.unknown == {"no.such.key": "broker", "retention.ms": "5"}
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'no.such.key'" in m for m in messages)
    assert any("'retention.ms'" in m and "log.retention.ms" in m for m in messages)
    assert not any("num.partitions" in m for m in messages)


def test_kafka_keys_we_do_not_use_are_known(caplog):
    """A Kafka 4.4 server.properties (KRaft keys, Kerberos, streams warm-up replicas) loads without
    warnings; the values are parsed and checked by Kafka's types and ranges."""
    with caplog.at_level(logging.WARNING, logger="wireserver.config"):
        config = BrokerConfig.load(
            None,
            [
                "process.roles=broker,controller",
                "controller.quorum.voters=1@localhost:9093",
                "controller.listener.names=CONTROLLER",
                "sasl.kerberos.min.time.before.relogin=5",
                "log.cleaner.io.buffer.load.factor=0.5",
                "group.streams.num.warmup.replicas=3",
            ],
        )
    assert config.unknown == {}
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    assert config["process.roles"] == ["broker", "controller"]
    assert config["sasl.kerberos.min.time.before.relogin"] == 5
    for bad in (
        "background.threads=0",
        "process.roles=worker",
        "group.consumer.migration.policy=sideways",
    ):
        with pytest.raises(ConfigValueError):
            BrokerConfig.load(None, [bad])
    assert BrokerConfig.load(None, ["group.consumer.migration.policy=Upgrade"])
    # Kafka's internal keys are described only when the file sets them
    assert [e.name for e in config.items(["group.streams.num.warmup.replicas"])] == [
        "group.streams.num.warmup.replicas"
    ]
    assert (
        BrokerConfig().items(["group.streams.num.warmup.replicas", "group.share.max.size"])[0].name
        == "group.share.max.size"
    )


def test_kafka_update_modes():
    sasl = BROKER_CONFIGS["sasl.kerberos.min.time.before.relogin"]
    assert (sasl.read_only, sasl.per_broker) == (False, True)
    threads = BROKER_CONFIGS["background.threads"]
    assert (threads.read_only, threads.per_broker) == (False, False)
    assert BROKER_CONFIGS["process.roles"].read_only
    assert (
        BROKER_CONFIGS["log.cleaner.io.max.bytes.per.second"].render(
            BROKER_CONFIGS["log.cleaner.io.max.bytes.per.second"].default
        )
        == "1.7976931348623157E308"
    )


# ---- precedence ------------------------------------------------------------------------------


def test_retention_precedence_ms_over_minutes_over_hours():
    assert BrokerConfig().topic_defaults()["retention.ms"] == 168 * 3600000
    hours = BrokerConfig({"log.retention.hours": "2"})
    assert hours.topic_defaults()["retention.ms"] == 2 * 3600000
    minutes = BrokerConfig({"log.retention.hours": "2", "log.retention.minutes": "3"})
    assert minutes.topic_defaults()["retention.ms"] == 3 * 60000
    millis = BrokerConfig(
        {"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "4"}
    )
    assert millis.topic_defaults()["retention.ms"] == 4
    assert BrokerConfig({"log.retention.ms": "-7"}).topic_defaults()["retention.ms"] == -1
    assert BrokerConfig({"log.retention.hours": "-1"}).topic_defaults()["retention.ms"] == -1


def test_roll_and_flush_precedence():
    config = BrokerConfig({"log.roll.hours": "1", "log.roll.jitter.hours": "2"})
    assert config.topic_defaults()["segment.ms"] == 3600000
    assert config.topic_defaults()["segment.jitter.ms"] == 2 * 3600000
    config = BrokerConfig({"log.roll.hours": "1", "log.roll.ms": "500", "log.roll.jitter.ms": "7"})
    assert config.topic_defaults()["segment.ms"] == 500
    assert config.topic_defaults()["segment.jitter.ms"] == 7
    config = BrokerConfig({"log.flush.scheduler.interval.ms": "1000"})
    assert config.topic_defaults()["flush.ms"] == 1000
    config = BrokerConfig(
        {"log.flush.scheduler.interval.ms": "1000", "log.flush.interval.ms": "10"}
    )
    assert config.topic_defaults()["flush.ms"] == 10


def test_replica_selector_class_accepts_kafkas_rack_aware_selector():
    selector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
    assert BrokerConfig({"replica.selector.class": selector})["replica.selector.class"] == selector
    assert BrokerConfig({})["replica.selector.class"] is None  # Kafka's default: the leader
    with pytest.raises(ConfigValueError, match="replica.selector.class"):
        BrokerConfig({"replica.selector.class": "org.example.ClosestReplicaSelector"})


def test_log_dirs_over_log_dir():
    assert BrokerConfig({"log.dir": "/one"}).log_dirs == ["/one"]
    assert BrokerConfig({"log.dir": "/one", "log.dirs": "/two,/three"}).log_dirs == [
        "/two",
        "/three",
    ]
    with pytest.raises(ConfigValueError, match="log.dirs"):
        BrokerConfig({"log.dirs": " , "})


def test_node_id_and_broker_id():
    assert BrokerConfig({"broker.id": "4"}).node_id == 4
    config = BrokerConfig({"node.id": "5"})
    assert config["broker.id"] == config["node.id"] == 5
    assert config.source("broker.id") == STATIC_BROKER_CONFIG
    assert BrokerConfig({"node.id": "6", "broker.id": "6"}).node_id == 6
    with pytest.raises(ConfigValueError, match="node.id"):
        BrokerConfig({"node.id": "1", "broker.id": "2"})


def test_topic_defaults_feed_log_config():
    config = BrokerConfig(
        {
            "log.segment.bytes": "2097152",
            "log.retention.minutes": "1",
            "log.cleanup.policy": "compact,delete",
            "message.max.bytes": "9",
        }
    )
    log_config = LogConfig.from_values(config.topic_defaults(), {"retention.ms": "5"})
    assert log_config.segment_bytes == 2097152
    assert log_config.retention_ms == 5
    assert log_config.compact and log_config.delete_enabled
    assert log_config.max_message_bytes == 9
    assert LogConfig.from_values(config.topic_defaults()).retention_ms == 60000


# ---- listeners -------------------------------------------------------------------------------


def test_listener_parsing():
    config = BrokerConfig(
        {
            "listeners": "PLAINTEXT://:0, internal://[::1]:9093,EXTERNAL://0.0.0.0:9094",
            "advertised.listeners": "PLAINTEXT://localhost:9092,INTERNAL://[::1]:9093,"
            "EXTERNAL://kafka.example.com:19094",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:SSL",
            "inter.broker.listener.name": "internal",
        }
    )
    assert config.listeners == [
        Listener("PLAINTEXT", "", 0, "PLAINTEXT"),
        Listener("INTERNAL", "::1", 9093, "PLAINTEXT"),
        Listener("EXTERNAL", "0.0.0.0", 9094, "SSL"),
    ]
    assert config.listeners[0].all_interfaces and config.listeners[2].all_interfaces
    assert not config.listeners[1].all_interfaces
    assert str(config.listeners[1]) == "INTERNAL://[::1]:9093"
    assert config.listeners[0].with_port(41234).port == 41234
    assert [str(a) for a in config.advertised_listeners] == [
        "PLAINTEXT://localhost:9092",
        "INTERNAL://[::1]:9093",
        "EXTERNAL://kafka.example.com:19094",
    ]
    assert config.inter_broker_listener.name == "INTERNAL"


def test_advertised_defaults_to_listeners_and_port_zero_is_allowed():
    config = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0"})
    assert config.listeners == [Listener("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")]
    assert config.advertised_listeners == config.listeners
    assert config.inter_broker_listener == config.listeners[0]


def test_empty_host_is_advertised_as_this_machine():
    config = BrokerConfig({"listeners": "PLAINTEXT://:9092"})
    assert config.listeners[0].host == ""
    assert config.advertised_listeners[0].host not in ("", "0.0.0.0")


@pytest.mark.parametrize(
    "listeners, message",
    [
        ("PLAINTEXT://localhost", "NAME://host:port"),
        ("localhost:9092", "NAME://host:port"),
        ("PLAINTEXT://host:port", "NAME://host:port"),
        ("PLAINTEXT://host:-1", "NAME://host:port"),
        ("PLAINTEXT://host:70000", "out of range"),
        ("PLAINTEXT://a:1,plaintext://b:2", "different name"),
        ("CLIENT://a:1", "no security protocol defined for listener CLIENT"),
        ("", "at least one listener"),
    ],
)
def test_listener_errors_name_the_key(listeners, message):
    with pytest.raises(ConfigValueError, match=re.escape(message)) as info:
        BrokerConfig({"listeners": listeners})
    assert info.value.name == "listeners"


def test_advertised_listener_errors():
    with pytest.raises(ConfigValueError, match="not in listeners") as info:
        BrokerConfig(
            {
                "listeners": "PLAINTEXT://:9092",
                "advertised.listeners": "OTHER://host:1",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
            }
        )
    assert info.value.name == "advertised.listeners"
    with pytest.raises(ConfigValueError, match="non-routable") as info:
        BrokerConfig({"listeners": "PLAINTEXT://0.0.0.0:9092"})
    assert info.value.name == "advertised.listeners"
    with pytest.raises(ConfigValueError, match="inter.broker.listener.name"):
        BrokerConfig({"inter.broker.listener.name": "NOPE"})


def test_parse_listeners_without_map_checks_syntax_only():
    assert parse_listeners("A://h:1", None) == [Listener("A", "h", 1, "A")]


# ---- dynamic configuration and DescribeConfigs -----------------------------------------------


def test_dynamic_set_and_delete_with_sources():
    config = BrokerConfig({"log.retention.bytes": "100"})
    changes = []
    unsubscribe = config.subscribe(changes.append)
    assert config.source("log.retention.bytes") == STATIC_BROKER_CONFIG

    config.set_dynamic("log.retention.bytes", "200", cluster_default=True)
    assert config["log.retention.bytes"] == 200
    assert config.source("log.retention.bytes") == DYNAMIC_DEFAULT_BROKER_CONFIG

    config.set_dynamic("log.retention.bytes", "300")
    assert config["log.retention.bytes"] == 300
    assert config.source("log.retention.bytes") == DYNAMIC_BROKER_CONFIG
    assert config.topic_defaults()["retention.bytes"] == 300
    assert config.dynamic_values() == {"log.retention.bytes": "300"}
    assert config.dynamic_values(cluster_default=True) == {"log.retention.bytes": "200"}

    config.delete_dynamic("log.retention.bytes")
    assert config["log.retention.bytes"] == 200
    config.delete_dynamic("log.retention.bytes", cluster_default=True)
    assert config["log.retention.bytes"] == 100
    assert config.source("log.retention.bytes") == STATIC_BROKER_CONFIG
    config.delete_dynamic("log.retention.bytes")  # nothing left to delete: fine
    assert changes == ["log.retention.bytes"] * 4

    unsubscribe()
    config.set_dynamic("message.max.bytes", "5")
    assert len(changes) == 4


def test_dynamic_retention_ms_beats_static_hours():
    config = BrokerConfig({"log.retention.hours": "1"})
    config.set_dynamic("log.retention.ms", "1234")
    assert config.topic_defaults()["retention.ms"] == 1234
    config.delete_dynamic("log.retention.ms")
    assert config.topic_defaults()["retention.ms"] == 3600000


def test_dynamic_rejects_read_only_unknown_and_invalid():
    config = BrokerConfig()
    with pytest.raises(ReadOnlyConfigError, match="num.partitions"):
        config.set_dynamic("num.partitions", "3")
    with pytest.raises(ReadOnlyConfigError, match="listeners"):
        config.delete_dynamic("listeners")
    with pytest.raises(UnknownConfigError, match="no.such.key"):
        config.set_dynamic("no.such.key", "1")
    with pytest.raises(ConfigValueError) as info:
        config.set_dynamic("log.segment.bytes", "12")
    assert info.value.name == "log.segment.bytes"
    assert config["log.segment.bytes"] == 1073741824
    assert config.source("log.segment.bytes") == DEFAULT_CONFIG


def test_broker_synonym_groups():
    assert broker_synonyms("log.retention.hours") == [
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ]
    assert broker_synonyms("log.roll.ms") == ["log.roll.ms", "log.roll.hours"]
    assert broker_synonyms("log.flush.interval.ms") == [
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
    ]
    assert broker_synonyms("log.flush.scheduler.interval.ms") == ["log.flush.scheduler.interval.ms"]
    assert broker_synonyms("num.partitions") == ["num.partitions"]


def _entry(config: BrokerConfig, name: str):
    (entry,) = config.items([name])
    return entry


def test_describe_entries_follow_kafka_synonym_rules():
    config = BrokerConfig({"log.retention.minutes": "30", "num.partitions": "4"})
    config.set_dynamic("log.retention.ms", "1000", cluster_default=True)

    entry = _entry(config, "log.retention.ms")
    assert entry.value == "1000" and entry.source == DYNAMIC_DEFAULT_BROKER_CONFIG
    assert not entry.read_only and not entry.sensitive
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("log.retention.ms", "1000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.minutes", "30", STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]
    entry = _entry(config, "log.retention.minutes")
    assert entry.source == STATIC_BROKER_CONFIG and entry.read_only
    assert [s.name for s in entry.synonyms] == ["log.retention.minutes", "log.retention.hours"]

    entry = _entry(config, "num.partitions")
    assert (entry.value, entry.source, entry.read_only, entry.type) == (
        "4",
        STATIC_BROKER_CONFIG,
        True,
        "int",
    )
    assert [(s.value, s.source) for s in entry.synonyms] == [
        ("4", STATIC_BROKER_CONFIG),
        ("1", DEFAULT_CONFIG),
    ]
    assert entry.source_id == 4 and entry.type_id == 3

    entry = _entry(BrokerConfig(), "log.roll.ms")
    assert entry.value is None and entry.source == DEFAULT_CONFIG and entry.synonyms == ()

    names = [e.name for e in config.items()]
    assert names == sorted(name for name, d in BROKER_CONFIGS.items() if not d.internal)
    assert config.items(["nope"]) == []
    assert _entry(config, "num.partitions").synonyms
    assert config.items(["num.partitions"], include_synonyms=False)[0].synonyms == ()


def test_topic_synonyms_for_topic_describe():
    config = BrokerConfig({"log.segment.bytes": "2097152"})
    assert [(s.name, s.value, s.source) for s in config.topic_synonyms("segment.bytes")] == [
        ("log.segment.bytes", "2097152", STATIC_BROKER_CONFIG),
        ("log.segment.bytes", "1073741824", DEFAULT_CONFIG),
    ]
    # Kafka drops synonyms before the topic key's own broker synonym: only hours are set.
    assert config.topic_synonyms("retention.ms") == []
    assert config.topic_synonyms("leader.replication.throttled.replicas") == []


# ---- documentation ---------------------------------------------------------------------------


def test_docs_list_every_key():
    text = DOCS.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([^`]+)` \|", text, flags=re.MULTILINE))
    from wireserver.groups.configs import GROUP_CONFIGS

    missing = (set(BROKER_CONFIGS) | set(TOPIC_CONFIGS) | set(GROUP_CONFIGS)) - documented
    assert not missing, (
        f"docs/configuration.md lacks {sorted(missing)}; regenerate the tables with "
        f"`python -m wireserver.config`"
    )


def test_reference_markdown_has_a_row_per_key():
    from wireserver.groups.configs import GROUP_CONFIGS

    rows = [line for line in reference_markdown().splitlines() if line.startswith("| `")]
    assert len(rows) == len(BROKER_CONFIGS) + len(TOPIC_CONFIGS) + len(GROUP_CONFIGS)


# ---- the inter-broker listener and its security --------------------------------------------

SASL_ONLY = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "zookeeper.connect": "127.0.0.1:2181",
    "sasl.enabled.mechanisms": "SCRAM-SHA-512",
}
BROKER_LOGIN = (
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config",
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="broker" password="broker-secret";',
)


def test_inter_broker_listener_from_security_inter_broker_protocol():
    config = BrokerConfig(
        {
            **SASL_ONLY,
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            BROKER_LOGIN[0]: BROKER_LOGIN[1],
        }
    )
    assert config.inter_broker_listener.name == "SASL_PLAINTEXT"
    security = config.inter_broker_security
    assert (
        security.listener,
        security.protocol,
        security.mechanism,
        security.username,
        security.password,
    ) == ("SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-512", "broker", "broker-secret")
    # a single node needs no inter-broker login
    single = BrokerConfig(
        {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    )
    assert single.inter_broker_security is None


@pytest.mark.parametrize(
    "values, key, message",
    [
        (
            {
                "inter.broker.listener.name": "SASL_PLAINTEXT",
                "security.inter.broker.protocol": "SASL_PLAINTEXT",
            },
            "inter.broker.listener.name",
            "only one of inter.broker.listener.name and "
            "security.inter.broker.protocol should be set",
        ),
        (
            {"inter.broker.listener.name": "internal"},
            "inter.broker.listener.name",
            "valid options based on currently configured listeners are SASL_PLAINTEXT",
        ),
        (
            {"security.inter.broker.protocol": "SSL"},
            "security.inter.broker.protocol",
            "must be a listener name defined in advertised.listeners",
        ),
        (
            {"security.inter.broker.protocol": "SASL_PLAINTEXT"},  # Kafka's default GSSAPI
            "sasl.mechanism.inter.broker.protocol",
            "brokers can log in to each other with PLAIN",
        ),
        (
            {
                "security.inter.broker.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
            },
            "sasl.mechanism.inter.broker.protocol",
            "must be included in sasl.enabled.mechanisms",
        ),
        (
            {
                "security.inter.broker.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            },
            BROKER_LOGIN[0],
            "username and password of this JAAS config",
        ),
    ],
)
def test_inter_broker_misconfiguration_is_a_config_error(values, key, message):
    with pytest.raises(ConfigValueError, match=re.escape(message)) as info:
        BrokerConfig({**SASL_ONLY, **values})
    assert info.value.name == key
