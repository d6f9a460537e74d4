"""Authentication and authorization scenarios: the same SASL and ACL settings on the
reference Kafka and on wireserver, the same clients, the same observations.

Both brokers run with (see :data:`BROKER_SETTINGS`):

* a ``PLAINTEXT`` listener for set-up chores only: its principal, ``User:ANONYMOUS``, is a
  super user (Kafka's readiness probe, its inter-broker and controller links use it too);
* a ``SASL_PLAINTEXT`` listener with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 enabled
  (OAUTHBEARER, which both brokers can serve, stays disabled);
* ``StandardAuthorizer``, ``super.users=User:ANONYMOUS;User:admin`` and
  ``allow.everyone.if.no.acl.found=false``;
* a ``delegation.token.secret.key``, so delegation tokens are enabled.

Users: ``alice`` and ``bob`` (ordinary), ``admin`` (a super user). PLAIN passwords are in the
listener's JAAS config; SCRAM credentials are added through AlterUserScramCredentials on each
broker (confluent-kafka's admin client), as an operator would with ``kafka-configs``.

A scenario is ``fn(target, client) -> observation`` with a :class:`SecureTarget` and a client
name; every scenario makes its own topics, groups and transactional ids, and the ACLs it
grants name only those, so scenarios do not see each other's grants. ACLs are granted
through the PLAINTEXT listener and a scenario waits until DescribeAcls lists them (Kafka
applies them from its metadata log, a moment after CreateAcls answers).

The scenarios register in :data:`SECURITY_SCENARIOS`, not in the shared registry:
test_compat's brokers have no SASL listener.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Any

from compat_tests import admin_clients, neutral
from compat_tests.clients import CLIENTS, ClientError, _java_error, record
from compat_tests.reference import run_tool
from compat_tests.scenarios import Scenario, scenario

SECURITY_SCENARIOS: dict[str, Scenario] = {}
#: (scenario, client or "*") -> why wireserver differs on purpose (asserted still to differ)
SECURITY_DIFFERENCES: dict[tuple[str, str], str] = {}

SASL_LISTENER = "SASL_PLAINTEXT"
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
AUTH_CLIENTS = ("confluent-kafka", "java")
ACL_CLIENTS = ("confluent-kafka", "kafka-python")
#: one ACL scenario also runs Kafka's console producer (a JVM start per produce: seconds)
PRODUCE_CLIENTS = (*ACL_CLIENTS, "java")
WAIT = 30.0  # seconds a client may take (an error or the records come well before)


_LOGIN_MODULES = {
    "PLAIN": "plain.PlainLoginModule",
    "OAUTHBEARER": "oauthbearer.OAuthBearerLoginModule",
}  # else SCRAM's


def _jaas(module: str, options: str = "") -> str:
    return f"org.apache.kafka.common.security.{module} required{options};"


BROKER_SETTINGS: dict[str, str] = {
    "sasl.enabled.mechanisms": ",".join(MECHANISMS),
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": _jaas(
        "plain.PlainLoginModule",
        "".join(f' user_{user}="{password}"' for user, password in PASSWORDS.items()),
    ),
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": _jaas("scram.ScramLoginModule"),
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": _jaas("scram.ScramLoginModule"),
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS;User:admin",
    "allow.everyone.if.no.acl.found": "false",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    # delegation tokens (the tokens scenario)
    "delegation.token.secret.key": "compat-token-secret",
}


@dataclass
class SecureTarget:
    name: str  # "kafka" | "wireserver"
    admin: str  # PLAINTEXT listener: User:ANONYMOUS, a super user
    sasl: str  # SASL_PLAINTEXT listener


def add_scram_users(admin_bootstrap: str) -> None:
    """Every user gets SCRAM-SHA-256 and -512 credentials (AlterUserScramCredentials)."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": admin_bootstrap})
    for mechanism in MECHANISMS[1:]:  # one user at most once per request (Kafka's rule)
        upserts = [
            UserScramCredentialUpsertion(
                user,
                ScramCredentialInfo(getattr(ScramMechanism, mechanism.replace("-", "_")), 8192),
                password.encode(),
            )
            for user, password in PASSWORDS.items()
        ]
        for future in admin.alter_user_scram_credentials(upserts).values():
            future.result(timeout=30)


def wait_until_authenticates(target: SecureTarget, timeout: float = 30.0) -> None:
    """Until every user logs in with every mechanism (Kafka applies SCRAM credentials from
    its metadata log, a moment after AlterUserScramCredentials answers)."""
    from wireserver.testing import KafkaWire, KafkaWireError

    deadline = time.monotonic() + timeout
    for user, password in PASSWORDS.items():
        for mechanism in MECHANISMS:
            while True:
                try:
                    KafkaWire(target.sasl, sasl=(mechanism, user, password)).close()
                    break
                except (KafkaWireError, OSError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)


# ------------------------------------------------------------------------------ clients


def settings(
    client: str, user: str, mechanism: str = "PLAIN", password: str | None = None
) -> dict[str, Any]:
    """The client settings that log ``user`` in on the SASL listener."""
    password = PASSWORDS[user] if password is None else password
    if client == "kafka-python":
        return {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": user,
            "sasl_plain_password": password,
        }
    if client == "java":
        options = (
            f' unsecuredLoginStringClaim_sub="{user}"'
            if mechanism == "OAUTHBEARER"
            else f' username="{user}" password="{password}"'
        )
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": _jaas(
                _LOGIN_MODULES.get(mechanism, "scram.ScramLoginModule"), options
            ),
        }
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def produce(target: SecureTarget, client: str, user: str, topic: str) -> str:
    """One record from ``user``: "ok" or the error the client reports."""
    timeouts = {
        "kafka-python": {"max_block_ms": int(WAIT * 1000)},
        "confluent-kafka": {"message.timeout.ms": int(WAIT * 1000)},
        "java": {},
    }[client]  # the console producer's own bounds (clients.py)
    try:
        CLIENTS[client].produce(
            target.sasl,
            topic,
            [record("v", key="k")],
            config={**settings(client, user), **timeouts},
        )
        return "ok"
    except ClientError as exc:
        return exc.name


#: The group.id librdkafka's assign-only consumer carries (clients.py): it looks up the
#: group's coordinator, which takes DESCRIBE on the group, so every user may READ it.
ASSIGN_GROUP = "compat-unused"


def consume(target: SecureTarget, client: str, user: str, topic: str, count: int):
    """The values ``user`` reads from partition 0 (assigned, no group), or the error."""
    try:
        got = CLIENTS[client].consume(
            target.sasl, topic, 0, count, timeout=WAIT, config=settings(client, user)
        )
        return [r["value"] for r in got]
    except ClientError as exc:
        return exc.name


def group_consume(target: SecureTarget, client: str, user: str, topic: str, group: str, count: int):
    """The values ``user`` reads as a member of ``group``, or the first error reported."""
    deadline = time.monotonic() + WAIT
    values: list[str] = []
    if client == "kafka-python":
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        from compat_tests.clients import _kafka_error_name

        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=target.sasl,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            request_timeout_ms=10000,
            **settings(client, user),
        )
        try:
            while len(values) < count and time.monotonic() < deadline:
                for batch in consumer.poll(timeout_ms=300).values():
                    values.extend(m.value.decode() for m in batch)
        except KafkaError as exc:
            return _kafka_error_name(exc)
        finally:
            consumer.close(autocommit=False)
        return values
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": target.sasl,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **settings(client, user),
        }
    )
    try:
        consumer.subscribe([topic])
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.3)
            if message is None:
                continue
            if message.error():
                return message.error().name()
            values.append(message.value().decode())
    finally:
        consumer.close()
    return values


def visible_topics(target: SecureTarget, client: str, user: str, names: list[str]) -> list:
    """Which of ``names`` Metadata (listing every topic) shows ``user``."""
    if client == "kafka-python":
        admin = admin_clients._kp_admin(target.sasl, settings(client, user))
        try:
            listed = admin.list_topics()
        finally:
            admin.close()
    else:
        listed = (
            admin_clients._cf_admin(target.sasl, settings(client, user))
            .list_topics(timeout=WAIT)
            .topics
        )
    return sorted(name for name in names if name in listed)


def init_transactions(target: SecureTarget, client: str, user: str, txn_id: str) -> str:
    if client == "kafka-python":
        from kafka import KafkaProducer
        from kafka.errors import KafkaError

        from compat_tests.clients import _kafka_error_name

        producer = None
        try:
            producer = KafkaProducer(
                bootstrap_servers=target.sasl,
                transactional_id=txn_id,
                max_block_ms=int(WAIT * 1000),
                **settings(client, user),
            )
            producer.init_transactions()
            return "ok"
        except KafkaError as exc:
            return _kafka_error_name(exc)
        finally:
            if producer is not None:
                producer.close(timeout=5)
    from confluent_kafka import KafkaException, Producer

    producer = Producer(
        {"bootstrap.servers": target.sasl, "transactional.id": txn_id, **settings(client, user)}
    )
    try:
        producer.init_transactions(WAIT)
        return "ok"
    except KafkaException as exc:
        return exc.args[0].name()


# ------------------------------------------------------------------------------ ACLs


@dataclass(frozen=True)
class Acl:
    """An ACL in words: Acl("TOPIC", name, "alice", "WRITE"); prefixed and deny optional."""

    resource: str
    name: str
    user: str
    operation: str
    permission: str = "ALLOW"
    pattern: str = "LITERAL"

    def confluent(self):
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        principal = "User:*" if self.user == "*" else f"User:{self.user}"
        return AclBinding(
            ResourceType[self.resource],
            self.name,
            ResourcePatternType[self.pattern],
            principal,
            "*",
            AclOperation[self.operation],
            AclPermissionType[self.permission],
        )


def _acl_words(binding: Any) -> list[str]:
    """A described ACL (confluent-kafka's or kafka-python's) as comparable words."""
    pattern = getattr(binding, "resource_pattern", None)
    if pattern is not None:  # kafka-python
        return [
            pattern.resource_type.name,
            pattern.resource_name,
            pattern.pattern_type.name,
            binding.principal,
            binding.host,
            binding.operation.name,
            binding.permission_type.name,
        ]
    return [
        binding.restype.name,
        binding.name,
        binding.resource_pattern_type.name,
        binding.principal,
        binding.host,
        binding.operation.name,
        binding.permission_type.name,
    ]


def grant(target: SecureTarget, *acls: Acl, timeout: float = 20.0) -> None:
    """Create ``acls`` as the PLAINTEXT super user and wait until DescribeAcls lists them."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": target.admin})
    bindings = [acl.confluent() for acl in acls]
    for future in admin.create_acls(bindings, request_timeout=timeout).values():
        future.result(timeout=timeout)
    wanted = sorted(_acl_words(b) for b in bindings)
    deadline = time.monotonic() + timeout
    while True:
        found = []
        for resource in {acl.resource for acl in acls}:
            found += [_acl_words(b) for b in _describe_cf(admin, resource)]
        if all(w in found for w in wanted) or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _describe_cf(admin: Any, resource: str, name: str | None = None) -> list:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    acl_filter = AclBindingFilter(
        ResourceType[resource],
        name,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    return admin.describe_acls(acl_filter, request_timeout=WAIT).result(timeout=WAIT)


def _name(prefix: str) -> str:
    return f"compat-sec-{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(target: SecureTarget, prefix: str, values: tuple[str, ...] = ()) -> str:
    topic = neutral.create_topic(target.admin, prefix)
    if values:
        neutral.write(target.admin, topic, [record(v, key="k") for v in values])
    return topic


def _acl_scenario(name: str, check, clients: tuple[str, ...] = ACL_CLIENTS):
    return scenario(name, clients, check=check, registry=SECURITY_SCENARIOS)


# ------------------------------------------------------------------------------ authentication

_LIBRDKAFKA_NOISE = re.compile(
    r"^(?:\S+/bootstrap: )?(?:SASL authentication error: )?"
    r"| \(after \d+ms in state \w+\)$"
)
_MECHANISM_LIST = re.compile(r"(?<=supported mechanisms: )[\w,-]+")
_JAVA_SASL = re.compile(r"SaslAuthenticationException: (?P<message>[^\n]*)")


def login(
    target: SecureTarget,
    client: str,
    mechanism: str,
    user: str,
    password: str,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """List topics logged in as ``user``: {"error": "ok" | name, "message": what it says}."""
    if client == "java":
        return _java_login(target, mechanism, user, password, extra)
    from confluent_kafka.admin import AdminClient

    errors: list[Any] = []
    config = {
        "bootstrap.servers": target.sasl,
        "error_cb": errors.append,
        "log_level": 0,
        **settings(client, user, mechanism, password),
        **(extra or {}),
    }
    admin = AdminClient(config)
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=1)
            return {"error": "ok", "message": ""}
        except Exception:  # noqa: BLE001 - the error callback says what went wrong
            admin.poll(0.1)  # serves the error callback
            if errors:
                break
    if not errors:
        return {"error": "no answer", "message": ""}
    error = errors[0]
    # Without the address and the time taken, and with the broker's mechanisms sorted (Kafka
    # lists a Java HashSet in no particular order).
    message = _LIBRDKAFKA_NOISE.sub("", error.str())
    message = _MECHANISM_LIST.sub(lambda m: ",".join(sorted(m[0].split(","))), message)
    return {"error": error.name(), "message": message}


def _java_login(
    target: SecureTarget, mechanism: str, user: str, password: str, extra: dict[str, str] | None
) -> dict[str, str]:
    # generous bounds: a login that works must not time out on a loaded machine, and a
    # failed one ends at once (authentication errors are not retried)
    config = {
        **settings("java", user, mechanism, password),
        "request.timeout.ms": 20000,
        "default.api.timeout.ms": 40000,
        **(extra or {}),
    }
    lines = [f"{key}={value}" for key, value in config.items()]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "client.properties")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        proc = run_tool(
            "kafka-topics", ["--list", "--command-config", path], bootstrap=target.sasl, timeout=90
        )
    output = proc.stderr + proc.stdout
    error = _java_error(output)
    if proc.returncode == 0 and error is None:
        return {"error": "ok", "message": ""}
    match = _JAVA_SASL.search(output)
    return {
        "error": error or f"exit {proc.returncode}",
        "message": match["message"].strip() if match else "",
    }


def _check_wrong_password(obs: dict) -> None:
    assert obs["right"]["error"] == "ok", obs
    assert obs["wrong"]["error"] != "ok" and obs["wrong"]["message"], obs
    assert obs["unknown_user"]["error"] != "ok", obs


def _wrong_password(mechanism: str):
    def fn(target: SecureTarget, client: str) -> dict:
        return {
            "right": login(target, client, mechanism, "alice", PASSWORDS["alice"]),
            "wrong": login(target, client, mechanism, "alice", "not-the-password"),
            "unknown_user": login(target, client, mechanism, "mallory", "whatever"),
        }

    fn.__doc__ = (
        f"{mechanism}: the right password, a wrong one and an unknown user; the "
        f"error the client reports and the broker's message"
    )
    return fn


for _mechanism in MECHANISMS:
    scenario(
        f"sasl-wrong-password[{_mechanism}]",
        AUTH_CLIENTS,
        check=_check_wrong_password,
        registry=SECURITY_SCENARIOS,
    )(_wrong_password(_mechanism))


@scenario(
    "sasl-disabled-mechanism",
    AUTH_CLIENTS,
    registry=SECURITY_SCENARIOS,
    check=lambda o: _check_disabled(o),
)
def disabled_mechanism(target: SecureTarget, client: str) -> dict:
    """OAUTHBEARER (unsecured tokens) against a listener that enables only PLAIN and SCRAM"""
    extra = (
        {
            "enable.sasl.oauthbearer.unsecure.jwt": "true",
            "sasl.oauthbearer.config": "principal=alice",
        }
        if client == "confluent-kafka"
        else None
    )
    return {
        "oauthbearer": login(target, client, "OAUTHBEARER", "alice", "", extra),
        "handshake": {
            name: raw_handshake(target, name) for name in ("OAUTHBEARER", "GSSAPI", "PLAIN")
        },
    }


def raw_handshake(target: SecureTarget, mechanism: str) -> dict:
    """SaslHandshake v1 on a fresh connection: the error code and the enabled mechanisms
    (sorted: Kafka lists a Java HashSet)."""
    from kafka.protocol.sasl import SaslHandshakeRequest

    from wireserver.testing import KafkaWire

    with KafkaWire(target.sasl) as wire:
        response = wire.request(SaslHandshakeRequest(version=1, mechanism=mechanism))
    return {"error_code": response.error_code, "mechanisms": sorted(response.mechanisms)}


def _check_disabled(obs: dict) -> None:
    assert obs["oauthbearer"]["error"] != "ok", obs
    assert obs["handshake"]["OAUTHBEARER"]["error_code"] == 33, obs  # UNSUPPORTED_SASL_...
    assert obs["handshake"]["GSSAPI"]["error_code"] == 33, obs
    assert obs["handshake"]["PLAIN"] == {"error_code": 0, "mechanisms": sorted(MECHANISMS)}


# ------------------------------------------------------------------------------ authorization


def _alice_and_bob_produce(target: SecureTarget, client: str, prefix: str, acls: Any) -> dict:
    """A fresh topic, ``acls(topic)`` granted; what alice and bob see producing to it."""
    topic = _topic(target, prefix)
    grant(target, *acls(topic))
    return {
        "alice": produce(target, client, "alice", topic),
        "bob": produce(target, client, "bob", topic),
    }


def _check_produce(obs: dict) -> None:
    assert obs["alice"] != "ok" and obs["bob"] == "ok", obs


@_acl_scenario("acl-produce-without-write", check=_check_produce)
def produce_without_write(target: SecureTarget, client: str) -> dict:
    """alice may READ (so DESCRIBE) the topic but not WRITE it; bob may WRITE"""
    return _alice_and_bob_produce(
        target,
        client,
        "nowrite",
        lambda topic: (Acl("TOPIC", topic, "alice", "READ"), Acl("TOPIC", topic, "bob", "WRITE")),
    )


@_acl_scenario("acl-consume-without-read", check=lambda o: _check_consume(o))
def consume_without_read(target: SecureTarget, client: str) -> dict:
    """alice may only DESCRIBE the topic (no READ); bob may READ it"""
    topic = _topic(target, "noread", ("a", "b"))
    grant(
        target,
        Acl("TOPIC", topic, "alice", "DESCRIBE"),
        Acl("TOPIC", topic, "bob", "READ"),
        Acl("GROUP", ASSIGN_GROUP, "*", "READ"),
    )
    return {
        "alice": consume(target, client, "alice", topic, 2),
        "bob": consume(target, client, "bob", topic, 2),
    }


def _check_consume(obs: dict) -> None:
    assert obs["alice"] == "TOPIC_AUTHORIZATION_FAILED" and obs["bob"] == ["a", "b"], obs


@_acl_scenario("acl-group-without-read", check=lambda o: _check_group(o))
def group_without_read(target: SecureTarget, client: str) -> dict:
    """alice may READ the topic but has no ACL on her consumer group; bob has group READ"""
    topic = _topic(target, "nogroup", ("a", "b"))
    alice_group, bob_group = _name("g-alice"), _name("g-bob")
    grant(
        target,
        Acl("TOPIC", topic, "alice", "READ"),
        Acl("TOPIC", topic, "bob", "READ"),
        Acl("GROUP", bob_group, "bob", "READ"),
    )
    return {
        "alice": group_consume(target, client, "alice", topic, alice_group, 2),
        "bob": group_consume(target, client, "bob", topic, bob_group, 2),
    }


def _check_group(obs: dict) -> None:
    assert obs["alice"] == "GROUP_AUTHORIZATION_FAILED" and obs["bob"] == ["a", "b"], obs


@_acl_scenario("acl-metadata-hides-topics", check=lambda o: _check_hidden(o))
def metadata_hides_topics(target: SecureTarget, client: str) -> dict:
    """of three topics alice may DESCRIBE one and WRITE (implies DESCRIBE) another; listing
    every topic shows her those two"""
    topics = [_topic(target, f"hide{i}") for i in range(3)]
    grant(
        target,
        Acl("TOPIC", topics[0], "alice", "DESCRIBE"),
        Acl("TOPIC", topics[1], "alice", "WRITE"),
    )
    seen = visible_topics(target, client, "alice", topics)
    return {
        "alice_sees": [topics.index(t) for t in seen],
        "admin_sees": [topics.index(t) for t in visible_topics(target, client, "admin", topics)],
    }


def _check_hidden(obs: dict) -> None:
    assert obs == {"alice_sees": [0, 1], "admin_sees": [0, 1, 2]}, obs


@_acl_scenario(
    "acl-kip848-regex-describe",
    check=lambda o: _check_regex_describe(o),
    clients=("confluent-kafka",),
)
def regex_describe(target: SecureTarget, client: str) -> dict:
    """alice (READ on her group) subscribes with group.protocol=consumer to a regex matching
    two topics and may READ (so DESCRIBE) only one: the coordinator assigns her that one (her
    assignment, and the group as the admin describes it)"""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient

    topics = {"readable": _topic(target, "rxr"), "hidden": _topic(target, "rxh")}
    names = {name: role for role, name in topics.items()}
    group = _name("g-rx")
    grant(
        target,
        Acl("GROUP", group, "alice", "READ"),
        Acl("TOPIC", topics["readable"], "alice", "READ"),
    )
    consumer = Consumer(
        {
            "bootstrap.servers": target.sasl,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            **settings(client, "alice"),
        }
    )
    try:
        consumer.subscribe([f"^({topics['readable']}|{topics['hidden']})$"])
        deadline = time.monotonic() + WAIT
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        end = time.monotonic() + 3  # a later assignment would arrive meanwhile
        while time.monotonic() < end:
            consumer.poll(0.2)
        mine = sorted({names.get(tp.topic, "?") for tp in consumer.assignment()})
        admin = AdminClient({"bootstrap.servers": target.admin})
        described = admin.describe_consumer_groups([group])[group].result(timeout=WAIT)
        return {
            "assigned": mine,
            "described": sorted(
                {
                    names.get(tp.topic, "?")
                    for m in described.members
                    for tp in m.assignment.topic_partitions
                }
            ),
        }
    finally:
        consumer.close()


def _check_regex_describe(obs: dict) -> None:
    assert obs == {"assigned": ["readable"], "described": ["readable"]}, obs


@_acl_scenario("acl-deny-beats-allow", check=_check_produce, clients=PRODUCE_CLIENTS)
def deny_beats_allow(target: SecureTarget, client: str) -> dict:
    """everyone (User:*) may WRITE the topic, alice is DENIED WRITE"""
    return _alice_and_bob_produce(
        target,
        client,
        "deny",
        lambda topic: (
            Acl("TOPIC", topic, "*", "WRITE"),
            Acl("TOPIC", topic, "alice", "WRITE", permission="DENY"),
        ),
    )


@_acl_scenario("acl-prefixed", check=lambda o: _check_prefixed(o))
def prefixed(target: SecureTarget, client: str) -> dict:
    """alice may WRITE every topic whose name starts with a PREFIXED pattern"""
    inside = neutral.create_topic(target.admin, "pfx")
    outside = neutral.create_topic(target.admin, "pfy")
    prefix = inside[:-6]
    grant(target, Acl("TOPIC", prefix, "alice", "WRITE", pattern="PREFIXED"))
    return {
        "inside": produce(target, client, "alice", inside),
        "outside": produce(target, client, "alice", outside),
    }


def _check_prefixed(obs: dict) -> None:
    assert obs["inside"] == "ok" and obs["outside"] != "ok", obs


@_acl_scenario("acl-super-user", check=lambda o: _check_super(o))
def super_user(target: SecureTarget, client: str) -> dict:
    """admin (in super.users) writes and reads a topic that has no ACLs; alice cannot write
    it (a consumer without DESCRIBE just waits: its metadata never shows the topic)"""
    topic = _topic(target, "super")
    grant(target, Acl("GROUP", ASSIGN_GROUP, "*", "READ"))
    return {
        "admin_produce": produce(target, client, "admin", topic),
        "admin_consume": consume(target, client, "admin", topic, 1),
        "alice_produce": produce(target, client, "alice", topic),
    }


def _check_super(obs: dict) -> None:
    assert obs["admin_produce"] == "ok" and obs["admin_consume"] == ["v"], obs
    assert obs["alice_produce"] == "TOPIC_AUTHORIZATION_FAILED", obs


@_acl_scenario("acl-transactional-id", check=lambda o: _check_txn(o))
def transactional_id(target: SecureTarget, client: str) -> dict:
    """alice may WRITE the topic but not her transactional id; bob may WRITE his"""
    topic = _topic(target, "txn")
    alice_id, bob_id = _name("txn-alice"), _name("txn-bob")
    grant(
        target,
        Acl("TOPIC", topic, "alice", "WRITE"),
        Acl("TOPIC", topic, "bob", "WRITE"),
        Acl("TRANSACTIONAL_ID", bob_id, "bob", "WRITE"),
    )
    return {
        "alice": init_transactions(target, client, "alice", alice_id),
        "bob": init_transactions(target, client, "bob", bob_id),
    }


def _check_txn(obs: dict) -> None:
    assert obs["alice"] == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" and obs["bob"] == "ok", obs


@_acl_scenario("acl-create-topic", check=lambda o: _check_create(o))
def create_topic(target: SecureTarget, client: str) -> dict:
    """CreateTopics: alice without CREATE, and with CREATE on a PREFIXED topic pattern"""
    prefix = _name("create")
    grant(target, Acl("TOPIC", prefix + "-mine", "alice", "CREATE", pattern="PREFIXED"))

    def create(name: str) -> str:
        return admin_clients.create_topic(
            client, target.sasl, name, 1, security=settings(client, "alice")
        )

    return {"denied": create(prefix + "-other"), "allowed": create(prefix + "-mine-1")}


def _check_create(obs: dict) -> None:
    assert obs["denied"] == "TOPIC_AUTHORIZATION_FAILED" and obs["allowed"] == "ok", obs


@_acl_scenario("acl-admin-apis", check=lambda o: _check_acl_apis(o))
def acl_apis(target: SecureTarget, client: str) -> dict:
    """CreateAcls / DescribeAcls / DeleteAcls through the client's admin API as admin (a
    super user), and CreateAcls as alice (no ALTER on the cluster)"""
    topic, group = _name("acl-topic"), _name("acl-group")
    acls = [
        Acl("TOPIC", topic, "alice", "READ"),
        Acl("TOPIC", topic, "bob", "WRITE", permission="DENY"),
        Acl("GROUP", group, "alice", "READ", pattern="PREFIXED"),
    ]
    if client == "kafka-python":
        return _acl_apis_kafka_python(target, topic, group, acls)
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    admin = admin_clients._cf_admin(target.sasl, settings(client, "admin"))
    created = [
        f.result(timeout=WAIT) is None
        for f in admin.create_acls([a.confluent() for a in acls], request_timeout=WAIT).values()
    ]
    described = _settled(
        lambda: sorted(_acl_words(b) for b in _describe_cf(admin, "TOPIC", topic)), 2
    )
    group_filter = AclBindingFilter(
        ResourceType.GROUP,
        group + "-x",
        ResourcePatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    matched = sorted(
        _acl_words(b) for b in admin.describe_acls(group_filter, request_timeout=WAIT).result(WAIT)
    )
    topic_filter = AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    deleted = [
        sorted(_acl_words(b) for b in f.result(timeout=WAIT))
        for f in admin.delete_acls([topic_filter], request_timeout=WAIT).values()
    ]
    left = _settled(lambda: sorted(_acl_words(b) for b in _describe_cf(admin, "TOPIC", topic)), 0)
    alice = admin_clients._cf_admin(target.sasl, settings(client, "alice"))
    try:
        [future] = alice.create_acls([acls[0].confluent()], request_timeout=WAIT).values()
        future.result(timeout=WAIT)
        alice_create = "ok"
    except KafkaException as exc:
        alice_create = exc.args[0].name()
    return _named(
        {
            "created": created,
            "described": described,
            "group_match": matched,
            "deleted": deleted,
            "left": left,
            "alice_create": alice_create,
        },
        {topic: "<topic>", group: "<group>"},
    )


def _named(observation: Any, names: dict[str, str]) -> Any:
    """``observation`` with each scenario-made name replaced by its role ("<topic>"): the
    names are random, the roles are what both brokers must agree on."""
    if isinstance(observation, dict):
        return {key: _named(value, names) for key, value in observation.items()}
    if isinstance(observation, list):
        return [_named(value, names) for value in observation]
    return names.get(observation, observation)


def _settled(read, expected_count: int, timeout: float = WAIT):
    """``read()`` once it returns ``expected_count`` items (ACL changes apply
    asynchronously on Kafka), or what it returns at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        found = read()
        if len(found) == expected_count or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _acl_apis_kafka_python(target: SecureTarget, topic: str, group: str, acls: list[Acl]) -> dict:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    from compat_tests.clients import _kafka_error_name

    def to_acl(acl: Acl) -> ACL:
        principal = "User:*" if acl.user == "*" else f"User:{acl.user}"
        return ACL(
            principal,
            "*",
            ACLOperation[acl.operation],
            ACLPermissionType[acl.permission],
            ResourcePattern(
                ResourceType[acl.resource], acl.name, ACLResourcePatternType[acl.pattern]
            ),
        )

    def acl_filter(resource: str, name: str, pattern: str) -> ACLFilter:
        return ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType[resource], name, ACLResourcePatternType[pattern]),
        )

    admin = admin_clients._kp_admin(target.sasl, settings("kafka-python", "admin"))
    try:
        result = admin.create_acls([to_acl(a) for a in acls])
        created = [True] * len(result["succeeded"]) + [False] * len(result["failed"])

        def describe(resource: str, name: str, pattern: str) -> list:
            found, error = admin.describe_acls(acl_filter(resource, name, pattern))
            return sorted(_acl_words(b) for b in found)

        described = _settled(lambda: describe("TOPIC", topic, "ANY"), 2)
        matched = describe("GROUP", group + "-x", "MATCH")
        deleted = [
            sorted(_acl_words(acl) for acl in matches)
            for _f, matches, _e in admin.delete_acls([acl_filter("TOPIC", topic, "LITERAL")])
        ]
        left = _settled(lambda: describe("TOPIC", topic, "ANY"), 0)
    finally:
        admin.close()
    alice = admin_clients._kp_admin(target.sasl, settings("kafka-python", "alice"))
    try:
        failed = alice.create_acls([to_acl(acls[0])])["failed"]  # error classes
        alice_create = failed[0].message if failed else "ok"
    except Exception as exc:  # noqa: BLE001 - the error is the observation
        alice_create = _kafka_error_name(exc)
    finally:
        alice.close()
    return _named(
        {
            "created": created,
            "described": described,
            "group_match": matched,
            "deleted": deleted,
            "left": left,
            "alice_create": alice_create,
        },
        {topic: "<topic>", group: "<group>"},
    )


def _check_acl_apis(obs: dict) -> None:
    assert obs["created"] == [True, True, True], obs
    assert len(obs["described"]) == 2 and len(obs["group_match"]) == 1, obs
    assert len(obs["deleted"][0]) == 2 and obs["left"] == [], obs
    assert obs["alice_create"] == "CLUSTER_AUTHORIZATION_FAILED", obs


@_acl_scenario("acl-authorized-operations", check=lambda o: _check_authorized_operations(o))
def authorized_operations(target: SecureTarget, client: str) -> dict:
    """alice may READ and ALTER_CONFIGS a topic and READ a group, and has no ACL on the
    cluster; admin is a super user: what each may do on the topic, the cluster and the group,
    as the client's admin API reports it with authorized operations included (KIP-430)"""
    topic = _topic(target, "authops")
    group = _name("authops-group")
    grant(
        target,
        Acl("TOPIC", topic, "alice", "READ"),
        Acl("TOPIC", topic, "alice", "ALTER_CONFIGS"),
        Acl("GROUP", group, "alice", "READ"),
    )
    neutral.commit_offset(target.admin, group, topic)
    return {
        user: admin_clients.authorized_operations(
            client, target.sasl, topic, group, security=settings(client, user)
        )
        for user in ("alice", "admin")
    }


def _check_authorized_operations(obs: dict) -> None:
    alice, admin = obs["alice"], obs["admin"]
    assert alice["topic"] == ["ALTER_CONFIGS", "DESCRIBE", "DESCRIBE_CONFIGS", "READ"], obs
    assert alice["group"] == ["DESCRIBE", "READ"] and not alice["cluster"], obs
    assert (len(admin["topic"]), len(admin["cluster"]), len(admin["group"])) == (8, 7, 5), obs


# ------------------------------------------------------------------------------ delegation tokens

TOKEN_MECHANISM = "SCRAM-SHA-512"


def _token_wire(target: SecureTarget, user: str | None = None, token: Any = None) -> Any:
    """A raw connection: as ``user`` on the SASL listener, with ``token`` (a create answer;
    SCRAM ``tokenauth=true``), or (neither) on the PLAINTEXT listener."""
    import base64

    from wireserver.testing import KafkaWire

    if user is None and token is None:
        return KafkaWire(target.admin)
    if token is None:
        return KafkaWire(target.sasl, sasl=(TOKEN_MECHANISM, user, PASSWORDS[user]))
    wire = KafkaWire(target.sasl)
    hmac = base64.b64encode(bytes(token.hmac)).decode()
    wire.authenticate(TOKEN_MECHANISM, token.token_id, hmac, token=True)
    return wire


def _create_token(wire: Any, renewers: tuple[str, ...] = (), owner: str | None = None) -> Any:
    from wireserver.protocol.messages_tokens import CreateDelegationTokenRequest

    renewer = CreateDelegationTokenRequest.CreatableRenewers
    return wire.request(
        CreateDelegationTokenRequest(
            version=3,
            owner_principal_type=owner and owner.split(":")[0],
            owner_principal_name=owner and owner.split(":")[1],
            renewers=[
                renewer(principal_type=p.split(":")[0], principal_name=p.split(":")[1])
                for p in renewers
            ],
            max_lifetime_ms=-1,
        )
    )


def _token_answer(made: Any) -> dict:
    """A create answer without what differs on every run (id, HMAC, clock)."""
    return {
        "error_code": made.error_code,
        "owner": f"{made.principal_type}:{made.principal_name}",
        "requester": f"{made.token_requester_principal_type}:{made.token_requester_principal_name}",
        "lifetimes": [
            made.expiry_timestamp_ms - made.issue_timestamp_ms,
            made.max_timestamp_ms - made.issue_timestamp_ms,
        ]
        if made.error_code == 0
        else [made.issue_timestamp_ms, made.expiry_timestamp_ms, made.max_timestamp_ms],
    }


def _token_ids(wire: Any, owners: list[str] | None) -> list[str]:
    from wireserver.protocol.messages_tokens import DescribeDelegationTokenRequest

    owner = DescribeDelegationTokenRequest.DescribeDelegationTokenOwner
    response = wire.request(
        DescribeDelegationTokenRequest(
            version=3,
            owners=None
            if owners is None
            else [owner(principal_type="User", principal_name=name) for name in owners],
        )
    )
    return [f"error {response.error_code}"] + sorted(t.token_id for t in response.tokens)


def _token_login(target: SecureTarget, made: Any, works: bool) -> str:
    """Log in with the token until it works (or, ``works=False``, until it fails): Kafka's
    brokers learn tokens from the metadata log a moment after the controller answers."""
    from wireserver.testing import KafkaWireError

    deadline = time.monotonic() + WAIT
    while True:
        try:
            _token_wire(target, token=made).close()
            outcome = "logged in"
        except KafkaWireError as exc:
            outcome = f"error {exc.error_code}"
        if (outcome == "logged in") == works or time.monotonic() > deadline:
            return outcome
        time.sleep(0.2)


def _tokens_tool(target: SecureTarget, user: str, *args: str) -> list[str]:
    """``kafka-delegation-tokens`` as ``user``: its output without ids, HMACs and dates."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "client.properties")
        with open(path, "w", encoding="utf-8") as handle:
            for key, value in settings("java", user, TOKEN_MECHANISM).items():
                handle.write(f"{key}={value}\n")
        proc = run_tool(
            "kafka-delegation-tokens",
            [*args, "--command-config", path],
            bootstrap=target.sasl,
            timeout=90,
        )
    lines = []
    for line in (proc.stdout + proc.stderr).splitlines():
        words = line.split()
        if len(words) == 8 and words[2].startswith("User:"):  # a token's row
            line = " ".join(words[2:5])  # owner, requester, renewers
        line = re.sub(r"tokenId : \S+", "tokenId : <id>", line)
        if line.strip():
            lines.append(line.strip())
    return lines


@scenario(
    "delegation-tokens",
    ("java",),
    registry=SECURITY_SCENARIOS,
    check=lambda o: _check_tokens(o),
)
def delegation_tokens(target: SecureTarget, client: str) -> dict:
    """alice makes a token bob may renew, with Kafka's tool and raw requests; who may ask for
    tokens, who sees them, renewal, expiry, and logging in with the token (SCRAM tokenauth)"""
    from wireserver.protocol.messages_tokens import (
        ExpireDelegationTokenRequest,
        RenewDelegationTokenRequest,
    )

    obs: dict[str, Any] = {
        "tool create": _tokens_tool(target, "alice", "--create", "--max-life-time-period", "-1"),
        "tool describe (no owner)": _tokens_tool(target, "alice", "--describe"),
    }
    with _token_wire(target, "alice") as alice, _token_wire(target, "bob") as bob:
        made = _create_token(alice, renewers=("User:bob",))
        obs["create"] = _token_answer(made)
        obs["for another owner"] = _token_answer(_create_token(alice, owner="User:bob"))
        obs["group renewer"] = _token_answer(_create_token(alice, renewers=("Group:g",)))
        with _token_wire(target) as anonymous:
            obs["on PLAINTEXT"] = _token_answer(_create_token(anonymous))
        obs["token login"] = _token_login(target, made, works=True)
        with _token_wire(target, token=made) as with_token:
            obs["create with a token"] = _token_answer(_create_token(with_token))
        obs["bob describes alice's"] = made.token_id in _token_ids(bob, ["alice"])
        obs["alice describes no owners"] = _token_ids(alice, [])
        renewed = bob.request(
            RenewDelegationTokenRequest(version=2, hmac=made.hmac, renew_period_ms=60_000)
        )
        obs["bob renews"] = [
            renewed.error_code,
            renewed.expiry_timestamp_ms <= made.max_timestamp_ms,
        ]
        expired = alice.request(
            ExpireDelegationTokenRequest(version=2, hmac=made.hmac, expiry_time_period_ms=-1)
        )
        obs["alice expires"] = expired.error_code
        obs["login after expiry"] = _token_login(target, made, works=False)
        again = bob.request(
            RenewDelegationTokenRequest(version=2, hmac=made.hmac, renew_period_ms=-1)
        )
        obs["renew after expiry"] = [again.error_code, again.expiry_timestamp_ms]
    return obs


def _check_tokens(obs: dict) -> None:
    assert obs["create"]["error_code"] == 0 and obs["token login"] == "logged in", obs
    assert obs["create with a token"]["error_code"] == 64, obs
    assert obs["login after expiry"] != "logged in", obs
