"""CreateAcls (key 30), v1-3 (Kafka 4 dropped v0).

Needs ALTER on the cluster. Each creation is validated as Kafka validates new ACLs
(``wireserver.security.acls.validate_new``; a bad one is INVALID_REQUEST) and stored.
Without an authorizer every creation answers SECURITY_DISABLED.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, AclBinding, Operation, ResourceType, validate_new

API_KEY = 30


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    result_class = ctx.request.spec.response_class.AclCreationResult
    authorizer = ctx.services.security.authorizer
    creations = ctx.body.creations
    if authorizer is None:
        code, message = ErrorCode.SECURITY_DISABLED, "No Authorizer is configured."
    elif not authorize(ctx, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    else:
        code = None
    if code is not None:
        return ctx.response(
            throttle_time_ms=0,
            results=[result_class(error_code=code, error_message=message) for _ in creations],
        )
    results, valid = [], []
    for creation in creations:
        acl = AclBinding(
            creation.resource_type,
            creation.resource_name,
            creation.resource_pattern_type,
            creation.principal,
            creation.host,
            creation.operation,
            creation.permission_type,
        )
        problem = validate_new(acl)
        if problem is not None:
            results.append(
                result_class(error_code=ErrorCode.INVALID_REQUEST, error_message=problem)
            )
        else:
            valid.append(acl)
            results.append(result_class(error_code=ErrorCode.NONE, error_message=None))
    assert authorizer is not None
    authorizer.add(valid)
    return ctx.response(throttle_time_ms=0, results=results)
