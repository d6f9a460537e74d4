"""KRaft controller APIs that a Kafka 4.4 broker advertises and forwards to its controller
quorum, and kafka-python does not ship (DescribeQuorum, key 55, it does), transcribed from
Kafka's message definitions with ``protocol.messages_extra``'s machinery. wireserver has no
KRaft quorum: it decodes these only to answer that (``wireserver/apis/``).

- UnregisterBroker (64) v0 and UnregisterController (94, new in 4.4) v0: a node id.
- AddRaftVoter (80) v0-1 (v1 adds ``AckWhenCommitted``) and RemoveRaftVoter (81) v0.
All four answer a throttle time, an error code and an error message.
"""

from __future__ import annotations

from wireserver.protocol.messages_extra import _define, _field, _message, _nullable_string


def _answer(key: int, name: str, valid: str) -> dict:
    return _message(
        key,
        "response",
        name,
        valid,
        [
            _field("ThrottleTimeMs", "int32"),
            _field("ErrorCode", "int16"),
            _nullable_string("ErrorMessage"),
        ],
    )


def _voter(*extra: dict) -> list[dict]:
    return [
        _nullable_string("ClusterId"),
        *extra[:1],
        _field("VoterId", "int32"),
        _field("VoterDirectoryId", "uuid"),
        *extra[1:],
    ]


_LISTENERS = _field(
    "Listeners",
    "[]Listener",
    fields=[
        _field("Name", "string", mapKey=True),
        _field("Host", "string"),
        _field("Port", "uint16"),
    ],
)

UnregisterBrokerRequest = _define(
    _message(64, "request", "UnregisterBroker", "0", [_field("BrokerId", "int32")])
)
UnregisterBrokerResponse = _define(_answer(64, "UnregisterBroker", "0"))
AddRaftVoterRequest = _define(
    _message(
        80,
        "request",
        "AddRaftVoter",
        "0-1",
        _voter(
            _field("TimeoutMs", "int32"),
            _LISTENERS,
            _field("AckWhenCommitted", "bool", "1+", default="true"),
        ),
    )
)
AddRaftVoterResponse = _define(_answer(80, "AddRaftVoter", "0-1"))
RemoveRaftVoterRequest = _define(_message(81, "request", "RemoveRaftVoter", "0", _voter()))
RemoveRaftVoterResponse = _define(_answer(81, "RemoveRaftVoter", "0"))
UnregisterControllerRequest = _define(
    _message(94, "request", "UnregisterController", "0", [_field("ControllerId", "int32")])
)
UnregisterControllerResponse = _define(_answer(94, "UnregisterController", "0"))
