"""Client quotas through the admin APIs: AlterClientQuotas sets and removes keys of user,
client-id and ip entities (validate_only changes nothing; bad entities, keys and values get
Kafka's INVALID_REQUEST messages and change nothing), DescribeClientQuotas filters (exact,
default, any name; strict), quotas outlive a restart and are enforced after it, and Kafka's
``kafka-configs`` tool sets and describes them."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from tests.apis.client_quotas import ANY, DEFAULT, EXACT, alter, describe, produce_throttle_ms
from tests.integration import raw
from wireserver.testing import EmbeddedBroker, KafkaWire, wait_for

INVALID_REQUEST, UNSUPPORTED_VERSION = 42, 35


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker() as running:
        yield running


@pytest.fixture
def wire(broker):
    with KafkaWire(broker.bootstrap_servers) as connection:
        yield connection


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_set_describe_and_remove_quotas(wire):
    user, client = name("user"), name("client")
    assert (
        alter(
            wire,
            [
                ({"user": user}, {"producer_byte_rate": 1024.0, "request_percentage": 12.5}),
                ({"user": user, "client-id": client}, {"consumer_byte_rate": 2048.0}),
                ({"user": user, "client-id": None}, {"consumer_byte_rate": 4096.0}),
                ({"client-id": client}, {"controller_mutation_rate": 3.0}),
                ({"ip": "192.0.2.1"}, {"connection_creation_rate": 50.0}),
            ],
        )
        == [(0, None)] * 5
    )
    # exact user, not strict: the user's entity and both of its user+client entities
    code, _, found = describe(wire, [("user", EXACT, user)])
    assert code == 0
    assert found == {
        (("user", user),): {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
        (("client-id", client), ("user", user)): {"consumer_byte_rate": 2048.0},
        (("client-id", None), ("user", user)): {"consumer_byte_rate": 4096.0},
    }
    # strict: the user's own entity only
    assert describe(wire, [("user", EXACT, user)], strict=True)[2] == {
        (("user", user),): {"producer_byte_rate": 1024.0, "request_percentage": 12.5}
    }
    # the user with the default client
    assert describe(wire, [("user", EXACT, user), ("client-id", DEFAULT, None)])[2] == {
        (("client-id", None), ("user", user)): {"consumer_byte_rate": 4096.0}
    }
    # any client-id, strict: client-id entities alone (ours among them, no user+client ones)
    any_client = describe(wire, [("client-id", ANY, None)], strict=True)[2]
    assert any_client[(("client-id", client),)] == {"controller_mutation_rate": 3.0}
    assert all(len(entity) == 1 for entity in any_client)
    assert describe(wire, [("ip", EXACT, "192.0.2.1")], version=0)[2] == {
        (("ip", "192.0.2.1"),): {"connection_creation_rate": 50.0}
    }
    # validate_only changes nothing; removing a key keeps the others; removing the last
    # forgets the entity
    assert alter(wire, [({"user": user}, {"producer_byte_rate": 1.0})], validate_only=True) == [
        (0, None)
    ]
    assert alter(wire, [({"user": user}, {"producer_byte_rate": None})]) == [(0, None)]
    assert describe(wire, [("user", EXACT, user)], strict=True)[2] == {
        (("user", user),): {"request_percentage": 12.5}
    }
    assert alter(wire, [({"user": user}, {"request_percentage": None})], version=0) == [(0, None)]
    assert describe(wire, [("user", EXACT, user)], strict=True)[2] == {}


BAD_ALTERATIONS = [
    ({}, {"producer_byte_rate": 1.0}, "Invalid empty client quota entity"),
    ({"group": "g"}, {"producer_byte_rate": 1.0}, "Unhandled client quota entity type: group"),
    ({"user": ""}, {"producer_byte_rate": 1.0}, "Empty user not supported"),
    (
        {"ip": "127.0.0.1", "user": "u"},
        {"connection_creation_rate": 1.0},
        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
    ),
    ({"client-id": "c"}, {"no_such_quota": 1.0}, "Invalid configuration key no_such_quota"),
    (
        {"client-id": "c"},
        {"connection_creation_rate": 1.0},
        "Invalid configuration key connection_creation_rate",
    ),
    (
        {"client-id": "c"},
        {"producer_byte_rate": -5.0},
        "Quota producer_byte_rate must be greater than 0",
    ),
    (
        {"client-id": "c"},
        {"consumer_byte_rate": 0.0},
        "Quota consumer_byte_rate must be greater than 0",
    ),
    (
        {"client-id": "c"},
        {"producer_byte_rate": 10.5},
        "producer_byte_rate cannot be a fractional value.",
    ),
    (
        {"client-id": "c"},
        {"producer_byte_rate": 1e20},
        "Proposed value for producer_byte_rate is too large for a LONG.",
    ),
    (
        {"ip": "10.0.0.1"},
        {"connection_creation_rate": 3e9},
        "Proposed value for connection_creation_rate is too large for an INT.",
    ),
]


@pytest.mark.parametrize("entity,ops,message", BAD_ALTERATIONS)
def test_bad_alterations_are_refused_with_kafkas_messages(wire, entity, ops, message):
    assert alter(wire, [(entity, ops)]) == [(INVALID_REQUEST, message)]


def test_a_failing_entry_changes_nothing_and_the_others_apply(wire):
    good, bad = name("good"), name("bad")
    assert alter(
        wire,
        [
            ({"client-id": good}, {"producer_byte_rate": 100.0}),
            # its first key is fine, its second is not: neither is applied
            ({"client-id": bad}, {"producer_byte_rate": 100.0, "consumer_byte_rate": -1.0}),
            # named twice: the second is ignored
            ({"client-id": good}, {"producer_byte_rate": 999.0}),
        ],
    ) == [
        (0, None),
        (INVALID_REQUEST, "Quota consumer_byte_rate must be greater than 0"),
        (
            INVALID_REQUEST,
            f"Ignoring duplicate entity ClientQuotaEntity(entries={{client-id={good}}})",
        ),
    ]
    assert describe(wire, [("client-id", EXACT, good)])[2] == {
        (("client-id", good),): {"producer_byte_rate": 100.0}
    }
    assert describe(wire, [("client-id", EXACT, bad)])[2] == {}


@pytest.mark.parametrize(
    "components,code,message",
    [
        ([("", ANY, None)], INVALID_REQUEST, "Invalid empty entity type."),
        (
            [("user", ANY, None), ("user", EXACT, "u")],
            INVALID_REQUEST,
            "Entity type user cannot appear more than once in the filter.",
        ),
        ([("group", ANY, None)], UNSUPPORTED_VERSION, "Unsupported entity type group"),
        (
            [("user", EXACT, None)],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        ),
        (
            [("user", DEFAULT, "u")],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
        ),
        ([("user", 7, None)], INVALID_REQUEST, "Unknown match type 7"),
        (
            [("ip", ANY, None), ("user", ANY, None)],
            INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        ),
    ],
)
def test_bad_describe_filters(wire, components, code, message):
    assert describe(wire, components) == (code, message, {})


def test_quotas_survive_a_restart_and_are_enforced_after_it(tmp_path):
    client = name("restarted")
    overrides = {"quota.window.num": 2}
    with EmbeddedBroker(data_dir=tmp_path / "data", overrides=overrides) as running:
        with KafkaWire(running.bootstrap_servers) as wire:
            assert alter(wire, [({"client-id": client}, {"producer_byte_rate": 10000.0})]) == [
                (0, None)
            ]
        running.restart()
        with KafkaWire(running.bootstrap_servers) as wire:
            assert describe(wire, [("client-id", EXACT, client)])[2] == {
                (("client-id", client),): {"producer_byte_rate": 10000.0}
            }
        # 20 kB at 10 kB/s: throttled; another client-id is not
        assert produce_throttle_ms(running.bootstrap_servers, client, "restart-quota") > 0
        assert produce_throttle_ms(running.bootstrap_servers, name("free"), "restart-quota") == 0


@pytest.mark.integration
def test_kafka_configs_sets_and_describes_quotas(broker):
    from compat_tests import reference

    reference.require_tools()
    client = name("tool")

    def configs(*args: str) -> str:
        proc = subprocess.run(
            reference.tool_command(
                "kafka-configs", ["--bootstrap-server", broker.bootstrap_servers, *args]
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    configs(
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        client,
        "--add-config",
        "producer_byte_rate=1048576,consumer_byte_rate=2097152",
    )
    described = configs("--describe", "--entity-type", "clients", "--entity-name", client)
    assert f"Quota configs for client-id '{client}' are " in described
    assert "producer_byte_rate=1048576.0" in described
    assert "consumer_byte_rate=2097152.0" in described
    default_user = ["--entity-type", "users", "--entity-default"]
    configs("--alter", *default_user, "--add-config", "request_percentage=200")
    try:
        described = configs("--describe", *default_user)
        assert described.strip() == (
            "Quota configs for the default user-principal are request_percentage=200.0"
        )
    finally:
        configs("--alter", *default_user, "--delete-config", "request_percentage")
    assert configs("--describe", *default_user).strip() == ""


def create_topic(wire, topic: str, partitions: int, version: int):
    """CreateTopics of one topic: (error code, message, throttle_time_ms)."""
    from kafka.protocol.admin.topics import CreateTopicsRequest

    creatable = CreateTopicsRequest.CreatableTopic
    response = wire.request(
        CreateTopicsRequest(
            version=version,
            topics=[
                creatable(
                    name=topic,
                    num_partitions=partitions,
                    replication_factor=1,
                    assignments=[],
                    configs=[],
                )
            ],
            timeout_ms=10000,
            validate_only=False,
        )
    )
    (result,) = response.topics
    return result.error_code, result.error_message, response.throttle_time_ms


def test_controller_mutation_rate_refuses_or_throttles_topic_creations(broker, wire):
    """KIP-599: a rate of 1 partition/s fills a bucket of 11 (quota.window.num windows of
    1 s). Strict (CreateTopics v6+): 20 partitions are accepted unthrottled (the bucket goes
    below zero), then a topic is refused THROTTLING_QUOTA_EXCEEDED with the time to refill;
    permissive (v5): accepted and throttled."""
    strict, permissive = name("strict"), name("permissive")
    assert alter(
        wire,
        [
            ({"client-id": strict}, {"controller_mutation_rate": 1.0}),
            ({"client-id": permissive}, {"controller_mutation_rate": 1.0}),
        ],
    ) == [(0, None), (0, None)]
    bootstrap = broker.bootstrap_servers
    with KafkaWire(bootstrap, client_id=strict) as mutator:
        assert create_topic(mutator, name("m"), 20, version=7) == (0, None, 0)
        code, message, throttle_ms = create_topic(mutator, name("m"), 1, version=7)
    assert (code, message) == (89, "The throttling quota has been exceeded.")
    assert 8000 <= throttle_ms <= 9000
    with KafkaWire(bootstrap, client_id=permissive) as mutator:
        code, message, throttle_ms = create_topic(mutator, name("m"), 20, version=5)
    assert (code, message) == (0, None)
    assert 8000 <= throttle_ms <= 9000


def answers(bootstrap: str) -> bool:
    """Whether a new connection is answered (ApiVersions), rather than closed unanswered."""
    try:
        with KafkaWire(bootstrap, timeout=5.0):
            return True
    except (ConnectionError, OSError):
        return False


def test_connection_creation_rate_closes_connections_over_the_ips_quota(tmp_path):
    """5 connections a second from 127.0.0.1 (the default ip's quota; windows of 1 s, two of
    them): the first ones are answered, those over the rate are closed unanswered after the
    throttle time, and once the rate is back under the quota a connection is answered again."""
    with EmbeddedBroker(data_dir=tmp_path / "data", overrides={"quota.window.num": 2}) as running:
        bootstrap = running.bootstrap_servers
        with KafkaWire(bootstrap) as wire:
            assert alter(wire, [({"ip": None}, {"connection_creation_rate": 5.0})]) == [(0, None)]
        answered = [answers(bootstrap) for _ in range(10)]
        assert answered[:3] == [True] * 3, answered
        assert False in answered, answered
        # refused connections are not counted: the rate falls back under the quota
        wait_for(lambda: answers(bootstrap), timeout=10, what="a connection answered again")


def metadata_throttle_ms(bootstrap: str, client_id: str, requests: int = 50) -> int:
    """The first throttle_time_ms above 0 of up to ``requests`` Metadata requests, else 0."""
    with KafkaWire(bootstrap, client_id=client_id) as wire:
        for _ in range(requests):
            throttle_ms = wire.request(raw.metadata(None)).throttle_time_ms
            if throttle_ms > 0:
                return throttle_ms
    return 0


def test_request_percentage_throttles_a_client_that_uses_more_handler_time(broker, wire):
    """request_percentage=0.001 (a hundred-thousandth of the reactor): a client doing anything
    is over it within a few requests and is throttled, at most one window (1 s) at a time as
    in Kafka; another client-id is not."""
    client = name("busy")
    assert alter(wire, [({"client-id": client}, {"request_percentage": 0.001})]) == [(0, None)]
    assert 0 < metadata_throttle_ms(broker.bootstrap_servers, client) <= 1000
    assert metadata_throttle_ms(broker.bootstrap_servers, name("idle"), requests=5) == 0
