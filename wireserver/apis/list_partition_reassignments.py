"""ListPartitionReassignments (key 46), v0 — what ``kafka-reassign-partitions --execute``
and ``--verify`` ask first.

wireserver never reassigns a partition (issue #21), so no reassignment is ever in progress:
an empty list. DESCRIBE on the cluster is required (CLUSTER_AUTHORIZATION_FAILED), as Kafka
checks it.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.security.acls import Operation

API_KEY = 46


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    denied = checks.cluster(ctx, Operation.DESCRIBE)
    return ctx.response(
        throttle_time_ms=0, error_code=denied or ErrorCode.NONE, error_message=None, topics=[]
    )
