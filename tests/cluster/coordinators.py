"""Finding a coordinator as a client does (FindCoordinator on a broker), and the broker settings
under which the coordination tests' internal topics are replicated across the 3-broker cluster."""

from __future__ import annotations

from wireserver.protocol.served import SERVED
from wireserver.testing import KafkaWire

OVERRIDES = {
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "auto.leader.rebalance.enable": "false",
}


def find_coordinator(bootstrap_server: str, key: str, key_type: int = 0) -> tuple[int, int]:
    """(error code, coordinator node id) from one broker (key type 0: group, 1: transaction)."""
    request_class = SERVED.get(10).request_class
    with KafkaWire(bootstrap_server) as wire:
        response = wire.request(request_class(version=3, key=key, key_type=key_type))
    return response.error_code, response.node_id
