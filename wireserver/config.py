"""Broker configuration: Kafka's keys, ``server.properties`` parsing, sources and synonyms.

``BROKER_CONFIGS`` holds every broker key we accept, with Kafka 4.x names, types and defaults.
It includes the broker synonym of every topic-level key in ``storage.log_config.TOPIC_CONFIGS``
(``log.segment.bytes`` for ``segment.bytes`` and so on): those supply the topic defaults and,
as in Kafka, can be changed at runtime with AlterConfigs. Every other Kafka 4.1 broker key is
accepted too, without effect (``wireserver.kafka_keys``).

``BrokerConfig.load(path, overrides)`` reads a Java ``.properties`` file, applies ``key=value``
overrides, parses and validates every value, and checks the listeners. Values are read back
typed (``config["num.partitions"]``) with Kafka's precedence of sources::

    DYNAMIC_BROKER_CONFIG > DYNAMIC_DEFAULT_BROKER_CONFIG > STATIC_BROKER_CONFIG > DEFAULT_CONFIG

Deliberate differences from Kafka (also in docs/configuration.md):

- ``node.id`` / ``broker.id`` default to 0 (Kafka requires ``node.id``): one node needs no config.
  They must be at least 0; if both are set they must be equal.
- ``listeners`` defaults to ``PLAINTEXT://127.0.0.1:9092`` (Kafka: ``PLAINTEXT://:9092``, every
  interface): a development broker should not be reachable from the network by accident.
- ``zookeeper.connect`` and ``zookeeper.session.timeout.ms`` are accepted (Kafka 4 removed
  ZooKeeper): our cluster mode coordinates through ZooKeeper. There is no KRaft. So are the
  ZooKeeper-era ``controlled.shutdown.enable``, ``.max.retries`` and ``.retry.backoff.ms``.
- ``cluster.id`` is a broker key here (Kafka keeps it in ``meta.properties``); when unset the
  broker generates one and persists it.
- ``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map`` are read-only
  (Kafka can change them per broker at runtime).
- ``.properties`` files are read as UTF-8 (Java reads ISO-8859-1); ``\\uXXXX`` escapes work as
  in Java.
"""

from __future__ import annotations

import logging
import re
import socket
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from wireserver.kafka_keys import KAFKA_ONLY_KEYS
from wireserver.storage.configdef import (
    INT_MAX,
    LONG_MAX,
    ConfigDef,
    ConfigValueError,
    at_least,
    between,
    one_of,
)
from wireserver.storage.log_config import TOPIC_CONFIGS

log = logging.getLogger(__name__)

__all__ = [
    "BROKER_CONFIGS",
    "CONFIG_SOURCE_IDS",
    "CONFIG_TYPE_IDS",
    "DEFAULT_CONFIG",
    "DYNAMIC_BROKER_CONFIG",
    "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "GROUP_CONFIG",
    "STATIC_BROKER_CONFIG",
    "BrokerConfig",
    "ConfigEntry",
    "ConfigError",
    "ConfigSynonym",
    "ConfigValueError",
    "Listener",
    "ReadOnlyConfigError",
    "UnknownConfigError",
    "broker_synonyms",
    "load_properties",
    "parse_basic_auth_users",
    "parse_listeners",
    "parse_metrics_listeners",
    "parse_properties",
    "parse_security_protocol_map",
    "reference_markdown",
]

# --------------------------------------------------------------------------------------------
# Sources and types as DescribeConfigs numbers them (DescribeConfigsResponse.ConfigSource/Type).

DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
DEFAULT_CONFIG = "DEFAULT_CONFIG"
GROUP_CONFIG = "GROUP_CONFIG"

CONFIG_SOURCE_IDS = {
    "UNKNOWN": 0,
    DYNAMIC_TOPIC_CONFIG: 1,
    DYNAMIC_BROKER_CONFIG: 2,
    DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
    STATIC_BROKER_CONFIG: 4,
    DEFAULT_CONFIG: 5,
    "DYNAMIC_BROKER_LOGGER_CONFIG": 6,
    "CLIENT_METRICS_CONFIG": 7,
    GROUP_CONFIG: 8,
}

CONFIG_TYPE_IDS = {
    "boolean": 1,
    "string": 2,
    "int": 3,
    "short": 4,
    "long": 5,
    "double": 6,
    "list": 7,
    "class": 8,
    "password": 9,
}

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_SECURITY_PROTOCOL_MAP = (
    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
)

LISTENER_PREFIX = "listener.name."

HOUR_MS = 60 * 60 * 1000
MINUTE_MS = 60 * 1000


class ConfigError(ValueError):
    """A configuration problem that is not one key's bad value: file, syntax, AlterConfigs."""

    def __init__(self, message: str, name: str | None = None):
        super().__init__(message)
        self.name = name


class UnknownConfigError(ConfigError):
    """AlterConfigs named a key the broker does not define."""


class ReadOnlyConfigError(ConfigError):
    """AlterConfigs tried to change a key that needs a restart (Kafka: INVALID_REQUEST)."""


# --------------------------------------------------------------------------------------------
# Definitions


def _key(
    name: str,
    type_: str,
    default: Any,
    doc: str,
    validator=None,
    *,
    dynamic: bool = False,
    sensitive: bool = False,
) -> ConfigDef:
    return ConfigDef(
        name=name,
        type=type_,
        default=default,
        doc=doc,
        validator=validator,
        read_only=not dynamic,
        sensitive=sensitive,
    )


def _check_listeners_syntax(value: str) -> None:
    parse_listeners(value, None)


def _check_principal_rules(value: str) -> None:
    from wireserver.security.principals import parse_rules

    parse_rules(value)


def _check_protocol_map(value: str) -> None:
    parse_security_protocol_map(value)


def _check_metrics_listeners(value: str) -> None:
    parse_metrics_listeners(value)


def _check_basic_auth_users(value: str) -> None:
    parse_basic_auth_users(value)


def _check_ip_overrides(value: str) -> None:
    from wireserver.connection_limits import parse_ip_overrides

    parse_ip_overrides(value or "")


def _check_replica_selector(value: str) -> None:
    """Kafka loads the class at start and fails on one it cannot find; the rack-aware
    selector is the only one wireserver has (a custom Java class cannot run here)."""
    from wireserver.replica.selector import SELECTORS

    if value and value not in SELECTORS:
        raise ValueError(f"Class {value} could not be found.")


_BROKER_ONLY = [
    # Identity and cluster
    _key(
        "node.id",
        "int",
        0,
        "Id of this broker in the cluster. Kafka requires it; ours defaults to 0.",
        at_least(0),
    ),
    _key(
        "broker.id",
        "int",
        0,
        "Older name of node.id; if both are set they must be equal.",
        at_least(0),
    ),
    _key(
        "cluster.id",
        "string",
        None,
        "Cluster id; when unset the broker generates one and keeps it in its first log dir.",
    ),
    _key(
        "broker.rack", "string", None, "Rack of this broker, used for rack-aware replica placement."
    ),
    _key(
        "zookeeper.connect",
        "string",
        None,
        "ZooKeeper connection string (host:port,...[/chroot]) for cluster mode; unset = one node.",
    ),
    _key("zookeeper.session.timeout.ms", "int", 18000, "ZooKeeper session timeout."),
    _key(
        "zookeeper.connection.timeout.ms",
        "int",
        None,
        "Longest wait for a ZooKeeper connection; unset = zookeeper.session.timeout.ms.",
    ),
    # Network
    _key(
        "listeners",
        "string",
        "PLAINTEXT://127.0.0.1:9092",
        "Comma-separated NAME://host:port addresses to listen on; empty host = every "
        "interface, port 0 = a free port. Kafka's default is PLAINTEXT://:9092.",
        _check_listeners_syntax,
    ),
    _key(
        "advertised.listeners",
        "string",
        None,
        "Addresses given to clients, if different from listeners (unset = listeners).",
        _check_listeners_syntax,
    ),
    _key(
        "listener.security.protocol.map",
        "string",
        DEFAULT_SECURITY_PROTOCOL_MAP,
        "Listener name to security protocol, as NAME:PROTOCOL pairs.",
        _check_protocol_map,
    ),
    _key(
        "inter.broker.listener.name",
        "string",
        None,
        "Listener the brokers use to talk to each other (replica fetches); not together "
        "with security.inter.broker.protocol. Unset = the listener named after "
        "security.inter.broker.protocol.",
    ),
    _key(
        "security.inter.broker.protocol",
        "string",
        "PLAINTEXT",
        "Security protocol between brokers: they use the listener of that name. Kafka "
        "requires one; with neither this nor inter.broker.listener.name set we fall back to "
        "a PLAINTEXT listener, else the first advertised one.",
        one_of(*SECURITY_PROTOCOLS),
    ),
    _key(
        "socket.request.max.bytes",
        "int",
        104857600,
        "Largest request the broker accepts; larger ones close the connection.",
        at_least(1),
    ),
    _key(
        "socket.send.buffer.bytes",
        "int",
        102400,
        "SO_SNDBUF of accepted sockets (-1 = the OS default).",
    ),
    _key(
        "socket.receive.buffer.bytes",
        "int",
        102400,
        "SO_RCVBUF of accepted sockets (-1 = the OS default).",
    ),
    _key(
        "controller.quota.window.num",
        "int",
        11,
        "Windows of controller_mutation_rate a client may use at once (its token bucket).",
        at_least(1),
    ),
    _key(
        "controller.quota.window.size.seconds",
        "int",
        1,
        "Time span of each controller_mutation_rate window.",
        at_least(1),
    ),
    _key(
        "quota.window.num",
        "int",
        11,
        "Number of samples kept to measure client quota rates.",
        at_least(1),
    ),
    _key(
        "quota.window.size.seconds",
        "int",
        1,
        "Time span of each sample of the client quota rates.",
        at_least(1),
    ),
    _key(
        "leader.replication.throttled.rate",
        "long",
        LONG_MAX,
        "Bytes/s this broker sends, as leader, to followers of the partitions its topics list "
        "in leader.replication.throttled.replicas (reassignment throttle). Only a value set "
        "for this broker (AlterConfigs on broker <id>) throttles, as in Kafka.",
        at_least(0),
        dynamic=True,
    ),
    _key(
        "follower.replication.throttled.rate",
        "long",
        LONG_MAX,
        "Bytes/s this broker fetches, as follower, for the partitions its topics list in "
        "follower.replication.throttled.replicas (reassignment throttle). Only a value set "
        "for this broker (AlterConfigs on broker <id>) throttles, as in Kafka.",
        at_least(0),
        dynamic=True,
    ),
    _key(
        "replica.alter.log.dirs.io.max.bytes.per.second",
        "long",
        LONG_MAX,
        "Bytes/s this broker copies while it moves replicas between its log dirs "
        "(AlterReplicaLogDirs; kafka-reassign-partitions --replica-alter-log-dirs-throttle). "
        "Only a value set for this broker (AlterConfigs on broker <id>) throttles, as in Kafka.",
        at_least(0),
        dynamic=True,
    ),
    _key(
        "alter.log.dirs.replication.quota.window.num",
        "int",
        11,
        "Number of samples kept to measure the rate of replica moves between log dirs.",
        at_least(1),
    ),
    _key(
        "alter.log.dirs.replication.quota.window.size.seconds",
        "int",
        1,
        "Time span of each sample of the rate of replica moves between log dirs.",
        at_least(1),
    ),
    _key(
        "replication.quota.window.num",
        "int",
        11,
        "Number of samples kept to measure the replication throttle rates.",
        at_least(1),
    ),
    _key(
        "replication.quota.window.size.seconds",
        "int",
        1,
        "Time span of each sample of the replication throttle rates.",
        at_least(1),
    ),
    _key(
        "queued.max.requests",
        "int",
        500,
        "Requests in flight per broker before it stops reading from sockets.",
        at_least(1),
    ),
    _key(
        "metrics.enable",
        "boolean",
        True,
        "wireserver's own key: keep Kafka's meters (request times and counts, topic byte and "
        "message rates, errors) for /metrics and the status page. false stops counting and "
        "timing requests, to measure what that costs (benchmarks.metrics_cost).",
    ),
    _key(
        "controls.enable",
        "boolean",
        False,
        "wireserver's own key, for test brokers: serve /controls on the operations listener "
        "(metrics.listeners; loopback peers only) to inject errors, latency, disconnects, "
        "throttling, refused connections, a listener outage and clock jumps, and run the "
        "broker's timers on a clock that can be moved ahead (wireserver.controls).",
    ),
    _key("connections.max.idle.ms", "long", 600000, "Idle connections are closed after this long."),
    _key(
        "max.connections",
        "int",
        INT_MAX,
        "Connections the broker keeps open; past it a listener accepts no more until one "
        "closes (the inter-broker listener excepted). Per listener too, as "
        "listener.name.<l>.max.connections.",
        at_least(0),
        dynamic=True,
    ),
    _key(
        "max.connection.creation.rate",
        "int",
        INT_MAX,
        "New connections a second the broker accepts (the inter-broker listener excepted); "
        "past it a new connection waits before it is read, and the listener accepts none "
        "meanwhile. Per listener too, as listener.name.<l>.max.connection.creation.rate.",
        at_least(0),
        dynamic=True,
    ),
    _key(
        "max.connections.per.ip",
        "int",
        INT_MAX,
        "Connections from one address; one more is closed at once.",
        at_least(0),
        dynamic=True,
    ),
    _key(
        "max.connections.per.ip.overrides",
        "string",
        "",
        "host:count pairs, comma separated, that replace max.connections.per.ip for a host.",
        _check_ip_overrides,
        dynamic=True,
    ),
    _key(
        "num.network.threads",
        "int",
        3,
        "Accepted for compatibility; the reactor thread does network I/O.",
        at_least(1),
        dynamic=True,
    ),
    _key(
        "num.io.threads",
        "int",
        8,
        "Accepted for compatibility; requests run on the reactor thread.",
        at_least(1),
        dynamic=True,
    ),
    _key(
        "fetch.max.bytes",
        "int",
        57671680,
        "Largest response the broker returns to one Fetch request.",
        at_least(1024),
    ),
    _key(
        "max.incremental.fetch.session.cache.slots",
        "int",
        1000,
        "Most incremental fetch sessions kept, split equally over 8 shards that new sessions "
        "take in turn; a full shard evicts only within itself.",
        at_least(0),
    ),
    # Operations (wireserver.ops): the HTTP listener of /metrics, the status page and /api/.
    _key(
        "metrics.listeners",
        "string",
        "",
        "Comma-separated HTTP://host:port or HTTPS://host:port addresses of the operations "
        "listener (/metrics, the status page at /, JSON under /api/); empty = off. An empty "
        "host binds 127.0.0.1 (name 0.0.0.0 to expose it); port 0 = a free port. HTTPS reads "
        "the ssl.keystore.* keys of listener name METRICS "
        "(listener.name.metrics.ssl.keystore.location, else ssl.keystore.location).",
        _check_metrics_listeners,
    ),
    _key(
        "metrics.basic.auth.users",
        "password",
        None,
        "user:password pairs, comma-separated, that the operations listener accepts with HTTP "
        "basic authentication; unset = no authentication.",
        _check_basic_auth_users,
        sensitive=True,
    ),
    # Security (TLS, SASL, ACLs). Every ssl.* / sasl.* key can also be given per listener as
    # listener.name.<listener>.<key> (and the JAAS config per mechanism as
    # listener.name.<listener>.<mechanism>.sasl.jaas.config), as in Kafka.
    _key(
        "ssl.keystore.type",
        "string",
        "JKS",
        "Format of the key store. Only PEM is supported (a file with the certificate chain "
        "and the private key, or ssl.keystore.certificate.chain / ssl.keystore.key inline).",
        one_of("JKS", "PKCS12", "PEM"),
    ),
    _key(
        "ssl.keystore.location",
        "string",
        None,
        "Key store file of SSL listeners (PEM: certificate chain and private key).",
    ),
    _key(
        "ssl.keystore.password",
        "password",
        None,
        "Password of the key store file (PEM: of the encrypted private key).",
        sensitive=True,
    ),
    _key(
        "ssl.key.password",
        "password",
        None,
        "Password of the private key (PEM: of the encrypted private key).",
        sensitive=True,
    ),
    _key(
        "ssl.keystore.certificate.chain",
        "password",
        None,
        "The certificate chain in PEM, inline (with ssl.keystore.type=PEM).",
        sensitive=True,
    ),
    _key(
        "ssl.keystore.key",
        "password",
        None,
        "The private key in PEM, inline (with ssl.keystore.type=PEM).",
        sensitive=True,
    ),
    _key(
        "ssl.truststore.type",
        "string",
        "JKS",
        "Format of the trust store. Only PEM is supported.",
        one_of("JKS", "PKCS12", "PEM"),
    ),
    _key(
        "ssl.truststore.location",
        "string",
        None,
        "Trust store file (PEM certificates) used to verify client certificates.",
    ),
    _key(
        "ssl.truststore.password",
        "password",
        None,
        "Password of the trust store (unused with PEM).",
        sensitive=True,
    ),
    _key(
        "ssl.truststore.certificates",
        "password",
        None,
        "Trusted certificates in PEM, inline (with ssl.truststore.type=PEM).",
        sensitive=True,
    ),
    _key(
        "ssl.principal.mapping.rules",
        "string",
        "DEFAULT",
        "How a client certificate's subject DN becomes its principal's user name: "
        "comma-separated RULE:pattern/replacement/[LU] rules and DEFAULT (the DN itself), "
        "the first that applies wins; none applying refuses the connection.",
        _check_principal_rules,
    ),
    _key(
        "ssl.client.auth",
        "string",
        "none",
        "Client certificates on SSL listeners: none, requested or required.",
        one_of("none", "requested", "required"),
    ),
    _key(
        "ssl.protocol",
        "string",
        "TLSv1.3",
        "TLS protocol of the SSL context (TLSv1.2 or TLSv1.3 are both accepted from clients).",
    ),
    _key(
        "ssl.enabled.protocols",
        "list",
        ["TLSv1.2", "TLSv1.3"],
        "TLS versions accepted on SSL listeners.",
        one_of("TLSv1.2", "TLSv1.3"),
    ),
    _key(
        "sasl.enabled.mechanisms",
        "list",
        ["GSSAPI"],
        "SASL mechanisms served on SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
        "OAUTHBEARER (GSSAPI, Kafka's default, is not supported and is ignored).",
    ),
    _key(
        "sasl.mechanism.inter.broker.protocol",
        "string",
        "GSSAPI",
        "SASL mechanism brokers use between themselves on a SASL inter-broker listener: "
        "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (GSSAPI is not supported); the broker logs "
        "in with the username/password of that listener's JAAS config for the mechanism.",
    ),
    _key(
        "sasl.jaas.config",
        "password",
        None,
        "JAAS login configuration for SASL listeners (normally given per listener and "
        'mechanism); PlainLoginModule user_<name>="<password>" options define PLAIN users.',
        sensitive=True,
    ),
    _key(
        "sasl.oauthbearer.expected.audience",
        "list",
        [],
        "OAUTHBEARER: accepted audiences of a token (unset or empty: any).",
    ),
    _key(
        "connections.max.reauth.ms",
        "long",
        0,
        "Largest SASL session lifetime (KIP-368); 0 = no limit but the credential's own "
        "expiry (OAUTHBEARER and delegation tokens). Clients re-authenticate before it ends, "
        "or their connection is closed.",
        at_least(0),
    ),
    _key(
        "connection.failed.authentication.delay.ms",
        "int",
        100,
        "How long the answer to a failed SASL authentication (and the close that follows) "
        "is held back, slowing password guessing; other connections are served meanwhile. "
        "0 = answer and close at once.",
        at_least(0),
    ),
    _key(
        "delegation.token.secret.key",
        "password",
        None,
        "Secret that signs delegation tokens (HMAC-SHA512 of the token id); unset or empty: "
        "delegation tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED).",
        sensitive=True,
    ),
    _key(
        "delegation.token.max.lifetime.ms",
        "long",
        7 * 24 * 3600 * 1000,
        "Longest a delegation token lives, renewals included (a request may ask for less).",
        at_least(1),
    ),
    _key(
        "delegation.token.expiry.time.ms",
        "long",
        24 * 3600 * 1000,
        "How long a delegation token lives after its creation or renewal unless renewed "
        "(a renewal may ask for less).",
        at_least(1),
    ),
    _key(
        "delegation.token.expiry.check.interval.ms",
        "long",
        3600 * 1000,
        "How often expired delegation tokens are removed (until then they still log in).",
        at_least(1),
    ),
    _key(
        "authorizer.class.name",
        "string",
        "",
        "Authorizer; org.apache.kafka.metadata.authorizer.StandardAuthorizer or "
        "kafka.security.authorizer.AclAuthorizer turn on ACLs (empty = everything allowed).",
    ),
    _key(
        "super.users", "string", "", "Semicolon-separated principals (User:name) that bypass ACLs."
    ),
    _key(
        "allow.everyone.if.no.acl.found",
        "boolean",
        False,
        "With an authorizer: allow an operation on a resource that has no ACL at all.",
    ),
    # Topics
    _key(
        "num.partitions",
        "int",
        1,
        "Partitions of an auto-created topic, and of CreateTopics with -1.",
        at_least(1),
    ),
    _key(
        "default.replication.factor",
        "int",
        1,
        "Replication factor of auto-created topics and of CreateTopics with -1.",
    ),
    _key(
        "auto.create.topics.enable",
        "boolean",
        True,
        "Create a topic when a client asks for metadata of an unknown one.",
    ),
    _key("delete.topic.enable", "boolean", True, "Allow DeleteTopics."),
    # Logs (broker-only keys; the topic-default ones are derived below)
    _key(
        "log.dirs",
        "string",
        None,
        "Comma-separated directories holding partition data (unset = log.dir).",
    ),
    _key("log.dir", "string", "/tmp/kafka-logs", "Data directory when log.dirs is unset."),
    _key(
        "log.roll.hours",
        "int",
        168,
        "Roll a segment after this many hours; secondary to log.roll.ms.",
        at_least(1),
    ),
    _key(
        "log.roll.jitter.hours",
        "int",
        0,
        "Jitter subtracted from the roll time, in hours; secondary to log.roll.jitter.ms.",
        at_least(0),
    ),
    _key(
        "log.retention.minutes",
        "int",
        None,
        "Retention in minutes; secondary to log.retention.ms, takes precedence over hours.",
    ),
    _key(
        "log.retention.hours",
        "int",
        168,
        "Retention in hours; used when log.retention.ms and .minutes are unset.",
    ),
    _key(
        "log.retention.check.interval.ms",
        "long",
        300000,
        "How often the broker looks for segments to delete.",
        at_least(1),
    ),
    _key(
        "log.flush.scheduler.interval.ms",
        "long",
        LONG_MAX,
        "How often the flusher checks logs; also the default of log.flush.interval.ms.",
    ),
    _key(
        "log.flush.offset.checkpoint.interval.ms",
        "int",
        60000,
        "How often the recovery point checkpoint is written.",
        at_least(0),
    ),
    _key(
        "log.flush.start.offset.checkpoint.interval.ms",
        "int",
        60000,
        "How often the log start offset checkpoint is written.",
        at_least(0),
    ),
    _key(
        "num.recovery.threads.per.data.dir",
        "int",
        2,
        "Threads per data dir for log recovery at startup and flushing at shutdown.",
        at_least(1),
        dynamic=True,
    ),
    _key(
        "log.cleaner.enable",
        "boolean",
        True,
        "Run the log cleaner (needed for cleanup.policy=compact).",
    ),
    _key(
        "log.cleaner.backoff.ms",
        "long",
        15000,
        "Sleep of the log cleaner when there is nothing to clean.",
        at_least(0),
        dynamic=True,
    ),
    _key(
        "log.cleaner.threads",
        "int",
        1,
        "Threads cleaning compacted logs at the same time (0: none clean).",
        at_least(0),
        dynamic=True,
    ),
    _key(
        "log.cleaner.dedupe.buffer.size",
        "long",
        134217728,
        "Memory of the cleaners' key-hash maps, shared by the cleaner threads; a cleaning whose "
        "dirty records do not fit cleans as far as the map reached.",
        dynamic=True,
    ),
    _key(
        "log.cleaner.io.buffer.load.factor",
        "double",
        0.9,
        "How full a cleaner's key-hash map may get.",
        dynamic=True,
    ),
    _key(
        "log.cleaner.io.max.bytes.per.second",
        "double",
        sys.float_info.max,
        "Bytes per second the cleaner threads may read and write together.",
        dynamic=True,
    ),
    # Replication
    _key(
        "replica.selector.class",
        "string",
        None,
        "Which replica a consumer that names its rack (client.rack, Fetch v11+) is sent "
        "to read from (KIP-392). Unset = the leader only; "
        "org.apache.kafka.common.replica.RackAwareReplicaSelector = an in-sync replica in "
        "the consumer's rack. Followers serve such consumers either way.",
        _check_replica_selector,
    ),
    _key(
        "replica.lag.time.max.ms",
        "long",
        30000,
        "A follower that has not caught up for this long leaves the ISR.",
    ),
    _key(
        "replica.fetch.max.bytes",
        "int",
        1048576,
        "Bytes a follower asks for per partition.",
        at_least(0),
    ),
    _key(
        "replica.fetch.response.max.bytes",
        "int",
        10485760,
        "Bytes a follower asks for per Fetch response.",
        at_least(0),
    ),
    _key("replica.fetch.min.bytes", "int", 1, "Minimum bytes of a follower's Fetch."),
    _key("replica.fetch.wait.max.ms", "int", 500, "Longest wait of a follower's Fetch."),
    _key(
        "replica.fetch.backoff.ms",
        "int",
        1000,
        "Sleep of a follower after a fetch error.",
        at_least(0),
    ),
    _key("replica.socket.timeout.ms", "int", 30000, "Socket timeout of follower fetches."),
    _key(
        "replica.high.watermark.checkpoint.interval.ms",
        "long",
        5000,
        "How often high watermarks are checkpointed.",
    ),
    _key(
        "controlled.shutdown.enable",
        "boolean",
        True,
        "On a clean stop in cluster mode, move leadership of this broker's partitions to "
        "other in-sync replicas and leave the ISRs first (Kafka's ZooKeeper-era key).",
    ),
    _key(
        "controlled.shutdown.max.retries",
        "int",
        3,
        "Attempts of the controlled shutdown before stopping anyway.",
        at_least(1),
    ),
    _key(
        "controlled.shutdown.retry.backoff.ms",
        "long",
        5000,
        "Pause between controlled shutdown attempts.",
        at_least(0),
    ),
    _key(
        "auto.leader.rebalance.enable",
        "boolean",
        True,
        "The controller moves leadership back to the preferred replica (the first of the "
        "assignment) when a broker's share of partitions led by others passes "
        "leader.imbalance.per.broker.percentage.",
    ),
    _key(
        "leader.imbalance.check.interval.seconds",
        "long",
        300,
        "How often the controller checks for leader imbalance.",
        at_least(1),
    ),
    _key(
        "leader.imbalance.per.broker.percentage",
        "int",
        10,
        "The percentage of a broker's preferred partitions led elsewhere that triggers a "
        "preferred leader election.",
        at_least(0),
    ),
    # Group coordinator
    _key(
        "offsets.topic.num.partitions",
        "int",
        50,
        "Partitions of __consumer_offsets (do not change after it exists).",
        at_least(1),
    ),
    _key(
        "offsets.topic.replication.factor",
        "short",
        3,
        "Replication factor of __consumer_offsets.",
        at_least(1),
    ),
    _key(
        "offsets.topic.segment.bytes",
        "int",
        104857600,
        "Segment size of __consumer_offsets.",
        at_least(1),
    ),
    _key(
        "offsets.retention.minutes",
        "int",
        10080,
        "Committed offsets of a group with no members are dropped after this long.",
        at_least(1),
    ),
    _key(
        "offsets.retention.check.interval.ms",
        "long",
        600000,
        "How often expired offsets are looked for.",
        at_least(1),
    ),
    _key(
        "offsets.commit.timeout.ms",
        "int",
        5000,
        "Longest wait of an offset commit for its replication.",
        at_least(1),
    ),
    _key("offset.metadata.max.bytes", "int", 4096, "Largest metadata of one committed offset."),
    _key(
        "group.initial.rebalance.delay.ms",
        "int",
        3000,
        "Wait for more members before the first rebalance of an empty group.",
    ),
    _key("group.min.session.timeout.ms", "int", 6000, "Smallest session timeout a member may ask."),
    _key(
        "group.max.session.timeout.ms", "int", 1800000, "Largest session timeout a member may ask."
    ),
    _key("group.max.size", "int", INT_MAX, "Most members of a classic group.", at_least(1)),
    _key(
        "group.coordinator.rebalance.protocols",
        "list",
        ["classic", "consumer", "streams"],
        "Group protocols served: classic (JoinGroup), consumer (KIP-848) and streams (KIP-1071).",
        one_of("classic", "consumer", "share", "streams"),
    ),
    _key(
        "group.consumer.session.timeout.ms",
        "int",
        45000,
        "Session timeout of consumer-protocol members.",
        at_least(1),
    ),
    _key(
        "group.consumer.min.session.timeout.ms",
        "int",
        45000,
        "Smallest session timeout of a consumer-protocol group.",
        at_least(1),
    ),
    _key(
        "group.consumer.max.session.timeout.ms",
        "int",
        60000,
        "Largest session timeout of a consumer-protocol group.",
        at_least(1),
    ),
    _key(
        "group.consumer.heartbeat.interval.ms",
        "int",
        5000,
        "Heartbeat interval of consumer-protocol members.",
        at_least(1),
    ),
    _key(
        "group.consumer.min.heartbeat.interval.ms",
        "int",
        5000,
        "Smallest heartbeat interval of a consumer-protocol group.",
        at_least(1),
    ),
    _key(
        "group.consumer.max.heartbeat.interval.ms",
        "int",
        15000,
        "Largest heartbeat interval of a consumer-protocol group.",
        at_least(1),
    ),
    _key(
        "group.consumer.assignors",
        "list",
        ["uniform", "range"],
        "Server-side assignors of consumer-protocol groups; the first is the default.",
        one_of(
            "uniform",
            "range",
            "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
        ),
    ),
    _key(
        "group.consumer.max.size",
        "int",
        INT_MAX,
        "Most members of a consumer-protocol group.",
        at_least(1),
    ),
    # Share groups (KIP-932)
    _key(
        "group.share.session.timeout.ms",
        "int",
        45000,
        "Session timeout of share-group members.",
        at_least(1),
    ),
    _key(
        "group.share.heartbeat.interval.ms",
        "int",
        5000,
        "Heartbeat interval of share-group members.",
        at_least(1),
    ),
    _key(
        "group.share.max.size",
        "int",
        200,
        "Most members of a share group.",
        between(1, 1000),
    ),
    _key(
        "group.share.record.lock.duration.ms",
        "int",
        30000,
        "How long a share-group member holds an acquired record.",
        between(1000, 3600000),
    ),
    _key(
        "group.share.delivery.count.limit",
        "int",
        5,
        "The most delivery attempts of a record to a share group; then it is archived.",
        between(2, 10),
    ),
    _key(
        "group.share.partition.max.record.locks",
        "int",
        2000,
        "Records of a partition a share group may have in flight at once.",
        between(100, 10000),
    ),
    _key(
        "group.share.max.share.sessions",
        "int",
        2000,
        "Most share sessions of this broker (SHARE_SESSION_LIMIT_REACHED beyond).",
        at_least(1),
    ),
    _key(
        "errors.deadletterqueue.auto.create.topics.enable",
        "boolean",
        False,
        "Whether a share group's dead-letter queue topic (KIP-1191) that does not exist is "
        "created on its first record (with errors.deadletterqueue.group.enable=true).",
        dynamic=True,
    ),
    _key(
        "errors.deadletterqueue.topic.name.prefix",
        "string",
        "dlq.",
        "The prefix every share group's dead-letter queue topic name must start with "
        "(empty: any name).",
        dynamic=True,
    ),
    _key(
        "share.coordinator.state.topic.num.partitions",
        "int",
        50,
        "Partitions of __share_group_state (do not change after it exists).",
        at_least(1),
    ),
    _key(
        "share.coordinator.state.topic.replication.factor",
        "short",
        3,
        "Replication factor of __share_group_state.",
        at_least(1),
    ),
    _key(
        "share.coordinator.state.topic.min.isr",
        "short",
        2,
        "min.insync.replicas of __share_group_state.",
        at_least(1),
    ),
    _key(
        "share.coordinator.state.topic.segment.bytes",
        "int",
        104857600,
        "segment.bytes of __share_group_state.",
        at_least(1),
    ),
    # Transaction coordinator
    _key(
        "transaction.state.log.num.partitions",
        "int",
        50,
        "Partitions of __transaction_state (do not change after it exists).",
        at_least(1),
    ),
    _key(
        "transaction.state.log.replication.factor",
        "short",
        3,
        "Replication factor of __transaction_state.",
        at_least(1),
    ),
    _key(
        "transaction.state.log.min.isr",
        "int",
        2,
        "min.insync.replicas of __transaction_state.",
        at_least(1),
    ),
    _key(
        "transaction.state.log.segment.bytes",
        "int",
        104857600,
        "Segment size of __transaction_state.",
        at_least(1),
    ),
    _key(
        "transaction.max.timeout.ms",
        "int",
        900000,
        "Largest transaction timeout a producer may ask.",
        at_least(1),
    ),
    _key(
        "transactional.id.expiration.ms",
        "int",
        604800000,
        "A transactional id with no activity for this long is forgotten.",
        at_least(1),
    ),
    _key(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "int",
        10000,
        "How often timed-out transactions are aborted.",
        at_least(1),
    ),
    _key(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "int",
        3600000,
        "How often expired transactional ids are removed.",
        at_least(1),
    ),
    _key(
        "producer.id.expiration.ms",
        "int",
        86400000,
        "Idempotent producer state with no activity for this long is dropped.",
        at_least(1),
        dynamic=True,
    ),
]

# Broker keys that are topic defaults, where the broker side differs from the topic key:
# the ``.ms`` keys that default to unset and fall back to a coarser synonym, and the
# broker-level minimum of log.segment.bytes (Kafka 4.0, KIP-1030).
_SYNONYM_OVERRIDES: dict[str, dict[str, Any]] = {
    "message.max.bytes": dict(
        doc="Largest record batch the broker accepts; default of max.message.bytes."
    ),
    "log.segment.bytes": dict(
        validator=at_least(1048576),
        doc="Segment file size; default of segment.bytes (at least 1 MiB at broker level).",
    ),
    "log.roll.ms": dict(
        default=None,
        doc="Roll a segment after this long; unset = log.roll.hours. Default of segment.ms.",
    ),
    "log.roll.jitter.ms": dict(
        default=None,
        doc="Jitter subtracted from the roll time; unset = log.roll.jitter.hours. "
        "Default of segment.jitter.ms.",
    ),
    "log.retention.ms": dict(
        default=None,
        validator=None,
        doc="Retention of a segment (-1 or any negative: no limit); unset = "
        "log.retention.minutes, then log.retention.hours. Default of retention.ms.",
    ),
    "log.flush.interval.ms": dict(
        default=None,
        doc="Time between forced fsyncs; unset = log.flush.scheduler.interval.ms. "
        "Default of flush.ms.",
    ),
}


def _derive_topic_synonyms(explicit: Mapping[str, ConfigDef]) -> dict[str, ConfigDef]:
    derived: dict[str, ConfigDef] = {}
    for topic_key, tdef in TOPIC_CONFIGS.items():
        name = tdef.broker_synonym
        if name is None or name in explicit:
            continue
        fields: dict[str, Any] = dict(
            name=name,
            type=tdef.type,
            default=tdef.default,
            validator=tdef.validator,
            doc=f"{tdef.doc} Default of the topic key {topic_key}.",
            read_only=False,
            sensitive=tdef.sensitive,
        )
        fields.update(_SYNONYM_OVERRIDES.get(name, {}))
        derived[name] = ConfigDef(**fields)
    return derived


def _build() -> dict[str, ConfigDef]:
    explicit = {d.name: d for d in _BROKER_ONLY}
    assert len(explicit) == len(_BROKER_ONLY), "duplicate broker key"
    merged = {**explicit, **_derive_topic_synonyms(explicit)}
    unused = {d.name: d for d in KAFKA_ONLY_KEYS if d.name not in merged}
    return dict(sorted({**merged, **unused}.items()))


BROKER_CONFIGS: dict[str, ConfigDef] = _build()
"""Every broker configuration key we accept, by name: ours, the topic defaults, and the rest
of Kafka's (``wireserver.kafka_keys``, accepted without effect)."""

BROKER_DEFAULTS: dict[str, Any] = {
    name: cdef.default for name, cdef in BROKER_CONFIGS.items() if cdef.default is not None
}
"""The keys with a default and that default: the DEFAULT_CONFIG layer of every synonym list
(DescribeConfigs asks for it once per key described: built once)."""

UNUSED_KEYS = frozenset(d.name for d in KAFKA_ONLY_KEYS if BROKER_CONFIGS[d.name] is d)
"""Kafka's broker keys that we accept and describe but do not act on."""

LISTENER_ONLY_KEYS = frozenset(
    (
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
    )
)
"""Kafka's ``DynamicSecurityConfigs``: dynamic only per listener (``listener.name.<l>.<key>``);
AlterConfigs refuses them without the prefix."""

CLUSTER_LEVEL_LISTENER_KEYS = frozenset(
    ("max.connections", "max.connection.creation.rate", "num.network.threads")
)
"""Kafka's ``ClusterLevelListenerConfigs``: the only ``listener.name.<l>.<key>`` keys that can
be set as the cluster default; every other listener-prefixed key is per broker."""


def listener_key_def(name: str) -> ConfigDef | None:
    """The definition of ``<key>`` in ``listener.name.<listener>.<key>`` (or of ``<key>`` in
    ``listener.name.<listener>.<mechanism>.<key>``), None when ``name`` is not such a key of
    ours."""
    if not name.startswith(LISTENER_PREFIX):
        return None
    rest = name[len(LISTENER_PREFIX) :].partition(".")[2]
    for candidate in (rest, rest.partition(".")[2]):  # <key> or <mechanism>.<key>
        cdef = BROKER_CONFIGS.get(candidate)
        if cdef is not None:
            return cdef
    return None


def key_def(name: str) -> ConfigDef | None:
    """The definition a broker key (plain or listener-prefixed) is parsed and shown with."""
    return BROKER_CONFIGS.get(name) or listener_key_def(name)


TOPIC_KEY_BY_BROKER_SYNONYM: dict[str, str] = {
    tdef.broker_synonym: key for key, tdef in TOPIC_CONFIGS.items() if tdef.broker_synonym
}


_SYNONYM_GROUPS = (
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
)


def broker_synonyms(name: str) -> list[str]:
    """Kafka's synonym group of a broker key, highest precedence first.

    ``log.retention.{ms,minutes,hours}``, ``log.roll.{ms,hours}``,
    ``log.roll.jitter.{ms,hours}`` and ``log.flush.interval.ms`` (whose fallback is
    ``log.flush.scheduler.interval.ms``); every other key is its own only synonym.
    """
    for group in _SYNONYM_GROUPS:
        if name in group and name != "log.flush.scheduler.interval.ms":
            return list(group)
    return [name]


# --------------------------------------------------------------------------------------------
# Java .properties


_WS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX = set("0123456789abcdefABCDEF")


def parse_properties(text: str) -> dict[str, str]:
    """Parse ``.properties`` text the way ``java.util.Properties.load`` does.

    Comments start with ``#`` or ``!``; a key ends at the first unescaped ``=``, ``:`` or
    whitespace; a line ending in an odd number of backslashes continues on the next one
    (whose leading whitespace is dropped); ``\\t \\n \\r \\f \\uXXXX`` are escapes and a
    backslash before any other character stands for that character. Later keys win.
    """
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        result[_unescape(key)] = _unescape(value)
    return result


def load_properties(path: str) -> dict[str, str]:
    """Read a ``.properties`` file; ``ConfigError`` when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a directory") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # what Java would have read
    try:
        return parse_properties(text)
    except ConfigError as exc:
        raise ConfigError(f"config file {path}: {exc}") from None


def _logical_lines(text: str) -> Iterator[str]:
    lines = re.split(r"\r\n|\r|\n", text)
    index, count = 0, len(lines)
    while index < count:
        line = lines[index].lstrip(_WS)
        index += 1
        if not line or line[0] in "#!":
            continue
        parts = []
        while _continues(line):
            parts.append(line[:-1])
            if index >= count:
                line = ""
                break
            line = lines[index].lstrip(_WS)
            index += 1
        parts.append(line)
        yield "".join(parts)


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    length = len(line)
    key_end = value_start = length
    has_separator = False
    i = 0
    while i < length:
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if char in _WS:
            key_end, value_start = i, i + 1
            break
        i += 1
    key_end = min(key_end, length)
    j = value_start
    while j < length:
        char = line[j]
        if char not in _WS:
            if not has_separator and char in "=:":
                has_separator = True
            else:
                break
        j += 1
    return line[:key_end], line[j:]


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, length = 0, len(text)
    while i < length:
        char = text[i]
        i += 1
        if char != "\\":
            out.append(char)
            continue
        if i >= length:
            break  # a lone trailing backslash stands for nothing
        char = text[i]
        i += 1
        if char == "u":
            digits = text[i : i + 4]
            if len(digits) < 4 or not set(digits) <= _HEX:
                raise ConfigError(f"malformed \\uxxxx escape in {text!r}")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(char, char))
    joined = "".join(out)
    # \uD83D\uDE00 style surrogate pairs become one character, as in Java's UTF-16 strings.
    return joined.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def parse_overrides(overrides: Mapping[str, Any] | Iterable[str]) -> dict[str, Any]:
    """``{"k": "v"}`` or ``["k=v", ...]`` as a dict; ``ConfigError`` for an item without '='."""
    if isinstance(overrides, Mapping):
        return dict(overrides)
    if isinstance(overrides, str):
        overrides = [overrides]
    result: dict[str, Any] = {}
    for item in overrides:
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"malformed override {item!r}: expected key=value")
        result[key] = value
    return result


# --------------------------------------------------------------------------------------------
# Listeners


@dataclass(frozen=True)
class Listener:
    """One ``NAME://host:port`` endpoint. ``host == ""`` means every interface; port 0 = any."""

    name: str
    host: str
    port: int
    security_protocol: str

    @property
    def all_interfaces(self) -> bool:
        return self.host in ("", "0.0.0.0", "::")

    def with_port(self, port: int) -> Listener:
        """The same listener with the port the socket actually bound (for port 0)."""
        return Listener(self.name, self.host, port, self.security_protocol)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


_LISTENER_RE = re.compile(
    r"^(?P<name>[^:/\s]+)://(?:\[(?P<v6>[0-9A-Za-z:.%]*)\]|(?P<host>[0-9A-Za-z\-%._]*)):"
    r"(?P<port>\d+)$"
)


def parse_security_protocol_map(value: str) -> dict[str, str]:
    """``"A:PLAINTEXT,B:SSL"`` → ``{"A": "PLAINTEXT", "B": "SSL"}`` (names upper-cased)."""
    result: dict[str, str] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name or not protocol:
            raise ValueError(f"map entry {item!r} is not NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"unknown security protocol {protocol!r} for listener {name}; "
                f"expected one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        if name in result:
            raise ValueError(f"listener {name} appears twice")
        result[name] = protocol
    return result


def parse_listeners(
    value: str, protocol_map: Mapping[str, str] | None, key: str = "listeners"
) -> list[Listener]:
    """Parse ``NAME://host:port,...``; ``ValueError`` on syntax, port or duplicate names.

    With ``protocol_map`` None only the syntax is checked (security protocol left as
    the name); otherwise every name must be in the map.
    """
    listeners: list[Listener] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        match = _LISTENER_RE.match(item)
        if match is None:
            raise ValueError(f"listener {item!r} is not of the form NAME://host:port")
        name = match["name"].upper()
        host = match["v6"] if match["v6"] is not None else match["host"]
        port = int(match["port"])
        if port > 65535:
            raise ValueError(f"listener {item!r}: port {port} is out of range 0-65535")
        if any(existing.name == name for existing in listeners):
            raise ValueError(f"each listener must have a different name; {name} appears twice")
        if protocol_map is None:
            protocol = name
        elif name in protocol_map:
            protocol = protocol_map[name]
        else:
            raise ValueError(
                f"no security protocol defined for listener {name} in "
                f"listener.security.protocol.map"
            )
        listeners.append(Listener(name, host, port, protocol))
    return listeners


#: The operations listener's names, which are its protocols (``metrics.listeners``).
METRICS_PROTOCOLS = {"HTTP": "HTTP", "HTTPS": "HTTPS"}
#: The listener name whose ``listener.name.<name>.ssl.*`` keys an HTTPS operations listener
#: reads (``listener.name.metrics.ssl.keystore.location``), before the plain ``ssl.*`` keys.
METRICS_LISTENER_NAME = "METRICS"
#: Where an operations listener without a host binds: loopback, unlike a Kafka listener, so
#: that the broker's internals are not on the network unless an operator says so.
METRICS_DEFAULT_HOST = "127.0.0.1"


def parse_metrics_listeners(value: str) -> list[Listener]:
    """``metrics.listeners``: ``HTTP://host:port`` / ``HTTPS://host:port`` items, each at most
    once; an empty host becomes ``METRICS_DEFAULT_HOST``. ``ValueError`` otherwise."""
    try:
        listeners = parse_listeners(value, METRICS_PROTOCOLS, "metrics.listeners")
    except ValueError as exc:
        raise ValueError(
            str(exc)
            .replace(
                "no security protocol defined for listener",
                "an operations listener is HTTP or HTTPS, not",
            )
            .replace(" in listener.security.protocol.map", "")
        ) from None
    return [
        Listener(listener.name, listener.host or METRICS_DEFAULT_HOST, listener.port, listener.name)
        for listener in listeners
    ]


def parse_basic_auth_users(value: str | None) -> dict[str, str]:
    """``metrics.basic.auth.users``: ``"alice:secret,bob:pw"`` -> ``{"alice": "secret", ...}``.
    A user name cannot hold ``:`` (RFC 7617); a password can."""
    users: dict[str, str] = {}
    for item in (part.strip() for part in (value or "").split(",")):
        if not item:
            continue
        user, sep, password = item.partition(":")
        if not sep or not user or not password:
            raise ValueError("every entry must be user:password, both non-empty")
        if user in users:
            raise ValueError(f"user {user} appears twice")
        users[user] = password
    return users


# --------------------------------------------------------------------------------------------
# DescribeConfigs shapes


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: str

    @property
    def source_id(self) -> int:
        return CONFIG_SOURCE_IDS[self.source]


@dataclass(frozen=True)
class ConfigEntry:
    """One row of a DescribeConfigs answer for the broker resource."""

    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool
    synonyms: tuple[ConfigSynonym, ...]
    type: str
    doc: str

    @property
    def source_id(self) -> int:
        return CONFIG_SOURCE_IDS[self.source]

    @property
    def type_id(self) -> int:
        return CONFIG_TYPE_IDS.get(self.type, 0)


# --------------------------------------------------------------------------------------------
# BrokerConfig


class BrokerConfig:
    """The broker's configuration: static values from file and overrides, plus dynamic ones.

    ``BrokerConfig(values)`` takes raw (or already typed) values by key; ``BrokerConfig.load``
    reads a properties file first. Construction parses and checks everything, raising
    ``ConfigValueError`` naming the key, so a broker never starts half-configured.
    """

    def __init__(self, values: Mapping[str, Any] | None = None):
        self._static: dict[str, Any] = {}
        self._dynamic_broker: dict[str, Any] = {}
        self._dynamic_default: dict[str, Any] = {}
        self._subscribers: list[Callable[[str], None]] = []
        self.unknown: dict[str, Any] = {}
        self._per_listener: dict[str, Any] = {}
        for name, raw in (values or {}).items():
            cdef = BROKER_CONFIGS.get(name)
            if cdef is None and name.startswith(LISTENER_PREFIX):
                self._per_listener[name] = self._parse_per_listener(name, raw)
                continue
            if cdef is None:
                self.unknown[name] = raw
                continue
            value = cdef.parse(raw)
            if value is not None:
                self._static[name] = value
        for name in self.unknown:
            hint = ""
            if name in TOPIC_CONFIGS and TOPIC_CONFIGS[name].broker_synonym:
                hint = (
                    f" ({name} is a topic-level config; the broker default is "
                    f"{TOPIC_CONFIGS[name].broker_synonym})"
                )
            log.warning(
                "The configuration '%s' was supplied but isn't a known config; ignored%s",
                name,
                hint,
            )
        self._node_id = self._resolve_node_id()
        self._log_dirs = self._resolve_log_dirs()
        self._protocol_map = parse_security_protocol_map(self["listener.security.protocol.map"])
        self._listeners, self._advertised = self._resolve_listeners()
        self._inter_broker = self._resolve_inter_broker_listener()
        self._metrics_listeners = parse_metrics_listeners(self["metrics.listeners"])
        self._inter_broker_security = None
        if self["zookeeper.connect"]:  # a cluster broker must be able to log in to its peers
            from wireserver.security.inter_broker import InterBrokerSecurity

            self._inter_broker_security = InterBrokerSecurity.from_config(self)

    @classmethod
    def load(
        cls, properties_path: str | None = None, overrides: Mapping[str, Any] | Iterable[str] = ()
    ) -> BrokerConfig:
        """Read ``properties_path`` (if given), apply ``overrides`` over it, and check."""
        values: dict[str, Any] = {}
        if properties_path is not None:
            values.update(load_properties(properties_path))
        values.update(parse_overrides(overrides))
        return cls(values)

    # ---- reading values

    def __getitem__(self, name: str) -> Any:
        if name not in BROKER_CONFIGS:
            raise KeyError(name)
        if name in ("node.id", "broker.id"):
            return self._node_id
        for layer in (self._dynamic_broker, self._dynamic_default, self._static):
            if name in layer:
                return _copy(layer[name])
        return _copy(BROKER_CONFIGS[name].default)

    def __contains__(self, name: object) -> bool:
        return name in BROKER_CONFIGS

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def source(self, name: str) -> str:
        """Where the value of ``name`` comes from, as DescribeConfigs names the source."""
        if name not in BROKER_CONFIGS:
            raise KeyError(name)
        if name in ("node.id", "broker.id") and self._static.keys() & {"node.id", "broker.id"}:
            return STATIC_BROKER_CONFIG
        if name in self._dynamic_broker:
            return DYNAMIC_BROKER_CONFIG
        if name in self._dynamic_default:
            return DYNAMIC_DEFAULT_BROKER_CONFIG
        if name in self._static:
            return STATIC_BROKER_CONFIG
        return DEFAULT_CONFIG

    def static_values(self) -> dict[str, Any]:
        """Typed values that came from the file or overrides."""
        return {name: _copy(value) for name, value in self._static.items()}

    def dynamic_values(self, cluster_default: bool = False) -> dict[str, str]:
        """Dynamic values as strings (per broker, or the cluster-wide defaults), to persist."""
        layer = self._dynamic_default if cluster_default else self._dynamic_broker
        return {name: _def(name).render(value) for name, value in layer.items()}

    @staticmethod
    def _parse_per_listener(name: str, raw: Any) -> Any:
        """``listener.name.<listener>.<key>``: parsed as ``<key>`` when we know it."""
        cdef = listener_key_def(name)
        return cdef.parse(raw) if cdef is not None else raw

    def listener_value(
        self,
        listener: str,
        name: str,
        mechanism: str | None = None,
        broker_layer: Mapping[str, Any] | None = None,
    ) -> Any:
        """``name`` as the listener sees it, Kafka's precedence:
        ``listener.name.<listener>.<mechanism>.<name>`` (mechanism keys only), then
        ``listener.name.<listener>.<name>`` (this broker's dynamic value over the file's),
        then the plain broker key. ``broker_layer`` (typed values) stands for this broker's
        dynamic layer: a change AlterConfigs checks before it is made."""
        prefix = f"{LISTENER_PREFIX}{listener.lower()}."
        dynamic = self._dynamic_broker if broker_layer is None else broker_layer
        keys = [prefix + name]
        if mechanism is not None:
            keys.insert(0, f"{prefix}{mechanism.lower()}.{name}")
        for key in keys:
            for layer in (dynamic, self._dynamic_default, self._per_listener):
                if key in layer:
                    return _copy(layer[key])
        return self.get(name)

    def per_listener_values(self) -> dict[str, Any]:
        """Every ``listener.name.*`` key that was given."""
        return dict(self._per_listener)

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def cluster_id(self) -> str | None:
        return self["cluster.id"] or None

    @property
    def log_dirs(self) -> list[str]:
        return list(self._log_dirs)

    @property
    def listeners(self) -> list[Listener]:
        """Where to bind. Port 0 means a free port; host "" every interface."""
        return list(self._listeners)

    @property
    def advertised_listeners(self) -> list[Listener]:
        """What to tell clients (defaults to ``listeners``).

        An empty host is advertised as this machine's fully qualified name, as Kafka does;
        port 0 must be replaced by the broker with the port it bound (``Listener.with_port``).
        """
        resolved = []
        for listener in self._advertised:
            if listener.host == "":
                listener = Listener(
                    listener.name, _local_hostname(), listener.port, listener.security_protocol
                )
            resolved.append(listener)
        return resolved

    @property
    def metrics_listeners(self) -> list[Listener]:
        """Where the operations listener binds (``metrics.listeners``): named and with the
        security protocol HTTP or HTTPS, a host always given (empty = loopback)."""
        return list(self._metrics_listeners)

    @property
    def metrics_users(self) -> dict[str, str]:
        """``metrics.basic.auth.users`` by user name; empty = no authentication."""
        return parse_basic_auth_users(self["metrics.basic.auth.users"])

    @property
    def inter_broker_listener(self) -> Listener:
        """The advertised listener other brokers connect to."""
        return self._inter_broker

    @property
    def inter_broker_security(self) -> Any:
        """How this broker connects to the others (cluster mode only, else None): an
        ``InterBrokerSecurity``, checked when the configuration is built."""
        return self._inter_broker_security

    @property
    def security_protocol_map(self) -> dict[str, str]:
        return dict(self._protocol_map)

    # ---- topic defaults

    def resolved(self, name: str) -> Any:
        """A broker key's effective value after Kafka's synonym fallbacks.

        ``log.retention.ms`` falls back to ``.minutes`` then ``.hours`` (negative = -1),
        ``log.roll[.jitter].ms`` to ``.hours``, ``log.flush.interval.ms`` to
        ``log.flush.scheduler.interval.ms``; every other key is its plain value.
        """
        if name == "log.retention.ms":
            millis = self["log.retention.ms"]
            if millis is None:
                minutes = self["log.retention.minutes"]
                if minutes is not None:
                    millis = minutes * MINUTE_MS
                else:
                    millis = self["log.retention.hours"] * HOUR_MS
            return -1 if millis < 0 else millis
        if name == "log.roll.ms":
            millis = self["log.roll.ms"]
            return millis if millis is not None else self["log.roll.hours"] * HOUR_MS
        if name == "log.roll.jitter.ms":
            millis = self["log.roll.jitter.ms"]
            return millis if millis is not None else self["log.roll.jitter.hours"] * HOUR_MS
        if name == "log.flush.interval.ms":
            millis = self["log.flush.interval.ms"]
            return millis if millis is not None else self["log.flush.scheduler.interval.ms"]
        return self[name]

    def topic_defaults(self) -> dict[str, Any]:
        """Typed broker defaults keyed by topic-level name, for ``LogConfig.from_values``."""
        return {
            topic_key: self.resolved(tdef.broker_synonym)
            for topic_key, tdef in TOPIC_CONFIGS.items()
            if tdef.broker_synonym
        }

    # ---- dynamic configuration (AlterConfigs / IncrementalAlterConfigs on a broker)

    def validate_dynamic(self, name: str, raw: Any) -> Any:
        """Parse a value AlterConfigs wants to set; raise as ``set_dynamic`` would. A
        listener-prefixed key is parsed as its ``<key>``; like Kafka, which checks only the
        plain names against its non-dynamic keys, any known ``<key>`` may be set."""
        cdef = key_def(name)
        if cdef is None:
            raise UnknownConfigError(f"Unknown broker config {name}", name)
        if cdef.read_only and name in BROKER_CONFIGS:
            raise ReadOnlyConfigError(
                f"Cannot update config {name} dynamically; it needs a restart", name
            )
        return cdef.parse(raw)

    def set_dynamic(self, name: str, raw: Any, *, cluster_default: bool = False) -> None:
        """Set a dynamic value for this broker (or, with ``cluster_default``, for all)."""
        value = self.validate_dynamic(name, raw)
        layer = self._dynamic_default if cluster_default else self._dynamic_broker
        if value is None:
            layer.pop(name, None)
        else:
            layer[name] = value
        self._notify(name)

    def delete_dynamic(self, name: str, *, cluster_default: bool = False) -> None:
        """Remove a dynamic value; the next source in line takes over. Unset keys are fine."""
        cdef = key_def(name)
        if cdef is None:
            raise UnknownConfigError(f"Unknown broker config {name}", name)
        if cdef.read_only and name in BROKER_CONFIGS:
            raise ReadOnlyConfigError(
                f"Cannot update config {name} dynamically; it needs a restart", name
            )
        layer = self._dynamic_default if cluster_default else self._dynamic_broker
        if layer.pop(name, None) is not None:
            self._notify(name)

    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(name)`` after every dynamic change; returns an unsubscribe function."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def _notify(self, name: str) -> None:
        for callback in list(self._subscribers):
            callback(name)

    # ---- DescribeConfigs

    def items(
        self, names: Iterable[str] | None = None, include_synonyms: bool = True
    ) -> list[ConfigEntry]:
        """DescribeConfigs rows for this broker, all keys or ``names`` (unknown ones skipped).
        Kafka's internal keys are described only when the broker's file sets them."""
        # This broker's listener-prefixed keys are described too, as Kafka describes every
        # key it was given (synonyms: the prefixed key, then the plain one).
        listener_keys = [
            name
            for name in sorted(self._dynamic_broker)
            if name not in BROKER_CONFIGS and (names is None or name in names)
        ]
        wanted = [
            name
            for name in (BROKER_CONFIGS if names is None else names)
            if name in BROKER_CONFIGS
            and (not BROKER_CONFIGS[name].internal or name in self._static)
        ]
        entries = []
        for name in wanted + listener_keys:
            cdef = _def(name)
            if name in BROKER_CONFIGS:
                synonyms = self._synonyms(name, broker_synonyms(name), cdef.sensitive)
                value = None if cdef.sensitive else cdef.render(self[name])
            else:
                synonyms = self._synonyms(name, [name, cdef.name], cdef.sensitive)
                value = None if cdef.sensitive else cdef.render(self._dynamic_broker[name])
            source = synonyms[0].source if synonyms else DEFAULT_CONFIG
            entries.append(
                ConfigEntry(
                    name=name,
                    value=value,
                    source=source,
                    read_only=cdef.read_only,
                    sensitive=cdef.sensitive,
                    synonyms=tuple(synonyms) if include_synonyms else (),
                    type=cdef.type,
                    doc=cdef.doc,
                )
            )
        return entries

    def topic_synonyms(self, topic_key: str) -> list[ConfigSynonym]:
        """Broker-side synonyms of a topic-level key for a topic's DescribeConfigs.

        The topic handler puts its own ``DYNAMIC_TOPIC_CONFIG`` entry first when the topic
        overrides the key; the source of the row is the first synonym's, else DEFAULT_CONFIG.
        """
        tdef = TOPIC_CONFIGS[topic_key]
        if tdef.broker_synonym is None or tdef.broker_synonym not in BROKER_CONFIGS:
            return []
        return self._synonyms(
            tdef.broker_synonym, broker_synonyms(tdef.broker_synonym), tdef.sensitive
        )

    def _synonyms(self, name: str, group: list[str], sensitive: bool) -> list[ConfigSynonym]:
        # Kafka's ConfigHelper.configSynonyms: by source first, then by synonym order, and
        # drop everything before the first entry for the described name itself.
        found: list[ConfigSynonym] = []
        layers = (
            (self._dynamic_broker, DYNAMIC_BROKER_CONFIG),
            (self._dynamic_default, DYNAMIC_DEFAULT_BROKER_CONFIG),
            (self._per_listener, STATIC_BROKER_CONFIG),  # listener.name.* of the file
            (self._static, STATIC_BROKER_CONFIG),
            (BROKER_DEFAULTS, DEFAULT_CONFIG),
        )
        for layer, source in layers:
            for synonym in group:
                if synonym in layer:
                    rendered = _def(synonym).render(layer[synonym])
                    found.append(ConfigSynonym(synonym, None if sensitive else rendered, source))
        for index, synonym in enumerate(found):
            if synonym.name == name:
                return found[index:]
        return []

    # ---- checks done once at construction

    def _resolve_node_id(self) -> int:
        node_id = self._static.get("node.id")
        broker_id = self._static.get("broker.id")
        if node_id is not None and broker_id is not None and node_id != broker_id:
            raise ConfigValueError(
                "node.id", node_id, f"must equal broker.id ({broker_id}) when both are set"
            )
        if node_id is not None:
            return node_id
        return broker_id if broker_id is not None else BROKER_CONFIGS["node.id"].default

    def _resolve_log_dirs(self) -> list[str]:
        name = "log.dirs" if "log.dirs" in self._static else "log.dir"
        raw = self[name]
        dirs = [part.strip() for part in raw.split(",") if part.strip()]
        if not dirs:
            raise ConfigValueError(name, raw, "at least one log directory must be given")
        return dirs

    def _resolve_listeners(self) -> tuple[list[Listener], list[Listener]]:
        try:
            listeners = parse_listeners(self["listeners"], self._protocol_map)
        except ValueError as exc:
            raise ConfigValueError("listeners", self["listeners"], str(exc)) from None
        if not listeners:
            raise ConfigValueError(
                "listeners", self["listeners"], "at least one listener is required"
            )
        raw = self["advertised.listeners"]
        if not raw:
            advertised = list(listeners)
            key = "listeners"
        else:
            key = "advertised.listeners"
            try:
                advertised = parse_listeners(raw, self._protocol_map)
            except ValueError as exc:
                raise ConfigValueError(key, raw, str(exc)) from None
            names = {listener.name for listener in listeners}
            extra = [a.name for a in advertised if a.name not in names]
            if extra:
                raise ConfigValueError(
                    key, raw, f"listener names {', '.join(extra)} are not in listeners"
                )
        for listener in advertised:
            if listener.host in ("0.0.0.0", "::"):
                raise ConfigValueError(
                    "advertised.listeners",
                    raw if raw is not None else self["listeners"],
                    f"cannot advertise the non-routable address {listener.host} "
                    f"(listener {listener.name}"
                    + ("; set advertised.listeners)" if key == "listeners" else ")"),
                )
        return listeners, advertised

    def _resolve_inter_broker_listener(self) -> Listener:
        """Kafka's ``getInterBrokerListenerNameAndSecurityProtocol``: the listener named by
        ``inter.broker.listener.name``, or the one named after ``security.inter.broker.protocol``
        (never both); it must be an advertised listener."""
        name = self["inter.broker.listener.name"]
        by_protocol = "security.inter.broker.protocol" in self._static
        if name is not None and by_protocol:
            raise ConfigValueError(
                "inter.broker.listener.name",
                name,
                "only one of inter.broker.listener.name "
                "and security.inter.broker.protocol should be set",
            )
        key = "inter.broker.listener.name"
        if name is None and by_protocol:
            key, name = "security.inter.broker.protocol", self["security.inter.broker.protocol"]
        if name is not None:
            name = name.upper()
            for listener in self._advertised:
                if listener.name == name:
                    return listener
            valid = ",".join(listener.name for listener in self._advertised)
            raise ConfigValueError(
                key,
                name,
                f"the inter-broker listener must be a listener "
                f"name defined in advertised.listeners. The "
                f"valid options based on currently configured "
                f"listeners are {valid}",
            )
        for listener in self._advertised:
            if listener.name == "PLAINTEXT":
                return listener
        for listener in self._advertised:
            if listener.security_protocol == "PLAINTEXT":
                return listener
        return self._advertised[0]


def _def(name: str) -> ConfigDef:
    cdef = key_def(name)
    if cdef is None:
        raise KeyError(name)
    return cdef


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


_hostname_cache: list[str] = []


def _local_hostname() -> str:
    if not _hostname_cache:
        _hostname_cache.append(socket.getfqdn())
    return _hostname_cache[0]


# --------------------------------------------------------------------------------------------
# Reference tables for docs/configuration.md


def reference_markdown() -> str:
    """The key tables of docs/configuration.md (regenerate with ``python -m wireserver.config``)."""

    def table(
        defs: Mapping[str, ConfigDef], dynamic_column: str, extra, meaning: bool = True
    ) -> list[str]:
        columns = ["Key", "Type", "Default", dynamic_column] + (["Meaning"] if meaning else [])
        rows = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for name, cdef in defs.items():
            default = cdef.render(cdef.default)
            default = "*(unset)*" if default is None else f"`{default}`" if default else '`""`'
            cells = [f"`{name}`", cdef.type, default, extra(cdef)]
            if meaning:
                cells.append(cdef.doc.replace("|", "\\|"))
            rows.append("| " + " | ".join(cells) + " |")
        return rows

    def update_mode(cdef: ConfigDef) -> str:
        mode = "no" if cdef.read_only else "per broker" if cdef.per_broker else "yes"
        return mode + " (internal)" if cdef.internal else mode

    used = {name: d for name, d in BROKER_CONFIGS.items() if name not in UNUSED_KEYS}
    unused = {name: d for name, d in BROKER_CONFIGS.items() if name in UNUSED_KEYS}
    lines = ["### Broker keys", ""]
    lines += table(used, "Dynamic", lambda d: "no" if d.read_only else "yes")
    lines += [
        "",
        "### Kafka broker keys accepted without effect",
        "",
        "Accepted in the file and by AlterConfigs (where Kafka allows a runtime change), "
        "and described with Kafka's defaults; wireserver does not act on them. *per "
        "broker*: dynamic for one broker only, not as the cluster default; *internal*: "
        "left out of DescribeConfigs unless set in the file, as in Kafka.",
        "",
    ]
    lines += table(unused, "Dynamic", update_mode, meaning=False)
    lines += ["", "### Topic keys", ""]
    lines += table(
        dict(sorted(TOPIC_CONFIGS.items())),
        "Broker default from",
        lambda d: f"`{d.broker_synonym}`" if d.broker_synonym else "—",
    )
    from wireserver.groups.configs import BROKER_DEFAULTS, GROUP_CONFIGS

    lines += [
        "",
        "### Group keys",
        "",
        "Set per group with AlterConfigs / IncrementalAlterConfigs on the GROUP resource "
        "(`kafka-configs --entity-type groups`); a group that does not set a key gets "
        "the broker key's value, or the default shown.",
        "",
    ]
    lines += table(
        GROUP_CONFIGS,
        "Broker default from",
        lambda d: f"`{BROKER_DEFAULTS[d.name]}`" if d.name in BROKER_DEFAULTS else "—",
    )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(reference_markdown(), end="")
