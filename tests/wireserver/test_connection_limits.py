"""``ConnectionLimits`` on its own: which listener may accept, which connections go when the
broker is past ``max.connections`` (the inter-broker listener's are never closed for it, as
Kafka's ``maxConnectionsExceeded`` leaves the protected listener alone), and how long a
connection waits past ``max.connection.creation.rate`` (on a ``task.Clock``)."""

from __future__ import annotations

import pytest
from twisted.internet import task

from wireserver.config import BrokerConfig
from wireserver.connection_limits import ConnectionLimits, parse_ip_overrides
from wireserver.storage.configdef import ConfigValueError

LISTENERS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
}


class Connection:
    def __init__(self, listener_name: str, last_active: float):
        self.listener_name = listener_name
        self.last_active = last_active
        self.dropped = False

    def drop(self, why: str) -> None:
        self.dropped = True


class Port:
    connected = True

    def __init__(self):
        self.reading = True

    def startReading(self):
        self.reading = True

    def stopReading(self):
        self.reading = False


def test_the_inter_broker_listener_passes_the_broker_s_maximum_and_the_others_wait():
    config = BrokerConfig({**LISTENERS, "max.connections": "2"})
    limits = ConnectionLimits(config, "PLAINTEXT", task.Clock())
    client_port, broker_port = Port(), Port()
    limits.listen("CLIENT", client_port)
    limits.listen("PLAINTEXT", broker_port)
    assert limits.opened("CLIENT", "10.0.0.1") and limits.opened("CLIENT", "10.0.0.2")
    assert not client_port.reading and broker_port.reading
    assert limits.opened("PLAINTEXT", "10.0.0.3")  # past the broker's maximum
    assert broker_port.reading and limits.total == 3
    assert limits.opened("PLAINTEXT", "10.0.0.4")
    assert not broker_port.reading  # its own (listener) maximum is the broker's: 2
    older, newer = Connection("CLIENT", 1.0), Connection("CLIENT", 2.0)
    peers = [Connection("PLAINTEXT", 0.5), Connection("PLAINTEXT", 0.7)]
    limits.close_excess([newer, *peers, older])  # 4 open, 2 allowed: the clients go
    assert (older.dropped, newer.dropped) == (True, True)
    assert not any(peer.dropped for peer in peers)
    limits.closed("CLIENT", "10.0.0.1")
    limits.closed("CLIENT", "10.0.0.2")
    assert not client_port.reading and not broker_port.reading  # 2 open: both maximums
    limits.closed("PLAINTEXT", "10.0.0.4")
    assert client_port.reading and broker_port.reading


def test_ip_overrides_resolve_hosts_and_a_bad_value_is_refused():
    assert parse_ip_overrides("localhost:5, 10.1.2.3:7,") == {"127.0.0.1": 5, "10.1.2.3": 7}
    for bad, message in [
        ("10.1.2.3", "expected host:count"),
        ("10.1.2.3:many", "expected host:count"),
        ("no-such-host.invalid:3", "Unknown host"),
    ]:
        with pytest.raises(ConfigValueError, match=message):
            BrokerConfig({**LISTENERS, "max.connections.per.ip.overrides": bad})


def admit_all(limits: ConnectionLimits, listener: str, count: int) -> tuple[list[int], list[int]]:
    """Admit ``count`` connections on ``listener``: those let in at once, and a list that
    each waiting one joins when its turn comes."""
    now, later = [], []
    for n in range(count):
        if limits.admit(listener, lambda n=n: later.append(n)):
            now.append(n)
    return now, later


def test_past_the_creation_rate_connections_wait_their_turn_and_the_listener_accepts_none():
    clock = task.Clock()
    config = BrokerConfig({**LISTENERS, "max.connection.creation.rate": "2"})
    limits = ConnectionLimits(config, "PLAINTEXT", clock)
    client_port, broker_port = Port(), Port()
    limits.listen("CLIENT", client_port)
    limits.listen("PLAINTEXT", broker_port)
    # a new rate is measured over quota.window.num - 1 windows (10 s): 20 fit in 2 a second
    now, later = admit_all(limits, "CLIENT", 22)
    assert now == list(range(20)) and later == []
    assert not client_port.reading and broker_port.reading
    clock.advance(0.499)
    assert later == []
    clock.advance(0.001)  # 21 over 10 s is 2.1 a second: (2.1 - 2) / 2 of 10 s = 500 ms
    assert later == [20] and not client_port.reading  # the next waits its own turn
    clock.advance(0.5)
    assert later == [20, 21] and client_port.reading
    # the inter-broker listener is out of the broker's rate, under its own (the broker's
    # value unless set)
    assert admit_all(limits, "PLAINTEXT", 20)[0] == list(range(20))
    assert admit_all(limits, "PLAINTEXT", 1)[0] == []


def test_a_listener_s_own_creation_rate_and_the_only_listener_is_not_protected():
    clock = task.Clock()
    config = BrokerConfig(
        {**LISTENERS, "listener.name.plaintext.max.connection.creation.rate": "100"}
    )
    limits = ConnectionLimits(config, "PLAINTEXT", clock)
    assert admit_all(limits, "CLIENT", 2000)[0] == list(range(2000))  # no limit
    assert len(admit_all(limits, "PLAINTEXT", 1001)[0]) == 1000
    single = BrokerConfig({"max.connections": "1", "max.connection.creation.rate": "1"})
    alone = ConnectionLimits(single, single.inter_broker_listener.name, clock)
    assert not alone.protected(single.inter_broker_listener.name)
    assert len(admit_all(alone, single.inter_broker_listener.name, 11)[0]) == 10


def test_a_connection_that_fails_after_its_throttle_leaves_the_listener_accepting(caplog):
    clock = task.Clock()
    config = BrokerConfig({**LISTENERS, "max.connection.creation.rate": "1"})
    limits = ConnectionLimits(config, "PLAINTEXT", clock)
    port = Port()
    limits.listen("CLIENT", port)
    admit_all(limits, "CLIENT", 10)  # a new rate of 1 a second fits 10

    def fails():
        raise OSError("gone")

    went_on = []
    assert not limits.admit("CLIENT", fails)
    assert not limits.admit("CLIENT", lambda: went_on.append(True))
    clock.advance(1.0)  # fails: logged
    clock.advance(1.0)
    assert went_on == [True] and port.reading
    assert "failed to go on with a connection" in caplog.text


def test_with_one_listener_a_lowered_maximum_closes_its_least_recently_active_connections():
    # Kafka's protectedListener spares the inter-broker listener only beside other listeners
    config = BrokerConfig({"max.connections": "3"})
    listener = config.inter_broker_listener.name
    limits = ConnectionLimits(config, listener, task.Clock())
    connections = [Connection(listener, float(n)) for n in range(3)]
    for n in range(3):
        assert limits.opened(listener, f"10.0.0.{n}")
    config.set_dynamic("max.connections", "1")
    limits.close_excess(connections)
    assert [c.dropped for c in connections] == [True, True, False]
