"""What wireserver answers to the KRaft controller APIs a Kafka 4.4 broker advertises and
forwards to its controller quorum: DescribeQuorum (55), UnregisterBroker (64), AddRaftVoter
(80), RemoveRaftVoter (81) and UnregisterController (94).

wireserver's brokers coordinate through ZooKeeper; there is no KRaft quorum to describe and no
controller to add, remove or unregister nodes with. After the ACL check Kafka's controller
makes (ALTER on the cluster, DESCRIBE for DescribeQuorum: CLUSTER_AUTHORIZATION_FAILED), each
is answered UNSUPPORTED_VERSION with a message saying so. Kafka's tools take
UNSUPPORTED_VERSION as "the cluster does not support this": ``kafka-cluster unregister`` and
``unregister-controller`` print "The target cluster does not support the ... unregistration
API." (the admin client logs the message), ``kafka-metadata-quorum describe``,
``add-controller`` and ``remove-controller`` print the message (with the stack trace that tool
prints for any failed call).
"""

from __future__ import annotations

from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, Operation, ResourceType

NO_QUORUM = "wireserver has no KRaft controller quorum (its brokers coordinate through ZooKeeper)"


def refusal(ctx: Any, operation: Operation, what: str) -> tuple[ErrorCode, str | None]:
    """(error, message) for a KRaft API that needs ``operation`` on the cluster."""
    if not authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    return ErrorCode.UNSUPPORTED_VERSION, f"{NO_QUORUM}: {what}"


def refuse(ctx: Any, what: str) -> Any:
    """The answer to UnregisterBroker, AddRaftVoter, RemoveRaftVoter, UnregisterController:
    a throttle time, an error and its message."""
    error, message = refusal(ctx, Operation.ALTER, what)
    return ctx.response(throttle_time_ms=0, error_code=error, error_message=message)
