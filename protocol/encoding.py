"""Writers of Kafka's wire types for the hand-written response encoders
(``protocol.fetch_response``, ``protocol.produce_response``): each appends to a ``bytearray``
what kafka-python's generated encoder writes for the same value, classic (non-flexible) or
compact (flexible versions)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
_II = struct.Struct(">ii")
ZERO_UUID = uuid.UUID(int=0)


def uvarint(value: int, out: bytearray) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    uvarint(value, out)
    return bytes(out)


def string(value: str | None, flexible: bool, out: bytearray) -> None:
    """A (nullable) string: compact in flexible versions, int16-sized otherwise."""
    if value is None:
        if flexible:
            out.append(0)
        else:
            out += I16.pack(-1)
        return
    data = value.encode("utf-8")
    if flexible:
        uvarint(len(data) + 1, out)
    else:
        out += I16.pack(len(data))
    out += data


def array_length(count: int | None, flexible: bool, out: bytearray) -> None:
    """The length of an array, None for a null one."""
    if flexible:
        uvarint(0 if count is None else count + 1, out)
    else:
        out += I32.pack(-1 if count is None else count)


def tagged(fields: list[tuple[int, bytes]], out: bytearray) -> None:
    """A tagged-field section: (tag, encoded value) pairs in tag order."""
    uvarint(len(fields), out)
    for tag, payload in fields:
        uvarint(tag, out)
        uvarint(len(payload), out)
        out += payload


def leader_id_and_epoch(leader: Any) -> bytes:
    """A ``LeaderIdAndEpoch`` tagged value (Fetch's and Produce's ``CurrentLeader``), with its
    own empty tagged fields."""
    return _II.pack(leader.leader_id, leader.leader_epoch) + b"\x00"


def node_endpoints(nodes: list, out: bytearray) -> None:
    """The response's tagged fields holding only ``NodeEndpoints`` (tag 0, KIP-951), as Fetch
    (v16+) and Produce (v10+) write them."""
    payload = bytearray()
    array_length(len(nodes), True, payload)
    for node in nodes:
        payload += I32.pack(node.node_id)
        string(node.host, True, payload)
        payload += I32.pack(node.port)
        string(node.rack, True, payload)
        payload.append(0)
    tagged([(0, bytes(payload))], out)
