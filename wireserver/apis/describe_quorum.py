"""DescribeQuorum (key 55), v0-2: the KRaft metadata quorum (``kafka-metadata-quorum
describe``). wireserver has no quorum (its brokers coordinate through ZooKeeper), so after
Kafka's DESCRIBE-on-the-cluster check this answers UNSUPPORTED_VERSION, with a message from v2
(``wireserver.kraft``); DescribeCluster and Metadata describe the brokers and the controller."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.kraft import refusal
from wireserver.security.acls import Operation

API_KEY = 55


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    error, message = refusal(
        ctx,
        Operation.DESCRIBE,
        "there is no metadata quorum to describe (DescribeCluster lists the brokers and "
        "the controller)",
    )
    fields = {"error_code": error, "topics": []}
    if ctx.version >= 2:
        fields.update(error_message=message, nodes=[])
    return ctx.response(**fields)
